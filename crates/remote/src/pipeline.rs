//! Publishing transcript lines a window at a time, never stored out of order.
//!
//! Waiting for each line's acknowledgement before sending the next costs a round trip and
//! a wakeup per line (about 9,000 lines a second on loopback, the publisher busy all that
//! time). The [`Pipeline`] sends a window of lines at once and then awaits their
//! acknowledgements together.
//!
//! Sending several lines at once could store them out of order: the client re-sends on a
//! new connection what it still had queued when the old one dropped, while the lines
//! already written to the old socket are lost; a cluster electing a leader refuses one
//! line and takes the next. So the order is kept by the server, not by timing: every line
//! of a window but the first carries `Nats-Expected-Last-Msg-Id` = its predecessor's id,
//! and the stream stores it only right after its predecessor. Whatever happens to a
//! window, the stream holds a *prefix* of it, in order:
//!
//! - an acknowledged line means every line before it in the window is stored too, even
//!   when their acknowledgements were lost;
//! - after a failure, the prefix is found by asking the stream for the last message of
//!   each subject in the window (one request per session, usually one);
//! - a window's first line is sent only once everything before it is known stored, and a
//!   line re-sent late by the client carries the same expectation (or is a duplicate by
//!   its `Nats-Msg-Id`), so it lands in its place or not at all.
//!
//! The expectation is stream-wide: another process publishing in between makes the
//! server refuse the rest of the window ("wrong last message id"). That is contention,
//! not failure: the window is halved and the refused lines are sent again at once. A
//! window that goes through whole doubles it again, up to [`MAX_WINDOW`].
//!
//! Publishing is background work: while a turn of the session runs, a backlog (a long
//! session caught up, an outage's lines) goes out at a pace ([`TURN_PACE`]) so the turn
//! keeps the machine; between turns it goes at full speed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_nats::jetstream::context::{Publish, PublishErrorKind};
use strata_state::RemoteConnectionStatus;
use tokio::sync::watch;

use crate::catch_up::last_stored;
use crate::connection::{Bound, ConnectionState, RemoteConnection, RemoteError};
use crate::observe::session_of_subject;
use crate::outbox::Entry;

/// The most lines in flight at once: 64 lines of a typical 1 KB are one 64 KB write.
pub(crate) const MAX_WINDOW: usize = 64;

/// The window a pipeline starts with (it doubles on each window that goes through).
const START_WINDOW: usize = 8;

/// Room left for a message's headers under the server's payload limit.
const HEADER_ROOM: usize = 512;

/// How fast a backlog goes out while a turn of the session runs, in [`cost`] units a
/// second: about 4,000 lines of 1 KB (4 MB) a second, far more than a session writes,
/// and little enough of the machine that the turn does not notice (`strata-bench
/// remote`: publishing at full speed, about 50,000 such lines a second, took a whole
/// processor and added 10–30% to a turn that only computes; at twice this pace a 0.5 ms
/// turn still lost 2–7%). Between turns there is no pace.
const TURN_PACE: f64 = 8_000.0;

/// What goes out at once before the pace applies, in [`cost`] units: a turn's own lines
/// never wait.
const TURN_BURST: f64 = 256.0;

/// A line's share of the pace: one for the message, one per KiB of it.
fn cost(entry: &Entry) -> f64 {
    1.0 + entry.line.len() as f64 / 1024.0
}

/// How often a paced wait looks whether the turn ended.
const PACE_CHECK: Duration = Duration::from_millis(10);

/// The most bytes of lines in flight at once (a window holds at least one line).
const MAX_WINDOW_BYTES: usize = 1 << 20;

/// How many lines of `entries` the next window of at most `lines` lines takes: bounded
/// by [`MAX_WINDOW_BYTES`] too, and never empty.
fn window_len(entries: &[Entry], lines: usize) -> usize {
    let mut bytes = 0;
    let mut len = 0;
    for entry in entries.iter().take(lines) {
        bytes += entry.line.len();
        if len > 0 && bytes > MAX_WINDOW_BYTES {
            break;
        }
        len += 1;
    }
    len
}

/// A line's `Nats-Msg-Id`: its id (the entry's uuid) within its session. The stream
/// de-duplicates across all its subjects, and a forked session holds its parent's lines
/// under the same uuids: a bare uuid would drop the fork's copies as duplicates.
fn message_id(entry: &Entry) -> String {
    let session = session_of_subject(&entry.subject).unwrap_or(&entry.subject);
    format!("{session}:{}", entry.id)
}

