//! strata-shell: what a command may do.
//!
//! This crate owns the OS sandbox every sandboxed Bash command runs under (and, later, the
//! Bash analysis that decides whether it may run at all). It sits below the agent and
//! depends on no strata crate: the agent gives it the session's directories and the
//! `sandbox` settings block and gets back a [`SandboxPolicy`], then a prepared sandbox it
//! attaches to a `Command`.
//!
//! - [`settings`]: the `sandbox` settings block in the reference agent's key names.
//! - [`policy`]: the resolved rules as plain paths and predicates.
//! - [`plan`]: those rules as Landlock rules and read-only bind mounts.
//!
//! Linux only: on other systems [`policy`] and [`plan`] still build, the sandbox reports
//! itself unavailable.

pub mod plan;
pub mod policy;
pub mod settings;

pub use policy::{NetworkPolicy, PolicyContext, PolicyError, SandboxPolicy, UnixSockets};
pub use settings::SandboxSettings;
