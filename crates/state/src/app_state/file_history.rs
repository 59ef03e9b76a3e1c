//! The file-history domain of the app state (AS-1; SP-2, SP-3): which files the agent
//! backed up, at which version, in the snapshot of which user prompt.
//!
//! This is the only copy of a session's file history. It is plain data and pure
//! updaters; everything that touches the disk lives elsewhere:
//!
//! - *reading* the files (which tracked files changed since their last backup, whether a
//!   file about to be edited exists) is done by the caller before it updates the store;
//! - *writing* — the backup files and the transcript's `file-history-snapshot` entries —
//!   is an effect: each updater that changes the history also sets
//!   [`FileHistory::last_change`], and the effects hub hands every new change to the
//!   file-history port exactly once (FX-6: never at the call site);
//! - rewinding reads [`FileHistory::snapshots`] from a store snapshot.
//!
//! The updaters follow the store's no-change rule: one that finds nothing to do returns
//! `None` (the caller then returns the previous state's `Arc`, an O(1) "unchanged").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use smol_str::SmolStr;
use strata_protocol::transcript::{FileBackup, FileHistorySnapshot, FileHistorySnapshotEntry};

use super::AppState;

/// The most snapshots a session keeps; older ones are dropped (as the reference agent
/// does), and their prompts can no longer be rewound to.
pub const MAX_FILE_HISTORY_SNAPSHOTS: usize = 100;

/// Pre-edit backups of files, one snapshot per user prompt, for rewind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileHistory {
    /// Snapshots in prompt order, oldest first, at most [`MAX_FILE_HISTORY_SNAPSHOTS`].
    pub snapshots: imbl::Vector<Arc<FileHistorySnapshot>>,
    /// The highest backup version of every file ever tracked (by snapshot key), so
    /// versions keep counting after old snapshots are dropped or a session is resumed.
    pub versions: imbl::OrdMap<SmolStr, u32>,
    /// Snapshots were dropped for the cap (a rewind to an unknown prompt says so).
    pub snapshots_dropped: bool,
    /// The newest change still to be persisted (or already persisted): the hub persists
    /// it when it is a new `Arc`. `None` after a resume and after a failed edit's
    /// backup was withdrawn ([`FileHistory::without_failed_edit`]).
    pub last_change: Option<Arc<FileHistoryChange>>,
    /// Counts changes, so a caller can ask the port about the outcome of its own.
    pub change_sequence: u64,
}

/// What one update of the file history asks the session layer to persist, in order:
/// the backups, then the transcript entry.
#[derive(Clone, Debug, PartialEq)]
pub struct FileHistoryChange {
    /// [`FileHistory::change_sequence`] after this change.
    pub sequence: u64,
    /// The `file-history-snapshot` entry to append (`isSnapshotUpdate` false for a new
    /// prompt's snapshot, true when an edit extended it).
    pub entry: FileHistorySnapshotEntry,
    /// Backup files to write before the entry.
    pub backups: Vec<PendingBackup>,
}

/// One backup file to write: the current contents of `source`, copied to
/// `backup_file_name` in the session's backup folder.
///
/// The contents are not captured here (a file can be large); the port copies `source`
/// while the commit is delivered, which happens before the update returns to a caller
/// outside store callbacks (store contract, rule 5) — so before the tool writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingBackup {
    /// The file, absolute.
    pub source: PathBuf,
    /// The backup's file name, `<hash>@v<n>`.
    pub backup_file_name: String,
}

/// A file the caller inspected before an update: its snapshot key, where it is, and
/// whether it exists now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InspectedFile {
    /// The snapshot key (relative to the session's cwd when inside it).
    pub key: String,
    /// The absolute path.
    pub absolute: PathBuf,
    /// Whether the file exists (a missing file is recorded with no backup).
    pub exists: bool,
}

/// Names the backup of `absolute` at `version` (the session layer's naming rule).
pub type BackupNamer<'a> = &'a dyn Fn(&Path, u32) -> String;

/// Why an edit cannot be tracked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileHistoryUpdateError {
    /// An edit came before any prompt was snapshotted.
    #[error("cannot back up {path} before an edit: no user prompt has been snapshotted yet")]
    NoSnapshot {
        /// The file about to be edited.
        path: PathBuf,
    },
}

impl FileHistory {
    /// The history of a resumed session: `snapshots` are those of the live branch, in
    /// order; `newest` is the newest snapshot of the whole transcript, so versions
    /// continue past backups written on a dead branch. Nothing is to be persisted.
    pub fn resumed(
        snapshots: impl IntoIterator<Item = FileHistorySnapshot>,
        newest: Option<&FileHistorySnapshot>,
    ) -> Self {
        let mut history = Self::default();
        for snapshot in snapshots {
            history.note_versions(&snapshot);
            history.push(Arc::new(snapshot));
        }
        if let Some(newest) = newest {
            history.note_versions(newest);
        }
        history
    }

    /// The snapshot of the current prompt, if any.
    pub fn latest(&self) -> Option<&Arc<FileHistorySnapshot>> {
        self.snapshots.back()
    }

    /// Whether the current prompt's snapshot already holds `key`'s state.
    pub fn tracks(&self, key: &str) -> bool {
        self.latest()
            .is_some_and(|s| s.tracked_file_backups.contains_key(key))
    }

