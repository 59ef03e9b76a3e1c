//! The tool-use context and sub-agent isolation (SA-1 … SA-7). Being written.