/// The pause after a failed publish while the connection still looks up.
const RETRY_AFTER: Duration = Duration::from_millis(200);

/// Sends windows of lines in order (see the module docs). One per publishing task.
pub(crate) struct Pipeline {
    client: async_nats::Client,
    state: watch::Receiver<ConnectionState>,
    bound: Bound,
    /// Lines sent at once now.
    window: usize,
    /// A publish failed: what the stream holds of the last window is not known.
    uncertain: bool,
    /// How many turns of the session run (told by the engine through the mirror).
    turn_running: Arc<AtomicUsize>,
    /// What may be sent before the pace applies, in [`cost`] units.
    budget: f64,
    /// When `budget` was last brought up to date.
    paced_at: tokio::time::Instant,
}

/// How one window went.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Every line is stored.
    All,
    /// The first `n` lines are stored; the server refused the next (another publisher
    /// came in between).
    Refused(usize),
    /// At least the first `n` lines are stored; past them it is not known.
    Failed(usize),
}

/// What came of one line of a window.
#[derive(Debug, PartialEq, Eq)]
enum Sent {
    /// Stored now, right after its predecessor.
    Stored,
    /// Stored before (its id was seen): says nothing of the lines before it.
    Duplicate,
    /// Larger than the server takes: left out, on purpose.
    Skipped,
    /// Refused because its predecessor was not the stream's last message.
    Refused,
    /// Not sent, or no acknowledgement.
    Failed,
}

impl Pipeline {
    /// A pipeline on `connection`, whose bucket and stream are `bound`.
    /// `turn_running` says when a turn of the session runs (the backlog is paced then).
    pub(crate) fn new(
        connection: &RemoteConnection,
        bound: Bound,
        turn_running: Arc<AtomicUsize>,
    ) -> Self {
        Self {
            client: connection.client().clone(),
            state: connection.state(),
            bound,
            window: START_WINDOW,
            uncertain: false,
            turn_running,
            budget: TURN_BURST,
            paced_at: tokio::time::Instant::now(),
        }
    }

    /// The bucket and stream.
    pub(crate) fn bound(&self) -> &Bound {
        &self.bound
    }

