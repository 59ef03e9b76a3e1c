//! File history of a live session (SP-2, SP-3): the app state's file-history domain is
//! the only copy; this module drives it and persists it.
//!
//! - [`snapshot_prompt`] and [`before_edit`] *read* the files (which changed since their
//!   backup; whether the file about to be edited exists), then make a store update with
//!   the domain's pure updaters. They write nothing.
//! - [`SessionFileHistory`] is the effects hub's file-history port: for each new change
//!   it writes the backups, then appends the `file-history-snapshot` entry (FX-6).
//! - [`rewind`] reads the snapshots from one store snapshot.
//!
//! # The backup exists before the tool writes
//!
//! The hub persists a change while the commit is delivered, and for a writer outside the
//! store's callbacks delivery has finished when `set` returns (store contract, rule 5).
//! The tools run in the query loop, never inside a store callback, so when
//! [`before_edit`] gets control back the port has already copied the file. It does not
//! take that on trust: the port records the outcome of every change by its sequence
//! number, and [`before_edit`] lets the edit go ahead only when the outcome of *its*
//! change is a success. A failed backup, or no outcome at all (no port attached, a
//! delivery deferred because the caller was inside a callback), refuses the edit and
//! withdraws the file from the snapshot, so the next attempt backs it up again (fails
//! closed).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use strata_session::file_history::{
    FileHistoryError, FileHistoryFiles, FileState, RewindReport, backup_name, now, snapshot_entry,
};
use strata_state::effects::{EffectError, FileHistoryPort};
use strata_state::{
    AppState, FileHistoryChange, FileHistoryUpdateError, InspectedFile, update_file_history,
};
use strata_store::Store;

use crate::record::Recorder;
use crate::sync::lock;

/// The file-history port of one session: backups into the session's backup folder,
/// entries into its transcript, and the outcome of the last change for
/// [`before_edit`].
pub(crate) struct SessionFileHistory {
    files: FileHistoryFiles,
    recorder: Arc<Recorder>,
    /// How each edit's change went, by sequence number, until its [`before_edit`] takes
    /// it. Keyed rather than "the last one", so edits committed close together (parallel
    /// tools, a sub-agent) each find their own outcome.
    outcomes: Mutex<BTreeMap<u64, Result<(), String>>>,
}

/// Outcomes kept at most (a caller that never came back for its outcome, e.g. a
/// cancelled tool, must not make the map grow without bound).
const MAX_OUTCOMES: usize = 64;

impl SessionFileHistory {
    /// The port writing `files`' backups and `recorder`'s transcript.
    pub(crate) fn new(files: FileHistoryFiles, recorder: Arc<Recorder>) -> Self {
        Self {
            files,
            recorder,
            outcomes: Mutex::new(BTreeMap::new()),
        }
    }

    /// How change `sequence` went, if it was persisted at all (taken: asked once).
    fn take_outcome(&self, sequence: u64) -> Option<Result<(), String>> {
        lock(&self.outcomes).remove(&sequence)
    }

    fn write(&self, change: &FileHistoryChange) -> Result<(), String> {
        let backups = change
            .backups
            .iter()
            .map(|b| (b.source.as_path(), b.backup_file_name.as_str()));
        // Backups first: an entry must never name a backup that is not on disk.
        self.files
            .write_backups(backups)
            .map_err(|e| e.to_string())?;
        self.recorder
            .metadata(&snapshot_entry(change.entry.clone()))
            .map_err(|e| format!("the file-history snapshot could not be recorded: {e}"))
    }
}

impl FileHistoryPort for SessionFileHistory {
    fn persist(&self, change: &FileHistoryChange) -> Result<(), EffectError> {
        let result = self.write(change);
        // Only an edit's caller waits for the outcome; a prompt's snapshot failure is
        // logged by the hub.
        if change.entry.is_snapshot_update {
            let mut outcomes = lock(&self.outcomes);
            outcomes.insert(change.sequence, result.clone());
            while outcomes.len() > MAX_OUTCOMES {
                outcomes.pop_first();
            }
        }
        result.map_err(|message| EffectError::Port {
            port: "file history",
            message,
        })
    }
}

fn inspected(file: FileState) -> InspectedFile {
    InspectedFile {
        key: file.key,
        absolute: file.absolute,
        exists: file.exists,
    }
}

/// Takes the snapshot of user prompt `prompt_uuid` (the state files return to when the
/// user rewinds to it): files tracked so far that changed since their last backup get a
/// new version. The hub persists it; a failure there is logged by the hub.
pub(crate) fn snapshot_prompt(
    store: &Store<AppState>,
    port: &SessionFileHistory,
    prompt_uuid: &str,
) -> Result<(), FileHistoryError> {
    let state = store.get();
    let changed = match state.file_history.latest() {
        Some(latest) => port.files.changed_since(latest)?,
        None => Vec::new(),
    };
    let changed: Vec<InspectedFile> = changed.into_iter().map(inspected).collect();
    let now = now();
    let _ = store.set(|s| {
        update_file_history(s, |h| {
            Some(h.with_snapshot(prompt_uuid, &changed, &backup_name, &now))
        })
    });
    Ok(())
}

/// Records "about to change `path`" in the current prompt's snapshot and returns once
/// its backup is on disk (see the module docs); an error means the edit must not
/// happen. A file already saved at this prompt is no change.
pub(crate) fn before_edit(
    store: &Store<AppState>,
    port: &SessionFileHistory,
    path: &Path,
    prompt_uuid: &str,
) -> Result<(), String> {
    let refuse =
        |why: String| format!("cannot back up {} before editing it: {why}", path.display());
    let file = inspected(
        port.files
            .inspect(path)
            .map_err(|e| refuse(e.to_string()))?,
    );
    let now = now();
    let mut tracked: Result<Option<u64>, FileHistoryUpdateError> = Ok(None);
    let _ = store.set(|s| {
        update_file_history(s, |h| {
            let next = h.with_edit(&file, prompt_uuid, &backup_name, &now);
            tracked = match &next {
                Ok(n) => Ok(n.as_ref().map(|n| n.change_sequence)),
                Err(e) => Err(e.clone()),
            };
            next.ok().flatten()
        })
    });
    let sequence = match tracked {
        Err(e) => return Err(refuse(e.to_string())),
        Ok(None) => return Ok(()),
        Ok(Some(sequence)) => sequence,
    };
    let failure = match port.take_outcome(sequence) {
        Some(Ok(())) => return Ok(()),
        Some(Err(e)) => e,
        None => "the backup was not written (no file-history persistence answered)".to_owned(),
    };
    let _ = store.set(|s| update_file_history(s, |h| h.without_failed_edit(sequence, &file.key)));
    Err(refuse(failure))
}

/// Restores the files edited since user message `uuid` (or, with `dry_run`, reports
/// what would change), from the snapshots of the store's current state.
pub(crate) fn rewind(
    store: &Store<AppState>,
    port: &SessionFileHistory,
    uuid: &str,
    dry_run: bool,
) -> Result<RewindReport, FileHistoryError> {
    let state = store.get();
    let history = &state.file_history;
    port.files.rewind(
        history.snapshots.iter().map(|s| &**s),
        history.snapshots_dropped,
        uuid,
        dry_run,
    )
}
