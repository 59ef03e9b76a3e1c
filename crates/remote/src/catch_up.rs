//! Catching a resumed session's replica up with its local transcript.
//!
//! A session may have lines the stream lacks: the process that wrote them died with its
//! outbox unpublished (its spill file left behind, or lines only in memory), it ran
//! without `--remote`, or it was forked from another session. The local transcript has
//! every one of them, in order, so it is the source: when a session is attached, the
//! lines its transcript held *before this process wrote to it* (the boundary) are
//! compared with the stream, and those after the last line the stream holds for the
//! session are published, before anything new.
//!
//! Because the publisher's pipeline stores each line only right after its predecessor,
//! the stream holds a prefix of the session's lines: its count of them says which local
//! line its last one is (that line must equal it; lines too large for the server are
//! not counted), and so exactly where to start. Not found means the stream holds lines
//! this machine has not (another host went on with the session): nothing old is
//! published then, and that is said.
//!
//! The spill file a crashed process left is *replayed* by this: its lines are among the
//! transcript's (a spill only ever holds lines already written), and their ids are
//! reused, so a line the dead process had in flight is still recognised as a duplicate.
//! It is renamed at attach (`remote-outbox.replay.jsonl`, so the new outbox can spill)
//! and removed once the catch-up is done. A uuid-less line not in it gets
//! `<session>@<byte offset>`, stable if the catch-up is interrupted and runs again.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{Hash as _, Hasher as _};
use std::io::{BufRead as _, BufReader, Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream::{message::StreamMessage, stream};
use futures::StreamExt as _;

use crate::connection::{Bound, RemoteError};
use crate::outbox::{Entry, read_spill_file};
use crate::pipeline::{Pipeline, publishable};
use crate::transcripts::subject;

/// The name a crashed process's spill file is given while it is replayed.
pub const REPLAY_FILE: &str = "remote-outbox.replay.jsonl";

/// Lines read from the transcript per batch.
const BATCH: usize = 1_000;

/// Where the lines written before this process end.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Boundary {
    /// The transcript's size when the session was attached with nothing mirrored yet.
    Bytes(u64),
    /// Just before this line, the first this process mirrored.
    BeforeLine(String),
}

/// A pending catch-up (made at attach, run once the connection is up).
#[derive(Debug)]
pub(crate) struct CatchUp {
    session: String,
    subject: String,
    transcript: PathBuf,
    boundary: Boundary,
    replay: Option<PathBuf>,
}

impl CatchUp {
    /// Records the boundary and moves a left-behind spill file (`spill`) aside.
    /// `mirrored` lines were handed to the publisher before attach, the first being
    /// `first`.
    pub(crate) fn prepare(
        session: &str,
        transcript: &Path,
        spill: &Path,
        mirrored: u64,
        first: Option<String>,
    ) -> Self {
        let boundary = match first {
            Some(line) if mirrored > 0 => Boundary::BeforeLine(line),
            _ => Boundary::Bytes(std::fs::metadata(transcript).map_or(0, |m| m.len())),
        };
        let replay = spill.with_file_name(REPLAY_FILE);
        if let Err(error) = move_aside(spill, &replay) {
            tracing::warn!(%error, "the spill file {} could not be moved aside for replay; the local transcript is caught up without it", spill.display());
        }
        Self {
            session: session.to_owned(),
            subject: subject(session),
            transcript: transcript.to_owned(),
            boundary,
            replay: replay.exists().then_some(replay),
        }
    }

    /// Publishes what the stream lacks, then removes the replayed spill file.
    pub(crate) async fn run(self, pipeline: &mut Pipeline) {
        let plan = loop {
            match self.plan(pipeline.bound(), pipeline.max_payload()).await {
                Ok(plan) => break plan,
                Err(error) => {
                    tracing::debug!(%error, session = self.session, "catching up the remote; trying again");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        };
        let Some((mut at, end, ids)) = plan else {
            tracing::warn!(
                session = self.session,
                "the remote holds lines of this session that this machine does not have; \
                 the local lines written before this run are not published"
            );
            return;
        };
        while at < end {
            let path = self.transcript.clone();
            let batch = tokio::task::spawn_blocking(move || read_batch(&path, at, end)).await;
            let lines = match batch {
                Ok(Ok(lines)) => lines,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "the transcript could not be read to catch the remote up");
                    return;
                }
                Err(error) => {
                    tracing::warn!(%error, "catching the remote up stopped");
                    return;
                }
            };
            if lines.is_empty() {
                break;
            }
            let mut entries = Vec::with_capacity(lines.len());
            for (offset, line) in lines {
                at = offset + line.len() as u64 + 1;
                entries.push(Entry {
                    subject: self.subject.clone(),
                    id: line_id(&self.session, offset, &line, &ids),
                    line,
                });
            }
            if !pipeline.publish_all(&entries).await {
                return;
            }
        }
        if let Some(replay) = &self.replay
            && let Err(error) = std::fs::remove_file(replay)
        {
            tracing::warn!(%error, "the replayed spill file {} could not be removed", replay.display());
        }
    }

