//! Permission modes, rules and decisions for tool calls. Being written.
