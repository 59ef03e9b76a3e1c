//! The central change-effects hub (FX-1 … FX-7) and its ports.
//!
//! App-state changes (the permission mode, the model, the view flags, settings, and the
//! file history's backups and snapshot entries) reach the outside world in exactly one place: the root store's
//! change hook, [`EffectsHub::on_change`]. The reference agent learned why the hard way:
//! the permission mode had eight mutation paths and only two told the remote session, so
//! its web view drifted from the terminal. Here a path cannot forget an effect, because
//! no path performs one (FX-6).
//!
//! - [`hub`]: the hub and its rules.
//! - [`ports`]: the traits it talks through, the patch it sends to the remote session,
//!   and [`Ports`], the bundle of them.
//! - [`files`]: the real ports (the config files through `strata-config`, bootstrap, the
//!   runtime registries).
//! - [`recording`]: in-memory ports for tests.
//! - [`metadata`]: FX-7, the reverse bridge from remote metadata to the store.

pub mod files;
pub mod hub;
pub mod metadata;
pub mod ports;
pub mod recording;

pub use hub::EffectsHub;
pub use metadata::external_metadata_to_app_state;
pub use ports::{
    BootstrapPort, CredentialCachePort, EffectError, EnvironmentPort, FileHistoryPort,
    GlobalConfigPort, Ports, RemoteMetadataPort, SdkStatusPort, SessionExternalMetadata,
    SessionMetadataPatch, SettingsWriter,
};
pub use recording::{
    MemoryGlobalConfig, RecordingCredentials, RecordingFileHistory, RecordingPorts,
    RecordingRemote, RecordingSdk, RecordingSettings,
};
