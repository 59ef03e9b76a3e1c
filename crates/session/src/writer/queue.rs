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
}

#[derive(Debug, Default)]
pub(crate) struct Queue {
    state: Mutex<State>,
    work: Condvar,
    room: Condvar,
}

/// What the thread took in one round.
pub(crate) struct Taken {
    /// A `user`/`assistant` record was among the bytes taken.
    pub(crate) starts: bool,
    pub(crate) syncs: Vec<Reply>,
    /// No handle is left: finish and stop.
    pub(crate) closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one whole record (newline included).
    pub(crate) fn push(&self, line: &[u8], starts: bool) -> Result<(), Stopped> {
        let mut s = self.lock();
        while s.records.len() >= MAX_QUEUED && !s.worker_gone {
            s = self.room.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        if s.worker_gone || s.closed {
            return Err(Stopped);
        }
        s.records.extend_from_slice(line);
        s.starts |= starts;
        self.wake(&mut s);
        Ok(())
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
        }
    }

    /// Thread side, when it stops for good (also when it panics): later pushes fail and
    /// waiting syncs learn that their records were not made durable.
    pub(crate) fn worker_gone(&self) {
        let syncs = {
            let mut s = self.lock();
            s.worker_gone = true;
            self.room.notify_all();
            std::mem::take(&mut s.syncs)
        };
        for reply in syncs {
            reply.send(Err(StoredError::Stopped));
        }
    }
}