    /// The snapshot of prompt `message_id`: every file tracked so far is carried over,
    /// and those in `changed` (inspected by the caller: they differ from their last
    /// backup) get a new version. Always a change: each prompt has its snapshot.
    pub fn with_snapshot(
        &self,
        message_id: &str,
        changed: &[InspectedFile],
        name: BackupNamer<'_>,
        now: &str,
    ) -> FileHistory {
        let mut next = self.clone();
        let mut backups = Vec::new();
        let mut tracked = BTreeMap::new();
        let previous = self
            .latest()
            .map(|s| s.tracked_file_backups.clone())
            .unwrap_or_default();
        for (key, backup) in previous {
            let entry = match changed.iter().find(|f| f.key == key) {
                Some(file) => next.back_up(file, name, now, &mut backups),
                None => backup,
            };
            tracked.insert(key, entry);
        }
        let snapshot = FileHistorySnapshot {
            message_id: message_id.to_owned(),
            tracked_file_backups: tracked,
            timestamp: now.to_owned(),
            extra: Default::default(),
        };
        next.push(Arc::new(snapshot.clone()));
        next.set_change(message_id, snapshot, false, backups);
        next
    }

    /// Adds `file` to the current prompt's snapshot before a tool first edits it in
    /// this turn (`message_uuid`: the message the entry is filed under). `Ok(None)`:
    /// its state at this prompt is already saved, nothing changes.
    pub fn with_edit(
        &self,
        file: &InspectedFile,
        message_uuid: &str,
        name: BackupNamer<'_>,
        now: &str,
    ) -> Result<Option<FileHistory>, FileHistoryUpdateError> {
        if self.latest().is_none() {
            return Err(FileHistoryUpdateError::NoSnapshot {
                path: file.absolute.clone(),
            });
        }
        if self.tracks(&file.key) {
            return Ok(None);
        }
        let mut next = self.clone();
        let mut backups = Vec::new();
        let backup = next.back_up(file, name, now, &mut backups);
        let Some(latest) = next.snapshots.back_mut() else {
            return Err(FileHistoryUpdateError::NoSnapshot {
                path: file.absolute.clone(),
            });
        };
        let snapshot = Arc::make_mut(latest);
        snapshot
            .tracked_file_backups
            .insert(file.key.clone(), backup);
        let snapshot = snapshot.clone();
        next.set_change(message_uuid, snapshot, true, backups);
        Ok(Some(next))
    }

    /// Withdraws `key` from the current snapshot after the backup of change `sequence`
    /// failed (the edit it protected did not happen), so the next attempt backs it up
    /// again instead of believing it saved. `None` when a later change came first or the
    /// key is not tracked.
    pub fn without_failed_edit(&self, sequence: u64, key: &str) -> Option<FileHistory> {
        if self.last_change.as_ref().map(|c| c.sequence) != Some(sequence) || !self.tracks(key) {
            return None;
        }
        let mut next = self.clone();
        if let Some(latest) = next.snapshots.back_mut() {
            Arc::make_mut(latest).tracked_file_backups.remove(key);
        }
        next.last_change = None;
        Some(next)
    }

    fn back_up(
        &mut self,
        file: &InspectedFile,
        name: BackupNamer<'_>,
        now: &str,
        backups: &mut Vec<PendingBackup>,
    ) -> FileBackup {
        let key = SmolStr::new(&file.key);
        let version = self.versions.get(&key).copied().unwrap_or(0) + 1;
        self.versions.insert(key, version);
        let backup_file_name = file.exists.then(|| {
            let backup_file_name = name(&file.absolute, version);
            backups.push(PendingBackup {
                source: file.absolute.clone(),
                backup_file_name: backup_file_name.clone(),
            });
            backup_file_name
        });
        FileBackup {
            backup_file_name,
            version,
            backup_time: now.to_owned(),
            extra: Default::default(),
        }
    }

    fn set_change(
        &mut self,
        message_id: &str,
        snapshot: FileHistorySnapshot,
        update: bool,
        backups: Vec<PendingBackup>,
    ) {
        self.change_sequence += 1;
        self.last_change = Some(Arc::new(FileHistoryChange {
            sequence: self.change_sequence,
            entry: FileHistorySnapshotEntry {
                message_id: message_id.to_owned(),
                snapshot,
                is_snapshot_update: update,
                extra: Default::default(),
            },
            backups,
        }));
    }

    fn note_versions(&mut self, snapshot: &FileHistorySnapshot) {
        for (key, backup) in &snapshot.tracked_file_backups {
            let v = self.versions.entry(SmolStr::new(key)).or_insert(0);
            *v = (*v).max(backup.version);
        }
    }

    fn push(&mut self, snapshot: Arc<FileHistorySnapshot>) {
        self.snapshots.push_back(snapshot);
        while self.snapshots.len() > MAX_FILE_HISTORY_SNAPSHOTS {
            self.snapshots.pop_front();
            self.snapshots_dropped = true;
        }
    }
}

/// The store updater of the file-history domain: `update` returns the next history, or
/// `None` for "nothing changes", in which case `state` itself is returned (the same
/// `Arc`: the store commits nothing, O(1)). Every other domain is shared, not copied.
///
/// ```
/// use std::sync::Arc;
/// use strata_state::{default_app_state, update_file_history, RuntimeFacts};
/// let state = Arc::new(default_app_state(RuntimeFacts::default()));
/// let same = update_file_history(&state, |_| None);
/// assert!(Arc::ptr_eq(&same, &state));
/// ```
pub fn update_file_history(
    state: &Arc<AppState>,
    update: impl FnOnce(&FileHistory) -> Option<FileHistory>,
) -> Arc<AppState> {
    match update(&state.file_history) {
        None => Arc::clone(state),
        Some(file_history) => Arc::new(AppState {
            file_history,
            ..AppState::clone(state)
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
