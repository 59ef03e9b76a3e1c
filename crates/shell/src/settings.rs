//! The `sandbox` block of a settings file, in the reference agent's key names.
//!
//! This is the serde shape only: which keys exist, their types and their defaults. It lives
//! here until it is merged into strata-protocol's settings schema; [`crate::SandboxPolicy`]
//! turns it, with the session's directories, into the concrete rules a child runs under.
//!
//! ```json
//! { "sandbox": {
//!     "enabled": true,
//!     "autoAllowBashIfSandboxed": true,
//!     "excludedCommands": ["docker"],
//!     "allowUnsandboxedCommands": true,
//!     "filesystem": { "allowWrite": ["~/.cargo"], "denyWrite": [], "denyRead": ["~/secrets"], "allowRead": [] },
//!     "network": { "allowedDomains": ["github.com", "*.npmjs.org"], "allowUnixSockets": [], "allowAllUnixSockets": false }
//! } }
//! ```
//!
//! Unknown keys are ignored (a newer settings file must not break an older strata).

use serde::{Deserialize, Serialize};

/// `sandbox`: whether Bash commands run under the OS sandbox, and what it lets through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxSettings {
    /// `enabled`: run Bash commands (and everything they start) under the sandbox. Unset
    /// means off. When on and the sandbox cannot be set up, a command is never run
    /// unsandboxed silently (see [`crate::check`]).
    pub enabled: Option<bool>,
    /// `autoAllowBashIfSandboxed` (default true): a sandboxed command needs no permission
    /// prompt unless a deny or ask rule names it; deny rules always apply first.
    pub auto_allow_bash_if_sandboxed: Option<bool>,
    /// `excludedCommands`: commands that run outside the sandbox, through the normal
    /// permission flow (patterns in the permission rules' Bash syntax).
    pub excluded_commands: Vec<String>,
    /// `allowUnsandboxedCommands` (default true): a command that failed because of the
    /// sandbox may be retried outside it, only after asking.
    pub allow_unsandboxed_commands: Option<bool>,
    /// `filesystem`: what sandboxed commands may read and write.
    pub filesystem: FilesystemSettings,
    /// `network`: what sandboxed commands may reach.
    pub network: NetworkSettings,
}

/// `sandbox.filesystem`. Paths: `~/…` is under the home directory, a relative path is
/// under the project directory, an absolute path is itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FilesystemSettings {
    /// `allowWrite`: more paths sandboxed commands may write, beyond the project, the
    /// additional directories and the session's temporary directory.
    pub allow_write: Vec<String>,
    /// `denyWrite`: paths that stay read-only even inside a writable path.
    pub deny_write: Vec<String>,
    /// `denyRead`: paths sandboxed commands cannot read, on top of the built-in list
    /// ([`crate::policy::default_deny_read`]).
    pub deny_read: Vec<String>,
    /// `allowRead`: paths inside a denied path that may be read again.
    pub allow_read: Vec<String>,
}

/// `sandbox.network`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkSettings {
    /// `allowedDomains`: host names reachable through strata's proxy (`*.example.com`
    /// matches subdomains, not `example.com` itself). Empty: no network at all.
    pub allowed_domains: Vec<String>,
    /// `allowUnixSockets`: pathname Unix sockets outside the sandbox that commands may
    /// connect to (`/var/run/docker.sock`). Needs Landlock ABI 9 to be enforced by path;
    /// on older kernels a non-empty list is an error, never a silent "all".
    pub allow_unix_sockets: Vec<String>,
    /// `allowAllUnixSockets`: any Unix socket may be connected to (turns the socket filter
    /// off).
    pub allow_all_unix_sockets: bool,
}

impl SandboxSettings {
    /// `enabled`, unset meaning off.
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(false)
    }

    /// `autoAllowBashIfSandboxed`, unset meaning true.
    pub fn auto_allow_bash(&self) -> bool {
        self.auto_allow_bash_if_sandboxed.unwrap_or(true)
    }

    /// `allowUnsandboxedCommands`, unset meaning true.
    pub fn unsandboxed_retry_allowed(&self) -> bool {
        self.allow_unsandboxed_commands.unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i26_4_reference_keys_parse_and_defaults_hold() {
        let json = r#"{
            "enabled": true,
            "excludedCommands": ["docker ps"],
            "filesystem": {"allowWrite": ["~/.cargo"], "denyRead": ["~/secrets"]},
            "network": {"allowedDomains": ["github.com"], "allowAllUnixSockets": true},
            "someFutureKey": 1
        }"#;
        let settings: SandboxSettings = serde_json::from_str(json).unwrap();
        assert!(settings.is_enabled());
        assert!(settings.auto_allow_bash());
        assert!(settings.unsandboxed_retry_allowed());
        assert_eq!(settings.excluded_commands, ["docker ps"]);
        assert_eq!(settings.filesystem.allow_write, ["~/.cargo"]);
        assert_eq!(settings.filesystem.deny_read, ["~/secrets"]);
        assert_eq!(settings.network.allowed_domains, ["github.com"]);
        assert!(settings.network.allow_all_unix_sockets);
        let off: SandboxSettings = serde_json::from_str("{}").unwrap();
        assert!(!off.is_enabled());
        let back = serde_json::to_value(&settings).unwrap();
        assert_eq!(back["filesystem"]["allowWrite"][0], "~/.cargo");
        assert_eq!(back["autoAllowBashIfSandboxed"], serde_json::Value::Null);
    }
}
