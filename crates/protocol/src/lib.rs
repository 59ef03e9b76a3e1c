//! Every shape strata serializes, in one place.
//!
//! The reference terminal agent's users already have session files, settings files and
//! SDK clients; strata speaks the same formats so those move between the two programs.
//! This crate owns the serde types for them and nothing else: no I/O, no policy. Each
//! module pins one format with round-trip tests against real samples.
//!
//! - [`permission`]: permission modes, their public (external) names and parsing.
//! - [`settings`]: the settings file schema, keeping unknown keys in order.
//! - [`global_config`]: the global `config.json` (view flags, per-project cost slots).
//! - [`message`]: model messages and content blocks, usage.
//! - [`transcript`]: JSONL transcript entries of the reference format.
//! - [`sdk`]: headless `stream-json` messages and control requests.

pub mod global_config;
pub mod mcp_names;
pub mod message;
pub mod permission;
pub mod sdk;
pub mod settings;
pub mod transcript;
