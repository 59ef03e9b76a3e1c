//! Reading a JSONL file from its end, one line at a time.
//!
//! The history grows forever and is read for its newest lines (the up-arrow shows the
//! last prompts of this project), so reading starts at the end in 64 KB blocks and stops
//! as soon as the caller has enough.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::{HistoryEntry, HistoryError};

const BLOCK: u64 = 64 * 1024;

/// History entries, newest first. Lines that are not entries (torn by a crash, edited
/// by hand) are skipped; [`NewestFirst::skipped`] counts them.
#[derive(Debug)]
pub struct NewestFirst {
    path: PathBuf,
    file: Option<File>,
    /// Bytes of the file not read yet: `[0, pos)`.
    pos: u64,
    /// The start of the block read last, up to its first newline: a line that may
    /// continue in the block before it.
    partial: Vec<u8>,
    /// Whole lines of the block read last, newest last.
    ready: VecDeque<Vec<u8>>,
    skipped: usize,
}

impl NewestFirst {
    pub(super) fn open(path: &Path) -> Result<Self, HistoryError> {
        let io = |source| HistoryError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        };
        let (file, pos) = match File::open(path) {
            Ok(f) => {
                // Lines appended after this point are not part of this reading.
                let len = f.metadata().map_err(io)?.len();
                (Some(f), len)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, 0),
            Err(e) => return Err(io(e)),
        };
        Ok(Self {
            path: path.to_path_buf(),
            file,
            pos,
            partial: Vec::new(),
            ready: VecDeque::new(),
            skipped: 0,
        })
    }

    /// Lines skipped so far because they were not history entries.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The next line from the end, or `None` at the start of the file.
    fn next_line(&mut self) -> Result<Option<Vec<u8>>, HistoryError> {
        loop {
            if let Some(line) = self.ready.pop_back() {
                return Ok(Some(line));
            }
            let Some(file) = self.file.as_mut() else {
                return Ok(None);
            };
            if self.pos == 0 {
                // The first line of the file has no newline before it.
                self.file = None;
                let line = std::mem::take(&mut self.partial);
                return Ok((!line.is_empty()).then_some(line));
            }
            let start = self.pos.saturating_sub(BLOCK);
            let mut block = vec![0u8; (self.pos - start) as usize];
            let io = |source| HistoryError::Io {
                action: "read",
                path: self.path.clone(),
                source,
            };
            file.seek(SeekFrom::Start(start)).map_err(io)?;
            file.read_exact(&mut block).map_err(io)?;
            self.pos = start;
            block.extend_from_slice(&self.partial);
            let mut parts = block.split(|&b| b == b'\n');
            // Everything before the first newline may continue in the previous block.
            self.partial = parts.next().map(<[u8]>::to_vec).unwrap_or_default();
            self.ready = parts
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
        }
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
