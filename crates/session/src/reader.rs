//! Streaming, loss-tolerant reading of a transcript file.
//!
//! Every line is scanned once by a structural scanner (`scan`) that records where it is
//! and the few fields the chain needs ([`line`]). For resume the file is streamed in
//! chunks on two threads (one per half) and only what resume uses is kept: ids, flags,
//! timestamps and the message bodies of user and assistant lines; tool outputs and
//! progress payloads (most of a transcript's bytes) are dropped as soon as they are
//! scanned, so memory stays well under the file's size. A large file is read from its
//! last compact boundary on (`boundary`): before it, only metadata and assistant lines
//! (for titles and cost) are read in full.
//!
//! Bad input never fails the whole file: a line that is not JSON (invalid UTF-8 and raw
//! control characters in strings included, which the structural scan alone would let
//! through and serde would refuse later) is skipped and reported with its line number,
//! column and reason. A line that holds a torn fragment followed by
//! a whole record (two writes fused after a crash) gives the record back, and a final
//! line cut short by a crash is reported as torn. Blank lines are ignored.

mod boundary;
pub(crate) mod line;
pub(crate) mod scan;
mod stream;

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use memchr::memmem;

use line::{LineInfo, Sp, scan_line};

/// Files from this size on are scanned on two threads.
const PARALLEL_MIN_BYTES: u64 = 4 << 20;
/// Files from this size on skip parsing what precedes their last compact boundary when
/// loaded for resume (see [`Transcript::read_for_resume`]).
pub(crate) const SKIP_PRE_BOUNDARY_MIN_BYTES: u64 = 8 << 20;
/// How many candidate record starts are tried inside one broken line before giving up.
const MAX_RECOVERY_ATTEMPTS: usize = 64;

/// Errors reading a transcript file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("cannot read transcript {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file changed while it was being read (its lines are not where they were).
    #[error("transcript {} changed while it was being read; try again", path.display())]
    Changed {
        /// The file.
        path: PathBuf,
    },
}

/// A line that could not be read as a transcript entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedLine {
    /// 1-based line number.
    pub line: u32,
    /// 1-based byte column where the problem was found.
    pub column: u32,
    /// What is wrong.
    pub reason: String,
    /// Whether a whole record was found after a torn fragment on this line (and kept).
    pub recovered_record: bool,
    /// Whether this is the file's last line, cut short without a newline (a crash while
    /// writing it).
    pub torn_tail: bool,
}

/// A transcript's line index and the bytes kept of it.
#[derive(Debug)]
pub struct Transcript {
    path: Option<PathBuf>,
    /// Kept bytes; each line says which segment (one per reading thread).
    stores: Vec<Vec<u8>>,
    /// Every line read in full: the lines the chain is built from.
    pub(crate) lines: Vec<LineInfo>,
    /// When the part before the last compact boundary was skipped: its metadata and
    /// assistant lines (for titles, snapshots and cost), which take no part in the chain.
    pub(crate) pre_boundary: Vec<LineInfo>,
    /// Bytes before the last compact boundary that were not read in full (0 normally).
    skipped_bytes: u64,
    malformed: Vec<MalformedLine>,
    /// Size of the file (or buffer) read.
    size: u64,
}

