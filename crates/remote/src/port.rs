//! FX-1's remote port on the `strata_sessions` bucket.
//!
//! The hub calls [`RemoteMetadataPort::session_metadata_changed`] inside the store's change
//! delivery, so the call must not wait on the network (a slow or absent server must never
//! slow a turn). The port therefore only stores the patch in a latest-wins slot (a
//! `tokio::sync::watch` channel; metadata is a state, so an older patch superseded before it
//! was written need never be written) and a background task does the read-merge-write
//! once the connection is up — also after a reconnect: what changed while the server was
//! away is written when it returns.
//!
//! **Ordered by the key's revision, not by clocks.** The bucket gives every write of a
//! key a revision, monotonic per key; wall-clock times (`updated_at`) come from machines
//! whose clocks may disagree, so they order nothing (a web server whose clock is behind
//! must still have its change applied). Each patch records the newest revision of the
//! key this process had seen when the change was made (its base). A stored document of
//! a later revision that this process did not write is a change made elsewhere that
//! this one did not know of: it reached the server first and wins, as a compare-and-set
//! on the base would have it. The writer then writes only this process's own fields and
//! leaves the mode to the watch, which applies that document ([`crate::watch`]); the
//! watch in turn does not apply a document this process's newest change was made on
//! (seen already). The document a session starts with has base 0, older than anything
//! stored, so a resumed session takes its mode from the metadata (FX-7). A change made
//! before this process saw any revision (it started while the server was away) has no
//! base: it is written over what is stored, and the watch does not apply a document
//! older than that write (a mode chosen while away is not reverted on the return); a mode
//! request found in the document then is answered with the mode kept. The port
//! remembers the last document it wrote, so the watch does not take this process's own
//! writes for changes made elsewhere (each document also names its writer,
//! `written_by`, and its time, `updated_at`, for people reading the bucket).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::kv;
use chrono::Utc;
use serde_json::{Map, Value};
use strata_state::effects::RemoteMetadataPort;
use strata_state::{AppStore, EffectError, SessionExternalMetadata, SessionMetadataPatch};
use tokio::sync::watch;

use crate::connection::{RemoteConnection, RemoteError};
use crate::mode_request::{MODE_REPLY, overridden_reply};
use crate::watch::OwnKeyWatch;

/// The key holding the time of the last write; ignored when deciding whether a write
/// would change anything (otherwise every echo would be a change).
pub const UPDATED_AT: &str = "updated_at";

/// The key naming the process that wrote the document.
pub const WRITTEN_BY: &str = "written_by";

/// How long the writer waits before retrying a failed write (unless a newer patch comes).
const RETRY_AFTER: Duration = Duration::from_millis(250);

/// How many compare-and-set conflicts in a row a write tolerates before it reports one.
const MAX_CONFLICTS: usize = 16;

/// What the document should say, as far as this process is concerned.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    /// The permission-mode patch.
    pub patch: SessionMetadataPatch,
    /// The newest revision of the key this process had seen when the patch's change was
    /// made: a document of a later revision written elsewhere wins over the patch.
    /// `Some(0)`: the start-up document, older than anything stored. `None`: a change
    /// made before this process had seen any revision (the server was away): it is
    /// written over whatever is stored, as a change made now.
    pub base_revision: Option<u64>,
    /// The other keys this process owns (`model`, `title`, `status`, `cwd`).
    pub fields: Map<String, Value>,
    /// Counts the changes, so a flush knows when the newest one is written.
    pub version: u64,
}

/// What the port and the watch of one session share.
pub(crate) struct Shared {
    /// This process's name in `written_by`.
    pub(crate) writer: String,
    /// The newest desired document.
    pub(crate) desired: watch::Sender<Desired>,
    /// The newest [`Desired::version`] written (or found already stored).
    pub(crate) written: watch::Sender<u64>,
    /// The newest revision of the key the watch has delivered (this process's own
    /// writes included): the base of a change made now.
    pub(crate) seen: AtomicU64,
    /// The revision of this process's newest write.
    pub(crate) written_revision: AtomicU64,
    /// The last document this process wrote (recorded before the write, so the watch
    /// can never see it first): the watch does not take it for a change made elsewhere.
    pub(crate) last_written: Mutex<Option<Map<String, Value>>>,
}

/// The FX-1 port writing the session's metadata document to key `session` of the bucket.
pub struct KvMetadataPort {
    shared: Arc<Shared>,
    connection: RemoteConnection,
    session: String,
    writer: tokio::task::JoinHandle<()>,
}

impl KvMetadataPort {
    /// Starts the port's writer on `runtime`. `fields` are the other keys of the document
    /// this process owns (`model`, `title`, `status`, `cwd`), written with every patch.
    /// Nothing is written until the first patch.
    pub fn spawn(
        connection: RemoteConnection,
        session: String,
        fields: Map<String, Value>,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        Self::spawn_inner(connection, session, fields, None, runtime)
    }

