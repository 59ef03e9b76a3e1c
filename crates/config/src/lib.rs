//! The strata configuration directory and the files in it.
//!
//! Everything strata keeps between runs lives under one directory (`$STRATA_CONFIG_DIR`,
//! else `~/.strata`) laid out like the reference agent's, plus per-project settings under
//! `<project>/.strata/`. This crate owns:
//!
//! - where those files are ([`paths`], [`sources`]), the reference agent's settings files
//!   of the same scopes included (`~/.claude/settings.json`, `.claude/settings.json`,
//!   `.claude/settings.local.json`: read beside strata's, strata's winning a value both
//!   set, never written);
//! - reading and merging the settings sources, with per-value provenance and per-file
//!   errors that name file, line and column ([`SettingsFiles::load`]; objects deep-merge,
//!   later sources win for scalars, arrays concatenate without duplicates), failing
//!   closed: a broken file keeps its last good rules, or makes them unknown, never drops
//!   them; every read is bounded ([`MAX_CONFIG_FILE_BYTES`], regular files only);
//! - writing a settings source or the global config safely: exclusive lock on the file's
//!   directory, re-read inside the lock, atomic replace, unknown keys and key order kept,
//!   nothing written when nothing changed ([`SettingsFiles::update`],
//!   [`GlobalConfigFile::update`], protocol in `atomic`);
//! - watching the settings files and reporting which source changed
//!   ([`SettingsWatcher`], UI-7);
//! - the `remote` block as a session may use it ([`remote_config`]: only from the user's,
//!   the `--settings` and the managed settings, never a project's; a bad block is an
//!   error, not a key to leave out).
//!
//! The typed shapes (settings schema, global config, permission modes) live in
//! `strata-protocol`; this crate adds the I/O. The app-state effects hub (FX-2..FX-5)
//! builds its ports on [`SettingsFiles`] and [`GlobalConfigFile`].

mod atomic;
mod document;
pub mod error;
mod global_config;
pub mod keypath;
mod merge;
pub mod paths;
mod reading;
mod remote;
pub mod rule_text;
mod settings_files;
pub mod sources;
pub mod watch;

pub use atomic::{MAX_CONFIG_FILE_BYTES, read_bounded};
pub use document::JsonObject;
pub use error::{ConfigError, ParseError};
pub use global_config::GlobalConfigFile;
pub use remote::{RemoteConfig, RemoteConfigError, RemoteTlsConfig, remote_config};
pub use settings_files::{
    BadKey, MergedEntry, MergedSettings, SettingsFiles, SourceFile, UnknownPermissions, Updated,
};
pub use sources::{
    FlagSettings, INLINE_FLAG_LABEL, ReferenceFiles, SettingsLocations, SettingsSource,
};
pub use watch::{SettingsChange, SettingsWatcher};
