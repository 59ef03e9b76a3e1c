//! The global config file (`<config>/config.json`): view flags and per-project cost slots.
//!
//! Written by the effects hub (FX-3, FX-4: only when a stored value differs) and by session
//! shutdown (SP-4 cost slot), possibly from several strata processes at once, so every
//! write goes through the locked read-modify-write of [`crate::atomic`].

use std::path::{Path, PathBuf};

use strata_protocol::global_config::GlobalConfig;

use crate::atomic::{self, Decision};
use crate::document::{self, JsonObject};
use crate::error::ConfigError;
use crate::paths;
use crate::settings_files::{Updated, update_object};

/// The global config file.
///
/// ```
/// use strata_config::GlobalConfigFile;
///
/// let tmp = tempfile::tempdir().unwrap();
/// let file = GlobalConfigFile::new(tmp.path());
/// // FX-4: write `verbose` only when it differs from what is stored.
/// assert!(file.update(|c| c.verbose = Some(true)).unwrap().written);
/// assert!(!file.update(|c| c.verbose = Some(true)).unwrap().written);
/// assert_eq!(file.read().unwrap().verbose, Some(true));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalConfigFile {
    path: PathBuf,
}

impl GlobalConfigFile {
    /// `config.json` in the given config directory.
    pub fn new(config_dir: &Path) -> Self {
        Self {
            path: paths::global_config_file(config_dir),
        }
    }

    /// The global config at an explicit path.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current config; the default (empty) one when the file does not exist. A file
    /// that does not parse or validate is an error naming its line and column.
    pub fn read(&self) -> Result<GlobalConfig, ConfigError> {
        Ok(self.read_both()?.map(|(_, c)| c).unwrap_or_default())
    }

    /// The current config as JSON (empty when the file does not exist).
    pub fn read_raw(&self) -> Result<JsonObject, ConfigError> {
        Ok(self.read_both()?.map(|(o, _)| o).unwrap_or_default())
    }

    /// Edits the typed config under the lock. Writes only when the edit changed something
    /// (compared as values, ignoring key order); unknown keys and key order are kept.
    /// Like [`crate::SettingsFiles::update`], `edit` may run twice (an unlocked no-change
    /// check first) and must be a function of the config it is given.
    pub fn update<T>(
        &self,
        mut edit: impl FnMut(&mut GlobalConfig) -> T,
    ) -> Result<Updated<T>, ConfigError> {
        let label = self.label();
        let current = self.read()?;
        let mut probe = current.clone();
        let value = edit(&mut probe);
        if probe == current {
            return Ok(Updated {
                written: false,
                value,
            });
        }
        let (written, value) = atomic::locked_update(&self.path, &self.root(), |bytes| {
            let current = match bytes {
                Some(b) => document::parse::<GlobalConfig>(b, &label)?.1,
                None => GlobalConfig::default(),
            };
            let mut next = current.clone();
            let value = edit(&mut next);
            if next == current {
                return Ok(Decision::Keep(value));
            }
            Ok(Decision::Write(document::to_bytes(&next), value))
        })?;
        Ok(Updated { written, value })
    }

    /// Edits the config as JSON under the lock (for keys strata does not type). The result
    /// must still validate as [`GlobalConfig`], else [`ConfigError::Rejected`].
    pub fn update_raw<T>(
        &self,
        edit: impl FnMut(&mut JsonObject) -> T,
    ) -> Result<Updated<T>, ConfigError> {
        update_object::<GlobalConfig, T>(&self.path, &self.root(), edit)
    }

    fn read_both(&self) -> Result<Option<(JsonObject, GlobalConfig)>, ConfigError> {
        match atomic::read(&self.path)? {
            None => Ok(None),
            Some(bytes) => Ok(Some(document::parse::<GlobalConfig>(
                &bytes,
                &self.label(),
            )?)),
        }
    }

    /// Where a write may create directories: the config directory (the file's own).
    fn root(&self) -> PathBuf {
        self.path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    fn label(&self) -> String {
        self.path.display().to_string()
    }
}
