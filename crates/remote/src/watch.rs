//! FX-7 live: the worker watches its own key in the bucket.
//!
//! A change made elsewhere (the web view, another client) is applied to the store with
//! [`AppStore::apply_external_metadata`], which runs the reverse bridge and so the one mode
//! gate: a `bypassPermissions` mode this session may not enter is refused there. The watch
//! starts with the key's current value, so a worker that attaches to an existing session
//! restores its mode from the metadata.
//!
//! The watch waits for the connection and is made again after any failure, so it
//! survives the server going away (it then starts again with the current value, which is
//! how a change made while this process was cut off arrives). Linked with the session's
//! [`KvMetadataPort`](crate::KvMetadataPort), it follows the port's rule, which orders
//! changes by the key's revision and never by a clock (FX-7: a client whose clock is
//! behind still has its change applied): the document this process last wrote is not a
//! change, and a document whose revision this process's newest change was made on has
//! been seen already (the port writes that change instead, on top of it).
//! A document carrying a mode request (the web view's control) is answered once applied
//! ([`crate::mode_request`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;
use strata_state::{AppStore, SessionExternalMetadata};

use crate::connection::RemoteConnection;
use crate::port::Shared;

/// A running watch; dropping it stops the watch.
pub struct OwnKeyWatch {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OwnKeyWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts watching key `session` and applying every change to `store` (without a port:
/// every document is applied).
pub fn watch_own_key(
    connection: &RemoteConnection,
    session: String,
    store: AppStore,
) -> OwnKeyWatch {
    spawn(connection.clone(), session, store, None)
}

pub(crate) fn spawn(
    connection: RemoteConnection,
    session: String,
    store: AppStore,
    port: Option<Arc<Shared>>,
) -> OwnKeyWatch {
    let runtime = connection.runtime().clone();
    let task = runtime.spawn(async move {
        let mut pause = Duration::from_millis(100);
        loop {
            let bucket = connection.bucket().await;
            match bucket.watch_with_history(&session).await {
                Ok(mut entries) => {
                    pause = Duration::from_millis(100);
                    while let Some(entry) = entries.next().await {
                        match entry {
                            Ok(entry) => {
                                if let Some(applied) =
                                    apply(&entry, &session, &store, port.as_deref())
                                {
                                    crate::mode_request::answer_mode_request(
                                        &bucket, &session, &applied, &store,
                                    )
                                    .await;
                                }
                            }
                            Err(error) => {
                                tracing::debug!(%error, session, "remote metadata watch interrupted; watching again");
                                break;
                            }
                        }
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, session, "remote metadata watch not started yet");
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    });
    OwnKeyWatch { task }
}

/// Applies `entry` to `store` unless it is this process's own write or superseded by
/// this process's newest change (see the port's rule); returns the document when it was
/// applied (a mode request it holds is then answered).
fn apply(
    entry: &kv::Entry,
    session: &str,
    store: &AppStore,
    port: Option<&Shared>,
) -> Option<SessionExternalMetadata> {
    if entry.operation != kv::Operation::Put {
        return None;
    }
    let metadata = match serde_json::from_slice::<SessionExternalMetadata>(&entry.value) {
        Ok(metadata) => metadata,
        Err(error) => {
            tracing::warn!(
                %error,
                session,
                "remote session metadata is not a JSON object; ignored"
            );
            return None;
        }
    };
    if let Some(port) = port {
        // Changes made from now on are made on this revision (before the store changes,
        // so the echo of this document is not newer than it).
        port.seen.fetch_max(entry.revision, Ordering::AcqRel);
        let own = port
            .last_written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            == Some(&metadata.0);
        if own {
            return None; // this process's own write
        }
        let desired = port.desired.borrow();
        let superseded = match desired.base_revision {
            // Seen already: this process's newest change was made on it.
            Some(base) => entry.revision <= base,
            // The newest change was made with nothing seen: it is written over this
            // document (still to come, or already at a later revision).
            None => {
                *port.written.borrow() < desired.version
                    || entry.revision <= port.written_revision.load(Ordering::Acquire)
            }
        };
        // (The borrow must end before the store runs FX-1, which writes `desired`.)
        drop(desired);
        if superseded {
            return None;
        }
    }
    store.apply_external_metadata(&metadata);
    Some(metadata)
}
