//! The subcommands, one module each.

pub(crate) mod config;
pub(crate) mod mcp;
pub(crate) mod output;
pub(crate) mod serve;
pub(crate) mod sessions;
pub(crate) mod trust;
