//! Transcript replication on the `STRATA_TRANSCRIPTS` stream.
//!
//! Every transcript line a session writes is also published, as the exact bytes of the
//! line, to subject `strata.session.<id>` (issue 17 item 1), with the entry's uuid as the
//! de-duplication id (`Nats-Msg-Id`), so a publish retried after a lost acknowledgement
//! is stored once. Local files stay the source of truth on the machine; the stream is the
//! replica another machine rebuilds the session from ([`fetch_lines`], item 3).
//!
//! Publishing is off the turn's path: [`TranscriptPublisher::publish`] only queues the
//! line in the [`Outbox`] (memory, then disk past the bound); one background task
//! publishes the queue in order, one line at a time, and waits for each
//! acknowledgement before the next — with one line in flight the stream holds, per
//! session, always a prefix of the queue, which is what makes recovery exact. A line
//! whose publish failed is published again under the same id once the connection is
//! back; before that the stream is asked for the subject's last message, and when that
//! is the line (it was stored, its acknowledgement lost), it is not sent again — so no
//! duplicate appears even after an outage longer than the server's duplicate window.
//!
//! A session resumed with the remote first catches up (`catch_up`): the lines of its
//! local transcript after the last one the stream holds, the spill file a crashed
//! process left behind among them, are published before anything new.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, context::Publish};
use futures::StreamExt;
use strata_state::RemoteConnectionStatus;
use tokio::sync::watch;

use crate::catch_up::{self, CatchUp};
use crate::connection::{Bound, ConnectionState, RemoteConnection, RemoteError};
use crate::outbox::{Entry, Outbox, OutboxLimits, OutboxStats, SPILL_FILE};

/// The subject of session `id`'s lines.
pub fn subject(session: &str) -> String {
    format!("strata.session.{session}")
}

/// Room left for a message's headers under the server's payload limit.
const HEADER_ROOM: usize = 512;

/// The pause after a failed publish while the connection still looks up.
const RETRY_AFTER: Duration = Duration::from_millis(200);

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

    /// What is waiting.
    pub fn stats(&self) -> OutboxStats {
        self.outbox.stats()
    }
}

/// The publisher's task: wait to be released and connected, catch up, then publish the
/// queue line by line.
async fn run(connection: RemoteConnection, outbox: Arc<Outbox>, shared: Arc<Shared>) {
    let mut released = shared.released.subscribe();
    while !*released.borrow_and_update() {
        if released.changed().await.is_err() {
            return;
        }
    }
    let bound = connection.ready().await;
    let mut state = connection.state();
    let pending_catch_up = shared
        .catch_up
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(catch_up) = pending_catch_up {
        catch_up.run(&bound, &mut state).await;
        shared.catching_up.send_replace(false);
    }
    loop {
        if let Some(error) = outbox.take_spill_error() {
            tracing::warn!(
                error,
                "the remote outbox could not use its spill file; lines wait in memory"
            );
        }
        let Some(entry) = outbox.next() else {
            outbox.changed().await;
            continue;
        };
        // A line the server can never take would stop the session's replication for
        // good: it is left out, loudly (the local transcript has it).
        let limit = connection.client().server_info().max_payload;
        if limit > 0 && entry.line.len() + HEADER_ROOM > limit {
            tracing::warn!(
                subject = entry.subject,
                bytes = entry.line.len(),
                limit,
                "a transcript line is larger than the NATS server accepts; it is not replicated"
            );
        } else {
            publish_until_stored(&bound, &mut state, &entry).await;
        }
        outbox.ack();
    }
}

/// Publishes `entry` until the stream has it (see the module docs on retries).
pub(crate) async fn publish_until_stored(
    bound: &Bound,
    state: &mut watch::Receiver<ConnectionState>,
    entry: &Entry,
) {
    let mut failed = false;
    loop {
        // Publishing into a connection that is down only queues in the client and times
        // out: wait for it instead.
        while state.borrow_and_update().status != RemoteConnectionStatus::Connected {
            if state.changed().await.is_err() {
                return;
            }
        }
        if failed && is_last_stored(bound, entry).await {
            return;
        }
        match publish_one(&bound.js, entry).await {
            Ok(()) => return,
            Err(error) => {
                if !failed {
                    tracing::debug!(%error, subject = entry.subject, "a transcript line is not published yet; it will be again");
                }
                failed = true;
                tokio::time::sleep(RETRY_AFTER).await;
            }
        }
    }
}

/// Whether the subject's last stored message is `entry` (by its message id).
async fn is_last_stored(bound: &Bound, entry: &Entry) -> bool {
    match bound
        .stream
        .get_last_raw_message_by_subject(&entry.subject)
        .await
    {
        Ok(message) => message
            .headers
            .get(async_nats::header::NATS_MESSAGE_ID)
            .is_some_and(|id| id.as_str() == entry.id),
        Err(_) => false,
    }
}

async fn publish_one(js: &jetstream::Context, entry: &Entry) -> Result<(), RemoteError> {
    let ack = js
        .send_publish(
            entry.subject.clone(),
            Publish::build()
                .payload(entry.line.clone().into_bytes().into())
                .message_id(&entry.id),
        )
        .await
        .map_err(|error| RemoteError::js("publishing a transcript line", error))?;
    ack.await
        .map_err(|error| RemoteError::js("storing a transcript line", error))?;
    Ok(())
}

/// The spill file path of a session folder (for messages and tests).
pub fn spill_path(session_dir: &Path) -> PathBuf {
    session_dir.join(SPILL_FILE)
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
