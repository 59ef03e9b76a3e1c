//! The settings file schema (`settings.json` and friends), keeping unknown keys in order.
//!
//! The same shape is used by every settings source (user, project, local, `--settings`,
//! managed). strata types the keys it acts on and keeps everything else as JSON, in the
//! order it was read, so a file written by another program (or a newer strata) survives a
//! round trip with its meaning and key order intact. Reading a file with a known key of the
//! wrong shape fails at that key (see `ordered`), which is how files are validated.
//!
//! Known keys: `model`, `permissions` ([`PermissionsSettings`]), `env`, `apiKeyHelper`,
//! `cleanupPeriodDays`, `alwaysThinkingEnabled`, `fastMode`, `credentialEnvVars`, `remote`
//! ([`RemoteSettings`]).

pub(crate) mod ordered;
mod remote;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use self::ordered::KeyOrder;
use self::ordered::known_keys;
pub use self::remote::{RemoteSettings, RemoteTlsSettings};
use crate::permission::ExternalPermissionMode;

/// One settings file (or the merge of several).
///
/// ```
/// use strata_protocol::settings::Settings;
/// let text = r#"{"zeta": 1, "model": "opus", "permissions": {"defaultMode": "plan"}}"#;
/// let s: Settings = serde_json::from_str(text).unwrap();
/// assert_eq!(s.model.as_deref(), Some("opus"));
/// assert_eq!(s.extra["zeta"], 1);
/// // Unknown keys and the key order survive.
/// assert_eq!(serde_json::to_string(&s).unwrap(), text.replace(": ", ":").replace(", ", ","));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// `model`: the main-loop model (an alias such as `opus` or a full model id).
    pub model: Option<String>,
    /// `permissions`: rules and the default mode.
    pub permissions: Option<PermissionsSettings>,
    /// `env`: environment variables applied to the process (FX-5: added or overwritten,
    /// never removed). Values must be strings.
    pub env: Option<IndexMap<String, String>>,
    /// `apiKeyHelper`: a shell command whose output is the Anthropic API key, used when
    /// the environment has no key (cached until the settings change or the key is
    /// rejected).
    pub api_key_helper: Option<String>,
    /// `cleanupPeriodDays`: how many days a session is kept after its last activity
    /// (default 30; at least 1). Older ones are deleted when a session starts and by
    /// `strata sessions cleanup`.
    pub cleanup_period_days: Option<u32>,
    /// `alwaysThinkingEnabled`: extended thinking on by default.
    pub always_thinking_enabled: Option<bool>,
    /// `fastMode`: the fast output mode.
    pub fast_mode: Option<bool>,
    /// `credentialEnvVars` (strata's own key): names of environment variables that hold
    /// credentials, in addition to the built-in list (the model-provider keys). Tool
    /// processes do not get them, and their values are redacted from tool output.
    pub credential_env_vars: Option<Vec<String>>,
    /// `remote` (strata's own key, issue 17): the NATS server sessions are replicated on,
    /// with credentials and TLS. `--remote` overrides its URL.
    pub remote: Option<RemoteSettings>,
    /// Every key this version does not know, in file order, exactly as read.
    pub extra: Map<String, Value>,
    /// The order keys were read in; ignored by equality.
    pub key_order: KeyOrder,
}

known_keys!(Settings, "a settings object", {
    "model" => model,
    "permissions" => permissions,
    "env" => env,
    "apiKeyHelper" => api_key_helper,
    "cleanupPeriodDays" => cleanup_period_days,
    "alwaysThinkingEnabled" => always_thinking_enabled,
    "fastMode" => fast_mode,
    "credentialEnvVars" => credential_env_vars,
    "remote" => remote,
});

/// The `permissions` object of a settings file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PermissionsSettings {
    /// `allow`: rules that allow a tool use without asking (e.g. `Bash(npm test:*)`).
    pub allow: Option<Vec<String>>,
    /// `deny`: rules that deny a tool use.
    pub deny: Option<Vec<String>>,
    /// `ask`: rules that always ask.
    pub ask: Option<Vec<String>>,
    /// `defaultMode`: the permission mode a session starts in. Only public modes are
    /// valid; `manual` reads as `default`.
    pub default_mode: Option<ExternalPermissionMode>,
    /// `disableBypassPermissionsMode`: `"disable"` forbids `bypassPermissions` (UI-6).
    pub disable_bypass_permissions_mode: Option<DisableBypassPermissionsMode>,
    /// `additionalDirectories`: directories outside the project the tools may use.
    pub additional_directories: Option<Vec<String>>,
    /// Every key this version does not know, in file order, exactly as read.
    pub extra: Map<String, Value>,
    /// The order keys were read in; ignored by equality.
    pub key_order: KeyOrder,
}

known_keys!(PermissionsSettings, "a permissions object", {
    "allow" => allow,
    "deny" => deny,
    "ask" => ask,
    "defaultMode" => default_mode,
    "disableBypassPermissionsMode" => disable_bypass_permissions_mode,
    "additionalDirectories" => additional_directories,
});

/// The value of `permissions.disableBypassPermissionsMode`. The reference agent's schema
/// has exactly one value, the string `"disable"`; anything else is an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DisableBypassPermissionsMode {
    /// `"disable"`.
    #[serde(rename = "disable")]
    Disable,
}

impl Settings {
    /// Whether these settings forbid `bypassPermissions` (UI-6).
    ///
    /// ```
    /// use strata_protocol::settings::Settings;
    /// let s: Settings =
    ///     serde_json::from_str(r#"{"permissions":{"disableBypassPermissionsMode":"disable"}}"#)
    ///         .unwrap();
    /// assert!(s.bypass_permissions_disabled());
    /// assert!(!Settings::default().bypass_permissions_disabled());
    /// ```
    pub fn bypass_permissions_disabled(&self) -> bool {
        self.permissions
            .as_ref()
            .and_then(|p| p.disable_bypass_permissions_mode)
            .is_some()
    }

    /// `permissions.defaultMode`, if set.
    pub fn default_mode(&self) -> Option<ExternalPermissionMode> {
        self.permissions.as_ref().and_then(|p| p.default_mode)
    }
}

/// Whether the schema types the value at `path` (a key path such as `["model"]`) as a
/// string. Front ends that take values as text use this to keep `8080` a string for
/// `env.PORT`.
///
/// ```
/// use strata_protocol::settings::expects_string;
/// assert!(expects_string(&["env", "PORT"]));
/// assert!(expects_string(&["permissions", "defaultMode"]));
/// assert!(!expects_string(&["cleanupPeriodDays"]));
/// ```
pub fn expects_string(path: &[&str]) -> bool {
    matches!(
        path,
        ["model"]
            | ["apiKeyHelper"]
            | ["env", _]
            | [
                "permissions",
                "defaultMode" | "disableBypassPermissionsMode"
            ]
            | ["remote", "url" | "credentialsFile"]
            | ["remote", "tls", "caFile" | "certFile" | "keyFile"]
    )
}

/// Whether the schema types the value at `path` as an array of strings (its elements
/// are then strings whatever they look like).
///
/// ```
/// use strata_protocol::settings::expects_string_array;
/// assert!(expects_string_array(&["permissions", "allow"]));
/// assert!(!expects_string_array(&["model"]));
/// ```
pub fn expects_string_array(path: &[&str]) -> bool {
    matches!(
        path,
        [
            "permissions",
            "allow" | "deny" | "ask" | "additionalDirectories"
        ] | ["credentialEnvVars"]
    )
}
