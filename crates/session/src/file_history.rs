//! File history: pre-edit backups, snapshots and rewind (SP-2, SP-3; issue 5 part 6).
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
//! The life of a turn, as the agent drives it:
//!
//! 1. The user submits prompt `U`: [`FileHistory::make_snapshot`]`(U)` re-checks every
//!    tracked file, backs up those that changed since their last backup (new version),
//!    and returns the snapshot entry (`isSnapshotUpdate: false`) to append.
//! 2. Before a tool first edits a file in that turn: [`FileHistory::track_edit`]`(path,
//!    assistant message uuid)` backs the file up (or records that it does not exist) and
//!    returns an updated snapshot entry (`isSnapshotUpdate: true`, `snapshot.messageId`
//!    still `U`, top-level `messageId` the assistant message, as the reference writes
//!    it). Files already tracked return `None`: their state at `U` is already saved.
//! 3. [`FileHistory::rewind`]`(U)` restores every tracked file to its state at `U` —
//!    deleting files that did not exist then — or, as a dry run, reports what would
//!    change (files, inserted and deleted lines).
//!
//! At most [`MAX_SNAPSHOTS`] snapshots are kept (the oldest are dropped); a rewind to a
//! prompt older than that is refused with an error saying so. Backup files are never
//! deleted by strata while the session exists (later snapshots may still name them).

mod rewind;
mod store;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use strata_protocol::transcript::{
    Entry, FileBackup, FileHistorySnapshot, FileHistorySnapshotEntry, MetadataEntry,
};

use crate::layout::SessionLayout;

pub use rewind::{ChangeKind, FileChange, RewindReport};

/// The most snapshots a session keeps; older ones are dropped (as the reference agent
/// does), and their prompts can no longer be rewound to.
pub const MAX_SNAPSHOTS: usize = 100;

