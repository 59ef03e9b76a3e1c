//! The outbox: transcript lines waiting to be published, bounded in memory, spilled to
//! disk past the bound (issue 17 item 5).
//!
//! The recorder hands every line to the outbox on the turn's path, so a push never waits
//! on the network: it takes a lock, appends, and wakes the publisher. While the server is
//! reachable the queue stays a few lines long; while it is not, lines pile up. Past the
//! bound ([`OutboxLimits`]) the outbox *moves to disk*: everything not yet acknowledged —
//! the lines being published, the memory queue, the new line — is written, in order, to the
//! spill file (`<session dir>/remote-outbox.jsonl`, one JSON record per line:
//! `{"subject":…,"id":…,"line":…}`), memory is emptied, and further lines are appended to
//! the file. The publisher then reads the file back in order. So while a spill file
//! exists it holds every unacknowledged line, and memory holds at most the bound.
//!
//! Once every line of the file has been read and acknowledged the file is removed and the
//! outbox is back in memory. A process that dies leaves the file behind; the next
//! `--remote` resume of the session replays it (see `catch_up`).
//!
//! The order is a transcript's meaning: lines come out exactly in the order they were
//! pushed, and a line is handed out again (the same id) until it is acknowledged.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

/// The spill file's name inside the session's folder.
pub const SPILL_FILE: &str = "remote-outbox.jsonl";

/// How much the outbox keeps in memory before it moves to disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutboxLimits {
    /// Lines kept in memory at most.
    pub memory_lines: usize,
    /// Bytes of line text kept in memory at most.
    pub memory_bytes: usize,
}

impl Default for OutboxLimits {
    /// 10,000 lines or 16 MiB: minutes of a busy session, and far more than a reachable
    /// server ever lets pile up.
    fn default() -> Self {
        Self {
            memory_lines: 10_000,
            memory_bytes: 16 << 20,
        }
    }
}

/// One line to publish: its subject, its de-duplication id and the exact text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// `strata.session.<id>`.
    pub subject: String,
    /// The line's id, the entry's uuid (or one made for a line without); its
    /// `Nats-Msg-Id` is `<session>:<id>`.
    pub id: String,
    /// The transcript line, without its newline.
    pub line: String,
}

/// What the outbox can report about itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutboxStats {
    /// Lines not yet acknowledged (memory, file and those being published).
    pub pending: usize,
    /// Of those, lines in the spill file.
    pub spilled: usize,
    /// Lines acknowledged since the start.
    pub published: u64,
}

/// The spill file: appended at its end, read from `read_at`.
struct Spill {
    path: PathBuf,
    file: File,
    read_at: u64,
    /// Lines in the file not read back yet.
    unread: usize,
}

#[derive(Default)]
struct State {
    limits: OutboxLimits,
    memory: VecDeque<Entry>,
    memory_bytes: usize,
    /// Handed to the publisher, not acknowledged yet, in order.
    in_flight: VecDeque<Entry>,
    spill_path: Option<PathBuf>,
    spill: Option<Spill>,
    published: u64,
    /// The last spill failure, reported once by the caller.
    spill_error: Option<String>,
}

/// The queue of lines to publish (see the module docs).
pub struct Outbox {
    state: Mutex<State>,
    wake: tokio::sync::Notify,
}