    /// The server's payload limit (0: not known yet).
    pub(crate) fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }

    /// How many lines the next window holds at most.
    pub(crate) fn window(&self) -> usize {
        self.window
    }

    /// Publishes all of `entries` in order, window by window; returns `false` only when
    /// the connection is gone for good.
    pub(crate) async fn publish_all(&mut self, mut entries: &[Entry]) -> bool {
        while !entries.is_empty() {
            let stored = self.publish(entries).await;
            if stored == 0 {
                return false;
            }
            entries = &entries[stored..];
        }
        true
    }

    /// Publishes the front of `entries` (at most a window) until some of it is stored;
    /// returns how many lines from the front are stored now, at least one — or `0` when
    /// the connection is gone for good.
    pub(crate) async fn publish(&mut self, entries: &[Entry]) -> usize {
        loop {
            // Publishing into a connection that is down only queues in the client and
            // times out: wait for it instead.
            while self.state.borrow_and_update().status != RemoteConnectionStatus::Connected {
                if self.state.changed().await.is_err() {
                    return 0;
                }
            }
            if self.uncertain {
                match stored_prefix(&self.bound, &entries[..entries.len().min(MAX_WINDOW)]).await {
                    Ok(stored) => {
                        self.uncertain = false;
                        if stored > 0 {
                            return stored;
                        }
                    }
                    Err(error) => {
                        tracing::debug!(%error, "the stream cannot say what it holds yet");
                        tokio::time::sleep(RETRY_AFTER).await;
                        continue;
                    }
                }
            }
            let window = &entries[..window_len(entries, self.window)];
            self.pace(window).await;
            match self.send(window).await {
                Outcome::All => {
                    self.window = (self.window * 2).min(MAX_WINDOW);
                    return window.len();
                }
                Outcome::Refused(stored) if stored > 0 => {
                    self.window = (self.window / 2).max(1);
                    return stored;
                }
                // A refused first line cannot happen (it carries no expectation); were
                // it to, it is treated as a failure rather than sent again at once.
                Outcome::Refused(stored) | Outcome::Failed(stored) => {
                    self.uncertain = true;
                    // A window too large for the link (lines of a megabyte on a slow
                    // uplink) times out whole: send less next time.
                    self.window = (self.window / 2).max(1);
                    if stored > 0 {
                        return stored;
                    }
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            }
        }
    }

    /// Waits, while a turn of the session runs, until `window` fits the pace (see
    /// [`TURN_PACE`]); returns at once otherwise.
    async fn pace(&mut self, window: &[Entry]) {
        let now = tokio::time::Instant::now();
        let refill = now.duration_since(self.paced_at).as_secs_f64() * TURN_PACE;
        self.paced_at = now;
        // The budget refills with time whether a turn runs or not, and is spent only
        // while one runs: turns back to back do not each start with a full burst.
        self.budget = (self.budget + refill).min(TURN_BURST);
        if self.turn_running.load(Ordering::Relaxed) == 0 {
            return;
        }
        let limit = self.client.server_info().max_payload;
        let cost: f64 = window
            .iter()
            .filter(|entry| publishable(entry.line.len(), limit))
            .map(cost)
            .sum();
        if self.budget < cost {
            let until = now + Duration::from_secs_f64((cost - self.budget) / TURN_PACE);
            // Checked again every few milliseconds: a turn that ends lifts the pace (the
            // end of a session waits for what is left to go out).
            while tokio::time::Instant::now() < until
                && self.turn_running.load(Ordering::Relaxed) > 0
            {
                tokio::time::sleep_until(until.min(tokio::time::Instant::now() + PACE_CHECK)).await;
            }
            self.budget = cost;
            self.paced_at = tokio::time::Instant::now();
        }
        self.budget -= cost;
    }

    /// Sends `window` and awaits its acknowledgements.
    async fn send(&self, window: &[Entry]) -> Outcome {
        let limit = self.client.server_info().max_payload;
        let mut acks = Vec::with_capacity(window.len());
        let mut previous: Option<String> = None;
        for entry in window {
            // A line the server can never take would stop the session's replication
            // for good: it is left out, loudly (the local transcript has it).
            if !publishable(entry.line.len(), limit) {
                tracing::warn!(
                    subject = entry.subject,
                    bytes = entry.line.len(),
                    limit,
                    "a transcript line is larger than the NATS server accepts; it is not replicated"
                );
                acks.push(None);
                continue;
            }
            let id = message_id(entry);
            let mut publish = Publish::build()
                .payload(entry.line.clone().into_bytes().into())
                .message_id(&id);
            if let Some(previous) = &previous {
                publish = publish.expected_last_message_id(previous);
            }
            match self
                .bound
                .js
                .send_publish(entry.subject.clone(), publish)
                .await
            {
                Ok(ack) => acks.push(Some(ack)),
                Err(error) => {
                    // The rest would only be refused: it follows a line not sent.
                    tracing::debug!(%error, subject = entry.subject, "a transcript line is not published yet; it will be again");
                    break;
                }
            }
            previous = Some(id);
        }
        // Awaited together: each acknowledgement's timeout runs at once, so a window lost
        // with a dropped connection costs one timeout, not one per line.
        let mut sent = futures::future::join_all(acks.into_iter().map(|ack| async move {
            let Some(ack) = ack else {
                return Sent::Skipped;
            };
            match ack.await {
                // Stored before: it vouches for itself only. A duplicate without a
                // sequence is a copy still being committed (or lost in an election) on
                // a clustered stream: not stored yet.
                Ok(ack) if ack.duplicate && ack.sequence == 0 => Sent::Failed,
                Ok(ack) if ack.duplicate => Sent::Duplicate,
                Ok(_) => Sent::Stored,
                Err(error) if error.kind() == PublishErrorKind::WrongLastMessageId => {
                    Sent::Refused
                }
                Err(error) => {
                    tracing::debug!(%error, "a transcript line is not stored yet; it will be published again");
                    Sent::Failed
                }
            }
        }))
        .await;
        sent.resize_with(window.len(), || Sent::Failed);
        outcome(&sent)
    }
}

/// Whether a line of `len` bytes fits a server that takes messages of `max_payload` bytes
/// (0: not known yet, taken as fitting), headers included. A line that does not is left
/// out of the stream (the local transcript has it).
pub fn publishable(len: usize, max_payload: usize) -> bool {
    max_payload == 0 || len + HEADER_ROOM <= max_payload
}

