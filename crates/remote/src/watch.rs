//! FX-7 live: the worker watches its own key in the bucket.
//!
//! A change made elsewhere (the web view, another client) is applied to the store with
//! [`AppStore::apply_external_metadata`], which runs the reverse bridge and so the one mode
//! gate: a `bypassPermissions` mode this session may not enter is refused there. The watch
//! starts with the key's current value, so a worker that attaches to an existing session
//! restores its mode from the metadata. A document carrying a mode request (the web
//! view's control) is answered once applied ([`crate::mode_request`]).

use futures::StreamExt;
use strata_state::{AppStore, SessionExternalMetadata};

use crate::connection::{RemoteConnection, RemoteError};
use async_nats::jetstream::kv;

/// A running watch; dropping it stops the watch.
pub struct OwnKeyWatch {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OwnKeyWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts watching key `session` and applying its changes to `store`.
pub async fn watch_own_key(
    connection: &RemoteConnection,
    session: String,
    store: AppStore,
) -> Result<OwnKeyWatch, RemoteError> {
    let mut entries = connection
        .bucket()
        .watch_with_history(&session)
        .await
        .map_err(|error| RemoteError::js("watching session metadata", error))?;
    let bucket = connection.bucket().clone();
    let task = tokio::spawn(async move {
        while let Some(entry) = entries.next().await {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    tracing::warn!(%error, session, "remote metadata watch error");
                    continue;
                }
            };
            if entry.operation != kv::Operation::Put {
                continue;
            }
            match serde_json::from_slice::<SessionExternalMetadata>(&entry.value) {
                Ok(metadata) => {
                    store.apply_external_metadata(&metadata);
                    crate::mode_request::answer_mode_request(&bucket, &session, &metadata, &store)
                        .await;
                }
                Err(error) => tracing::warn!(
                    %error,
                    session,
                    "remote session metadata is not a JSON object; ignored"
                ),
            }
        }
    });
    Ok(OwnKeyWatch { task })
}
