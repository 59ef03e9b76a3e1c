//! The root store of a session (UI-1, UI-5) and the session scope that admits one.
//!
//! # One root per session (UI-5)
//!
//! The reference agent forbids nesting its store provider: a second store inside the
//! first would split the session in two, with half the code reading a state the other
//! half never sees. Rust has no component tree, so the rule is made explicit:
//!
//! - A [`SessionScope`] admits at most one live root. [`SessionScope::create_root`]
//!   returns [`RootError::AlreadyExists`] (naming where the live root was created) while
//!   another root of that scope is alive — a `Result`, not a panic.
//! - The root is alive while its [`AppRoot`] guard is. Dropping the guard ends the root
//!   (a new session may then create one); [`AppStore`] handles already given out keep
//!   working, they are just no longer "the session's root".
//! - A scope is a handle, passed to whoever opens a session. The binary runs one
//!   session per process and passes [`SessionScope::global()`] (a session switch reuses
//!   the root). A host with several sessions open at once (an SDK host, a sub-agent
//!   runtime, tests running as threads of one process) gives each session a scope of its
//!   own ([`SessionScope::new`]): one root per session, not one per process.
//! - Code that may run outside a session (error reports, logging) asks
//!   [`SessionScope::current`] (or [`current_app_store`]) and gets `None` instead of
//!   failing.
//!
//! `AppStore` has no public constructor: the only way to a store with the effects hub
//! installed is through a scope, so the one-root rule cannot be sidestepped.
//!
//! # The handle never changes (UI-1)
//!
//! [`AppStore`] is a cheap clone of one handle for the life of the session; redraws come
//! from its subscriptions and selections, never from replacing it.

use std::ops::Deref;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use strata_config::{ConfigError, MergedSettings, SettingsFiles, SettingsWatcher};
use strata_protocol::settings::Settings;
use strata_store::{Store, Update};

use crate::app_state::{AppState, Notification, NotificationPriority, Runtime};
use crate::effects::{EffectsHub, SessionExternalMetadata, external_metadata_to_app_state};
use crate::settings_sync::{apply_settings_change, disable_bypass_if_forbidden};

/// Creating a root store failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    /// A root of this session scope is alive: a second one would split the session.
    #[error(
        "an app store root already exists in this session (created at {created_at}); \
         use that store (AppStore handles are cheap to clone) or drop its AppRoot first"
    )]
    AlreadyExists {
        /// Where the live root was created (`file:line:column`).
        created_at: String,
    },
}

struct LiveRoot {
    id: u64,
    store: AppStore,
    created_at: &'static Location<'static>,
}

#[derive(Default)]
struct ScopeInner {
    live: Mutex<Option<LiveRoot>>,
    next_id: AtomicU64,
}

/// Admits at most one live root store (UI-5). Cloning shares the scope.
#[derive(Clone, Default)]
pub struct SessionScope {
    inner: Arc<ScopeInner>,
}

static GLOBAL_SCOPE: LazyLock<SessionScope> = LazyLock::new(SessionScope::new);

impl SessionScope {
    /// A private scope (tests, embedders running several sessions in one process).
    pub fn new() -> Self {
        Self::default()
    }

