//! A test driver of file history without an engine: the app state's file-history
//! domain (`strata_state::FileHistory`, pure updaters) plus this crate's disk side,
//! wired the way the engine wires them — read, update the domain, persist the change
//! (backups first, then the entry, which is returned instead of appended).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use strata_protocol::transcript::{Entry, FileHistorySnapshot};
use strata_session::file_history::{
    FileHistoryError, FileHistoryFiles, FileState, RewindReport, backup_name, now, snapshot_entry,
};
use strata_session::layout::SessionLayout;
use strata_state::{FileHistoryUpdateError, InspectedFile};

/// Either layer's error (no derive: this file is also compiled into the binary's
/// tests, which do not depend on `thiserror`).
#[derive(Debug)]
pub enum DriverError {
    Files(FileHistoryError),
    Update(FileHistoryUpdateError),
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Files(e) => e.fmt(f),
            Self::Update(e) => e.fmt(f),
        }
    }
}

impl From<FileHistoryError> for DriverError {
    fn from(e: FileHistoryError) -> Self {
        Self::Files(e)
    }
}

impl From<FileHistoryUpdateError> for DriverError {
    fn from(e: FileHistoryUpdateError) -> Self {
        Self::Update(e)
    }
}

pub struct HistoryDriver {
    files: FileHistoryFiles,
    state: strata_state::FileHistory,
}

fn inspected(f: FileState) -> InspectedFile {
    InspectedFile {
        key: f.key,
        absolute: f.absolute,
        exists: f.exists,
    }
}

impl HistoryDriver {
    pub fn new(layout: &SessionLayout, cwd: &Path) -> Self {
        Self {
            files: FileHistoryFiles::new(layout, cwd),
            state: Default::default(),
        }
    }

    pub fn resume(
        layout: &SessionLayout,
        cwd: impl AsRef<Path>,
        snapshots: impl IntoIterator<Item = FileHistorySnapshot>,
        newest: Option<&FileHistorySnapshot>,
    ) -> Self {
        Self {
            files: FileHistoryFiles::new(layout, cwd.as_ref()),
            state: strata_state::FileHistory::resumed(snapshots, newest),
        }
    }

    pub fn snapshots(&self) -> impl ExactSizeIterator<Item = &FileHistorySnapshot> {
        self.state.snapshots.iter().map(|s| &**s)
    }

    pub fn backups_dir(&self) -> &Path {
        self.files.backups_dir()
    }

    pub fn make_snapshot(&mut self, uuid: &str) -> Result<Entry, DriverError> {
        let changed = match self.state.latest() {
            Some(latest) => self.files.changed_since(latest)?,
            None => Vec::new(),
        };
        let changed: Vec<_> = changed.into_iter().map(inspected).collect();
        self.state = self
            .state
            .with_snapshot(uuid, &changed, &backup_name, &now());
        self.persist()
    }

    pub fn track_edit(&mut self, path: &Path, uuid: &str) -> Result<Option<Entry>, DriverError> {
        let file = inspected(self.files.inspect(path)?);
        match self.state.with_edit(&file, uuid, &backup_name, &now())? {
            None => Ok(None),
            Some(next) => {
                self.state = next;
                self.persist().map(Some)
            }
        }
    }

    pub fn rewind(&self, to: &str, dry_run: bool) -> Result<RewindReport, FileHistoryError> {
        self.files
            .rewind(self.snapshots(), self.state.snapshots_dropped, to, dry_run)
    }

    fn persist(&self) -> Result<Entry, DriverError> {
        let change = self
            .state
            .last_change
            .as_ref()
            .expect("a change to persist");
        self.files.write_backups(
            change
                .backups
                .iter()
                .map(|b| (b.source.as_path(), b.backup_file_name.as_str())),
        )?;
        Ok(snapshot_entry(change.entry.clone()))
    }
}
