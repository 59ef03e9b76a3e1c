//! Reading a JSONL file from its end, one line at a time.
//!
//! Some files are read for their newest lines only: the prompt history (the up-arrow
//! shows the last prompts of this project) and a transcript's last line (is a copy level
//! with its remote replica?). Both can be large, so reading starts at the end in 64 KB
//! blocks and stops as soon as the caller has enough.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

const BLOCK: u64 = 64 * 1024;

/// The lines of a file, last first, without their newlines; empty lines are skipped. A
/// last line without its newline (a torn write) is a line as it is.
#[derive(Debug)]
pub struct LinesFromEnd {
    file: Option<File>,
    /// Bytes of the file not read yet: `[0, pos)`.
    pos: u64,
    /// The start of the block read last, up to its first newline: a line that may
    /// continue in the block before it.
    partial: Vec<u8>,
    /// Whole lines of the block read last, newest last.
    ready: VecDeque<Vec<u8>>,
}

impl LinesFromEnd {
    /// Opens `path`; a missing file has no lines. Lines appended after this call are not
    /// part of the reading.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let (file, pos) = match File::open(path) {
            Ok(file) => {
                let len = file.metadata()?.len();
                (Some(file), len)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, 0),
            Err(e) => return Err(e),
        };
        Ok(Self {
            file,
            pos,
            partial: Vec::new(),
            ready: VecDeque::new(),
        })
    }

    /// The next line from the end, or `None` at the start of the file.
    pub fn next_line(&mut self) -> std::io::Result<Option<Vec<u8>>> {
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
            file.seek(SeekFrom::Start(start))?;
            file.read_exact(&mut block)?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn all(text: &[u8]) -> Vec<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, text).unwrap();
        let mut lines = LinesFromEnd::open(&path).unwrap();
        std::iter::from_fn(|| lines.next_line().unwrap()).collect()
    }

    #[test]
    fn lines_come_last_first_across_blocks_and_a_torn_tail_is_a_line() {
        let long = "x".repeat(100_000);
        let text = format!("a\n{long}\n\nb\nc");
        let lines = all(text.as_bytes());
        let expected: Vec<Vec<u8>> = ["c", "b", long.as_str(), "a"]
            .iter()
            .map(|l| l.as_bytes().to_vec())
            .collect();
        assert_eq!(lines, expected);
        assert!(all(b"").is_empty());
    }
}
