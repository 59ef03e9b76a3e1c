//! Scanning a range of a transcript file in chunks, keeping only what resume needs.
//!
//! A chunk buffer of a few megabytes is reused for the whole range (it stays in cache and
//! costs no page faults, unlike a buffer the size of the file); complete lines are
//! scanned and their kept parts copied to the part's store; a line cut by the chunk's end
//! moves to the front and is completed by the next read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::line::{Keep, LineInfo, LineKind};
use super::{MalformedLine, read_line};

/// Bytes read at a time (grown for a longer line).
const CHUNK: usize = 1 << 20;

/// How the lines of a range are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every line in full, keeping what resume uses.
    Resume,
    /// Before the last compact boundary: only metadata and assistant lines are read (for
    /// titles, snapshots and cost), judged by their first keys; the rest is skipped.
    Skim,
}

/// What one range yielded.
#[derive(Debug, Default)]
pub(crate) struct Part {
    pub(crate) store: Vec<u8>,
    pub(crate) lines: Vec<LineInfo>,
    pub(crate) malformed: Vec<MalformedLine>,
    /// Lines in the range, blank and unreadable ones included (for numbering).
    pub(crate) line_count: u32,
}

/// Scans `path[from..to]` (`from` at a line start).
pub(crate) fn scan_file(path: &Path, from: u64, to: u64, mode: Mode) -> std::io::Result<Part> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut input = file.take(to - from);
    let mut part = Part::default();
    // Reserving the most the store and the index can need costs no memory until it is
    // written (the pages are only touched when filled) and spares the copies of
    // repeated growth.
    let range = usize::try_from(to - from).unwrap_or(0);
    part.store
        .reserve(if mode == Mode::Skim { range / 8 } else { range });
    // Lines average well over a kilobyte; room for twice this part's lines lets the
    // second half of a file join the first without reallocating.
    part.lines.reserve(range / 512 + 16);
    let mut buf = vec![0u8; CHUNK.min(usize::try_from(to - from).unwrap_or(CHUNK).max(64 * 1024))];
    // Bytes of `buf` holding data, and the file offset of `buf[0]`.
    let (mut filled, mut base) = (0usize, from);
    loop {
        if filled == buf.len() {
            // One line longer than the buffer: make room for it.
            buf.resize(buf.len() * 2, 0);
        }
        let n = input.read(&mut buf[filled..])?;
        filled += n;
        let eof = n == 0;
        let mut start = 0;
        while let Some(k) = memchr::memchr(b'\n', &buf[start..filled]) {
            line(&buf, start, start + k, true, base, mode, &mut part);
            start += k + 1;
        }
        if eof {
            if start < filled {
                line(&buf, start, filled, false, base, mode, &mut part);
            }
            return Ok(part);
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        base += start as u64;
    }
}

fn line(
    buf: &[u8],
    start: usize,
    end: usize,
    has_newline: bool,
    base: u64,
    mode: Mode,
    part: &mut Part,
) {
    part.line_count += 1;
    if mode == Mode::Skim && !worth_reading_before_boundary(buf, start, end) {
        return;
    }
    let mut scratch = Vec::new();
    let malformed = if mode == Mode::Skim {
        &mut scratch
    } else {
        &mut part.malformed
    };
    let Some(mut info) = read_line(buf, start, end, part.line_count, has_newline, malformed) else {
        return;
    };
    if mode == Mode::Skim && !matches!(info.kind, LineKind::Meta(_) | LineKind::Assistant) {
        return;
    }
    info.file_offset = base + info.start as u64;
    let user = info.kind == LineKind::User;
    if let Some(m) = info.message.take()
        && mode == Mode::Resume
        && (user || info.kind == LineKind::Assistant)
    {
        // Parsed here, while the bytes are in cache, instead of copied and parsed later.
        // (Before a boundary only cost and metadata are wanted: no bodies at all.)
        let bytes = info.raw(buf, m);
        match crate::model_messages::parse_body(user, bytes) {
            Some(item) => info.body = Some(Box::new(item)),
            None => info.flags |= super::line::flag::BAD_BODY,
        }
    }
    info.move_into(buf, &mut part.store, Keep::Fields);
    part.lines.push(info);
}

/// Whether a line before the boundary may be metadata or an assistant line, judged from
/// the keys before its first large value.
fn worth_reading_before_boundary(buf: &[u8], start: usize, end: usize) -> bool {
    match super::line::scan_head(buf, start, end).0 {
        super::line::Head::Type(t) => !matches!(
            &buf[t.start..t.end],
            b"user" | b"progress" | b"system" | b"attachment"
        ),
        super::line::Head::MessageFirst | super::line::Head::Unknown => true,
    }
}

/// Joins parts scanned in file order whose lines all refer to one shared store:
/// renumbers lines and malformed lines across parts.
pub(crate) fn join(parts: Vec<Part>) -> (Vec<LineInfo>, Vec<MalformedLine>) {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return (Vec::new(), Vec::new());
    };
    // The first part's vectors are kept (they were reserved with room to spare), so the
    // index is not copied to a new allocation.
    let (mut lines, mut malformed, mut before) = (first.lines, first.malformed, first.line_count);
    for p in parts {
        lines.extend(p.lines.into_iter().map(|mut l| {
            l.number += before;
            l
        }));
        malformed.extend(p.malformed.into_iter().map(|mut m| {
            m.line += before;
            m
        }));
        before = before.saturating_add(p.line_count);
    }
    (lines, malformed)
}

/// Joins parts scanned in file order, each with its own store (part `k` is segment `k`).
pub(crate) fn join_parts(parts: &mut [Part]) -> (Vec<LineInfo>, Vec<MalformedLine>) {
    let taken: Vec<Part> = parts
        .iter_mut()
        .enumerate()
        .map(|(k, p)| {
            let seg = u8::try_from(k).unwrap_or(u8::MAX);
            for l in &mut p.lines {
                l.seg = seg;
            }
            Part {
                store: Vec::new(),
                lines: std::mem::take(&mut p.lines),
                malformed: std::mem::take(&mut p.malformed),
                line_count: p.line_count,
            }
        })
        .collect();
    join(taken)
}