/// Errors of file history. Each names the file or message concerned.
#[derive(Debug, thiserror::Error)]
pub enum FileHistoryError {
    /// An edit was tracked before any snapshot was made (the agent must call
    /// [`FileHistory::make_snapshot`] when a prompt is submitted).
    #[error("cannot back up {path} before an edit: no user prompt has been snapshotted yet")]
    NoSnapshot {
        /// The file about to be edited.
        path: PathBuf,
    },
    /// No snapshot belongs to the given user message.
    #[error(
        "no file-history snapshot for user message {uuid}: it is not a prompt of this session's live conversation{}",
        if *.at_cap { " or it is older than the last 100 prompts, whose snapshots are kept" } else { "" }
    )]
    UnknownMessage {
        /// The user message uuid asked for.
        uuid: String,
        /// Whether snapshots were dropped because of [`MAX_SNAPSHOTS`].
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

/// The file history of one session.
#[derive(Debug, Clone)]
pub struct FileHistory {
    /// `file-history/<session-id>/`.
    backups_dir: PathBuf,
    /// The session's working directory: relative keys are relative to it.
    cwd: PathBuf,
    /// Oldest first, at most [`MAX_SNAPSHOTS`].
    snapshots: VecDeque<FileHistorySnapshot>,
    /// The highest backup version of every file ever tracked, so versions keep counting
    /// even after old snapshots are dropped or a session is resumed.
    versions: HashMap<String, u32>,
    /// Whether snapshots were dropped for the cap.
    dropped: bool,
}

impl FileHistory {
    /// An empty history for a new session whose tools run in `cwd`.
    pub fn new(layout: &SessionLayout, cwd: impl Into<PathBuf>) -> Self {
        Self::in_dir(layout.file_history_dir(), cwd)
    }

    /// An empty history keeping its backups in `backups_dir`.
    pub fn in_dir(backups_dir: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            backups_dir: backups_dir.into(),
            cwd: cwd.into(),
            snapshots: VecDeque::new(),
            versions: HashMap::new(),
            dropped: false,
        }
    }

    /// The history of a resumed session: `snapshots` are those of the user messages on
    /// the live branch, in order (what the loader rebuilds); `newest` is the newest
    /// snapshot in the whole file, live or not, so backup versions continue past any
    /// written on a dead branch.
    pub fn resume(
        layout: &SessionLayout,
        cwd: impl Into<PathBuf>,
        snapshots: impl IntoIterator<Item = FileHistorySnapshot>,
        newest: Option<&FileHistorySnapshot>,
    ) -> Self {
        let mut history = Self::new(layout, cwd);
        for snapshot in snapshots {
            history.note_versions(&snapshot);
            history.push(snapshot);
        }
        if let Some(newest) = newest {
            history.note_versions(newest);
        }
        history
    }

    /// The snapshots kept, oldest first.
    pub fn snapshots(&self) -> impl ExactSizeIterator<Item = &FileHistorySnapshot> {
        self.snapshots.iter()
    }

    /// Where the backups are.
    pub fn backups_dir(&self) -> &Path {
        &self.backups_dir
    }

    /// Takes the snapshot of user prompt `user_message_uuid`: every tracked file that
    /// changed since its last backup is backed up again. Returns the entry to append to
    /// the transcript.
    pub fn make_snapshot(&mut self, user_message_uuid: &str) -> Result<Entry, FileHistoryError> {
        let now = now();
        let mut tracked = BTreeMap::new();
        let previous = self
            .snapshots
            .back()
            .map(|s| s.tracked_file_backups.clone());
        for (key, backup) in previous.unwrap_or_default() {
            let abs = store::absolute(&self.cwd, Path::new(&key));
            let current = store::read_state(&abs)?;
            let unchanged = match (&backup.backup_file_name, &current) {
                (None, None) => true,
                (Some(name), Some(bytes)) => {
                    store::backup_matches(&self.backups_dir.join(name), bytes)
                }
                _ => false,
            };
            let entry = if unchanged {
                backup
            } else {
                self.back_up(&key, &abs, current.is_some(), &now)?
            };
            tracked.insert(key, entry);
        }
        let snapshot = FileHistorySnapshot {
            message_id: user_message_uuid.to_owned(),
            tracked_file_backups: tracked,
            timestamp: now,
            extra: Default::default(),
        };
        self.push(snapshot.clone());
        Ok(snapshot_entry(user_message_uuid, snapshot, false))
    }

    /// Call before a tool edits `path` (absolute, or relative to the session's cwd) for
    /// the first time in the current turn; `message_uuid` is the assistant message that
    /// asked for the edit. Backs the file up (or records that it does not exist) and
    /// returns the updated snapshot entry to append, or `None` when the file's state at
    /// this prompt is already saved.
    ///
    /// If this returns an error the backup did not happen: do not perform the edit.
    pub fn track_edit(
        &mut self,
        path: &Path,
        message_uuid: &str,
    ) -> Result<Option<Entry>, FileHistoryError> {
        let abs = store::absolute(&self.cwd, path);
        let key = store::key_for(&self.cwd, &abs);
        let Some(current) = self.snapshots.back() else {
            return Err(FileHistoryError::NoSnapshot { path: abs });
        };
        if current.tracked_file_backups.contains_key(&key) {
            return Ok(None);
        }
        let exists = store::read_state(&abs)?.is_some();
        let backup = self.back_up(&key, &abs, exists, &now())?;
        let Some(current) = self.snapshots.back_mut() else {
            return Err(FileHistoryError::NoSnapshot { path: abs });
        };
        current.tracked_file_backups.insert(key, backup);
        Ok(Some(snapshot_entry(message_uuid, current.clone(), true)))
    }

    /// Restores every tracked file to its state at user message `to_user_message`
    /// (deleting files that did not exist then), or with `dry_run` only reports what
    /// would change. Every backup is read before any file is touched, so a missing
    /// backup changes nothing.
    pub fn rewind(
        &self,
        to_user_message: &str,
        dry_run: bool,
    ) -> Result<RewindReport, FileHistoryError> {
        let Some(index) = self
            .snapshots
            .iter()
            .rposition(|s| s.message_id == to_user_message)
        else {
            return Err(FileHistoryError::UnknownMessage {
                uuid: to_user_message.to_owned(),
                at_cap: self.dropped,
            });
        };
        let targets = rewind::targets(self.snapshots.range(index..));
        rewind::run(
            &self.backups_dir,
            &self.cwd,
            to_user_message,
            targets,
            dry_run,
        )
    }

    /// Makes a new backup version of `key` (the file's current contents, or a record that
    /// it does not exist).
    fn back_up(
        &mut self,
        key: &str,
        abs: &Path,
        exists: bool,
        now: &str,
    ) -> Result<FileBackup, FileHistoryError> {
        let version = self.versions.get(key).copied().unwrap_or(0) + 1;
        let backup_file_name = if exists {
            let name = store::backup_name(abs, version);
            store::write_backup(abs, &self.backups_dir.join(&name))?;
            Some(name)
        } else {
            None
        };
        self.versions.insert(key.to_owned(), version);
        Ok(FileBackup {
            backup_file_name,
            version,
            backup_time: now.to_owned(),
            extra: Default::default(),
        })
    }

    fn note_versions(&mut self, snapshot: &FileHistorySnapshot) {
        for (key, backup) in &snapshot.tracked_file_backups {
            let v = self.versions.entry(key.clone()).or_insert(0);
            *v = (*v).max(backup.version);
        }
    }

    fn push(&mut self, snapshot: FileHistorySnapshot) {
        self.snapshots.push_back(snapshot);
        while self.snapshots.len() > MAX_SNAPSHOTS {
            self.snapshots.pop_front();
            self.dropped = true;
        }
    }
}

fn snapshot_entry(message_id: &str, snapshot: FileHistorySnapshot, update: bool) -> Entry {
    Entry::Metadata(MetadataEntry::FileHistorySnapshot(
        FileHistorySnapshotEntry {
            message_id: message_id.to_owned(),
            snapshot,
            is_snapshot_update: update,
            extra: Default::default(),
        },
    ))
}

/// The reference's timestamp format: RFC 3339, milliseconds, `Z`.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
