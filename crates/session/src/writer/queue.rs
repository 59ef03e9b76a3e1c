//! The channel between the handles and the writer thread.
//!
//! A general-purpose channel moves one message per record and wakes the thread for each;
//! at 200,000 records a second those wake-ups cost more than the writes. This channel
//! carries bytes: handles append whole serialized records to one shared buffer and wake
//! the thread only when it sleeps; the thread swaps the buffer for an empty one and
//! writes everything that accumulated in one `write` (double buffering, so neither side
//! allocates in the steady state). Sync requests ride along and are answered after the
//! records queued before them are durable. Ordering is the buffer's order: a record
//! appended before a sync request is in the same or an earlier batch.
//!
//! The queue also carries the *written* acknowledgement (distinct from the fsync one):
//! every byte pushed has a position (bytes pushed since the writer opened), and after
//! each round the thread publishes the position up to which everything has been handed
//! to the kernel. A producer that must not show a record to anyone before it is in the
//! file ([`super::TranscriptWriter::append_written`]) waits for that position. The
//! thread pays one extra lock per round (not per record) and wakes nobody when no one
//! waits, so group commit keeps its throughput.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::worker::{Reply, StoredError};

/// Producers wait when this many bytes are queued and not yet taken (a disk slower than
/// the agent), instead of growing memory without bound; it also bounds how long a turn
/// end can wait behind earlier records (16 MiB is well under a second of writing).
const MAX_QUEUED: usize = 16 << 20;

/// The writer thread has stopped; nothing more can be queued.
#[derive(Debug)]
pub(crate) struct Stopped;

#[derive(Debug, Default)]
struct State {
    records: Vec<u8>,
    /// A `user`/`assistant` record is among `records`.
    starts: bool,
    syncs: Vec<Reply>,
    closed: bool,
    worker_idle: bool,
    worker_gone: bool,
    /// Bytes pushed since the writer opened: the position of the end of the last record.
    pushed: u64,
    /// Position up to which every record has been written (or, before the first
    /// message, taken to be held in memory: see `acknowledge`).
    written: u64,
    /// Producers waiting in [`Queue::wait_written`].
    written_waiters: usize,
}

#[derive(Debug, Default)]
pub(crate) struct Queue {
    state: Mutex<State>,
    work: Condvar,
    room: Condvar,
    /// Signalled when `written` moves, a write fails or the thread stops.
    written: Condvar,
}

/// What the thread took in one round.
pub(crate) struct Taken {
    /// A `user`/`assistant` record was among the bytes taken.
    pub(crate) starts: bool,
    pub(crate) syncs: Vec<Reply>,
    /// No handle is left: finish and stop.
    pub(crate) closed: bool,
    /// The position of the end of the last byte taken (everything before it is now the
    /// thread's).
    pub(crate) through: u64,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one whole record (newline included); returns its end position, for
    /// [`Queue::wait_written`].
    pub(crate) fn push(&self, line: &[u8], starts: bool) -> Result<u64, Stopped> {
        let mut s = self.lock();
        while s.records.len() >= MAX_QUEUED && !s.worker_gone {
            s = self.room.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        if s.worker_gone || s.closed {
            return Err(Stopped);
        }
        s.records.extend_from_slice(line);
        s.pushed += line.len() as u64;
        s.starts |= starts;
        self.wake(&mut s);
        Ok(s.pushed)
    }

    /// Waits until every record up to `position` has been written (see
    /// [`Queue::acknowledge`]), or until writing fails (`failed` says whether it does
    /// now) or the thread stops.
    pub(crate) fn wait_written(
        &self,
        position: u64,
        failed: impl Fn() -> Option<StoredError>,
    ) -> Result<(), StoredError> {
        let mut s = self.lock();
        loop {
            if s.written >= position {
                return Ok(());
            }
            if s.worker_gone {
                return Err(StoredError::Stopped);
            }
            // A failed write keeps its records and retries them, but the caller must not
            // act as if this one were in the file.
            if let Some(err) = failed() {
                return Err(err);
            }
            s.written_waiters += 1;
            s = self.written.wait(s).unwrap_or_else(PoisonError::into_inner);
            s.written_waiters -= 1;
        }
    }

    /// Thread side: every record up to `through` is in the file (or is metadata held in
    /// memory because the session has no message, hence no file, yet: nothing a reader
    /// of the file could miss). Wakes the producers waiting for it, if any.
    pub(crate) fn acknowledge(&self, through: u64) {
        let mut s = self.lock();
        if through > s.written {
            s.written = through;
        }
        if s.written_waiters > 0 {
            self.written.notify_all();
        }
    }

    /// Thread side: a write failed; producers waiting for it learn so.
    pub(crate) fn write_failed(&self) {
        let s = self.lock();
        if s.written_waiters > 0 {
            self.written.notify_all();
        }
    }

    /// Queues a sync request behind the records queued so far.
    pub(crate) fn sync(&self, reply: Reply) -> Result<(), Stopped> {
        let mut s = self.lock();
        if s.worker_gone || s.closed {
            return Err(Stopped);
        }
        s.syncs.push(reply);
        self.wake(&mut s);
        Ok(())
    }

    /// The last handle is gone: the thread finishes what is queued and stops.
    pub(crate) fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        self.work.notify_one();
    }

    fn wake(&self, s: &mut State) {
        if s.worker_idle {
            s.worker_idle = false;
            self.work.notify_one();
        }
    }

    /// Thread side: waits (at most `timeout`, or until work arrives) and moves the queued
    /// records to the end of `pending`.
    pub(crate) fn take(&self, pending: &mut Vec<u8>, timeout: Option<Duration>) -> Taken {
        let mut s = self.lock();
        while s.records.is_empty() && s.syncs.is_empty() && !s.closed {
            s.worker_idle = true;
            match timeout {
                None => s = self.work.wait(s).unwrap_or_else(PoisonError::into_inner),
                Some(t) => {
                    let (guard, result) = self
                        .work
                        .wait_timeout(s, t)
                        .unwrap_or_else(PoisonError::into_inner);
                    s = guard;
                    if result.timed_out() {
                        break;
                    }
                }
            }
        }
        s.worker_idle = false;
        if pending.is_empty() {
            // Swap buffers: both keep their capacity, nothing is copied.
            std::mem::swap(pending, &mut s.records);
        } else {
            pending.extend_from_slice(&s.records);
            s.records.clear();
        }
        if s.records.capacity() > 4 * MAX_QUEUED {
            s.records = Vec::new();
        }
        self.room.notify_all();
        Taken {
            starts: std::mem::take(&mut s.starts),
            syncs: std::mem::take(&mut s.syncs),
            closed: s.closed,
            through: s.pushed,
        }
    }

    /// Thread side, when it stops for good (also when it panics): later pushes fail and
    /// waiting syncs learn that their records were not made durable.
    pub(crate) fn worker_gone(&self) {
        let syncs = {
            let mut s = self.lock();
            s.worker_gone = true;
            self.room.notify_all();
            self.written.notify_all();
            std::mem::take(&mut s.syncs)
        };
        for reply in syncs {
            reply.send(Err(StoredError::Stopped));
        }
    }
}
