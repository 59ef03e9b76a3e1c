//! Transcript replication on the `STRATA_TRANSCRIPTS` stream.
//!
//! Every transcript line a session writes is also published, as the exact bytes of the
//! line, to subject `strata.session.<id>` (issue 17 item 1), with the entry's uuid as the
//! de-duplication id (`Nats-Msg-Id`: `<session>:<uuid>`, since the stream de-duplicates
//! across sessions and a fork keeps its parent's uuids), so a publish retried after a
//! lost acknowledgement is stored once. Local files stay the source of truth on the
//! machine; the stream is the replica another machine rebuilds the session from
//! ([`fetch_lines`], item 3).
//!
//! Publishing is off the turn's path: [`TranscriptPublisher::publish`] only queues the
//! line in the [`Outbox`] (memory, then disk past the bound); one background task
//! publishes the queue in order, a window of lines at a time ([`crate::pipeline`]), each
//! line stored by the server only right after its predecessor — so the stream holds,
//! per session, always a prefix of the queue, which is what makes recovery exact. A line
//! whose publish failed is published again under the same id once the connection is
//! back; before that the stream is asked for the subject's last message, and the lines
//! up to it (stored, their acknowledgements lost) are not sent again — so no duplicate
//! appears even after an outage longer than the server's duplicate window.
//!
//! While a turn runs, its lines are gathered for 50 ms and published together, so the
//! publisher (and the server) wake once per batch rather than once per line; a backlog is
//! paced meanwhile ([`crate::pipeline`]). Between turns lines go out at once.
//!
//! A session resumed with the remote first catches up (`catch_up`): the lines of its
//! local transcript after the last one the stream holds, the spill file a crashed
//! process left behind among them, are published before anything new.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::consumer;
use futures::StreamExt;
use tokio::sync::watch;

use crate::catch_up::{self, CatchUp};
use crate::connection::{RemoteConnection, RemoteError};
use crate::outbox::{Entry, Outbox, OutboxLimits, OutboxStats, SPILL_FILE};
use crate::pipeline::Pipeline;

/// The subject of session `id`'s lines.
pub fn subject(session: &str) -> String {
    format!("strata.session.{session}")
}

/// How long a turn's lines are gathered before they go out together (see `run`): the
/// live view of the session lags by at most this much.
const LINGER: Duration = Duration::from_millis(50);

/// What the publisher's task and its handle share.
struct Shared {
    /// `false` until the session is attached: lines wait, so the catch-up goes first.
    released: watch::Sender<bool>,
    /// The catch-up to run before the queue, set by [`TranscriptPublisher::attach`].
    catch_up: Mutex<Option<CatchUp>>,
    /// Whether a catch-up is still to finish (for [`TranscriptPublisher::flush`]).
    catching_up: watch::Sender<bool>,
    /// The first line this publisher was given and how many (see `attach`).
    seen: Mutex<(u64, Option<String>)>,
    /// How many turns of the session run: the backlog is paced meanwhile.
    turn_running: Arc<AtomicUsize>,
}

