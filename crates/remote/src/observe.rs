//! Watching the remote from outside any session: every metadata document and every
//! transcript line, live (issue 17 item 4, the web view).
//!
//! A worker watches its own key ([`watch_own_key`](crate::watch_own_key)); an observer
//! such as `strata serve` watches them all. [`watch_all_metadata`] starts with the latest
//! document of every session (a KV watch with history: the last value per key, deletions
//! included) and goes on with each change. [`follow_transcripts`] is an ordered consumer
//! of `STRATA_TRANSCRIPTS`, one session's subject or the whole stream, from a given
//! sequence on, that never ends: new lines arrive as they are published. Both are
//! streams the caller drops to stop; the server removes an ordered consumer nobody
//! reads.

use async_nats::jetstream::{consumer, kv};
use futures::{Stream, StreamExt};
use serde_json::{Map, Value};

use crate::connection::Bound;
use crate::connection::{RemoteConnection, RemoteError};
use crate::transcripts::subject;

/// What a metadata key holds after a change.
#[derive(Clone, Debug, PartialEq)]
pub enum MetadataState {
    /// The session's document.
    Document(Map<String, Value>),
    /// The key was deleted or purged: the session is gone from the bucket.
    Removed,
    /// The value is not a JSON object (another program wrote it); the parse error.
    Unreadable(String),
}

/// One change of one session's metadata document.
#[derive(Clone, Debug, PartialEq)]
pub struct MetadataChange {
    /// The session id (the key).
    pub session: String,
    /// The bucket's revision of this value (increasing across the whole bucket).
    pub revision: u64,
    /// What the key holds now.
    pub state: MetadataState,
}

/// The bucket and stream now, or an error saying the server is not there: an observer
/// retries with its own back-off instead of hanging on a server that is away.
fn bound_now(connection: &RemoteConnection) -> Result<Bound, RemoteError> {
    connection.bound().ok_or_else(|| RemoteError::Connect {
        url: connection.describe().to_owned(),
        message: "not connected to the NATS server".to_owned(),
    })
}

/// Every session's latest metadata document, then every change, as they happen.
pub async fn watch_all_metadata(
    connection: &RemoteConnection,
) -> Result<impl Stream<Item = Result<MetadataChange, RemoteError>> + Send + 'static, RemoteError> {
    let entries = bound_now(connection)?
        .bucket
        .watch_with_history(">")
        .await
        .map_err(|error| RemoteError::js("watching the sessions' metadata", error))?;
    Ok(entries.map(|entry| {
        let entry =
            entry.map_err(|error| RemoteError::js("watching the sessions' metadata", error))?;
        let state = match entry.operation {
            kv::Operation::Put => {
                match serde_json::from_slice::<Map<String, Value>>(&entry.value) {
                    Ok(doc) => MetadataState::Document(doc),
                    Err(error) => MetadataState::Unreadable(error.to_string()),
                }
            }
            kv::Operation::Delete | kv::Operation::Purge => MetadataState::Removed,
        };
        Ok(MetadataChange {
            session: entry.key,
            revision: entry.revision,
            state,
        })
    }))
}

/// One transcript line as stored on the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredLine {
    /// The session whose transcript it belongs to (from the subject).
    pub session: String,
    /// The stream's sequence number of the line (increasing across the whole stream).
    pub sequence: u64,
    /// The line, as the session wrote it (invalid UTF-8 replaced, which a transcript
    /// line never has).
    pub line: String,
}

/// Which lines [`follow_transcripts`] reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Follow {
    /// One session's lines; `None`: every session's.
    pub session: Option<String>,
    /// Only lines after this stream sequence (0: from the first).
    pub after: u64,
}

/// The transcript lines `follow` names, in stream order, then every new one as it is
/// stored. The stream ends only when the caller drops it.
pub async fn follow_transcripts(
    connection: &RemoteConnection,
    follow: Follow,
) -> Result<impl Stream<Item = Result<StoredLine, RemoteError>> + Send + 'static, RemoteError> {
    let stream = bound_now(connection)?.stream;
    let deliver_policy = match follow.after {
        0 => consumer::DeliverPolicy::All,
        after => consumer::DeliverPolicy::ByStartSequence {
            start_sequence: after + 1,
        },
    };
    let consumer = stream
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: follow.session.as_deref().map(subject).unwrap_or_default(),
            deliver_policy,
            description: Some("strata: following transcripts".to_owned()),
            ..Default::default()
        })
        .await
        .map_err(|error| RemoteError::js("following the transcripts", error))?;
    let messages = consumer
        .messages()
        .await
        .map_err(|error| RemoteError::js("following the transcripts", error))?;
    Ok(messages.map(|message| {
        let message =
            message.map_err(|error| RemoteError::js("following the transcripts", error))?;
        let sequence = message
            .info()
            .map_err(|error| RemoteError::js("following the transcripts", error))?
            .stream_sequence;
        let session = session_of_subject(message.subject.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(StoredLine {
            session,
            sequence,
            line: String::from_utf8_lossy(&message.payload).into_owned(),
        })
    }))
}

/// Whether the client is connected to the server now (it reconnects by itself after a
/// loss; an observer shows that what it shows may be out of date meanwhile).
pub fn is_connected(connection: &RemoteConnection) -> bool {
    matches!(
        connection.client().connection_state(),
        async_nats::connection::State::Connected
    )
}

/// The session id of a transcript subject (`strata.session.<id>`).
pub fn session_of_subject(subject: &str) -> Option<&str> {
    subject
        .strip_prefix("strata.session.")
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_id_is_the_subject_after_its_prefix() {
        assert_eq!(session_of_subject(&subject("abc-1")), Some("abc-1"));
        assert_eq!(session_of_subject("strata.session."), None);
        assert_eq!(session_of_subject("other.subject"), None);
    }
}