    /// The byte range of the transcript to publish and the replayed ids, or `None` when
    /// the stream's last line is not in the transcript.
    async fn plan(&self, bound: &Bound, max_payload: usize) -> Result<Option<Plan>, RemoteError> {
        let last = match last_stored(&bound.stream, &self.subject).await? {
            Some(message) => Some(Stored {
                line: message.payload.to_vec(),
                count: stored_count(&bound.stream, &self.subject).await?,
            }),
            None => None,
        };
        let path = self.transcript.clone();
        let boundary = self.boundary.clone();
        let replay = self.replay.clone();
        tokio::task::spawn_blocking(move || {
            let range = scan(&path, &boundary, last.as_ref(), max_payload)
                .map_err(|error| RemoteError::js("reading the local transcript", error))?;
            let ids = match &replay {
                Some(replay) => replay_ids(replay),
                None => HashMap::new(),
            };
            Ok(range.map(|(start, end)| (start, end, ids)))
        })
        .await
        .map_err(|error| RemoteError::js("catching up", error))?
    }
}

/// The byte range to publish and the ids of the replayed spill file.
type Plan = (u64, u64, HashMap<u64, String>);

/// What the stream holds of the session: its last line, and how many lines.
#[derive(Debug)]
struct Stored {
    line: Vec<u8>,
    count: u64,
}

/// How many messages the stream holds on `subject`.
async fn stored_count(stream: &stream::Stream, subject: &str) -> Result<u64, RemoteError> {
    let mut subjects = stream
        .info_with_subjects(subject)
        .await
        .map_err(|error| RemoteError::js("counting the stream's lines", error))?;
    while let Some(entry) = subjects.next().await {
        let (name, count) =
            entry.map_err(|error| RemoteError::js("counting the stream's lines", error))?;
        if name == subject {
            return Ok(count as u64);
        }
    }
    Ok(0)
}

/// The subject's last stored message, `None` when it has none.
pub(crate) async fn last_stored(
    stream: &stream::Stream,
    subject: &str,
) -> Result<Option<StreamMessage>, RemoteError> {
    match stream.get_last_raw_message_by_subject(subject).await {
        Ok(message) => Ok(Some(message)),
        Err(error) if error.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
        Err(error) => Err(RemoteError::js("reading the stream's last line", error)),
    }
}

fn move_aside(spill: &Path, replay: &Path) -> std::io::Result<()> {
    if !spill.exists() {
        return Ok(());
    }
    if !replay.exists() {
        return std::fs::rename(spill, replay);
    }
    // An older replay is still pending (two crashes in a row): the newer lines go after.
    let mut text = std::fs::read(spill)?;
    if let Some(end) = text.iter().rposition(|b| *b == b'\n') {
        text.truncate(end + 1);
    } else {
        text.clear();
    }
    let mut out = std::fs::OpenOptions::new().append(true).open(replay)?;
    std::io::Write::write_all(&mut out, &text)?;
    std::fs::remove_file(spill)
}

fn hash_line(line: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    line.hash(&mut hasher);
    hasher.finish()
}

/// The ids of the replayed spill file's lines, by the line's text. A text that comes
/// more than once (the same metadata line twice) is left out: which id is whose is not
/// known, and one id for both would drop the second as a duplicate. Those lines get
/// `<session>@<offset>` (see [`line_id`]).
fn replay_ids(replay: &Path) -> HashMap<u64, String> {
    match read_spill_file(replay) {
        Ok(entries) => {
            let mut ids: HashMap<u64, Option<String>> = HashMap::new();
            for entry in entries {
                ids.entry(hash_line(&entry.line))
                    .and_modify(|id| *id = None)
                    .or_insert(Some(entry.id));
            }
            ids.into_iter()
                .filter_map(|(hash, id)| Some((hash, id?)))
                .collect()
        }
        Err(error) => {
            tracing::warn!(%error, "the spill file left behind cannot be read; its lines are caught up from the transcript");
            HashMap::new()
        }
    }
}