impl Transcript {
    /// Reads and indexes the whole transcript at `path`, keeping every line.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        let io = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
        file.read_to_end(&mut buf).map_err(io)?;
        let mut t = Self::from_bytes(buf);
        t.path = Some(path.to_path_buf());
        Ok(t)
    }

    /// Indexes a transcript already in memory, keeping every line.
    pub fn from_bytes(buf: Vec<u8>) -> Self {
        let size = buf.len() as u64;
        let (lines, malformed) = if buf.len() as u64 >= PARALLEL_MIN_BYTES {
            let split = split_point_in(&buf);
            let (a, b) = std::thread::scope(|s| {
                let second = s.spawn(|| scan_in_place(&buf, split, buf.len()));
                let first = scan_in_place(&buf, 0, split);
                // A panic in the scanner is a bug; surface it rather than lose half the file.
                #[allow(clippy::expect_used)]
                (
                    first,
                    second.join().expect("transcript scanner thread panicked"),
                )
            });
            stream::join(vec![a, b])
        } else {
            stream::join(vec![scan_in_place(&buf, 0, buf.len())])
        };
        Self {
            path: None,
            stores: vec![buf],
            lines,
            pre_boundary: Vec::new(),
            skipped_bytes: 0,
            malformed,
            size,
        }
    }

    /// Reads the transcript at `path` for resuming it: streamed, keeping only what resume
    /// uses, and, in a large file (≥ 8 MiB), reading in full only what follows the last
    /// compact boundary, since nothing before it can be live; before it, only metadata
    /// and assistant lines (for cost) are read. [`Transcript::skipped_bytes`] says how
    /// much was skipped; [`Transcript::read_everything`] re-reads the whole file should
    /// the chain turn out to reach behind the boundary.
    pub fn read_for_resume(path: &Path) -> Result<Self, ReadError> {
        let io = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let size = std::fs::metadata(path).map_err(io)?.len();
        let boundary = if size >= SKIP_PRE_BOUNDARY_MIN_BYTES {
            boundary::last_boundary_line(path, size).map_err(io)?
        } else {
            None
        };
        let mut t = match boundary {
            Some(at) => {
                let (before, after) = std::thread::scope(|s| {
                    let before = s.spawn(|| stream::scan_file(path, 0, at, stream::Mode::Skim));
                    let after = stream::scan_file(path, at, size, stream::Mode::Resume);
                    // A panic in the scanner is a bug; surface it.
                    #[allow(clippy::expect_used)]
                    (
                        before.join().expect("transcript scanner thread panicked"),
                        after,
                    )
                });
                let (before, after) = (before.map_err(io)?, after.map_err(io)?);
                let pre_boundary = before.lines.clone();
                let mut parts = vec![before, after];
                let (mut lines, malformed) = stream::join_parts(&mut parts);
                lines.retain(|l| l.file_offset >= at);
                let stores = parts.into_iter().map(|p| p.store).collect();
                Self {
                    path: None,
                    stores,
                    lines,
                    pre_boundary,
                    skipped_bytes: at,
                    malformed,
                    size,
                }
            }
            None => Self::stream_all(path, size).map_err(io)?,
        };
        t.path = Some(path.to_path_buf());
        Ok(t)
    }

    /// Streams the whole file keeping what resume uses, on two threads when it is large.
    fn stream_all(path: &Path, size: u64) -> std::io::Result<Self> {
        let mut parts = if size >= PARALLEL_MIN_BYTES {
            let split = split_point_of_file(path, size)?;
            let (a, b) = std::thread::scope(|s| {
                let second = s.spawn(|| stream::scan_file(path, split, size, stream::Mode::Resume));
                let first = stream::scan_file(path, 0, split, stream::Mode::Resume);
                // A panic in the scanner is a bug; surface it.
                #[allow(clippy::expect_used)]
                (
                    first,
                    second.join().expect("transcript scanner thread panicked"),
                )
            });
            vec![a?, b?]
        } else {
            vec![stream::scan_file(path, 0, size, stream::Mode::Resume)?]
        };
        let (lines, malformed) = stream::join_parts(&mut parts);
        let stores = parts.into_iter().map(|p| p.store).collect();
        Ok(Self {
            path: None,
            stores,
            lines,
            pre_boundary: Vec::new(),
            skipped_bytes: 0,
            malformed,
            size,
        })
    }

    /// Re-reads the whole file after [`Transcript::read_for_resume`] skipped a part.
    pub fn read_everything(&mut self) -> Result<(), ReadError> {
        if self.skipped_bytes == 0 {
            return Ok(());
        }
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        let io = |source| ReadError::Io {
            path: path.clone(),
            source,
        };
        let size = std::fs::metadata(&path).map_err(io)?.len();
        let mut t = Self::stream_all(&path, size).map_err(io)?;
        t.path = Some(path);
        *self = t;
        Ok(())
    }

    /// The file this was read from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Lines that could not be read, in file order.
    pub fn malformed(&self) -> &[MalformedLine] {
        &self.malformed
    }

    /// How many entries were read in full.
    pub fn entry_count(&self) -> usize {
        self.lines.len()
    }

    /// The size of the file in bytes.
    pub fn byte_len(&self) -> u64 {
        self.size
    }

    /// How many bytes before the last compact boundary were not read in full.
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped_bytes
    }

    /// The bytes (escaped form) of a string field of `l`.
    pub(crate) fn raw(&self, l: &LineInfo, sp: Sp) -> &[u8] {
        l.raw(&self.stores[l.seg as usize], sp)
    }

    /// A string field of `l`, decoded.
    pub(crate) fn text(&self, l: &LineInfo, sp: Option<Sp>) -> Option<Cow<'_, str>> {
        l.text_of(&self.stores[l.seg as usize], sp)
    }

    /// A string field of entry `i`, decoded.
    pub(crate) fn field(&self, i: usize, sp: Option<Sp>) -> Option<Cow<'_, str>> {
        self.text(&self.lines[i], sp)
    }

    /// The whole line `l`, when it was kept.
    pub(crate) fn whole(&self, l: &LineInfo) -> Option<&[u8]> {
        l.whole
            .then(|| &self.stores[l.seg as usize][l.start..l.start + l.len as usize])
    }

    /// The text of entry `i` (as written, without its newline), when it was kept.
    pub(crate) fn line_text(&self, i: usize) -> Option<&[u8]> {
        self.whole(&self.lines[i])
    }

    /// The lines `indices` as written, read back from the file when they were not kept.
    /// Fails with [`ReadError::Changed`] when the file no longer holds them.
    pub(crate) fn lines_as_written(&self, indices: &[u32]) -> Result<Vec<Vec<u8>>, ReadError> {
        let mut out: Vec<Option<Vec<u8>>> = indices
            .iter()
            .map(|&i| self.line_text(i as usize).map(<[u8]>::to_vec))
            .collect();
        if out.iter().all(Option::is_some) {
            return Ok(out.into_iter().flatten().collect());
        }
        let Some(path) = &self.path else {
            return Err(ReadError::Changed {
                path: PathBuf::new(),
            });
        };
        let io = |source| ReadError::Io {
            path: path.clone(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let mut order: Vec<usize> = (0..indices.len()).filter(|&k| out[k].is_none()).collect();
        order.sort_by_key(|&k| self.lines[indices[k] as usize].file_offset);
        for k in order {
            let l = &self.lines[indices[k] as usize];
            let mut bytes = vec![0; l.len as usize];
            file.seek(SeekFrom::Start(l.file_offset)).map_err(io)?;
            file.read_exact(&mut bytes).map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => ReadError::Changed { path: path.clone() },
                _ => ReadError::Io {
                    path: path.clone(),
                    source: e,
                },
            })?;
            let same = scan_line(&bytes, 0, bytes.len(), l.number)
                .is_ok_and(|again| again.uuid_h == l.uuid_h);
            if !same {
                return Err(ReadError::Changed { path: path.clone() });
            }
            out[k] = Some(bytes);
        }
        Ok(out.into_iter().flatten().collect())
    }
}

