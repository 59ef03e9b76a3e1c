//! The history read newest first: it grows forever and is read for its newest lines (the
//! up-arrow shows the last prompts of this project), through [`LinesFromEnd`].

use std::path::{Path, PathBuf};

use super::{HistoryEntry, HistoryError};
use crate::lines_from_end::LinesFromEnd;

/// History entries, newest first. Lines that are not entries (torn by a crash, edited
/// by hand) are skipped; [`NewestFirst::skipped`] counts them.
#[derive(Debug)]
pub struct NewestFirst {
    path: PathBuf,
    lines: LinesFromEnd,
    skipped: usize,
}

impl NewestFirst {
    pub(super) fn open(path: &Path) -> Result<Self, HistoryError> {
        let lines = LinesFromEnd::open(path).map_err(|source| HistoryError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            lines,
            skipped: 0,
        })
    }

    /// Lines skipped so far because they were not history entries.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The next line from the end, or `None` at the start of the file.
    fn next_line(&mut self) -> Result<Option<Vec<u8>>, HistoryError> {
        self.lines.next_line().map_err(|source| HistoryError::Io {
            action: "read",
            path: self.path.clone(),
            source,
        })
    }
}

impl Iterator for NewestFirst {
    type Item = Result<HistoryEntry, HistoryError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_line() {
                Err(e) => return Some(Err(e)),
                Ok(None) => return None,
                Ok(Some(line)) => match serde_json::from_slice(&line) {
                    Ok(entry) => return Some(Ok(entry)),
                    Err(_) => self.skipped += 1,
                },
            }
        }
    }
}
