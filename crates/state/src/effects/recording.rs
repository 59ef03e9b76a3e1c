//! Recording ports: in-memory ports that remember what the hub asked of them, for tests
//! (here and in the crates above: the agent's tests drive the real hub through these).
//!
//! Each can be switched to failing, to prove that a failing effect is logged and never
//! passed on. The environment and bootstrap ports need no recording version: the real
//! [`EnvOverlay`](crate::EnvOverlay) is in memory, and tests use a private
//! `Bootstrap::new` instance.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use strata_bootstrap::Bootstrap;
use strata_protocol::global_config::GlobalConfig;
use strata_protocol::permission::PermissionMode;

use super::ports::{
    CredentialCachePort, EffectError, FileHistoryPort, GlobalConfigPort, Ports, RemoteMetadataPort,
    SdkStatusPort, SessionExternalMetadata, SessionMetadataPatch, SettingsWriter,
};
use crate::app_state::{FileHistoryChange, Runtime, SettingsEdit};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn check(failing: &AtomicBool, port: &'static str) -> Result<(), EffectError> {
    if failing.load(Ordering::SeqCst) {
        Err(EffectError::Port {
            port,
            message: "failing on purpose (recording port)".into(),
        })
    } else {
        Ok(())
    }
}

/// Records every model FX-2 persisted (`None`: the key was removed).
#[derive(Debug, Default)]
pub struct RecordingSettings {
    writes: Mutex<Vec<Option<String>>>,
    edits: Mutex<Vec<SettingsEdit>>,
    failing: AtomicBool,
}

impl RecordingSettings {
    /// Every persisted model, in order.
    pub fn writes(&self) -> Vec<Option<String>> {
        lock(&self.writes).clone()
    }

    /// Every settings edit applied, in order.
    pub fn edits(&self) -> Vec<SettingsEdit> {
        lock(&self.edits).clone()
    }

    /// Makes every later call fail (or succeed again).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl SettingsWriter for RecordingSettings {
    fn persist_main_loop_model(&self, model: Option<&str>) -> Result<(), EffectError> {
        check(&self.failing, "settings")?;
        lock(&self.writes).push(model.map(str::to_owned));
        Ok(())
    }

    fn apply_settings_edit(&self, edit: &SettingsEdit) -> Result<(), EffectError> {
        check(&self.failing, "settings")?;
        lock(&self.edits).push(edit.clone());
        Ok(())
    }
}

/// A global config kept in memory, counting reads and writes.
#[derive(Debug, Default)]
pub struct MemoryGlobalConfig {
    config: Mutex<GlobalConfig>,
    reads: AtomicUsize,
    writes: AtomicUsize,
    failing: AtomicBool,
}

impl MemoryGlobalConfig {
    /// A config holding `config`.
    pub fn with(config: GlobalConfig) -> Self {
        Self {
            config: Mutex::new(config),
            ..Self::default()
        }
    }

    /// The stored config.
    pub fn config(&self) -> GlobalConfig {
        lock(&self.config).clone()
    }

    /// How many times it was written.
    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    /// How many times it was read.
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    /// Makes every later call fail (or succeed again).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl GlobalConfigPort for MemoryGlobalConfig {
    fn read(&self) -> Result<GlobalConfig, EffectError> {
        check(&self.failing, "global config")?;
        self.reads.fetch_add(1, Ordering::SeqCst);
        Ok(self.config())
    }

    fn write(&self, edit: &mut dyn FnMut(&mut GlobalConfig)) -> Result<(), EffectError> {
        check(&self.failing, "global config")?;
        self.writes.fetch_add(1, Ordering::SeqCst);
        edit(&mut lock(&self.config));
        Ok(())
    }
}

/// A remote session's metadata document, patched by FX-1, with every patch recorded.
#[derive(Debug, Default)]
pub struct RecordingRemote {
    document: Mutex<SessionExternalMetadata>,
    patches: Mutex<Vec<SessionMetadataPatch>>,
    failing: AtomicBool,
}

impl RecordingRemote {
    /// A remote whose document starts as `document` (what the session published when it
    /// connected).
    pub fn with(document: SessionExternalMetadata) -> Self {
        Self {
            document: Mutex::new(document),
            ..Self::default()
        }
    }

    /// The document after every patch.
    pub fn document(&self) -> SessionExternalMetadata {
        lock(&self.document).clone()
    }

    /// Every patch received, in order.
    pub fn patches(&self) -> Vec<SessionMetadataPatch> {
        lock(&self.patches).clone()
    }

