//! Line diffs of file edits: the added/removed counts for the session counters and the
//! `structuredPatch` hunks the transcript records (the reference agent's shape:
//! `oldStart`, `oldLines`, `newStart`, `newLines`, `lines` prefixed with ` `, `+`, `-`).

use std::time::Duration;

use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

/// Lines of unchanged context around each hunk.
const CONTEXT_LINES: usize = 3;

/// A diff gives up refining after this long (the counts stay correct, the hunks may be
/// coarser), so an edit of a huge file cannot stall the turn.
const DIFF_TIMEOUT: Duration = Duration::from_secs(1);

/// What changed between two versions of a file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DiffSummary {
    pub(crate) added: u64,
    pub(crate) removed: u64,
    pub(crate) patch: Value,
}

/// Diffs `old` against `new` line by line.
pub(crate) fn diff(old: &str, new: &str) -> DiffSummary {
    let d = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let (mut added, mut removed) = (0u64, 0u64);
    for change in d.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let hunks: Vec<Value> = d
        .grouped_ops(CONTEXT_LINES)
        .iter()
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let lines: Vec<String> = group
                .iter()
                .flat_map(|op| d.iter_changes(op))
                .map(|change| {
                    let prefix = match change.tag() {
                        ChangeTag::Insert => '+',
                        ChangeTag::Delete => '-',
                        ChangeTag::Equal => ' ',
                    };
                    let text = change.to_string_lossy();
                    let text = text.strip_suffix('\n').unwrap_or(&text);
                    let text = text.strip_suffix('\r').unwrap_or(text);
                    format!("{prefix}{text}")
                })
                .collect();
            Some(json!({
                "oldStart": start(&old_range),
                "oldLines": old_range.len(),
                "newStart": start(&new_range),
                "newLines": new_range.len(),
                "lines": lines,
            }))
        })
        .collect();
    DiffSummary {
        added,
        removed,
        patch: Value::Array(hunks),
    }
}

/// Unified-diff numbering: 1-based, and an empty range names the line before it.
fn start(range: &std::ops::Range<usize>) -> usize {
    if range.is_empty() {
        range.start
    } else {
        range.start + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_changed_lines() {
        let s = diff("a\nb\nc\n", "a\nB\nc\nd\n");
        assert_eq!((s.added, s.removed), (2, 1));
        let hunk = &s.patch[0];
        assert_eq!(hunk["oldStart"], 1);
        assert_eq!(hunk["oldLines"], 3);
        assert_eq!(hunk["newLines"], 4);
        assert_eq!(hunk["lines"], json!([" a", "-b", "+B", " c", "+d"]));
    }

    #[test]
    fn creating_a_file_adds_every_line() {
        let s = diff("", "x\ny");
        assert_eq!((s.added, s.removed), (2, 0));
        assert_eq!(s.patch[0]["oldStart"], 0);
        assert_eq!(s.patch[0]["newStart"], 1);
    }

    #[test]
    fn identical_texts_have_no_hunks() {
        let s = diff("same\n", "same\n");
        assert_eq!((s.added, s.removed), (0, 0));
        assert_eq!(s.patch, json!([]));
    }
}
