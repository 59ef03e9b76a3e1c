//! `--remote <nats-url>` (issue 17): a headless session replicated on NATS JetStream.
//!
//! Thin wiring of `strata-remote` into the session; what the remote does lives there.
//!
//! - every transcript line is published to the session's stream subject (the engine's
//!   `TranscriptMirror`, off the turn's path), and flushed before the process exits;
//! - the session's metadata document is written when the session starts, kept current by
//!   the FX-1 remote port, and watched: a change made elsewhere reaches the store through
//!   the one mode gate (FX-7), and its echo is not written back (the port compares first);
//! - `-r <id> --remote` on a machine without the session rebuilds its transcript from the
//!   stream, line for line, before the engine resumes it; the restored permission mode is
//!   the metadata's.
//!
//! Local files stay the source of truth: a remote that cannot be reached at start is
//! reported and the session runs locally.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use strata_agent::engine::{Engine, TranscriptMirror};
use strata_remote::{
    KvMetadataPort, OwnKeyWatch, RemoteConnection, TranscriptPublisher, ensure_stream, fetch_lines,
    watch_own_key, write_metadata,
};
use strata_session::layout::SessionLayout;
use strata_session::writer::TranscriptWriter;
use strata_state::{RemoteConnectionStatus, SessionExternalMetadata, SessionMetadataPatch};

use crate::exit::Failure;

/// How long the end of a session waits for the last lines to be stored.
const FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// An open link to the remote.
pub(crate) struct Link {
    connection: RemoteConnection,
    publisher: Arc<TranscriptPublisher>,
}

/// What stays attached to an open session.
pub(crate) struct Attached {
    session: String,
    fields: Map<String, Value>,
    _watch: Option<OwnKeyWatch>,
}

impl Link {
    /// Connects to `url` and makes sure the bucket and the stream exist.
    pub(crate) async fn connect(url: &str) -> Result<Self, strata_remote::RemoteError> {
        let connection = RemoteConnection::connect(url, 1).await?;
        ensure_stream(&connection, 1).await?;
        let publisher = Arc::new(TranscriptPublisher::spawn(
            connection.clone(),
            &tokio::runtime::Handle::current(),
        ));
        Ok(Self {
            connection,
            publisher,
        })
    }

    /// The engine's mirror: every transcript line to the stream.
    pub(crate) fn mirror(&self) -> Arc<dyn TranscriptMirror> {
        Arc::new(Mirror(Arc::clone(&self.publisher)))
    }

    /// `-r <id> --remote`: when this machine has no transcript for `id`, rebuilds it
    /// from the stream (the lines as published, in order). Nothing on either side: an
    /// error naming both places.
    pub(crate) async fn rebuild(
        &self,
        config_dir: &Path,
        cwd: &Path,
        id: &str,
    ) -> Result<(), Failure> {
        let project_root = strata_config::paths::project_root(cwd);
        if strata_session::resume::resolve(config_dir, &project_root, id).is_ok() {
            return Ok(());
        }
        let lines = fetch_lines(&self.connection, id)
            .await
            .map_err(|e| Failure::failed(e.to_string()))?;
        if lines.is_empty() {
            return Err(Failure::failed(format!(
                "no session {id} here nor on the remote (its stream has no line of it)"
            )));
        }
        let layout = SessionLayout::new(config_dir, &project_root, id);
        let path = layout.transcript();
        let written = tokio::task::spawn_blocking(move || {
            let writer = TranscriptWriter::open(&path)?;
            for line in &lines {
                let starts = serde_json::from_str::<Value>(line).is_ok_and(|v| {
                    matches!(
                        v.get("type").and_then(Value::as_str),
                        Some("user" | "assistant")
                    )
                });
                writer.append_raw_line(line, starts)?;
            }
            writer.close()
        })
        .await
        .map_err(|e| Failure::failed(format!("rebuilding the session failed: {e}")))?;
        written.map_err(|e| Failure::failed(format!("rebuilding session {id}: {e}")))
    }