    /// The process's default scope, which the binary (one session per process) passes to
    /// its engine. Library code takes a scope as a handle instead of calling this.
    pub fn global() -> &'static SessionScope {
        &GLOBAL_SCOPE
    }

    /// Creates the root store holding `initial`, with `effects` as its change hook, and
    /// runs the hub's start-up effects ([`EffectsHub::on_start`]).
    ///
    /// ```
    /// use strata_state::{default_app_state, EffectsHub, RecordingPorts, RootError,
    ///                    RuntimeFacts, SessionScope};
    /// let scope = SessionScope::new();
    /// let rec = RecordingPorts::default();
    /// let state = || default_app_state(RuntimeFacts::default());
    /// let first = state();
    /// let hub = EffectsHub::new(rec.ports(&first.runtime));
    /// let root = scope.create_root(first, hub).unwrap();
    ///
    /// let second = state();
    /// let hub = EffectsHub::new(rec.ports(&second.runtime));
    /// assert!(matches!(scope.create_root(second, hub), Err(RootError::AlreadyExists { .. })));
    ///
    /// assert!(scope.current().is_some());
    /// assert!(scope.ensure_vacant().is_err());
    /// drop(root);
    /// assert!(scope.current().is_none());
    /// assert!(scope.ensure_vacant().is_ok());
    /// ```
    #[track_caller]
    pub fn create_root(
        &self,
        initial: AppState,
        effects: EffectsHub,
    ) -> Result<AppRoot, RootError> {
        let created_at = Location::caller();
        let mut live = self.lock();
        if let Some(existing) = &*live {
            return Err(RootError::AlreadyExists {
                created_at: existing.created_at.to_string(),
            });
        }
        let store = AppStore::new(initial, effects);
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        *live = Some(LiveRoot {
            id,
            store: store.clone(),
            created_at,
        });
        Ok(AppRoot {
            store,
            scope: self.clone(),
            id,
        })
    }

    /// `Ok` when no root of this scope is alive, else the error
    /// [`create_root`](Self::create_root) would return now. For callers that want to be
    /// refused before doing other work; `create_root` checks again.
    pub fn ensure_vacant(&self) -> Result<(), RootError> {
        match &*self.lock() {
            Some(existing) => Err(RootError::AlreadyExists {
                created_at: existing.created_at.to_string(),
            }),
            None => Ok(()),
        }
    }

    /// The live root's store, or `None` outside a session (UI-5's optional accessor).
    pub fn current(&self) -> Option<AppStore> {
        self.lock().as_ref().map(|live| live.store.clone())
    }

    fn lock(&self) -> MutexGuard<'_, Option<LiveRoot>> {
        // The slot is only ever replaced whole.
        self.inner
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for SessionScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let live = self.lock().as_ref().map(|l| l.created_at.to_string());
        f.debug_struct("SessionScope")
            .field("live_root", &live)
            .finish()
    }
}

/// The root store of the process's default scope, if its session is running: for code
/// that may run outside a session (UI-5). Same as `SessionScope::global().current()`;
/// sessions opened with a scope of their own are reached through that scope.
pub fn current_app_store() -> Option<AppStore> {
    SessionScope::global().current()
}

/// The guard of a live root store: while it lives, its scope admits no other root.
#[derive(Debug)]
pub struct AppRoot {
    store: AppStore,
    scope: SessionScope,
    id: u64,
}

impl AppRoot {
    /// The root's store handle (clone it freely).
    pub fn store(&self) -> &AppStore {
        &self.store
    }
}

impl Deref for AppRoot {
    type Target = AppStore;

    fn deref(&self) -> &AppStore {
        &self.store
    }
}

impl Drop for AppRoot {
    fn drop(&mut self) {
        let mut live = self.scope.lock();
        if live.as_ref().is_some_and(|l| l.id == self.id) {
            *live = None;
        }
    }
}

/// The session's app store: a [`Store<AppState>`] with the effects hub installed as its
/// change hook. Dereferences to the store, so `get`, `set`, `update`, `subscribe`,
/// `select` and `setter` are called on it directly (UI-1 … UI-4).
///
/// ```
/// use strata_protocol::permission::PermissionMode;
/// use strata_state::{default_app_state, EffectsHub, RecordingPorts, RuntimeFacts, SessionScope};
///
/// let rec = RecordingPorts::default();
/// let initial = default_app_state(RuntimeFacts::default());
/// let hub = EffectsHub::new(rec.ports(&initial.runtime));
/// let scope = SessionScope::new();
/// let root = scope.create_root(initial, hub).unwrap();
/// let store = root.store().clone();
///
/// let mut mode = store.select(|s| s.tool_permission_context.mode);
/// store.update(|s| s.tool_permission_context.mode = PermissionMode::Plan);
/// assert!(mode.changed(&store));
/// assert_eq!(rec.sdk.modes(), [PermissionMode::Plan]); // FX-1 ran in the hook
/// ```
#[derive(Clone)]
pub struct AppStore {
    store: Store<AppState>,
    effects: Arc<EffectsHub>,
}

impl AppStore {
    fn new(initial: AppState, effects: EffectsHub) -> Self {
        let effects = Arc::new(effects);
        effects.on_start(&initial);
        let hook = Arc::clone(&effects);
        let store = Store::with_change_hook(initial, move |new: &Arc<AppState>, old| {
            hook.on_change(new, old);
        });
        Self { store, effects }
    }

    /// The underlying store.
    pub fn store(&self) -> &Store<AppState> {
        &self.store
    }

    /// The effects hub installed as the change hook (to attach a remote or SDK port).
    pub fn effects(&self) -> &EffectsHub {
        &self.effects
    }

