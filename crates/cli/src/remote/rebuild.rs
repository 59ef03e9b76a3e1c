//! `-r <id> --remote`: bringing this machine's copy of a session level with the stream
//! before the engine resumes it (issue 17: a session moves between hosts, and back).
//!
//! A session may move A → B → A: when it comes back, A's transcript is a stale prefix of
//! the stream (B's turns are only there). Resuming the stale copy would lose B's turns
//! and, worse, publish A's new lines after B's, forking the session's history. So the
//! local transcript is compared with the stream line by line, as bytes:
//!
//! - no local transcript: the stream's lines are written as a new one;
//! - the local lines are a prefix of the stream's: the stream's further lines are
//!   appended, byte for byte, so the file ends equal to what the stream holds;
//! - the stream's lines are a prefix of the local ones (lines not published yet): nothing
//!   to do here, the catch-up publishes them once the session is attached;
//! - they differ somewhere: both went on differently.
//!
//! A local line larger than the server takes was never published (the publisher leaves
//! it out, loudly): it is not looked for on the stream, so it makes no difference.
//!
//! Before anything is fetched, the local copy's last line is compared with the stream's
//! last line of the session ([`ends_alike`]): equal, and an entry with a uuid of its own
//! (two histories do not end with the same one), the copy is level, and the session's
//! lines are not read from the server at all — the usual case of a session resumed where
//! it ran. A copy ending with a metadata line is compared whole. Nothing local is ever rewritten or
//!   dropped: the file is left as it is and the user is told which session, from which
//!   line, and what they can do; the session's new lines are then kept local (the
//!   binary does not publish them), so the stream never holds two histories of it.

use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_session::writer::TranscriptWriter;

use crate::exit::Failure;

/// How the local transcript stands against the stream's lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// The local lines hold every line of the stream (and maybe more, not published yet).
    UpToDate,
    /// The stream continues the local lines: those from this index on are missing here.
    Behind { from: usize },
    /// The first line (0-based) where the two differ, and how many lines each has.
    Diverged {
        at: usize,
        local: usize,
        remote: usize,
    },
}

/// The lines of a transcript's bytes. A last line without its newline (a torn write) is
/// a line as it is: when it equals the stream's line, the writer terminates it before
/// anything is appended.
fn split_lines(local: &[u8]) -> Vec<&[u8]> {
    if local.is_empty() {
        return Vec::new();
    }
    let body = local.strip_suffix(b"\n").unwrap_or(local);
    body.split(|b| *b == b'\n').collect()
}

/// Compares a local transcript's bytes with the stream's lines; `max_payload` is the
/// server's limit (0: unknown), past which a local line was never published.
pub(crate) fn compare(local: &[u8], remote: &[String], max_payload: usize) -> Standing {
    let lines = split_lines(local);
    let published = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| strata_remote::publishable(line.len(), max_payload));
    let mut matched = 0;
    for ((at, here), there) in published.zip(remote) {
        if *here != there.as_bytes() {
            return Standing::Diverged {
                at,
                local: lines.len(),
                remote: remote.len(),
            };
        }
        matched += 1;
    }
    if remote.len() > matched {
        Standing::Behind { from: matched }
    } else {
        Standing::UpToDate
    }
}

/// Whether the local transcript at `path` ends, as far as the stream can know it, with
/// `last`, the stream's last line of the session, and that line is an entry with a uuid
/// of its own: then the copy is level and nothing needs fetching. A metadata line (a
/// mode change, a title) holds no uuid, and two histories may well end with the same
/// one: that is no proof. Only the file's end is read.
pub(crate) fn ends_alike(path: &Path, last: &str, max_payload: usize) -> std::io::Result<bool> {
    #[derive(serde::Deserialize)]
    struct Uuid {
        uuid: Option<String>,
    }
    let mut lines = strata_session::lines_from_end::LinesFromEnd::open(path)?;
    while let Some(line) = lines.next_line()? {
        if strata_remote::publishable(line.len(), max_payload) {
            return Ok(line == last.as_bytes()
                && serde_json::from_slice::<Uuid>(&line).is_ok_and(|entry| entry.uuid.is_some()));
        }
    }
    Ok(false)
}

/// What bringing the local copy level did.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing needed writing.
    UpToDate,
    /// The missing lines were written (a new transcript, or appended to the local one).
    Written,
    /// The local copy and the stream differ; the file was left as it was.
    Diverged {
        path: PathBuf,
        at: usize,
        local: usize,
        remote: usize,
    },
    /// The file changed while it was compared (another process resumed the session).
    Changed(PathBuf),
}

