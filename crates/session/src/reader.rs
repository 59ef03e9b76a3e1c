//! Streaming, loss-tolerant reading of a transcript file.
//!
//! A transcript is read whole into one buffer and every line is scanned once by a
//! structural scanner ([`scan`]) that records where each line is and the few fields the
//! chain needs ([`line`]); message bodies stay in the buffer as raw JSON until the live
//! ones are parsed. Large files are scanned on two threads, split at a line boundary.
//!
//! Bad input never fails the whole file: a line that is not JSON is skipped and reported
//! with its line number, column and reason. A line that holds a torn fragment followed by
//! a whole record (two writes fused after a crash) gives the record back, and a final
//! line cut short by a crash is reported as torn. Blank lines are ignored.

pub(crate) mod line;
pub(crate) mod scan;

use std::io::Read;
use std::path::{Path, PathBuf};

use memchr::memmem;

use line::{LineInfo, scan_line};

/// Files above this size are scanned on two threads.
const PARALLEL_MIN_BYTES: usize = 4 << 20;
/// Files above this size skip parsing what precedes their last compact boundary when
/// loaded for resume (see [`Transcript::read_for_resume`]).
pub(crate) const SKIP_PRE_BOUNDARY_MIN_BYTES: usize = 8 << 20;
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

/// A transcript held in memory with its line index.
#[derive(Debug)]
pub struct Transcript {
    path: Option<PathBuf>,
    pub(crate) buf: Vec<u8>,
    /// Every line read in full: the lines the chain is built from.
    pub(crate) lines: Vec<LineInfo>,
    /// When the part before the last compact boundary was skipped: its metadata and
    /// assistant lines (for titles, snapshots and cost), which take no part in the chain.
    pub(crate) pre_boundary: Vec<LineInfo>,
    /// Bytes before the last compact boundary that were not read in full (0 normally).
    skipped_bytes: usize,
    malformed: Vec<MalformedLine>,
}

impl Transcript {
    /// Reads and indexes the transcript at `path`.
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

    /// Reads the transcript at `path` for resuming it: like [`Transcript::read`], but in a
    /// large file (≥ 8 MiB) only the part after the last compact boundary is read in
    /// full, since nothing before it can be live; before it, only metadata lines and
    /// assistant lines (for cost) are read. [`Transcript::skipped_bytes`] says how much was
    /// skipped; [`Transcript::read_everything`] re-reads the whole file should the chain
    /// turn out to reach behind the boundary.
    pub fn read_for_resume(path: &Path) -> Result<Self, ReadError> {
        let io = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
        file.read_to_end(&mut buf).map_err(io)?;
        let mut t = if buf.len() >= SKIP_PRE_BOUNDARY_MIN_BYTES {
            Self::from_bytes_after_last_boundary(buf)
        } else {
            Self::from_bytes(buf)
        };
        t.path = Some(path.to_path_buf());
        Ok(t)
    }

    /// Indexes a transcript already in memory.
    pub fn from_bytes(buf: Vec<u8>) -> Self {
        let (lines, malformed) = scan_all(&buf, 0, 0);
        Self {
            path: None,
            buf,
            lines,
            pre_boundary: Vec::new(),
            skipped_bytes: 0,
            malformed,
        }
    }

    /// Indexes a transcript in memory, skipping what precedes its last compact boundary
    /// (see [`Transcript::read_for_resume`]); the whole of it when there is no boundary.
    pub fn from_bytes_after_last_boundary(buf: Vec<u8>) -> Self {
        let Some(boundary) = last_boundary_line(&buf) else {
            return Self::from_bytes(buf);
        };
        let base =
            u32::try_from(memchr::memchr_iter(b'\n', &buf[..boundary]).count()).unwrap_or(u32::MAX);
        let (lines, malformed) = scan_all(&buf, boundary, base);
        let pre_boundary = skim_before(&buf, boundary);
        Self {
            path: None,
            buf,
            lines,
            pre_boundary,
            skipped_bytes: boundary,
            malformed,
        }
    }

    /// Re-indexes the whole file after [`Transcript::read_for_resume`] skipped a part.
    pub fn read_everything(&mut self) {
        if self.skipped_bytes > 0 {
            let (lines, malformed) = scan_all(&self.buf, 0, 0);
            self.lines = lines;
            self.malformed = malformed;
            self.pre_boundary = Vec::new();
            self.skipped_bytes = 0;
        }
    }

