//! FX-1's remote port on the `strata_sessions` bucket.
//!
//! The hub calls [`RemoteMetadataPort::session_metadata_changed`] inside the store's change
//! delivery, so the call must not wait on the network (a slow or absent server must never
//! slow a turn). The port therefore only stores the patch in a latest-wins slot (a
//! `tokio::sync::watch` channel; metadata is a state, so an older patch superseded before it
//! was written need never be written) and a background task does the read-merge-write.
//! While the server is unreachable the task retries the newest patch with a back-off.

use std::time::Duration;

use async_nats::jetstream::kv;
use serde_json::{Map, Value};
use strata_state::effects::RemoteMetadataPort;
use strata_state::{EffectError, SessionExternalMetadata, SessionMetadataPatch};
use tokio::sync::watch;

use crate::connection::{RemoteConnection, RemoteError};

/// The key holding the time of the last write; ignored when deciding whether a write
/// would change anything (otherwise every echo would be a change).
const UPDATED_AT: &str = "updated_at";

/// How long the writer waits before retrying a failed write (unless a newer patch comes).
const RETRY_AFTER: Duration = Duration::from_millis(250);

/// How many compare-and-set conflicts in a row a write tolerates before it reports one.
const MAX_CONFLICTS: usize = 16;

/// The FX-1 port writing the session's metadata document to key `session` of the bucket.
pub struct KvMetadataPort {
    latest: watch::Sender<Option<SessionMetadataPatch>>,
    writer: tokio::task::JoinHandle<()>,
}

impl KvMetadataPort {
    /// Starts the port's writer on `runtime`. `fields` are the other keys of the document
    /// this process owns (`model`, `title`, `status`, `cwd`), written with every patch.
    pub fn spawn(
        connection: RemoteConnection,
        session: String,
        fields: Map<String, Value>,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let (latest, mut pending) = watch::channel(None::<SessionMetadataPatch>);
        let writer = runtime.spawn(async move {
            while pending.changed().await.is_ok() {
                loop {
                    let Some(patch) = *pending.borrow_and_update() else {
                        break;
                    };
                    match write_metadata(connection.bucket(), &session, &fields, &patch).await {
                        Ok(_) => break,
                        Err(error) => {
                            tracing::warn!(%error, session, "remote session metadata not written yet; retrying");
                            // A newer patch replaces this one; otherwise retry after a pause.
                            tokio::select! {
                                changed = pending.changed() => if changed.is_err() { return },
                                () = tokio::time::sleep(RETRY_AFTER) => {}
                            }
                        }
                    }
                }
            }
        });
        Self { latest, writer }
    }
}

impl Drop for KvMetadataPort {
    fn drop(&mut self) {
        self.writer.abort();
    }
}

impl RemoteMetadataPort for KvMetadataPort {
    fn session_metadata_changed(&self, patch: &SessionMetadataPatch) -> Result<(), EffectError> {
        // Never blocks: the slot keeps the newest patch for the writer task.
        self.latest.send_replace(Some(*patch));
        Ok(())
    }
}

/// The document after `patch` and `fields` are merged into `stored` (merge-patch rules:
/// the ultraplan flag is present only while true). `updated_at` is left as it was.
pub fn merged_document(
    stored: &Map<String, Value>,
    fields: &Map<String, Value>,
    patch: &SessionMetadataPatch,
) -> Map<String, Value> {
    let mut doc = SessionExternalMetadata(stored.clone());
    for (key, value) in fields {
        doc.0.insert(key.clone(), value.clone());
    }
    doc.apply(patch);
    doc.0
}

fn without_updated_at(doc: &Map<String, Value>) -> Map<String, Value> {
    let mut doc = doc.clone();
    doc.remove(UPDATED_AT);
    doc
}

/// Writes `patch` (and `fields`) to key `session`: read, merge, compare, compare-and-set.
/// Returns whether anything was written (`false`: the stored document already says it).
pub async fn write_metadata(
    bucket: &kv::Store,
    session: &str,
    fields: &Map<String, Value>,
    patch: &SessionMetadataPatch,
) -> Result<bool, RemoteError> {
    for _ in 0..MAX_CONFLICTS {
        let entry = bucket
            .entry(session)
            .await
            .map_err(|error| RemoteError::js("reading session metadata", error))?;
        let (stored, revision) = match entry {
            Some(entry) if entry.operation == kv::Operation::Put => {
                let doc: Map<String, Value> =
                    serde_json::from_slice(&entry.value).map_err(|error| {
                        RemoteError::BadDocument {
                            session: session.to_owned(),
                            message: error.to_string(),
                        }
                    })?;
                (doc, Some(entry.revision))
            }
            Some(entry) => (Map::new(), Some(entry.revision)),
            None => (Map::new(), None),
        };
        let mut next = merged_document(&stored, fields, patch);
        // Echo suppression (issue 17 item 2): nothing new, nothing written.
        if without_updated_at(&next) == without_updated_at(&stored) {
            return Ok(false);
        }
        next.insert(
            UPDATED_AT.into(),
            Value::from(chrono::Utc::now().to_rfc3339()),
        );
        let bytes = serde_json::to_vec(&next)
            .map_err(|error| RemoteError::js("encoding session metadata", error))?;
        let written = match revision {
            Some(revision) => bucket
                .update(session, bytes.into(), revision)
                .await
                .map_err(|error| error.to_string()),
            None => bucket
                .create(session, bytes.into())
                .await
                .map_err(|error| error.to_string()),
        };
        match written {
            Ok(_) => return Ok(true),
            // Another writer got in between: read again and merge onto its document.
            Err(error) => tracing::debug!(%error, session, "metadata write conflicted; re-reading"),
        }
    }
    Err(RemoteError::js(
        "writing session metadata",
        format!("{MAX_CONFLICTS} compare-and-set conflicts in a row"),
    ))
}