/// Brings the transcript at `path` (which may not exist) level with `remote`, the
/// stream's lines for the session (see the module docs). Blocking: call it off the
/// async workers.
pub(crate) fn bring_level(
    path: &Path,
    remote: &[String],
    max_payload: usize,
) -> Result<Outcome, Failure> {
    let read = |path: &Path| match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::failed(format!("reading {}: {e}", path.display()))),
    };
    let written = |e: strata_session::writer::WriterError| Failure::failed(e.to_string());
    let before = read(path)?;
    let from = match compare(before.as_deref().unwrap_or_default(), remote, max_payload) {
        Standing::UpToDate => return Ok(Outcome::UpToDate),
        Standing::Diverged { at, local, remote } => {
            return Ok(Outcome::Diverged {
                path: path.to_owned(),
                at,
                local,
                remote,
            });
        }
        Standing::Behind { from } => from,
    };
    // The writer locks the file: a strata process that has the session open fails
    // here instead of writing beside it.
    let writer = TranscriptWriter::open(path).map_err(written)?;
    // Between the read and the lock another process may have written: compare again
    // under the lock (a torn last line the writer just terminated counts as unchanged).
    let now = read(path)?;
    let unchanged = match (&before, &now) {
        (None, None) => true,
        (Some(before), Some(now)) => {
            now == before || (now.len() == before.len() + 1 && now.starts_with(before))
        }
        _ => false,
    };
    if !unchanged {
        writer.close().map_err(written)?;
        return Ok(Outcome::Changed(path.to_owned()));
    }
    let missing = &remote[from..];
    for line in missing {
        writer
            .append_raw_line(line, starts_a_message(line))
            .map_err(written)?;
    }
    writer.close().map_err(written)?;
    Ok(Outcome::Written)
}

/// Whether `line` is a message (the transcript file is created by the first one).
fn starts_a_message(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok_and(|v| {
        matches!(
            v.get("type").and_then(Value::as_str),
            Some("user" | "assistant")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`ends_alike`] of a transcript holding `text`.
    fn ends(text: &[u8], last: &str, max_payload: usize) -> bool {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, text).unwrap();
        ends_alike(&path, last, max_payload).unwrap()
    }

    fn lines(of: &[&str]) -> Vec<String> {
        of.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn i17_a_stale_copy_is_behind_the_stream() {
        let remote = lines(&["a", "b", "c"]);
        assert_eq!(compare(b"a\nb\n", &remote, 0), Standing::Behind { from: 2 });
        assert_eq!(compare(b"", &remote, 0), Standing::Behind { from: 0 });
        // A torn last line equal to the stream's is the same line.
        assert_eq!(compare(b"a\nb", &remote, 0), Standing::Behind { from: 2 });
    }

    #[test]
    fn i17_a_copy_holding_every_stream_line_is_up_to_date() {
        let remote = lines(&["a", "b"]);
        assert_eq!(compare(b"a\nb\n", &remote, 0), Standing::UpToDate);
        assert_eq!(compare(b"a\nb\nc\n", &remote, 0), Standing::UpToDate);
        assert_eq!(compare(b"a\n", &[], 0), Standing::UpToDate);
    }

    #[test]
    fn i17_a_copy_that_went_on_differently_has_diverged() {
        let remote = lines(&["a", "b", "c"]);
        assert_eq!(
            compare(b"a\nx\n", &remote, 0),
            Standing::Diverged {
                at: 1,
                local: 2,
                remote: 3
            }
        );
        // A byte of difference is a difference (the file must equal the stream).
        assert_eq!(
            compare(b"a \n", &remote, 0),
            Standing::Diverged {
                at: 0,
                local: 1,
                remote: 3
            }
        );
    }

    #[test]
    fn i17_a_local_line_too_large_for_the_server_is_not_looked_for_on_the_stream() {
        let big = "x".repeat(2_000);
        let local = format!("a\n{big}\nb\n");
        let remote = lines(&["a", "b", "c"]);
        assert_eq!(
            compare(local.as_bytes(), &remote, 1_024),
            Standing::Behind { from: 2 }
        );
        let b = r#"{"uuid":"u"}"#;
        assert!(ends(format!("a\n{b}\n{big}\n").as_bytes(), b, 1_024));
        // A server that takes it: it should be there.
        assert_eq!(
            compare(local.as_bytes(), &remote, 1 << 20),
            Standing::Diverged {
                at: 1,
                local: 3,
                remote: 3
            }
        );
    }

    #[test]
    fn i17_a_copy_ending_with_the_streams_last_line_is_level() {
        let b = r#"{"type":"user","uuid":"u2"}"#;
        assert!(ends(format!("a\n{b}\n").as_bytes(), b, 0));
        assert!(ends(format!("a\n{b}").as_bytes(), b, 0));
        assert!(!ends(format!("a\n{b}\nc\n").as_bytes(), b, 0));
        assert!(!ends(b"", b, 0));
    }

    #[test]
    fn regression_two_histories_ending_with_the_same_mode_line_are_not_taken_as_level() {
        let mode = r#"{"type":"permission-mode","permissionMode":"acceptEdits","sessionId":"s"}"#;
        assert!(!ends(format!("a\n{mode}\n").as_bytes(), mode, 0));
    }
}