/// A line's de-duplication id: its uuid, else the id it had in the replayed spill file,
/// else `<session>@<offset>`.
fn line_id(session: &str, offset: u64, line: &str, replayed: &HashMap<u64, String>) -> String {
    #[derive(serde::Deserialize)]
    struct Uuid {
        uuid: Option<String>,
    }
    if let Ok(Uuid { uuid: Some(uuid) }) = serde_json::from_str::<Uuid>(line) {
        return uuid;
    }
    replayed
        .get(&hash_line(line))
        .cloned()
        .unwrap_or_else(|| format!("{session}@{offset}"))
}

/// Finds the range to publish: from just after the line the stream's last one is (or the
/// start when the stream has nothing) to the boundary. `None`: it is not there.
///
/// The stream holds a prefix of the session's lines (those too large for the server,
/// `max_payload`, left out), so its count says which local line its last one is; that
/// line must equal it. Failing that (the server's limit changed, say), the last line
/// equal to it is taken. Counting first matters when the same metadata line comes
/// twice: a mode switched away and back after the stream's last line.
fn scan(
    path: &Path,
    boundary: &Boundary,
    stored: Option<&Stored>,
    max_payload: usize,
) -> std::io::Result<Option<(u64, u64)>> {
    let last = stored.map(|s| s.line.as_slice());
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(stored.is_none().then_some((0, 0)));
        }
        Err(error) => return Err(error),
    };
    let limit = match boundary {
        Boundary::Bytes(n) => *n,
        Boundary::BeforeLine(_) => u64::MAX,
    };
    let mut reader = BufReader::new(file.take(limit));
    let mut offset = 0u64;
    let mut end = 0u64;
    let mut after_last = None;
    let mut at_count = None;
    let mut published = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 || line.last() != Some(&b'\n') {
            break; // the end, or a torn tail: only whole lines count
        }
        let text = &line[..line.len() - 1];
        if let Boundary::BeforeLine(first) = boundary
            && text == first.as_bytes()
        {
            break;
        }
        offset += read as u64;
        end = offset;
        if publishable(text.len(), max_payload) {
            published += 1;
            if stored.is_some_and(|s| s.count == published && s.line == text) {
                at_count = Some(offset);
            }
        }
        if last == Some(text) {
            after_last = Some(offset);
        }
    }
    Ok(match last {
        None => Some((0, end)),
        Some(_) => at_count.or(after_last).map(|start| (start, end)),
    })
}