impl Outbox {
    /// An empty outbox with these limits; it spills only once it has a spill path.
    pub fn new(limits: OutboxLimits) -> Self {
        Self {
            state: Mutex::new(State {
                limits,
                ..State::default()
            }),
            wake: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the queue as consistent as any push or
        // pop leaves it (each is a few field updates); go on with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where to spill (`<session dir>/remote-outbox.jsonl`). Until it is set the outbox
    /// only keeps memory (past the bound too: there is nowhere else).
    pub fn set_spill_path(&self, path: PathBuf) {
        self.lock().spill_path = Some(path);
    }

    /// Appends `entry`; never waits on the network (a file write when spilling).
    pub fn push(&self, entry: Entry) {
        let mut state = self.lock();
        state.push(entry);
        drop(state);
        self.wake.notify_one();
    }

    /// The next lines to publish, at most `max`, in order: those handed out and not
    /// acknowledged yet first, then the oldest queued. Empty when nothing is pending.
    pub fn window(&self, max: usize) -> Vec<Entry> {
        let mut state = self.lock();
        while state.in_flight.len() < max {
            let Some(next) = state.pop() else { break };
            state.in_flight.push_back(next);
        }
        state.in_flight.iter().take(max).cloned().collect()
    }

    /// The first `count` lines [`Outbox::window`] handed out are stored.
    pub fn ack(&self, count: usize) {
        let mut state = self.lock();
        let count = count.min(state.in_flight.len());
        state.in_flight.drain(..count);
        state.published += count as u64;
        state.retire_drained_spill();
        drop(state);
        // A flush may be waiting for the queue to empty.
        self.wake.notify_waiters();
    }

    /// Waits until something was pushed or acknowledged since the last call (or now).
    pub async fn changed(&self) {
        self.wake.notified().await;
    }

    /// What is pending.
    pub fn stats(&self) -> OutboxStats {
        let state = self.lock();
        let spilled = state.spill.as_ref().map_or(0, |s| s.unread);
        OutboxStats {
            pending: state.memory.len() + spilled + state.in_flight.len(),
            spilled,
            published: state.published,
        }
    }

    /// The last spill failure, once.
    pub fn take_spill_error(&self) -> Option<String> {
        self.lock().spill_error.take()
    }

    /// Writes every unacknowledged line to the spill file (the end of a session whose
    /// lines could not all be published): the next resume with the remote replays it.
    /// Returns how many lines the file holds (0: nothing was pending, no file).
    pub fn persist(&self) -> std::io::Result<usize> {
        let mut state = self.lock();
        let Some(path) = state.spill_path.clone() else {
            return Ok(0);
        };
        let mut lines: Vec<Entry> = state.in_flight.drain(..).collect();
        lines.extend(state.memory.drain(..));
        state.memory_bytes = 0;
        if let Some(mut spill) = state.spill.take() {
            lines.extend(read_unread(&mut spill)?);
        }
        if lines.is_empty() {
            remove_if_present(&path)?;
            return Ok(0);
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("jsonl.tmp");
        let mut file = File::create(&tmp)?;
        for entry in &lines {
            write_record(&mut file, entry)?;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        Ok(lines.len())
    }
}

impl State {
    fn over_bound(&self, extra: &Entry) -> bool {
        self.memory.len() + 1 > self.limits.memory_lines
            || self.memory_bytes + extra.line.len() > self.limits.memory_bytes
    }

    fn push(&mut self, entry: Entry) {
        if let Some(spill) = &mut self.spill {
            match write_record(&mut spill.file, &entry) {
                Ok(()) => {
                    spill.unread += 1;
                    return;
                }
                Err(error) => {
                    // The disk failed: memory is all there is (the local transcript
                    // still has the line).
                    self.spill_error = Some(format!("{}: {error}", spill.path.display()));
                }
            }
        } else if self.over_bound(&entry)
            && let Some(path) = self.spill_path.clone()
        {
            match self.start_spill(&path, &entry) {
                Ok(()) => return,
                Err(error) => self.spill_error = Some(format!("{}: {error}", path.display())),
            }
        }
        self.memory_bytes += entry.line.len();
        self.memory.push_back(entry);
    }

    /// Moves everything unacknowledged, then `entry`, to a new spill file.
    fn start_spill(&mut self, path: &Path, entry: &Entry) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(path)?;
        let mut unread = 0;
        // The lines being published go first, so the file alone is the whole backlog
        // (a crash now loses nothing of it); they stay handed out, and their copies in
        // the file are skipped below.
        let head = self.in_flight.iter().chain(self.memory.iter());
        for queued in head.chain(std::iter::once(entry)) {
            write_record(&mut file, queued)?;
            unread += 1;
        }
        let skip_in_flight = self.in_flight.len();
        self.memory.clear();
        self.memory_bytes = 0;
        let mut spill = Spill {
            path: path.to_owned(),
            file,
            read_at: 0,
            unread,
        };
        if skip_in_flight > 0 {
            let skipped = read_lines(&mut spill, skip_in_flight)?;
            debug_assert_eq!(skipped.len(), skip_in_flight);
        }
        self.spill = Some(spill);
        Ok(())
    }

    fn pop(&mut self) -> Option<Entry> {
        if let Some(entry) = self.memory.pop_front() {
            self.memory_bytes -= entry.line.len();
            return Some(entry);
        }
        let spill = self.spill.as_mut()?;
        if spill.unread == 0 {
            return None;
        }
        // Refill memory from the file, up to half the bound, so reading costs one read
        // per batch rather than per line.
        let batch = (self.limits.memory_lines / 2).max(1);
        match read_lines(spill, batch) {
            Ok(lines) => {
                for entry in lines {
                    self.memory_bytes += entry.line.len();
                    self.memory.push_back(entry);
                }
            }
            Err(error) => {
                self.spill_error = Some(format!("{}: {error}", spill.path.display()));
                return None;
            }
        }
        let entry = self.memory.pop_front()?;
        self.memory_bytes -= entry.line.len();
        Some(entry)
    }

    /// Removes the spill file once all it held was read and acknowledged.
    fn retire_drained_spill(&mut self) {
        let drained = self
            .spill
            .as_ref()
            .is_some_and(|s| s.unread == 0 && self.in_flight.is_empty() && self.memory.is_empty());
        if drained
            && let Some(spill) = self.spill.take()
            && let Err(error) = remove_if_present(&spill.path)
        {
            self.spill_error = Some(format!("{}: {error}", spill.path.display()));
        }
    }
}

fn write_record(file: &mut File, entry: &Entry) -> std::io::Result<()> {
    let mut record = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    record.push(b'\n');
    // Appended at the end whatever the read position (the reader seeks back).
    file.seek(SeekFrom::End(0))?;
    file.write_all(&record)
}

/// Reads up to `count` records from the read position.
fn read_lines(spill: &mut Spill, count: usize) -> std::io::Result<Vec<Entry>> {
    spill.file.seek(SeekFrom::Start(spill.read_at))?;
    let mut reader = BufReader::new(&spill.file);
    let mut lines = Vec::new();
    let mut text = String::new();
    while lines.len() < count && spill.unread > 0 {
        text.clear();
        let read = reader.read_line(&mut text)?;
        if read == 0 || !text.ends_with('\n') {
            // The writer is this process and writes whole records: a short record is
            // a disk problem, not a race.
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the spill file ends in the middle of a record",
            ));
        }
        spill.read_at += read as u64;
        spill.unread -= 1;
        lines.push(serde_json::from_str(text.trim_end()).map_err(std::io::Error::other)?);
    }
    Ok(lines)
}

fn read_unread(spill: &mut Spill) -> std::io::Result<Vec<Entry>> {
    read_lines(spill, spill.unread)
}

fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Every record of a spill file a process left behind, in order. A torn last record (the
/// process died writing it) is left out; any other bad record is an error naming its
/// line.
pub fn read_spill_file(path: &Path) -> std::io::Result<Vec<Entry>> {
    let text = std::fs::read_to_string(path)?;
    let mut entries = Vec::new();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    for (n, record) in complete.lines().enumerate() {
        let entry = serde_json::from_str(record).map_err(|error| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: line {}: {error}", path.display(), n + 1),
            )
        })?;
        entries.push(entry);
    }
    Ok(entries)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(i: usize) -> Entry {
        Entry {
            subject: "strata.session.s".into(),
            id: format!("id-{i}"),
            line: format!("{{\"n\":{i}}}"),
        }
    }

