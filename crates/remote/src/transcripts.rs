//! Transcript replication on the `STRATA_TRANSCRIPTS` stream.
//!
//! Every transcript line a session writes is also published, as the exact bytes of the
//! line, to subject `strata.session.<id>` (issue 17 item 1), with the entry's uuid as the
//! de-duplication id (`Nats-Msg-Id`), so a publish retried after a lost acknowledgement
//! is stored once. Local files stay the source of truth on the machine; the stream is the
//! replica another machine rebuilds the session from ([`fetch_lines`], item 3).
//!
//! Publishing is off the turn's path: [`TranscriptPublisher::publish`] only queues the
//! line; one background task publishes the queue in order and waits for each
//! acknowledgement before the next (the order of a transcript is its meaning), retrying
//! a failed publish of the same line, under the same id, until it is stored.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, context::Publish, stream};
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use crate::connection::{RemoteConnection, RemoteError};

/// The stream holding every session's transcript lines.
pub const STREAM: &str = "STRATA_TRANSCRIPTS";

/// The subject of session `id`'s lines.
pub fn subject(session: &str) -> String {
    format!("strata.session.{session}")
}

/// How long the publisher waits before publishing a line again after a failure.
const RETRY_AFTER: Duration = Duration::from_millis(250);

/// How long the server remembers message ids to drop duplicates.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(10 * 60);

/// Creates the stream, or binds to it when it exists, with `replicas` copies.
pub async fn ensure_stream(
    connection: &RemoteConnection,
    replicas: usize,
) -> Result<stream::Stream, RemoteError> {
    let js = jetstream::new(connection.client().clone());
    js.get_or_create_stream(stream::Config {
        name: STREAM.to_owned(),
        subjects: vec!["strata.session.*".to_owned()],
        num_replicas: replicas,
        duplicate_window: DUPLICATE_WINDOW,
        ..Default::default()
    })
    .await
    .map_err(|error| RemoteError::js("creating the STRATA_TRANSCRIPTS stream", error))
}

/// One line to publish.
struct Line {
    subject: String,
    id: String,
    bytes: Vec<u8>,
}

/// What the publisher's queue holds.
enum Item {
    Line(Line),
    /// Answered once every line queued before it is stored.
    Flush(oneshot::Sender<()>),
}

/// Publishes transcript lines in order from a background task (see the module docs).
pub struct TranscriptPublisher {
    queue: mpsc::UnboundedSender<Item>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TranscriptPublisher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TranscriptPublisher {
    /// Starts the publisher on `runtime`.
    pub fn spawn(connection: RemoteConnection, runtime: &tokio::runtime::Handle) -> Self {
        let (queue, mut items) = mpsc::unbounded_channel::<Item>();
        let js = jetstream::new(connection.client().clone());
        let task = runtime.spawn(async move {
            while let Some(item) = items.recv().await {
                let line = match item {
                    Item::Line(line) => line,
                    Item::Flush(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                loop {
                    match publish_one(&js, &line).await {
                        Ok(()) => break,
                        Err(error) => {
                            tracing::warn!(%error, subject = line.subject, "transcript line not published yet; retrying");
                            tokio::time::sleep(RETRY_AFTER).await;
                        }
                    }
                }
            }
        });
        Self { queue, task }
    }

    /// Queues `line` (one transcript line, without its newline) of `session` under the
    /// de-duplication id `id` (the entry's uuid; a fresh one for lines without). Never
    /// waits.
    pub fn publish(&self, session: &str, id: &str, line: &str) {
        let _ = self.queue.send(Item::Line(Line {
            subject: subject(session),
            id: id.to_owned(),
            bytes: line.as_bytes().to_vec(),
        }));
    }

    /// Waits until every line queued so far is stored, or `limit` passes; returns
    /// whether they all were.
    pub async fn flush(&self, limit: Duration) -> bool {
        let (done, stored) = oneshot::channel();
        if self.queue.send(Item::Flush(done)).is_err() {
            return false;
        }
        matches!(tokio::time::timeout(limit, stored).await, Ok(Ok(())))
    }
}

async fn publish_one(js: &jetstream::Context, line: &Line) -> Result<(), RemoteError> {
    let ack = js
        .send_publish(
            line.subject.clone(),
            Publish::build()
                .payload(line.bytes.clone().into())
                .message_id(&line.id),
        )
        .await
        .map_err(|error| RemoteError::js("publishing a transcript line", error))?;
    ack.await
        .map_err(|error| RemoteError::js("storing a transcript line", error))?;
    Ok(())
}

/// Every line of session `session` on the stream, in order (empty when it has none).
pub async fn fetch_lines(
    connection: &RemoteConnection,
    session: &str,
) -> Result<Vec<String>, RemoteError> {
    let stream = ensure_stream(connection, 1).await?;
    let subject = subject(session);
    // The last message of the subject says where to stop; none: nothing to read.
    let last = match stream.get_last_raw_message_by_subject(&subject).await {
        Ok(message) => message.sequence,
        Err(_) => return Ok(Vec::new()),
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

/// Every session in the metadata bucket: its id and metadata document.
pub async fn list_sessions(
    connection: &RemoteConnection,
) -> Result<Vec<(String, serde_json::Map<String, serde_json::Value>)>, RemoteError> {
    let bucket = connection.bucket();
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