/// Publishes transcript lines in order from a background task (see the module docs).
pub struct TranscriptPublisher {
    outbox: Arc<Outbox>,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TranscriptPublisher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TranscriptPublisher {
    /// Starts a publisher on `runtime` that publishes at once, with the default bound.
    pub fn spawn(connection: RemoteConnection, runtime: &tokio::runtime::Handle) -> Self {
        Self::spawn_with(connection, OutboxLimits::default(), false, runtime)
    }

    /// Starts a publisher with the outbox bound `limits`; `held`: nothing is published
    /// until [`TranscriptPublisher::attach`] (a session's publisher: its catch-up goes
    /// first).
    pub fn spawn_with(
        connection: RemoteConnection,
        limits: OutboxLimits,
        held: bool,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let outbox = Arc::new(Outbox::new(limits));
        let shared = Arc::new(Shared {
            released: watch::Sender::new(!held),
            catch_up: Mutex::new(None),
            catching_up: watch::Sender::new(false),
            seen: Mutex::new((0, None)),
            turn_running: Arc::new(AtomicUsize::new(0)),
        });
        let task = runtime.spawn(run(connection, Arc::clone(&outbox), Arc::clone(&shared)));
        Self {
            outbox,
            shared,
            task,
        }
    }

    /// Queues `line` (one transcript line, without its newline) of `session` under the
    /// de-duplication id `id` (the entry's uuid; a fresh one for lines without). Never
    /// waits on the network.
    pub fn publish(&self, session: &str, id: &str, line: &str) {
        {
            let mut seen = self
                .shared
                .seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            seen.0 += 1;
            if seen.1.is_none() {
                seen.1 = Some(line.to_owned());
            }
        }
        self.outbox.push(Entry {
            subject: subject(session),
            id: id.to_owned(),
            line: line.to_owned(),
        });
    }

    /// Attaches the open session `session` whose transcript is `transcript`: the spill
    /// file goes in `session_dir`, the lines the transcript held before this process
    /// wrote to it are caught up (with the spill file a crashed process left there), and
    /// publishing starts.
    pub fn attach(&self, session: &str, transcript: &Path, session_dir: &Path) {
        let spill = session_dir.join(SPILL_FILE);
        let (seen, first) = self
            .shared
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let catch_up = CatchUp::prepare(session, transcript, &spill, seen, first);
        self.outbox.set_spill_path(spill);
        *self
            .shared
            .catch_up
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(catch_up);
        self.shared.catching_up.send_replace(true);
        self.shared.released.send_replace(true);
    }

    /// Waits until every line queued so far (and the catch-up) is stored, or `limit`
    /// passes; returns whether they all were.
    pub async fn flush(&self, limit: Duration) -> bool {
        let drained = async {
            loop {
                let mut catching_up = self.shared.catching_up.subscribe();
                if self.outbox.stats().pending == 0 && !*catching_up.borrow_and_update() {
                    return;
                }
                tokio::select! {
                    () = self.outbox.changed() => {}
                    _ = catching_up.changed() => {}
                    () = tokio::time::sleep(Duration::from_millis(10)) => {}
                }
            }
        };
        tokio::time::timeout(limit, drained).await.is_ok()
    }

    /// Writes every line not stored yet to the session's spill file, for the next
    /// resume with the remote (the end of a session while the server is away).
    /// Returns how many lines were left there.
    pub fn persist(&self) -> std::io::Result<usize> {
        self.outbox.persist()
    }

    /// A turn of the session started (`true`) or ended (`false`): while one runs, a
    /// backlog is published at a pace that leaves the machine to the turn (the lines of
    /// the turn itself never wait).
    pub fn turn(&self, running: bool) {
        let turns = &self.shared.turn_running;
        if running {
            turns.fetch_add(1, Ordering::Relaxed);
        } else {
            // More ends than starts (a mirror told twice) must not wrap around.
            let _ = turns.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        }
    }

    /// What is waiting.
    pub fn stats(&self) -> OutboxStats {
        self.outbox.stats()
    }
}

/// The publisher's task: wait to be released and connected, catch up, then publish the
/// queue a window at a time.
async fn run(connection: RemoteConnection, outbox: Arc<Outbox>, shared: Arc<Shared>) {
    let mut released = shared.released.subscribe();
    while !*released.borrow_and_update() {
        if released.changed().await.is_err() {
            return;
        }
    }
    let bound = connection.ready().await;
    let mut pipeline = Pipeline::new(&connection, bound, Arc::clone(&shared.turn_running));
    let pending_catch_up = shared
        .catch_up
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(catch_up) = pending_catch_up {
        catch_up.run(&mut pipeline).await;
        shared.catching_up.send_replace(false);
    }
    // Whether the queue was empty before this window: its lines are a turn's first.
    let mut woken = false;
    loop {
        if let Some(error) = outbox.take_spill_error() {
            tracing::warn!(
                error,
                "the remote outbox could not use its spill file; lines wait in memory"
            );
        }
        let window = outbox.window(pipeline.window());
        if window.is_empty() {
            outbox.changed().await;
            woken = true;
            continue;
        }
        if std::mem::take(&mut woken)
            && window.len() < pipeline.window()
            && shared.turn_running.load(Ordering::Relaxed) > 0
        {
            // While a turn runs its lines are gathered for a moment and go out
            // together: one wakeup of this thread (and of the server) per `LINGER`,
            // not per line, each of which would take the processor from the turn.
            tokio::time::sleep(LINGER).await;
            continue;
        }
        let stored = pipeline.publish(&window).await;
        if stored == 0 {
            // The connection is gone: nothing more can be published by this task.
            return;
        }
        outbox.ack(stored);
    }
}

/// The spill file path of a session folder (for messages and tests).
pub fn spill_path(session_dir: &Path) -> PathBuf {
    session_dir.join(SPILL_FILE)
}

/// The last line of session `session` on the stream (`None` when it has none); waits
/// until the stream is bound.
pub async fn last_line(
    connection: &RemoteConnection,
    session: &str,
) -> Result<Option<String>, RemoteError> {
    let bound = connection.ready().await;
    let last = crate::catch_up::last_stored(&bound.stream, &subject(session)).await?;
    Ok(last.map(|message| String::from_utf8_lossy(&message.payload).into_owned()))
}

/// How many times reading a session back is tried (a cluster may be electing a leader).
const FETCH_ATTEMPTS: usize = 5;

/// Every line of session `session` on the stream, in order (empty when it has none).
pub async fn fetch_lines(
    connection: &RemoteConnection,
    session: &str,
) -> Result<Vec<String>, RemoteError> {
    let mut attempt = 1;
    loop {
        match fetch_once(connection, session).await {
            Ok(lines) => return Ok(lines),
            Err(error) if attempt >= FETCH_ATTEMPTS => return Err(error),
            Err(error) => {
                tracing::debug!(%error, session, "reading a session back; trying again");
                tokio::time::sleep(Duration::from_millis(500 * attempt as u64)).await;
                attempt += 1;
            }
        }
    }
}

async fn fetch_once(
    connection: &RemoteConnection,
    session: &str,
) -> Result<Vec<String>, RemoteError> {
    let stream = connection.ready().await.stream;
    let subject = subject(session);
    // The last message of the subject says where to stop; none: nothing to read.
    let last = match catch_up::last_stored(&stream, &subject).await? {
        Some(message) => message.sequence,
        None => return Ok(Vec::new()),
    };
    let consumer = stream
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: subject.clone(),
            deliver_policy: consumer::DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(|error| RemoteError::js("reading a session's transcript", error))?;
    let mut messages = consumer
        .messages()
        .await
        .map_err(|error| RemoteError::js("reading a session's transcript", error))?;
    let mut lines = Vec::new();
    while let Some(message) = messages.next().await {
        let message =
            message.map_err(|error| RemoteError::js("reading a session's transcript", error))?;
        let info = message
            .info()
            .map_err(|error| RemoteError::js("reading a session's transcript", error))?;
        let sequence = info.stream_sequence;
        lines.push(String::from_utf8_lossy(&message.payload).into_owned());
        if sequence >= last {
            break;
        }
    }
    Ok(lines)
}

/// Every session in the metadata bucket: its id and metadata document, most recently
/// updated first.
pub async fn list_sessions(
    connection: &RemoteConnection,
) -> Result<Vec<(String, serde_json::Map<String, serde_json::Value>)>, RemoteError> {
    let bucket = connection.bucket().await;
    let mut keys = bucket
        .keys()
        .await
        .map_err(|error| RemoteError::js("listing sessions", error))?;
    let mut sessions = Vec::new();
    while let Some(key) = keys.next().await {
        let key = key.map_err(|error| RemoteError::js("listing sessions", error))?;
        let Some(value) = bucket
            .get(&key)
            .await
            .map_err(|error| RemoteError::js("reading session metadata", error))?
        else {
            continue;
        };
        let doc = serde_json::from_slice(&value).map_err(|error| RemoteError::BadDocument {
            session: key.clone(),
            message: error.to_string(),
        })?;
        sessions.push((key, doc));
    }
    sessions.sort_by(|a, b| {
        let at = |d: &serde_json::Map<String, serde_json::Value>| {
            d.get("updated_at")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        at(&b.1).cmp(&at(&a.1))
    });
    Ok(sessions)
}