    fn next(outbox: &Outbox) -> Option<Entry> {
        outbox.window(1).into_iter().next()
    }

    fn drain(outbox: &Outbox) -> Vec<Entry> {
        let mut out = Vec::new();
        while let Some(e) = next(outbox) {
            out.push(e);
            outbox.ack(1);
        }
        out
    }

    fn small() -> OutboxLimits {
        OutboxLimits {
            memory_lines: 4,
            memory_bytes: 1 << 20,
        }
    }

    #[test]
    fn lines_come_out_in_order_and_the_unacknowledged_one_again() {
        let outbox = Outbox::new(OutboxLimits::default());
        outbox.push(entry(0));
        outbox.push(entry(1));
        assert_eq!(next(&outbox), Some(entry(0)));
        // Not acknowledged: handed out again (a retry under the same id).
        assert_eq!(next(&outbox), Some(entry(0)));
        outbox.ack(1);
        assert_eq!(drain(&outbox), vec![entry(1)]);
        assert_eq!(outbox.stats().published, 2);
    }

    #[test]
    fn a_window_hands_out_its_unacknowledged_tail_again_first() {
        let outbox = Outbox::new(OutboxLimits::default());
        for i in 0..5 {
            outbox.push(entry(i));
        }
        assert_eq!(outbox.window(3), (0..3).map(entry).collect::<Vec<_>>());
        assert_eq!(outbox.stats().pending, 5);
        // Two stored: the third goes again, ahead of the queue.
        outbox.ack(2);
        assert_eq!(outbox.window(3), (2..5).map(entry).collect::<Vec<_>>());
        // A smaller window than what is handed out keeps the order too.
        assert_eq!(outbox.window(1), vec![entry(2)]);
        outbox.ack(3);
        assert_eq!(outbox.window(3), Vec::<Entry>::new());
        assert_eq!(outbox.stats().published, 5);
    }