    /// How many bytes before the last compact boundary were not read in full.
    pub fn skipped_bytes(&self) -> usize {
        self.skipped_bytes
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
    pub fn byte_len(&self) -> usize {
        self.buf.len()
    }

    /// The text of entry `i` (as written, without its newline).
    pub(crate) fn line_text(&self, i: usize) -> &[u8] {
        self.lines[i].bytes(&self.buf)
    }

    /// A decoded string field of entry `i`.
    pub(crate) fn field(
        &self,
        i: usize,
        sp: Option<line::Sp>,
    ) -> Option<std::borrow::Cow<'_, str>> {
        self.lines[i].text_of(&self.buf, sp)
    }
}

/// Scans `buf[from..]` (from a line start; `line_base` lines precede it), on two threads
/// when it is large, and returns the results in file order.
fn scan_all(buf: &[u8], from: usize, line_base: u32) -> (Vec<LineInfo>, Vec<MalformedLine>) {
    if buf.len() - from < PARALLEL_MIN_BYTES {
        let (mut lines, mut malformed) = (Vec::new(), Vec::new());
        scan_range(buf, from, buf.len(), line_base, &mut lines, &mut malformed);
        return (lines, malformed);
    }
    let mid = from + (buf.len() - from) / 2;
    let split = memchr::memchr(b'\n', &buf[mid..]).map_or(buf.len(), |k| mid + k + 1);
    let second_base = line_base.saturating_add(
        u32::try_from(memchr::memchr_iter(b'\n', &buf[from..split]).count()).unwrap_or(u32::MAX),
    );
    let ((mut a, mut am), (b, bm)) = std::thread::scope(|s| {
        let second = s.spawn(|| {
            let (mut l, mut m) = (Vec::new(), Vec::new());
            scan_range(buf, split, buf.len(), second_base, &mut l, &mut m);
            (l, m)
        });
        let (mut l, mut m) = (Vec::new(), Vec::new());
        scan_range(buf, from, split, line_base, &mut l, &mut m);
        // A panic in the scanner is a bug; surface it rather than lose half the file.
        #[allow(clippy::expect_used)]
        let second = second.join().expect("transcript scanner thread panicked");
        ((l, m), second)
    });
    a.extend(b);
    am.extend(bm);
    (a, am)
}

/// Scans the lines of `buf[from..to]` (which starts at a line start); `line_base` is the
/// number of lines before `from`.
fn scan_range(
    buf: &[u8],
    from: usize,
    to: usize,
    line_base: u32,
    lines: &mut Vec<LineInfo>,
    malformed: &mut Vec<MalformedLine>,
) {
    lines.reserve((to - from) / 1500);
    let mut start = from;
    let mut number = line_base;
    while start < to {
        number = number.saturating_add(1);
        let (end, next, has_newline) = match memchr::memchr(b'\n', &buf[start..to]) {
            Some(k) => (start + k, start + k + 1, true),
            None => (to, to, false),
        };
        let mut trimmed_end = end;
        if trimmed_end > start && buf[trimmed_end - 1] == b'\r' {
            trimmed_end -= 1;
        }
        if !buf[start..trimmed_end].iter().all(u8::is_ascii_whitespace) {
            match scan_line(buf, start, trimmed_end, number) {
                Ok(info) => lines.push(info),
                Err(e) => {
                    let recovered = recover_fused(buf, start, trimmed_end, number);
                    malformed.push(MalformedLine {
                        line: number,
                        column: u32::try_from(e.at.saturating_sub(start) + 1).unwrap_or(u32::MAX),
                        reason: e.what.to_owned(),
                        recovered_record: recovered.is_some(),
                        torn_tail: !has_newline && recovered.is_none(),
                    });
                    lines.extend(recovered);
                }
            }
        }
        start = next;
    }
}

/// The start of the last line that is a compact boundary, found by searching for its
/// subtype (a quoted key can only occur as a key, never inside a JSON string) and
/// checking the line it is on.
fn last_boundary_line(buf: &[u8]) -> Option<usize> {
    let hits: Vec<usize> = memmem::find_iter(buf, b"\"subtype\":\"compact_boundary\"").collect();
    hits.iter().rev().take(8).find_map(|&hit| {
        let start = memchr::memrchr(b'\n', &buf[..hit]).map_or(0, |k| k + 1);
        let end = memchr::memchr(b'\n', &buf[hit..]).map_or(buf.len(), |k| hit + k);
        let line = scan_line(buf, start, end, 0).ok()?;
        (line.kind == line::LineKind::System(line::SystemSub::CompactBoundary)
            && line.parent.is_none())
        .then_some(start)
    })
}