    /// The session's runtime handles (the same registries in every state version).
    pub fn runtime(&self) -> Runtime {
        self.store.with(|s| s.runtime.clone())
    }

    /// Applies merged settings after a settings file changed (UI-7); see
    /// [`apply_settings_change`].
    pub fn apply_settings_change(
        &self,
        source: strata_config::SettingsSource,
        merged: &strata_config::MergedSettings,
    ) -> Update {
        self.store.set(apply_settings_change(source, merged))
    }

    /// The start-up check of UI-6, to run once the UI is up, with the settings as they
    /// are now (`SettingsFiles::load().settings`).
    pub fn on_ui_ready(&self, current: &Settings) -> Update {
        self.store.set(disable_bypass_if_forbidden(current))
    }

    /// Applies a remote session's metadata (FX-7).
    pub fn apply_external_metadata(&self, metadata: &SessionExternalMetadata) -> Update {
        self.store.set(external_metadata_to_app_state(metadata))
    }

    /// Watches the settings files and applies every change to this store (UI-7); see
    /// [`watch_settings_with`](Self::watch_settings_with).
    pub fn watch_settings(
        &self,
        files: SettingsFiles,
        debounce: Duration,
    ) -> Result<SettingsWatcher, ConfigError> {
        self.watch_settings_with(files, debounce, |_| {})
    }

    /// Watches the settings files and applies every change to this store (UI-7), then
    /// hands the fresh merge to `on_reload` (for what reads settings beside the store,
    /// such as the agent's permission rules).
    ///
    /// On each reported change the sources are merged again ([`SettingsFiles::load`],
    /// which fails closed: a file that no longer parses — an editor mid-save, a typo —
    /// contributes its last good values, so they stay in force) and applied with
    /// [`apply_settings_change`]. A problem is reported once, when it first appears
    /// (file, line, column, what is wrong, and what stays in force): logged as a warning
    /// (stderr in headless mode) and shown as a notification. Nothing is written back to
    /// the file. Each reload after a reported change is logged at `info` ("settings
    /// reloaded", with the file). The sources are also merged once right after the watch
    /// starts, so an edit made between the caller's own load and the start is not
    /// missed. Dropping the returned watcher stops watching.
    pub fn watch_settings_with(
        &self,
        files: SettingsFiles,
        debounce: Duration,
        on_reload: impl FnMut(&MergedSettings) + Send + 'static,
    ) -> Result<SettingsWatcher, ConfigError> {
        let locations = files.locations().clone();
        let reload = Arc::new(Mutex::new(Reload {
            store: self.clone(),
            files,
            on_reload: Box::new(on_reload),
        }));
        let on_change = Arc::clone(&reload);
        let watcher = SettingsWatcher::start(&locations, debounce, move |change| {
            let mut reload = on_change.lock().unwrap_or_else(PoisonError::into_inner);
            reload.run(change.source);
            tracing::info!(
                source = %change.source,
                file = %change.path.display(),
                "settings reloaded"
            );
        })?;
        // A file changed after the caller's load but before the watch began is not
        // missed: merge once more now that the watch is running (unchanged files commit
        // nothing).
        reload
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .run(strata_config::SettingsSource::User);
        Ok(watcher)
    }
}

/// One settings reload: merge, report what is new, apply to the store, tell the hook.
struct Reload {
    store: AppStore,
    files: SettingsFiles,
    on_reload: Box<dyn FnMut(&MergedSettings) + Send>,
}

impl Reload {
    /// `source` is the source that changed, for the log.
    fn run(&mut self, source: strata_config::SettingsSource) {
        let merged = self.files.load();
        for warning in merged.new_warnings() {
            tracing::warn!("{warning}");
            let note = Notification {
                key: "settings-error".into(),
                text: Arc::from(warning),
                priority: NotificationPriority::High,
                timeout_ms: Some(15_000),
            };
            let _ = self
                .store
                .update(|s| s.ui.notifications = s.ui.notifications.push(note));
        }
        let _ = self.store.set(apply_settings_change(source, &merged));
        (self.on_reload)(&merged);
    }
}

impl Deref for AppStore {
    type Target = Store<AppState>;

    fn deref(&self) -> &Store<AppState> {
        &self.store
    }
}

impl std::fmt::Debug for AppStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppStore")
            .field("version", &self.store.version())
            .field("effects", &self.effects)
            .finish()
    }
}