    #[test]
    fn past_the_bound_everything_pending_moves_to_the_file_and_comes_back_in_order() {
        // With one line in flight while the server is away, and with a window of three.
        for out in [1, 3] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s").join(SPILL_FILE);
            let outbox = Outbox::new(small());
            outbox.set_spill_path(path.clone());
            for i in 0..out {
                outbox.push(entry(i));
            }
            assert_eq!(outbox.window(out), (0..out).map(entry).collect::<Vec<_>>());
            for i in out..20 {
                outbox.push(entry(i));
            }
            let stats = outbox.stats();
            assert_eq!(stats.pending, 20);
            assert!(stats.spilled >= 15, "{stats:?}");
            // The file alone holds the whole backlog, the lines in flight first, once.
            let on_disk = read_spill_file(&path).unwrap();
            assert_eq!(on_disk, (0..20).map(entry).collect::<Vec<_>>());
            outbox.ack(1);
            assert_eq!(drain(&outbox), (1..20).map(entry).collect::<Vec<_>>());
            assert!(!path.exists(), "a drained spill file is removed");
            // Back in memory: a short queue does not touch the disk.
            outbox.push(entry(20));
            assert!(!path.exists());
            assert_eq!(drain(&outbox), vec![entry(20)]);
        }
    }

    #[test]
    fn lines_pushed_while_the_file_is_read_back_keep_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SPILL_FILE);
        let outbox = Outbox::new(small());
        outbox.set_spill_path(path.clone());
        for i in 0..10 {
            outbox.push(entry(i));
        }
        let mut out = Vec::new();
        for i in 10..30 {
            out.push(next(&outbox).unwrap());
            outbox.ack(1);
            outbox.push(entry(i));
        }
        out.extend(drain(&outbox));
        assert_eq!(out, (0..30).map(entry).collect::<Vec<_>>());
    }

    #[test]
    fn persist_leaves_every_pending_line_in_the_file_for_the_next_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SPILL_FILE);
        let outbox = Outbox::new(small());
        outbox.set_spill_path(path.clone());
        for i in 0..3 {
            outbox.push(entry(i));
        }
        assert_eq!(next(&outbox), Some(entry(0)));
        assert_eq!(outbox.persist().unwrap(), 3);
        assert_eq!(
            read_spill_file(&path).unwrap(),
            (0..3).map(entry).collect::<Vec<_>>()
        );
        // Also with part of the backlog already spilled.
        let outbox = Outbox::new(small());
        outbox.set_spill_path(path.clone());
        for i in 0..12 {
            outbox.push(entry(i));
        }
        assert_eq!(next(&outbox), Some(entry(0)));
        outbox.ack(1);
        assert_eq!(outbox.persist().unwrap(), 11);
        assert_eq!(
            read_spill_file(&path).unwrap(),
            (1..12).map(entry).collect::<Vec<_>>()
        );
        // Nothing pending: no file left.
        let outbox = Outbox::new(small());
        outbox.set_spill_path(path.clone());
        assert_eq!(outbox.persist().unwrap(), 0);
        assert!(!path.exists());
    }

    #[test]
    fn a_torn_last_record_of_a_crashed_process_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SPILL_FILE);
        let mut text = String::new();
        for i in 0..2 {
            text.push_str(&serde_json::to_string(&entry(i)).unwrap());
            text.push('\n');
        }
        text.push_str("{\"subject\":\"strata.sess");
        std::fs::write(&path, text).unwrap();
        assert_eq!(read_spill_file(&path).unwrap(), vec![entry(0), entry(1)]);
        std::fs::write(&path, "nope\n").unwrap();
        let error = read_spill_file(&path).unwrap_err().to_string();
        assert!(error.contains("line 1"), "{error}");
    }
}