/// Reads the lines of `buf[..end]` that matter before a compact boundary: metadata lines
/// and assistant lines. A line is classified from its first keys: the reference writer
/// puts `type` before the bulk of every line except assistant lines, whose `message`
/// comes first; only those two kinds are read in full, the rest is skipped unparsed.
fn skim_before(buf: &[u8], end: usize) -> Vec<LineInfo> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < end {
        let line_end = memchr::memchr(b'\n', &buf[start..end]).map_or(end, |k| start + k);
        if needs_full_read(buf, start, line_end)
            && let Ok(info) = scan_line(buf, start, line_end, 0)
            && matches!(
                info.kind,
                line::LineKind::Meta(_) | line::LineKind::Assistant
            )
        {
            out.push(info);
        }
        start = line_end + 1;
    }
    out
}

/// Whether a line before the boundary may be metadata or an assistant line, judged from
/// the keys before its first large value.
fn needs_full_read(buf: &[u8], start: usize, end: usize) -> bool {
    match line::scan_head(buf, start, end).0 {
        line::Head::Type(t) => !matches!(
            &buf[t.start..t.end],
            b"user" | b"progress" | b"system" | b"attachment"
        ),
        line::Head::MessageFirst | line::Head::Unknown => true,
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
mod tests {
    use super::*;
    use line::LineKind;

    #[test]
    fn malformed_lines_are_counted_with_line_and_column() {
        let text = b"{\"type\":\"summary\",\"summary\":\"a\"}\n\n{\"type\":\n   \n{\"type\":\"tag\",\"tag\":\"x\"}\r\n";
        let t = Transcript::from_bytes(text.to_vec());
        assert_eq!(t.entry_count(), 2);
        assert_eq!(t.malformed().len(), 1);
        let m = &t.malformed()[0];
        assert_eq!(
            (m.line, m.column, m.recovered_record, m.torn_tail),
            (3, 9, false, false)
        );
        assert_eq!(t.lines[1].number, 5);
        assert_eq!(
            t.lines[1].kind,
            LineKind::Meta(strata_protocol::transcript::EntryKind::Tag)
        );
    }

    #[test]
    fn a_fused_line_gives_back_its_whole_record() {
        let text = b"{\"type\":\"user\",\"uuid\":\"a\",\"mess{\"type\":\"tag\",\"tag\":\"kept\"}\n";
        let t = Transcript::from_bytes(text.to_vec());
        assert_eq!(t.entry_count(), 1);
        assert_eq!(t.line_text(0), b"{\"type\":\"tag\",\"tag\":\"kept\"}");
        assert!(t.malformed()[0].recovered_record);
    }

    #[test]
    fn a_torn_final_line_is_reported_as_torn() {
        let text = b"{\"type\":\"tag\",\"tag\":\"x\"}\n{\"type\":\"user\",\"mess";
        let t = Transcript::from_bytes(text.to_vec());
        assert_eq!(t.entry_count(), 1);
        assert!(t.malformed()[0].torn_tail);
        assert_eq!(t.malformed()[0].line, 2);
    }

    #[test]
    fn parallel_and_serial_scans_agree() {
        let line = "{\"parentUuid\":null,\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hello\"},\"uuid\":\"u\",\"timestamp\":\"t\"}\n";
        let mut text = line.repeat((PARALLEL_MIN_BYTES / line.len()) + 10);
        text.insert_str(text.len() / 2 + 7, "garbage\n");
        let t = Transcript::from_bytes(text.clone().into_bytes());
        let mut lines = Vec::new();
        let mut bad = Vec::new();
        scan_range(text.as_bytes(), 0, text.len(), 0, &mut lines, &mut bad);
        assert_eq!(t.lines.len(), lines.len());
        assert_eq!(t.malformed(), &bad[..]);
        assert!(
            t.lines
                .iter()
                .zip(&lines)
                .all(|(a, b)| a.number == b.number && a.start == b.start)
        );
    }
}
