//! The ports: the small traits through which the effects hub reaches the outside world.
//!
//! One trait per kind of outside thing the hub touches, each as narrow as the effect
//! that uses it, so a test can substitute a recording port (see
//! [`recording`](super::recording)) and the product wires real ones (see
//! [`files`](super::files) and [`Ports::from_files`]). Every fallible port method returns
//! [`EffectError`]; the hub logs failures and never passes them on.

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};
use strata_config::{ConfigError, GlobalConfigFile, SettingsFiles};
use strata_protocol::global_config::GlobalConfig;
use strata_protocol::permission::{ExternalPermissionMode, PermissionMode};

use crate::app_state::{FileHistoryChange, Runtime, SettingsEdit};

/// Why a port could not do what an effect asked.
#[derive(Debug, thiserror::Error)]
pub enum EffectError {
    /// Reading or writing a configuration file failed (the error names the file).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Another port failed.
    #[error("{port}: {message}")]
    Port {
        /// Which port.
        port: &'static str,
        /// What went wrong.
        message: String,
    },
}

/// FX-2: where the main-loop model is persisted (the user settings file).
pub trait SettingsWriter: Send + Sync {
    /// Persists `model` as the user's `model` setting; `None` removes the key.
    fn persist_main_loop_model(&self, model: Option<&str>) -> Result<(), EffectError>;

    /// Applies an edit a state update asked for (a permission rule or directory kept in a
    /// settings file, see [`SettingsEdit`]). The default refuses, so a writer that was not
    /// built for it reports the edit as not saved rather than dropping it silently.
    fn apply_settings_edit(&self, edit: &SettingsEdit) -> Result<(), EffectError> {
        Err(EffectError::Port {
            port: "settings",
            message: format!(
                "this settings writer cannot save edits of the {} settings",
                edit.source
            ),
        })
    }
}

/// FX-3, FX-4: the global config (`config.json`).
pub trait GlobalConfigPort: Send + Sync {
    /// The stored config (the default one when there is no file).
    fn read(&self) -> Result<GlobalConfig, EffectError>;
    /// Edits the stored config. `edit` may run more than once (a file port re-runs it on
    /// the contents it finds under the lock) and must be a function of its argument.
    fn write(&self, edit: &mut dyn FnMut(&mut GlobalConfig)) -> Result<(), EffectError>;
}

/// FX-1: the metadata of the remote session this process serves (read by the web UI).
pub trait RemoteMetadataPort: Send + Sync {
    /// Merges `patch` into the remote session's metadata (`null` deletes a key).
    fn session_metadata_changed(&self, patch: &SessionMetadataPatch) -> Result<(), EffectError>;
}

/// FX-1: the SDK status stream of a headless session.
pub trait SdkStatusPort: Send + Sync {
    /// Reports the new raw permission mode (the stream does its own filtering).
    fn permission_mode_changed(&self, mode: PermissionMode) -> Result<(), EffectError>;
}

/// File history (SP-2): where a change of the app state's file-history domain is
/// persisted — the session layer writes the backup files, then appends the
/// `file-history-snapshot` entry to the transcript.
///
/// Called inside the commit's delivery, so for a writer outside store callbacks it has
/// finished when the writer's `set` returns (store contract, rule 5): the edit tools
/// rely on that to have the backup on disk before they overwrite the file. A port must
/// therefore be synchronous and must not update the store.
pub trait FileHistoryPort: Send + Sync {
    /// Writes `change.backups`, then its entry. A failed backup must leave the entry
    /// unwritten (a transcript must not name a backup that does not exist).
    fn persist(&self, change: &FileHistoryChange) -> Result<(), EffectError>;
}

/// FX-5: caches of credentials derived from settings (API key helper output, cloud
/// credentials) that must be dropped when settings change.
pub trait CredentialCachePort: Send + Sync {
    /// Clears every cache.
    fn clear_credential_caches(&self) -> Result<(), EffectError>;
}

/// FX-5: where configured environment variables go.
pub trait EnvironmentPort: Send + Sync {
    /// Adds or overwrites `vars`; never removes a variable.
    fn apply_additive(&self, vars: &IndexMap<String, String>) -> Result<(), EffectError>;
}

/// FX-2 and error reporting: the bootstrap state (BS-7's model mirror, BS-2's error log).
pub trait BootstrapPort: Send + Sync {
    /// Mirrors the app state's main-loop model as the bootstrap override.
    fn mirror_main_loop_model(&self, model: Option<&str>);
    /// Records an effect failure in the in-memory error log.
    fn log_error(&self, message: &str);
}

/// The merge patch FX-1 sends to the remote session metadata.
///
/// Serialized as `{"permission_mode": "<external mode>", "is_ultraplan_mode": true|null}`:
/// `null` is a key deletion, so the flag is present only right after the first entry into
/// ultraplan.
///
/// ```
/// use strata_protocol::permission::ExternalPermissionMode;
/// use strata_state::SessionMetadataPatch;
/// let patch = SessionMetadataPatch { permission_mode: ExternalPermissionMode::Plan, is_ultraplan_mode: None };
/// assert_eq!(serde_json::to_string(&patch).unwrap(),
///            r#"{"permission_mode":"plan","is_ultraplan_mode":null}"#);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SessionMetadataPatch {
    /// The externalised mode (internal modes never leave the process).
    pub permission_mode: ExternalPermissionMode,
    /// `Some(true)` on the first entry into ultraplan, else `None` (serialized `null`).
    pub is_ultraplan_mode: Option<bool>,
}