    /// Attaches the open session: its metadata document (restored from the remote when
    /// it has one, else written), the FX-1 port, and the watch of its own key.
    pub(crate) async fn attach(&self, engine: &Engine) -> Attached {
        let session = engine.session_id();
        let store = engine.app_store();
        let mut fields = Map::new();
        fields.insert("cwd".into(), Value::from(engine_cwd(engine)));
        fields.insert("model".into(), Value::from(engine.model()));
        fields.insert("status".into(), Value::from("active"));
        let bucket = self.connection.bucket();
        // A document made elsewhere wins over this process's start-up mode (FX-7):
        // applied through the mode gate before the port is attached.
        match bucket.get(&session).await {
            Ok(Some(bytes)) => match serde_json::from_slice::<SessionExternalMetadata>(&bytes) {
                Ok(doc) => {
                    store.apply_external_metadata(&doc);
                }
                Err(e) => super::warn(format_args!(
                    "the remote metadata of session {session} is not a JSON object ({e}); \
                     it is replaced"
                )),
            },
            Ok(None) => {}
            Err(e) => super::warn(format_args!("the remote metadata cannot be read: {e}")),
        }
        let patch = SessionMetadataPatch {
            permission_mode: store.store().get().tool_permission_context.mode.external(),
            is_ultraplan_mode: None,
        };
        if let Err(e) = write_metadata(bucket, &session, &fields, &patch).await {
            super::warn(format_args!("the remote metadata was not written: {e}"));
        }
        store
            .effects()
            .set_remote(Some(Arc::new(KvMetadataPort::spawn(
                self.connection.clone(),
                session.clone(),
                fields.clone(),
                &tokio::runtime::Handle::current(),
            ))));
        let watch = match watch_own_key(&self.connection, session.clone(), store.clone()).await {
            Ok(watch) => Some(watch),
            Err(e) => {
                super::warn(format_args!(
                    "changes made to this session elsewhere will not reach it: {e}"
                ));
                None
            }
        };
        let _ = store.store().update(|s| {
            if s.remote.connection_status != RemoteConnectionStatus::Connected {
                s.remote.connection_status = RemoteConnectionStatus::Connected;
            }
        });
        Attached {
            session,
            fields,
            _watch: watch,
        }
    }

    /// The end of the session: the last lines stored, the document marked ended.
    pub(crate) async fn finish(&self, attached: Option<Attached>, mode: ExternalMode) {
        if !self.publisher.flush(FLUSH_LIMIT).await {
            super::warn(format_args!(
                "some transcript lines may not have reached the remote (it did not answer \
                 within {} s); the local transcript has them",
                FLUSH_LIMIT.as_secs()
            ));
        }
        if let Some(mut attached) = attached {
            attached
                .fields
                .insert("status".into(), Value::from("ended"));
            let patch = SessionMetadataPatch {
                permission_mode: mode,
                is_ultraplan_mode: None,
            };
            if let Err(e) = write_metadata(
                self.connection.bucket(),
                &attached.session,
                &attached.fields,
                &patch,
            )
            .await
            {
                super::warn(format_args!("the remote metadata was not updated: {e}"));
            }
        }
    }
}

/// The externalised permission mode.
pub(crate) type ExternalMode = strata_protocol::permission::ExternalPermissionMode;

fn engine_cwd(engine: &Engine) -> String {
    engine.init_message().cwd
}

/// The engine's [`TranscriptMirror`] over the publisher.
struct Mirror(Arc<TranscriptPublisher>);

impl TranscriptMirror for Mirror {
    fn line(&self, session_id: &str, uuid: Option<&str>, json: &str) {
        // A line without a uuid of its own (metadata) gets one now: the id only has to
        // stay the same across this publisher's retries of the line.
        let id = uuid.map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
        self.0.publish(session_id, &id, json);
    }
}