/// How a window went, from what came of each line. A stored line means every line
/// before it is stored (the expectations chain them), whatever their acknowledgements
/// said; lines left out count as done where they stand.
fn outcome(sent: &[Sent]) -> Outcome {
    let mut stored = sent
        .iter()
        .rposition(|s| *s == Sent::Stored)
        .map_or(0, |last| last + 1);
    while matches!(sent.get(stored), Some(Sent::Skipped | Sent::Duplicate)) {
        stored += 1;
    }
    if stored == sent.len() {
        Outcome::All
    } else if sent[stored..].contains(&Sent::Failed) {
        Outcome::Failed(stored)
    } else {
        Outcome::Refused(stored)
    }
}

/// How many lines from the front of `window` the stream holds, found from the last
/// message of each subject in it (the stream holds a prefix of a window, see the module
/// docs).
async fn stored_prefix(bound: &Bound, window: &[Entry]) -> Result<usize, RemoteError> {
    let mut subjects: Vec<&str> = Vec::new();
    for entry in window {
        if !subjects.contains(&entry.subject.as_str()) {
            subjects.push(&entry.subject);
        }
    }
    let mut stored = 0;
    for subject in subjects {
        let Some(last) = last_stored(&bound.stream, subject).await? else {
            continue;
        };
        let Some(id) = last.headers.get(async_nats::header::NATS_MESSAGE_ID) else {
            continue;
        };
        if let Some(at) = window
            .iter()
            .rposition(|e| e.subject == subject && message_id(e) == id.as_str())
        {
            stored = stored.max(at + 1);
        }
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_line_vouches_for_every_line_before_it() {
        use Sent::*;
        assert_eq!(outcome(&[Stored, Stored]), Outcome::All);
        assert_eq!(outcome(&[Failed, Stored, Failed]), Outcome::Failed(2));
        assert_eq!(outcome(&[Stored, Refused, Refused]), Outcome::Refused(1));
        assert_eq!(outcome(&[Stored, Refused, Failed]), Outcome::Failed(1));
        assert_eq!(outcome(&[Failed, Failed]), Outcome::Failed(0));
    }

    #[test]
    fn a_duplicate_vouches_for_itself_only() {
        use Sent::*;
        assert_eq!(outcome(&[Failed, Duplicate, Failed]), Outcome::Failed(0));
        assert_eq!(outcome(&[Stored, Duplicate, Refused]), Outcome::Refused(2));
        assert_eq!(outcome(&[Duplicate, Duplicate]), Outcome::All);
        assert_eq!(outcome(&[Failed, Duplicate, Stored]), Outcome::All);
    }

    #[test]
    fn a_window_is_bounded_in_bytes_but_never_empty() {
        let entry = |bytes: usize| Entry {
            subject: "strata.session.s".into(),
            id: "i".into(),
            line: "x".repeat(bytes),
        };
        let small: Vec<Entry> = (0..100).map(|_| entry(100)).collect();
        assert_eq!(window_len(&small, 64), 64);
        let large: Vec<Entry> = (0..10).map(|_| entry(400_000)).collect();
        assert_eq!(window_len(&large, 64), 2);
        assert_eq!(window_len(&[entry(5 << 20)], 64), 1);
        assert_eq!(window_len(&[], 64), 0);
    }

    #[test]
    fn message_ids_are_per_session_so_a_forks_copies_are_not_duplicates() {
        let line = |session: &str| Entry {
            subject: format!("strata.session.{session}"),
            id: "0b7c-uuid".into(),
            line: String::new(),
        };
        assert_eq!(message_id(&line("parent")), "parent:0b7c-uuid");
        assert_ne!(message_id(&line("parent")), message_id(&line("fork")));
    }

    #[test]
    fn lines_left_out_count_as_done_where_they_stand() {
        use Sent::*;
        assert_eq!(outcome(&[Skipped]), Outcome::All);
        assert_eq!(outcome(&[Skipped, Stored, Skipped]), Outcome::All);
        assert_eq!(outcome(&[Stored, Skipped, Failed]), Outcome::Failed(2));
        assert_eq!(outcome(&[Skipped, Failed]), Outcome::Failed(1));
    }
}