/// The start of the line at or after the middle of `buf`.
fn split_point_in(buf: &[u8]) -> usize {
    let mid = buf.len() / 2;
    memchr::memchr(b'\n', &buf[mid..]).map_or(buf.len(), |k| mid + k + 1)
}

/// The start of the line at or after the middle of the file.
fn split_point_of_file(path: &Path, size: u64) -> std::io::Result<u64> {
    let mut f = std::fs::File::open(path)?;
    let mut at = size / 2;
    f.seek(SeekFrom::Start(at))?;
    let mut window = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut window)?;
        if n == 0 {
            return Ok(size);
        }
        if let Some(k) = memchr::memchr(b'\n', &window[..n]) {
            return Ok(at + k as u64 + 1);
        }
        at += n as u64;
    }
}

/// Scans `buf[from..to]` (from a line start) keeping whole lines where they are.
fn scan_in_place(buf: &[u8], from: usize, to: usize) -> stream::Part {
    let mut part = stream::Part::default();
    let mut start = from;
    while start < to {
        let (end, next, has_newline) = match memchr::memchr(b'\n', &buf[start..to]) {
            Some(k) => (start + k, start + k + 1, true),
            None => (to, to, false),
        };
        part.line_count += 1;
        let number = part.line_count;
        if let Some(mut info) = read_line(buf, start, end, number, has_newline, &mut part.malformed)
        {
            info.file_offset = info.start as u64;
            info.whole = true;
            part.lines.push(info);
        }
        start = next;
    }
    part
}

/// Scans one line (`buf[start..end]`, its newline excluded): the entry, or `None` after
/// recording why it cannot be read (giving back a whole record found after a torn
/// fragment).
pub(crate) fn read_line(
    buf: &[u8],
    start: usize,
    end: usize,
    number: u32,
    has_newline: bool,
    malformed: &mut Vec<MalformedLine>,
) -> Option<LineInfo> {
    let mut end = end;
    if end > start && buf[end - 1] == b'\r' {
        end -= 1;
    }
    if buf[start..end].iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match scan_line(buf, start, end, number) {
        Ok(info) => Some(info),
        Err(e) => {
            let recovered = recover_fused(buf, start, end, number);
            malformed.push(MalformedLine {
                line: number,
                column: u32::try_from(e.at.saturating_sub(start) + 1).unwrap_or(u32::MAX),
                reason: e.what.to_owned(),
                recovered_record: recovered.is_some(),
                torn_tail: !has_newline && recovered.is_none(),
            });
            recovered
        }
    }
}

/// Finds a whole record after a torn fragment: the leftmost `{"` from which the rest of
/// the line scans as one complete object.
fn recover_fused(buf: &[u8], start: usize, end: usize, number: u32) -> Option<LineInfo> {
    memmem::find_iter(&buf[start + 1..end], b"{\"")
        .take(MAX_RECOVERY_ATTEMPTS)
        .find_map(|k| scan_line(buf, start + 1 + k, end, number).ok())
}

#[cfg(test)]
mod tests;
