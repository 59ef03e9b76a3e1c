//! File history on disk: pre-edit backups, snapshot entries and rewind (SP-2, SP-3).
//!
//! The agent edits the user's files; rewinding a conversation must be able to put them
//! back. Like the reference agent, strata keeps, per session:
//!
//! - **backups** in `file-history/<session-id>/<sha256(absolute path)[..16]>@v<n>`: the
//!   contents of a file before the agent changed it (version `n` counts per file);
//! - **snapshots**, one per user prompt, written to the transcript as
//!   `file-history-snapshot` entries: for every tracked file, which backup holds its state
//!   at that prompt (`backupFileName: null` when the file did not exist then).
//!
//! Which files are tracked at which version is app state (`strata_state::FileHistory`,
//! changed by store updates); this module owns only the disk side, through
//! [`FileHistoryFiles`], which holds where things are and nothing else:
//!
//! 1. before an update, the agent *reads*: [`FileHistoryFiles::inspect`] (a file about to
//!    be edited: its key, whether it exists) and [`FileHistoryFiles::changed_since`]
//!    (which files of the last snapshot differ from their backup);
//! 2. the effects hub *writes* the change the update produced:
//!    [`FileHistoryFiles::write_backups`], then the entry goes to the transcript;
//! 3. [`FileHistoryFiles::rewind`] restores every tracked file to its state at a prompt —
//!    deleting files that did not exist then — or, as a dry run, reports what would
//!    change (files, inserted and deleted lines).
//!
//! Backup files are never deleted by strata while the session exists (later snapshots
//! may still name them).

mod rewind;
mod store;

use std::path::{Path, PathBuf};

use strata_protocol::transcript::{
    Entry, FileHistorySnapshot, FileHistorySnapshotEntry, MetadataEntry,
};

use crate::layout::SessionLayout;

pub use rewind::{ChangeKind, FileChange, RewindReport};

/// Errors of file history. Each names the file or message concerned.
#[derive(Debug, thiserror::Error)]
pub enum FileHistoryError {
    /// No snapshot belongs to the given user message.
    #[error(
        "no file-history snapshot for user message {uuid}: it is not a prompt of this session's live conversation{}",
        if *.at_cap { " or it is older than the last 100 prompts, whose snapshots are kept" } else { "" }
    )]
    UnknownMessage {
        /// The user message uuid asked for.
        uuid: String,
        /// Whether snapshots were dropped for the cap of 100 snapshots per session.
        at_cap: bool,
    },
    /// A tracked file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A backup could not be written; the edit it should protect must not go ahead.
    #[error("cannot write the backup {path}: {source}")]
    Backup {
        /// The backup file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A backup a snapshot names is missing or unreadable, so the rewind cannot restore
    /// that file. Nothing was changed.
    #[error(
        "cannot rewind {file}: its backup {backup} is missing or unreadable ({source}); no file was changed"
    )]
    BackupMissing {
        /// The tracked file.
        file: String,
        /// The backup file.
        backup: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A snapshot names a backup outside the session's backup folder (`../…`, an
    /// absolute path): a damaged or crafted transcript. Nothing was changed.
    #[error(
        "cannot rewind {file}: the transcript names the backup {backup:?}, which is not a file name inside the session's backup folder; no file was changed"
    )]
    UnsafeBackupName {
        /// The tracked file.
        file: String,
        /// The name the transcript gives.
        backup: String,
    },
    /// Restoring or deleting a file failed part way. Files listed before it in the
    /// report were restored.
    #[error("cannot restore {path}: {source}")]
    Restore {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
}

/// A file as it is now: its snapshot key, its absolute path, whether it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    /// The snapshot key: relative to the session's cwd when inside it, else absolute.
    pub key: String,
    /// The absolute path, cleaned of `.` and `..`.
    pub absolute: PathBuf,
    /// Whether the file exists.
    pub exists: bool,
}

/// Where one session's file history lives on disk: its backup folder and the working
/// directory its keys are relative to. Holds no history: that is app state.
#[derive(Debug, Clone)]
pub struct FileHistoryFiles {
    /// `file-history/<session-id>/`.
    backups_dir: PathBuf,
    /// The session's working directory: relative keys are relative to it.
    cwd: PathBuf,
}