    /// Starts the port of a session that starts in `initial`: written (with `fields`)
    /// as soon as the connection is up, unless the bucket already has a document for the
    /// session, whose mode then wins (FX-7: a session resumed elsewhere keeps its mode).
    pub fn spawn_for_session(
        connection: RemoteConnection,
        session: String,
        fields: Map<String, Value>,
        initial: SessionMetadataPatch,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        Self::spawn_inner(connection, session, fields, Some(initial), runtime)
    }

    fn spawn_inner(
        connection: RemoteConnection,
        session: String,
        fields: Map<String, Value>,
        initial: Option<SessionMetadataPatch>,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let pending = initial.is_some();
        let desired = Desired {
            patch: initial.unwrap_or(SessionMetadataPatch {
                permission_mode: strata_protocol::permission::ExternalPermissionMode::Default,
                is_ultraplan_mode: None,
            }),
            // Older than any stored document: the start-up mode never overrides one.
            base_revision: Some(0),
            fields,
            version: u64::from(pending),
        };
        let (desired, mut wanted) = watch::channel(desired);
        if !pending {
            // Nothing to write until a patch arrives.
            wanted.mark_unchanged();
        } else {
            wanted.mark_changed();
        }
        let shared = Arc::new(Shared {
            writer: format!("strata-{}", uuid::Uuid::new_v4()),
            desired,
            written: watch::Sender::new(0),
            seen: AtomicU64::new(0),
            written_revision: AtomicU64::new(0),
            last_written: Mutex::new(None),
        });
        let task_shared = Arc::clone(&shared);
        let task_connection = connection.clone();
        let task_session = session.clone();
        let writer = runtime.spawn(async move {
            while wanted.changed().await.is_ok() {
                let bucket = task_connection.bucket().await;
                loop {
                    let desired = wanted.borrow_and_update().clone();
                    match write_desired(&bucket, &task_session, &desired, Some(&task_shared))
                        .await
                    {
                        Ok(_) => {
                            task_shared.written.send_replace(desired.version);
                            break;
                        }
                        Err(error) => {
                            tracing::debug!(%error, session = task_session, "remote session metadata not written yet; retrying");
                            // A newer patch replaces this one; otherwise retry after a pause.
                            tokio::select! {
                                changed = wanted.changed() => if changed.is_err() { return },
                                () = tokio::time::sleep(RETRY_AFTER) => {}
                            }
                        }
                    }
                }
            }
        });
        Self {
            shared,
            connection,
            session,
            writer,
        }
    }

    /// Watches the session's key and applies changes made elsewhere to `store`, by the
    /// revision order shared with this port (see the module docs).
    pub fn watch_own_key(&self, store: AppStore) -> OwnKeyWatch {
        crate::watch::spawn(
            self.connection.clone(),
            self.session.clone(),
            store,
            Some(Arc::clone(&self.shared)),
        )
    }

    /// Sets one of this process's fields (`status`, `title`, …) and has it written.
    pub fn set_field(&self, key: &str, value: Value) {
        self.shared.desired.send_modify(|d| {
            d.fields.insert(key.to_owned(), value);
            d.version += 1;
        });
    }