/// Up to [`BATCH`] whole lines of `path` from `at` (a line start) before `end`, each
/// with its offset.
fn read_batch(path: &Path, at: u64, end: u64) -> std::io::Result<Vec<(u64, String)>> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(at))?;
    let mut reader = BufReader::new(file.take(end - at));
    let mut lines = Vec::new();
    let mut offset = at;
    let mut line = String::new();
    while lines.len() < BATCH {
        line.clear();
        let read = reader.read_line(&mut line)?;
        if read == 0 || !line.ends_with('\n') {
            break;
        }
        lines.push((offset, line[..line.len() - 1].to_owned()));
        offset += read as u64;
    }
    Ok(lines)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn transcript(lines: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn lines_in(path: &Path, range: (u64, u64)) -> Vec<String> {
        read_batch(path, range.0, range.1)
            .unwrap()
            .into_iter()
            .map(|(_, l)| l)
            .collect()
    }

    fn stored(line: &str, count: u64) -> Stored {
        Stored {
            line: line.as_bytes().to_vec(),
            count,
        }
    }

    #[test]
    fn the_lines_after_the_streams_last_are_published_up_to_the_boundary() {
        let (_d, path) = transcript(&["a", "b", "c", "d"]);
        let all = std::fs::metadata(&path).unwrap().len();
        let scan = |boundary: &Boundary, stored: Option<&Stored>| {
            scan(&path, boundary, stored, 0).unwrap()
        };
        let range = scan(&Boundary::Bytes(all), Some(&stored("b", 2))).unwrap();
        assert_eq!(lines_in(&path, range), ["c", "d"]);
        // Nothing on the stream: everything.
        let range = scan(&Boundary::Bytes(all), None).unwrap();
        assert_eq!(lines_in(&path, range), ["a", "b", "c", "d"]);
        // The stream has it all.
        let range = scan(&Boundary::Bytes(all), Some(&stored("d", 4))).unwrap();
        assert!(lines_in(&path, range).is_empty());
        // This process's own lines (from "c") are not the catch-up's.
        let range = scan(&Boundary::BeforeLine("c".into()), Some(&stored("a", 1))).unwrap();
        assert_eq!(lines_in(&path, range), ["b"]);
        // The stream's last line is not here: another host went on.
        assert_eq!(scan(&Boundary::Bytes(all), Some(&stored("zz", 9))), None);
        // A byte boundary in the middle of a line stops before it.
        let range = scan(&Boundary::Bytes(5), None).unwrap();
        assert_eq!(lines_in(&path, range), ["a", "b"]);
    }

    #[test]
    fn regression_a_metadata_line_repeated_after_the_streams_last_does_not_hide_the_lines_between()
    {
        // The stream ends with a mode line; locally the mode was switched away and back.
        let (_d, path) = transcript(&["a", "mode:default", "b", "mode:plan", "mode:default"]);
        let all = std::fs::metadata(&path).unwrap().len();
        let range = scan(
            &path,
            &Boundary::Bytes(all),
            Some(&stored("mode:default", 2)),
            0,
        )
        .unwrap()
        .unwrap();
        assert_eq!(lines_in(&path, range), ["b", "mode:plan", "mode:default"]);
        // A line too large for the server is not counted among the stream's.
        let big = "x".repeat(2_000);
        let (_d, path) = transcript(&["a", &big, "mode:default", "b", "mode:default"]);
        let all = std::fs::metadata(&path).unwrap().len();
        let range = scan(
            &path,
            &Boundary::Bytes(all),
            Some(&stored("mode:default", 2)),
            1_024,
        )
        .unwrap()
        .unwrap();
        assert_eq!(lines_in(&path, range), ["b", "mode:default"]);
    }

    #[test]
    fn regression_a_line_twice_in_a_spill_file_gets_no_replayed_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REPLAY_FILE);
        let record = |id: &str, line: &str| {
            let entry = Entry {
                subject: "strata.session.s".into(),
                id: id.into(),
                line: line.into(),
            };
            serde_json::to_string(&entry).unwrap() + "\n"
        };
        let twice = r#"{"type":"permission-mode","permissionMode":"plan"}"#;
        let once = r#"{"type":"x"}"#;
        std::fs::write(
            &path,
            record("m1", twice) + &record("x1", once) + &record("m2", twice),
        )
        .unwrap();
        let ids = replay_ids(&path);
        assert_eq!(line_id("s", 3, once, &ids), "x1");
        assert_eq!(line_id("s", 10, twice, &ids), "s@10");
        assert_eq!(line_id("s", 90, twice, &ids), "s@90");
    }

    #[test]
    fn ids_are_the_uuid_then_the_replayed_id_then_the_offset() {
        let mut replayed = HashMap::new();
        replayed.insert(hash_line(r#"{"type":"x"}"#), "spilled-id".to_owned());
        assert_eq!(
            line_id("s", 7, r#"{"uuid":"u-1","type":"user"}"#, &replayed),
            "u-1"
        );
        assert_eq!(line_id("s", 7, r#"{"type":"x"}"#, &replayed), "spilled-id");
        assert_eq!(line_id("s", 7, r#"{"type":"y"}"#, &replayed), "s@7");
    }

    #[test]
    fn a_left_behind_spill_is_moved_aside_and_a_second_one_appended() {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join(crate::outbox::SPILL_FILE);
        let replay = dir.path().join(REPLAY_FILE);
        std::fs::write(&spill, "one\n").unwrap();
        move_aside(&spill, &replay).unwrap();
        assert!(!spill.exists());
        std::fs::write(&spill, "two\ntorn").unwrap();
        move_aside(&spill, &replay).unwrap();
        assert_eq!(std::fs::read_to_string(&replay).unwrap(), "one\ntwo\n");
    }
}
