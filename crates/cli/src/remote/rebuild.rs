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
//! - they differ somewhere: both went on differently. Nothing local is ever rewritten or
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

/// Compares a local transcript's bytes with the stream's lines. A last line without its
/// newline (a torn write) is compared as it is: when it equals the stream's line, the
/// writer terminates it before anything is appended.
pub(crate) fn compare(local: &[u8], remote: &[String]) -> Standing {
    let body = local.strip_suffix(b"\n").unwrap_or(local);
    let lines: Vec<&[u8]> = if local.is_empty() {
        Vec::new()
    } else {
        body.split(|b| *b == b'\n').collect()
    };
    if let Some(at) = lines
        .iter()
        .zip(remote)
        .position(|(here, there)| *here != there.as_bytes())
    {
        return Standing::Diverged {
            at,
            local: lines.len(),
            remote: remote.len(),
        };
    }
    if remote.len() > lines.len() {
        Standing::Behind { from: lines.len() }
    } else {
        Standing::UpToDate
    }
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
pub(crate) fn bring_level(path: &Path, remote: &[String]) -> Result<Outcome, Failure> {
    let read = |path: &Path| match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::failed(format!("reading {}: {e}", path.display()))),
    };
    let written = |e: strata_session::writer::WriterError| Failure::failed(e.to_string());
    let before = read(path)?;
    let from = match compare(before.as_deref().unwrap_or_default(), remote) {
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

    fn lines(of: &[&str]) -> Vec<String> {
        of.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn i17_a_stale_copy_is_behind_the_stream() {
        let remote = lines(&["a", "b", "c"]);
        assert_eq!(compare(b"a\nb\n", &remote), Standing::Behind { from: 2 });
        assert_eq!(compare(b"", &remote), Standing::Behind { from: 0 });
        // A torn last line equal to the stream's is the same line.
        assert_eq!(compare(b"a\nb", &remote), Standing::Behind { from: 2 });
    }

    #[test]
    fn i17_a_copy_holding_every_stream_line_is_up_to_date() {
        let remote = lines(&["a", "b"]);
        assert_eq!(compare(b"a\nb\n", &remote), Standing::UpToDate);
        assert_eq!(compare(b"a\nb\nc\n", &remote), Standing::UpToDate);
        assert_eq!(compare(b"a\n", &[]), Standing::UpToDate);
    }

    #[test]
    fn i17_a_copy_that_went_on_differently_has_diverged() {
        let remote = lines(&["a", "b", "c"]);
        assert_eq!(
            compare(b"a\nx\n", &remote),
            Standing::Diverged {
                at: 1,
                local: 2,
                remote: 3
            }
        );
        // A byte of difference is a difference (the file must equal the stream).
        assert_eq!(
            compare(b"a \n", &remote),
            Standing::Diverged {
                at: 0,
                local: 1,
                remote: 3
            }
        );
    }
}
