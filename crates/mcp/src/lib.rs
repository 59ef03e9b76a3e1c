//! MCP servers for strata: their configuration ([`config`], [`sources`]), the tool
//! names the model sees ([`naming`]), the connections over the official Rust SDK
//! (`rmcp`) with reconnects ([`McpManager`]), the legacy HTTP+SSE transport `rmcp` lacks
//! ([`sse`]) and the conversion of results ([`content`]).
//!
//! The live connections are runtime handles owned by the [`McpManager`]; what readers
//! see (status, tools, prompts, resources) is published as [`ServerView`]s through a
//! [`StatusSink`], which the engine applies to the app state's `mcp` domain. This crate
//! does not know the store.

pub mod config;
mod connect;
pub mod content;
mod manager;
/// The names the model sees, shared with the permission rules (in `strata-protocol`).
pub use strata_protocol::mcp_names as naming;
pub mod sources;
pub mod sse;

pub use config::{ConfigError, ServerConfig};
pub use manager::{
    CallError, ConfiguredServer, EnvLookup, ManagerOptions, McpManager, ServerView, StatusSink,
    describe, status_name,
};