    /// Waits until the newest desired document is written, at most `limit`.
    pub async fn flush(&self, limit: Duration) -> bool {
        let target = self.shared.desired.borrow().version;
        let mut written = self.shared.written.subscribe();
        tokio::time::timeout(limit, written.wait_for(|v| *v >= target))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

impl Drop for KvMetadataPort {
    fn drop(&mut self) {
        self.writer.abort();
    }
}

impl RemoteMetadataPort for KvMetadataPort {
    fn session_metadata_changed(&self, patch: &SessionMetadataPatch) -> Result<(), EffectError> {
        // The change is made on what the watch has delivered so far (the echo of a
        // document it applied is made on that document's revision, so it is not newer).
        // Nothing seen yet (the server is away): the base is unknown.
        let base_revision = Some(self.shared.seen.load(Ordering::Acquire)).filter(|r| *r > 0);
        // Never blocks: the slot keeps the newest patch for the writer task.
        self.shared.desired.send_modify(|d| {
            d.patch = *patch;
            d.base_revision = base_revision;
            d.version += 1;
        });
        Ok(())
    }
}

/// The document after `patch` and `fields` are merged into `stored` (merge-patch rules:
/// the ultraplan flag is present only while true). `updated_at` is left as it was.
pub fn merged_document(
    stored: &Map<String, Value>,
    fields: &Map<String, Value>,
    patch: Option<&SessionMetadataPatch>,
) -> Map<String, Value> {
    let mut doc = SessionExternalMetadata(stored.clone());
    for (key, value) in fields {
        doc.0.insert(key.clone(), value.clone());
    }
    if let Some(patch) = patch {
        doc.apply(patch);
    }
    doc.0
}

fn without_stamps(doc: &Map<String, Value>) -> Map<String, Value> {
    let mut doc = doc.clone();
    doc.remove(UPDATED_AT);
    doc.remove(WRITTEN_BY);
    doc
}

/// Writes `patch` (and `fields`) to key `session` now, as a change made on the newest
/// revision: read, merge, compare, compare-and-set (retried on a conflict). Returns
/// whether anything was written (`false`: the stored document already says it).
pub async fn write_metadata(
    bucket: &kv::Store,
    session: &str,
    fields: &Map<String, Value>,
    patch: &SessionMetadataPatch,
) -> Result<bool, RemoteError> {
    let desired = Desired {
        patch: *patch,
        base_revision: None,
        fields: fields.clone(),
        version: 0,
    };
    write_desired(bucket, session, &desired, None).await
}

/// Writes `desired` by the revision order (module docs), as the port sharing `shared`
/// (none: a one-off write). Returns whether anything was written.
pub(crate) async fn write_desired(
    bucket: &kv::Store,
    session: &str,
    desired: &Desired,
    shared: Option<&Shared>,
) -> Result<bool, RemoteError> {
    let writer = shared.map_or("strata", |s| s.writer.as_str());
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
        // A document written elsewhere after the revision this change was made on keeps
        // its mode (the watch applies it here).
        let ours = shared.is_some_and(|s| {
            s.last_written
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                == Some(&stored)
        });
        let theirs_is_newer = !ours
            && revision
                .zip(desired.base_revision)
                .is_some_and(|(stored, base)| stored > base);
        let patch = (!theirs_is_newer).then_some(&desired.patch);
        let mut next = merged_document(&stored, &desired.fields, patch);
        // A change made while the server was away is written over a request that came
        // meanwhile: its asker gets an answer instead of waiting for one.
        if shared.is_some()
            && patch.is_some()
            && desired.base_revision.is_none()
            && let Some(reply) = overridden_reply(&stored, desired.patch.permission_mode)
            && let Ok(reply) = serde_json::to_value(reply)
        {
            next.insert(MODE_REPLY.into(), reply);
        }
        // Echo suppression (issue 17 item 2): nothing new, nothing written.
        if !stored.is_empty() && without_stamps(&next) == without_stamps(&stored) {
            return Ok(false);
        }
        next.insert(
            UPDATED_AT.into(),
            Value::from(Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        );
        next.insert(WRITTEN_BY.into(), Value::from(writer));
        if let Some(shared) = shared {
            *shared
                .last_written
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(next.clone());
        }
        let bytes = serde_json::to_vec(&next)
            .map_err(|error| RemoteError::js("encoding session metadata", error))?;
        // `Ok(None)`: another writer got in between (read again and merge onto its
        // document); other failures end the attempt (the caller retries later).
        let written = match revision {
            Some(revision) => match bucket.update(session, bytes.into(), revision).await {
                Ok(revision) => Ok(Some(revision)),
                Err(error) if error.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(None),
                Err(error) => Err(error.to_string()),
            },
            None => match bucket.create(session, bytes.into()).await {
                Ok(revision) => Ok(Some(revision)),
                Err(error) if error.kind() == kv::CreateErrorKind::AlreadyExists => Ok(None),
                Err(error) => Err(error.to_string()),
            },
        };
        match written {
            Ok(Some(revision)) => {
                if let Some(shared) = shared {
                    shared
                        .written_revision
                        .fetch_max(revision, Ordering::AcqRel);
                }
                return Ok(true);
            }
            Ok(None) => tracing::debug!(session, "metadata write conflicted; re-reading"),
            Err(error) => return Err(RemoteError::js("writing session metadata", error)),
        }
    }
    Err(RemoteError::js(
        "writing session metadata",
        format!("{MAX_CONFLICTS} compare-and-set conflicts in a row"),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;
    use strata_protocol::permission::ExternalPermissionMode as M;

    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_patch_and_the_fields_merge_onto_the_stored_document() {
        let stored = obj(json!({"permission_mode": "plan", "is_ultraplan_mode": true, "x": 1}));
        let fields = obj(json!({"status": "active"}));
        let patch = SessionMetadataPatch {
            permission_mode: M::Default,
            is_ultraplan_mode: None,
        };
        let doc = merged_document(&stored, &fields, Some(&patch));
        assert_eq!(
            Value::Object(doc),
            json!({"permission_mode": "default", "x": 1, "status": "active"})
        );
        // Without the patch (theirs is newer) only the fields change.
        let doc = merged_document(&stored, &fields, None);
        assert_eq!(doc["permission_mode"], "plan");
        assert_eq!(doc["status"], "active");
    }
}