    /// Makes every later call fail (or succeed again).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl RemoteMetadataPort for RecordingRemote {
    fn session_metadata_changed(&self, patch: &SessionMetadataPatch) -> Result<(), EffectError> {
        check(&self.failing, "remote metadata")?;
        lock(&self.patches).push(*patch);
        lock(&self.document).apply(patch);
        Ok(())
    }
}

/// Records every raw mode sent to the SDK status stream.
#[derive(Debug, Default)]
pub struct RecordingSdk {
    modes: Mutex<Vec<PermissionMode>>,
}

impl RecordingSdk {
    /// Every mode reported, in order.
    pub fn modes(&self) -> Vec<PermissionMode> {
        lock(&self.modes).clone()
    }
}

impl SdkStatusPort for RecordingSdk {
    fn permission_mode_changed(&self, mode: PermissionMode) -> Result<(), EffectError> {
        lock(&self.modes).push(mode);
        Ok(())
    }
}

/// Counts credential-cache clears.
#[derive(Debug, Default)]
pub struct RecordingCredentials {
    clears: AtomicUsize,
    failing: AtomicBool,
}

impl RecordingCredentials {
    /// How many times the caches were cleared.
    pub fn clears(&self) -> usize {
        self.clears.load(Ordering::SeqCst)
    }

    /// Makes every later call fail (or succeed again).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl CredentialCachePort for RecordingCredentials {
    fn clear_credential_caches(&self) -> Result<(), EffectError> {
        check(&self.failing, "credential caches")?;
        self.clears.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Records every file-history change the hub asked to persist.
#[derive(Debug, Default)]
pub struct RecordingFileHistory {
    changes: Mutex<Vec<Arc<FileHistoryChange>>>,
    failing: AtomicBool,
}

impl RecordingFileHistory {
    /// Every change persisted, in order.
    pub fn changes(&self) -> Vec<Arc<FileHistoryChange>> {
        lock(&self.changes).clone()
    }

    /// Makes every later call fail (or succeed again).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl FileHistoryPort for RecordingFileHistory {
    fn persist(&self, change: &FileHistoryChange) -> Result<(), EffectError> {
        check(&self.failing, "file history")?;
        lock(&self.changes).push(Arc::new(change.clone()));
        Ok(())
    }
}

/// One of each recording port, plus a private bootstrap instance.
#[derive(Clone, Debug)]
pub struct RecordingPorts {
    /// FX-2's settings.
    pub settings: Arc<RecordingSettings>,
    /// FX-3/FX-4's global config.
    pub global_config: Arc<MemoryGlobalConfig>,
    /// FX-1's remote metadata.
    pub remote: Arc<RecordingRemote>,
    /// FX-1's SDK stream.
    pub sdk: Arc<RecordingSdk>,
    /// FX-5's credential caches.
    pub credentials: Arc<RecordingCredentials>,
    /// File history's persistence.
    pub file_history: Arc<RecordingFileHistory>,
    /// A private bootstrap state (FX-2's mirror, the error log).
    pub bootstrap: Arc<Bootstrap>,
}

impl Default for RecordingPorts {
    fn default() -> Self {
        Self {
            settings: Arc::default(),
            global_config: Arc::default(),
            remote: Arc::default(),
            sdk: Arc::default(),
            credentials: Arc::default(),
            file_history: Arc::default(),
            bootstrap: Arc::new(Bootstrap::new(std::path::Path::new("/"))),
        }
    }
}

impl RecordingPorts {
    /// The ports to give the hub; the environment is `runtime`'s real overlay.
    ///
    /// ```
    /// use strata_state::{default_app_state, EffectsHub, RecordingPorts, RuntimeFacts, SessionScope};
    /// let rec = RecordingPorts::default();
    /// let initial = default_app_state(RuntimeFacts::default());
    /// let hub = EffectsHub::new(rec.ports(&initial.runtime));
    /// let scope = SessionScope::new();
    /// let root = scope.create_root(initial, hub).unwrap();
    /// root.store().update(|s| s.main_loop_model = Some("opus".into()));
    /// assert_eq!(rec.settings.writes(), [Some("opus".to_owned())]);
    /// ```
    pub fn ports(&self, runtime: &Runtime) -> Ports {
        Ports {
            settings: self.settings.clone(),
            global_config: self.global_config.clone(),
            bootstrap: self.bootstrap.clone(),
            remote: Some(self.remote.clone()),
            sdk: Some(self.sdk.clone()),
            credentials: self.credentials.clone(),
            environment: Arc::new(runtime.env.clone()),
            file_history: Some(self.file_history.clone()),
        }
    }
}