impl FileHistoryFiles {
    /// The files of session `layout` whose tools run in `cwd`.
    pub fn new(layout: &SessionLayout, cwd: impl Into<PathBuf>) -> Self {
        Self::in_dir(layout.file_history_dir(), cwd)
    }

    /// Files keeping their backups in `backups_dir`.
    pub fn in_dir(backups_dir: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            backups_dir: backups_dir.into(),
            cwd: cwd.into(),
        }
    }

    /// Where the backups are.
    pub fn backups_dir(&self) -> &Path {
        &self.backups_dir
    }

    /// The state of `path` (absolute, or relative to the session's cwd) before a tool
    /// edits it.
    pub fn inspect(&self, path: &Path) -> Result<FileState, FileHistoryError> {
        let absolute = store::absolute(&self.cwd, path);
        let key = store::key_for(&self.cwd, &absolute);
        let exists = store::read_state(&absolute)?.is_some();
        Ok(FileState {
            key,
            absolute,
            exists,
        })
    }

    /// The files tracked in `latest` (the previous prompt's snapshot) whose contents
    /// differ from the backup it names (or that appeared or disappeared since): they
    /// need a new backup version in the next snapshot.
    pub fn changed_since(
        &self,
        latest: &FileHistorySnapshot,
    ) -> Result<Vec<FileState>, FileHistoryError> {
        let mut changed = Vec::new();
        for (key, backup) in &latest.tracked_file_backups {
            let absolute = store::absolute(&self.cwd, Path::new(key));
            let current = store::read_state(&absolute)?;
            let unchanged = match (&backup.backup_file_name, &current) {
                (None, None) => true,
                (Some(name), Some(bytes)) => {
                    rewind::is_plain_file_name(name)
                        && store::backup_matches(&self.backups_dir.join(name), bytes)
                }
                _ => false,
            };
            if !unchanged {
                changed.push(FileState {
                    key: key.clone(),
                    absolute,
                    exists: current.is_some(),
                });
            }
        }
        Ok(changed)
    }

    /// Copies each `(source, backup file name)` into the backup folder, durably, in
    /// order; stops at the first failure (the edit it protects must not go ahead).
    pub fn write_backups<'a>(
        &self,
        backups: impl IntoIterator<Item = (&'a Path, &'a str)>,
    ) -> Result<(), FileHistoryError> {
        for (source, name) in backups {
            if !rewind::is_plain_file_name(name) {
                return Err(FileHistoryError::Backup {
                    path: self.backups_dir.join(name),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "a backup name must be one file name",
                    ),
                });
            }
            store::write_backup(source, &self.backups_dir.join(name))?;
        }
        Ok(())
    }

    /// Restores every tracked file to its state at user message `to_user_message`
    /// (deleting files that did not exist then), or with `dry_run` only reports what
    /// would change. `snapshots` are the session's, oldest first; `dropped` says older
    /// ones were dropped for the cap (the error for an unknown message says so). Every
    /// backup is read before any file is touched, so a missing backup changes nothing.
    pub fn rewind<'a>(
        &self,
        snapshots: impl IntoIterator<Item = &'a FileHistorySnapshot>,
        dropped: bool,
        to_user_message: &str,
        dry_run: bool,
    ) -> Result<RewindReport, FileHistoryError> {
        let snapshots: Vec<&FileHistorySnapshot> = snapshots.into_iter().collect();
        let Some(index) = snapshots
            .iter()
            .rposition(|s| s.message_id == to_user_message)
        else {
            return Err(FileHistoryError::UnknownMessage {
                uuid: to_user_message.to_owned(),
                at_cap: dropped,
            });
        };
        let targets = rewind::targets(snapshots[index..].iter().copied());
        rewind::run(
            &self.backups_dir,
            &self.cwd,
            to_user_message,
            targets,
            dry_run,
        )
    }
}

/// The name of version `version` of the backup of `absolute`: `<sha256[..16]>@v<n>`, as
/// the reference agent names them.
pub fn backup_name(absolute: &Path, version: u32) -> String {
    store::backup_name(absolute, version)
}

/// A snapshot entry as the transcript holds it.
pub fn snapshot_entry(entry: FileHistorySnapshotEntry) -> Entry {
    Entry::Metadata(MetadataEntry::FileHistorySnapshot(entry))
}

/// The reference's timestamp format: RFC 3339, milliseconds, `Z`.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
