//! The settings file schema (`settings.json` and friends), keeping unknown keys in order.
