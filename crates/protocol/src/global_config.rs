//! The global config file (`config.json`): view flags and per-project cost slots.
