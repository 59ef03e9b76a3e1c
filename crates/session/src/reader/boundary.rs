//! Finding the last compact boundary of a large transcript from its end.
//!
//! Only what follows the last boundary can be live, and in a long session that is a
//! small tail of the file. The boundary is found by searching the last few chunks of the
//! file, backwards, for its `subtype` (a quoted key followed by `:` can only occur as a
//! key: inside a JSON string its quotes would be escaped) and checking the line it is on.
//! The search gives up after [`SEARCH_BYTES`]: a boundary further back leaves so much
//! live conversation that skipping what precedes it saves little.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use memchr::memmem;

use super::line::{LineKind, SystemSub, scan_line};

/// Bytes read per step back.
const STEP: u64 = 4 << 20;
/// How far from the end the boundary is looked for. What follows a boundary is what the
/// model saw after compaction (at most a context window of conversation, a few MB of
/// transcript with its tool outputs), so the last one is nearly always this close.
const SEARCH_BYTES: u64 = 8 << 20;
/// Overlap between steps, so a boundary line cut by a step's edge is seen whole in the
/// next one (boundary lines are well under a kilobyte).
const OVERLAP: u64 = 64 * 1024;

const MARKER: &[u8] = b"\"subtype\":\"compact_boundary\"";

/// The file offset of the start of the last compact-boundary line, if one is within
/// [`SEARCH_BYTES`] of the end.
pub(crate) fn last_boundary_line(path: &Path, size: u64) -> std::io::Result<Option<u64>> {
    let mut file = File::open(path)?;
    let finder = memmem::Finder::new(MARKER);
    let mut end = size;
    let mut buf = Vec::new();
    while end > 0 && size - end < SEARCH_BYTES {
        let start = end.saturating_sub(STEP);
        let len = usize::try_from(end - start).unwrap_or(0);
        buf.clear();
        file.seek(SeekFrom::Start(start))?;
        (&mut file).take(end - start).read_to_end(&mut buf)?;
        if buf.len() != len {
            // The file shrank meanwhile; the full read will see what it holds.
            return Ok(None);
        }
        let hits: Vec<usize> = finder.find_iter(&buf).collect();
        for &hit in hits.iter().rev() {
            let Some(line_start) = memchr::memrchr(b'\n', &buf[..hit])
                .map(|k| k + 1)
                .or((start == 0).then_some(0))
            else {
                continue;
            };
            let Some(line_end) = memchr::memchr(b'\n', &buf[hit..])
                .map(|k| hit + k)
                .or((end == size).then_some(len))
            else {
                continue;
            };
            let Ok(line) = scan_line(&buf, line_start, line_end, 0) else {
                continue;
            };
            if line.kind == LineKind::System(SystemSub::CompactBoundary) && line.parent.is_none() {
                return Ok(Some(start + line_start as u64));
            }
        }
        if start == 0 {
            break;
        }
        end = start + OVERLAP;
    }
    Ok(None)
}
