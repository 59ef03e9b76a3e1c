//! The strata application state: one value for the whole session, its domains, the pure
//! functions that derive and transition it, and the one place its changes reach the
//! outside world.
//!
//! # What this crate owns
//!
//! - [`AppState`] (`app_state`): every domain of AS-1 as typed data, with runtime
//!   handles kept apart in [`Runtime`] (AS-2) and structural sharing throughout (AS-4).
//! - [`default_app_state`] (`defaults`): the initial state from [`RuntimeFacts`] (AS-5).
//! - [`SessionScope`], [`AppRoot`] and [`AppStore`] (`root`): the one root store of a
//!   session (UI-1, UI-5), with the effects hub as its change hook.
//! - [`effects`]: the hub ([`EffectsHub`], FX-1 … FX-5), its ports and their real and
//!   recording implementations, and the reverse bridge from remote metadata (FX-7).
//! - [`apply_settings_change`] and [`disable_bypass_if_forbidden`] (`settings_sync`):
//!   settings files into the state (UI-7, UI-6).
//! - [`tasks`]: the task map and the agent-view domain: lifecycle updaters, selectors
//!   (SL-1), transitions (SL-2) and the retain/release/evict memory discipline (SL-3).
//!
//! # Creating the session's store
//!
//! ```
//! use strata_config::{GlobalConfigFile, SettingsFiles, SettingsLocations};
//! use strata_state::{default_app_state, EffectsHub, Ports, RuntimeFacts, SessionScope};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let (config_dir, project_root) = (dir.path().join("cfg"), dir.path().join("proj"));
//! // The files (in the program: SettingsLocations::discover(&cwd) and paths::config_dir()).
//! let files = SettingsFiles::new(SettingsLocations::new(&config_dir, &project_root));
//! let global = GlobalConfigFile::new(&config_dir);
//!
//! // AS-5: the initial state from the files and the command line.
//! let facts = RuntimeFacts {
//!     interactive: true,
//!     ..RuntimeFacts::from_config(&files.load(), global.read().unwrap())
//! };
//! let initial = default_app_state(facts);
//!
//! // The real ports, sharing the initial state's runtime (environment overlay, caches).
//! let ports = Ports::from_files(files.clone(), global, strata_bootstrap::global(), &initial.runtime);
//! let root = SessionScope::new() // the program uses SessionScope::global()
//!     .create_root(initial, EffectsHub::new(ports))
//!     .unwrap();
//!
//! // Read, select, update: every change goes through the hook.
//! let store = root.store().clone();
//! let mut verbose = store.select(|s| s.verbose);
//! store.update(|s| s.verbose = true); // FX-4: config.json gains "verbose": true
//! assert!(verbose.changed(&store));
//! assert!(store.get().verbose);
//! ```

pub mod app_state;
mod defaults;
pub mod effects;
mod root;
mod settings_sync;
pub mod tasks;

pub use app_state::*;
pub use defaults::{PROMPT_SUGGESTION_SETTING, RuntimeFacts, default_app_state};
pub use effects::{
    EffectError, EffectsHub, FileHistoryPort, MemoryGlobalConfig, Ports, RecordingCredentials,
    RecordingFileHistory, RecordingPorts, RecordingRemote, RecordingSdk, RecordingSettings,
    SessionExternalMetadata, SessionMetadataPatch, external_metadata_to_app_state,
};
pub use root::{AppRoot, AppStore, RootError, SessionScope, current_app_store};
pub use settings_sync::{apply_settings_change, disable_bypass_if_forbidden};