/// A remote session's external metadata document, as the remote side stores it.
///
/// Kept as the JSON object it is (other features put other keys in it); the two keys
/// the state layer reads are typed through accessors that ignore values of the wrong
/// type, as the remote side may be another version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SessionExternalMetadata(pub Map<String, Value>);

impl SessionExternalMetadata {
    /// `permission_mode`, when it is a string.
    pub fn permission_mode(&self) -> Option<&str> {
        self.0.get("permission_mode").and_then(Value::as_str)
    }

    /// `is_ultraplan_mode`, when it is a boolean.
    pub fn is_ultraplan_mode(&self) -> Option<bool> {
        self.0.get("is_ultraplan_mode").and_then(Value::as_bool)
    }

    /// Merges a patch in (merge-patch rules: `null` deletes the key).
    ///
    /// ```
    /// use strata_protocol::permission::ExternalPermissionMode as M;
    /// use strata_state::{SessionExternalMetadata, SessionMetadataPatch};
    /// let mut doc = SessionExternalMetadata::default();
    /// doc.apply(&SessionMetadataPatch { permission_mode: M::Plan, is_ultraplan_mode: Some(true) });
    /// assert_eq!(doc.is_ultraplan_mode(), Some(true));
    /// doc.apply(&SessionMetadataPatch { permission_mode: M::Default, is_ultraplan_mode: None });
    /// assert_eq!(doc.permission_mode(), Some("default"));
    /// assert!(!doc.0.contains_key("is_ultraplan_mode"));
    /// ```
    pub fn apply(&mut self, patch: &SessionMetadataPatch) {
        self.0.insert(
            "permission_mode".into(),
            Value::from(patch.permission_mode.as_str()),
        );
        match patch.is_ultraplan_mode {
            Some(flag) => {
                self.0.insert("is_ultraplan_mode".into(), Value::Bool(flag));
            }
            None => {
                self.0.remove("is_ultraplan_mode");
            }
        }
    }
}

/// Every port the hub uses. All fields are public so a caller sees, and must fill, each
/// one; [`Ports::from_files`] wires the real ones.
#[derive(Clone)]
pub struct Ports {
    /// FX-2's settings file.
    pub settings: Arc<dyn SettingsWriter>,
    /// FX-3/FX-4's global config.
    pub global_config: Arc<dyn GlobalConfigPort>,
    /// FX-2's model mirror and the error log.
    pub bootstrap: Arc<dyn BootstrapPort>,
    /// FX-1's remote session metadata; `None` when this process serves no remote
    /// session (one can be attached later, [`EffectsHub::set_remote`](super::EffectsHub::set_remote)).
    pub remote: Option<Arc<dyn RemoteMetadataPort>>,
    /// FX-1's SDK status stream; `None` outside headless mode.
    pub sdk: Option<Arc<dyn SdkStatusPort>>,
    /// FX-5's credential caches.
    pub credentials: Arc<dyn CredentialCachePort>,
    /// FX-5's environment.
    pub environment: Arc<dyn EnvironmentPort>,
    /// File history's persistence (backups and snapshot entries); `None` until the
    /// session's transcript exists (attach it with
    /// [`EffectsHub::set_file_history`](super::EffectsHub::set_file_history)).
    pub file_history: Option<Arc<dyn FileHistoryPort>>,
}

impl Ports {
    /// The real ports of a session: the user settings file and `config.json` through
    /// `strata-config` (locked, atomic, order-keeping writes), the bootstrap state
    /// (`strata_bootstrap::global()` in the program, an `Arc<Bootstrap>` in tests), and the runtime's credential-cache registry and environment overlay (the
    /// runtime of the state the store will hold, so spawners see what FX-5 applies).
    /// No remote session, no SDK stream and no file-history persistence: attach those
    /// when they exist (the last needs the session's transcript).
    ///
    /// ```
    /// use strata_config::{GlobalConfigFile, SettingsFiles, SettingsLocations};
    /// use strata_state::{default_app_state, EffectsHub, Ports, RuntimeFacts, SessionScope};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let files = SettingsFiles::new(SettingsLocations::new(&dir.path().join("cfg"), dir.path()));
    /// let initial = default_app_state(RuntimeFacts::default());
    /// let ports = Ports::from_files(
    ///     files,
    ///     GlobalConfigFile::new(&dir.path().join("cfg")),
    ///     strata_bootstrap::global(),
    ///     &initial.runtime,
    /// );
    /// let scope = SessionScope::new();
    /// let root = scope.create_root(initial, EffectsHub::new(ports)).unwrap();
    /// root.store().update(|s| s.verbose = true); // FX-4 writes config.json
    /// assert!(dir.path().join("cfg/config.json").exists());
    /// ```
    pub fn from_files(
        settings: SettingsFiles,
        global_config: GlobalConfigFile,
        bootstrap: impl BootstrapPort + 'static,
        runtime: &Runtime,
    ) -> Self {
        Self {
            settings: Arc::new(settings),
            global_config: Arc::new(global_config),
            bootstrap: Arc::new(bootstrap),
            remote: None,
            sdk: None,
            credentials: Arc::new(runtime.credentials.clone()),
            environment: Arc::new(runtime.env.clone()),
            file_history: None,
        }
    }
}
