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
//! - `sandbox`: preparing them for one command and [`check`]ing what the machine supports;
//!   `child` is what runs between fork and exec.
//! - [`proxy`]: the allowlist proxy sandboxed commands reach the network through.
//!
//! Linux only: on other systems [`policy`] and [`plan`] still build, the sandbox reports
//! itself unavailable.

#[cfg(target_os = "linux")]
mod child;
pub mod plan;
pub mod policy;
pub mod proxy;
#[cfg(target_os = "linux")]
pub mod sandbox;
pub mod settings;

pub use policy::{NetworkPolicy, PolicyContext, PolicyError, SandboxPolicy, UnixSockets};
#[cfg(target_os = "linux")]
pub use sandbox::{PreparedSandbox, Sandbox, SandboxError, Support, check};
pub use settings::SandboxSettings;
