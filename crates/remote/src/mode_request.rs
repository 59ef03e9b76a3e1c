//! A permission-mode change asked for from outside the session, and the session's answer
//! (issue 17 item 4: the web view's mode control).
//!
//! The asker writes the mode it wants into the metadata document's `permission_mode`
//! (a compare-and-set on the revision, [`write_metadata`]) together with a request,
//! `permission_mode_request: {"id", "mode", "at"}`. The worker's watch of its own key
//! applies the document through the one mode gate (FX-7) and then answers in the same
//! document: `permission_mode_reply: {"id", "requested", "mode", "accepted", "reason"?,
//! "at"}` with the mode the session is really in, which it also writes back as
//! `permission_mode`, so a refused mode (a `bypassPermissions` the session may not enter)
//! does not stay in the document as if it were in force. The asker knows its request was
//! seen when a reply with its id appears.
//!
//! Answering is a compare-and-set too, and only while the document still holds the
//! request answered: when a newer request came in between, its mode must not be
//! overwritten with the older answer (the newer one gets its own).

use std::time::Duration;

use async_nats::jetstream::kv;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use strata_protocol::permission::{ExternalPermissionMode, PermissionMode};
use strata_state::{AppStore, SessionExternalMetadata, SessionMetadataPatch};

use crate::connection::{RemoteConnection, RemoteError};
use crate::port::write_metadata;

/// The document key of a pending request.
pub const MODE_REQUEST: &str = "permission_mode_request";

/// The document key of the session's answer to the last request it saw.
pub const MODE_REPLY: &str = "permission_mode_reply";

/// How many compare-and-set conflicts in a row an answer tolerates.
const MAX_CONFLICTS: usize = 16;

/// How long an answer keeps retrying a server that does not answer.
const ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// A request to change a session's mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeRequest {
    /// Unique per request; the reply carries it back.
    pub id: String,
    /// The mode asked for (a public mode name).
    pub mode: String,
    /// When it was asked (RFC 3339).
    pub at: String,
}

/// A session's answer to a [`ModeRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeReply {
    /// The request's id.
    pub id: String,
    /// The mode that was asked for.
    pub requested: String,
    /// The mode the session is in after applying the request.
    pub mode: String,
    /// Whether the session is now in the mode asked for.
    pub accepted: bool,
    /// Why not, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the session answered (RFC 3339).
    pub at: String,
}

/// Why a mode could not be asked for.
#[derive(Debug, thiserror::Error)]
pub enum ModeRequestError {
    /// The bucket has no document for the session.
    #[error("there is no session {0} in the strata_sessions bucket")]
    NoSession(String),
    /// Talking to NATS failed.
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

impl ModeRequest {
    /// The request a document holds, when it holds one of the right shape.
    pub fn of(doc: &Map<String, Value>) -> Option<Self> {
        serde_json::from_value(doc.get(MODE_REQUEST)?.clone()).ok()
    }
}

impl ModeReply {
    /// The reply a document holds, when it holds one of the right shape.
    pub fn of(doc: &Map<String, Value>) -> Option<Self> {
        serde_json::from_value(doc.get(MODE_REPLY)?.clone()).ok()
    }
}

/// Asks session `session` to change to `mode`: writes the mode and a request into its
/// document (read, merge, compare-and-set). Returns the request, whose id the reply will
/// carry.
pub async fn request_mode(
    connection: &RemoteConnection,
    session: &str,
    mode: ExternalPermissionMode,
) -> Result<ModeRequest, ModeRequestError> {
    // A page must not hang on a server that is away: not bound now is an error now.
    let bucket = connection
        .bound()
        .map(|bound| bound.bucket)
        .ok_or_else(|| RemoteError::Connect {
            url: connection.describe().to_owned(),
            message: "not connected to the NATS server".to_owned(),
        })?;
    let exists = bucket
        .entry(session)
        .await
        .map_err(|error| RemoteError::js("reading session metadata", error))?
        .is_some_and(|entry| entry.operation == kv::Operation::Put);
    // Only a session the bucket knows: a mistyped id must not create a document. (A key
    // deleted between this check and the write below is written again; deleting a
    // session while someone changes its mode is a race either order can win.)
    if !exists {
        return Err(ModeRequestError::NoSession(session.to_owned()));
    }
    let request = ModeRequest {
        id: uuid::Uuid::new_v4().to_string(),
        mode: mode.as_str().to_owned(),
        at: chrono::Utc::now().to_rfc3339(),
    };
    let mut fields = Map::new();
    fields.insert(
        MODE_REQUEST.into(),
        serde_json::to_value(&request)
            .map_err(|error| RemoteError::js("encoding a mode request", error))?,
    );
    let patch = SessionMetadataPatch {
        permission_mode: mode,
        is_ultraplan_mode: None,
    };
    write_metadata(&bucket, session, &fields, &patch).await?;
    Ok(request)
}

/// The worker's side: after `doc` (its own key's new value) was applied to `store`,
/// answers the request it holds, if it holds one not answered yet.
pub(crate) async fn answer_mode_request(
    bucket: &kv::Store,
    session: &str,
    doc: &SessionExternalMetadata,
    store: &AppStore,
) {
    let Some(request) = ModeRequest::of(&doc.0) else {
        return;
    };
    if ModeReply::of(&doc.0).is_some_and(|reply| reply.id == request.id) {
        return;
    }
    let state = store.store().get();
    let context = &state.tool_permission_context;
    let (mode, bypass_available) = (context.mode, context.is_bypass_permissions_mode_available);
    let reply = reply_to(&request, mode, bypass_available);
    let answered = tokio::time::timeout(ANSWER_LIMIT, write_reply(bucket, session, &reply)).await;
    match answered {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => {
            tracing::warn!(%error, session, "the answer to a permission-mode request was not written");
        }
        Err(_) => tracing::warn!(
            session,
            "the answer to a permission-mode request was not written (the server did not answer)"
        ),
    }
}

/// The answer to `request` of a session in `mode`.
fn reply_to(request: &ModeRequest, mode: PermissionMode, bypass_available: bool) -> ModeReply {
    let external = mode.external();
    let requested = request.mode.parse::<ExternalPermissionMode>();
    let accepted = requested.as_ref().is_ok_and(|&wanted| wanted == external);
    let reason = match requested {
        _ if accepted => None,
        Err(error) => Some(error.to_string()),
        Ok(ExternalPermissionMode::BypassPermissions) if !bypass_available => Some(
            "bypassPermissions is not available in this session: it was not started with \
             --dangerously-skip-permissions or --allow-dangerously-skip-permissions, or its \
             settings disable it"
                .to_owned(),
        ),
        Ok(_) => Some(format!("the session's mode is {external}")),
    };
    ModeReply {
        id: request.id.clone(),
        requested: request.mode.clone(),
        mode: external.as_str().to_owned(),
        accepted,
        reason,
        at: chrono::Utc::now().to_rfc3339(),
    }
}

/// Writes `reply` and its mode into the document while it still holds the request
/// answered (see the module docs). Returns whether it was written.
async fn write_reply(
    bucket: &kv::Store,
    session: &str,
    reply: &ModeReply,
) -> Result<bool, RemoteError> {
    let encoded = serde_json::to_value(reply)
        .map_err(|error| RemoteError::js("encoding a mode reply", error))?;
    for _ in 0..MAX_CONFLICTS {
        let Some(entry) = bucket
            .entry(session)
            .await
            .map_err(|error| RemoteError::js("reading session metadata", error))?
            .filter(|entry| entry.operation == kv::Operation::Put)
        else {
            return Ok(false);
        };
        let mut doc: Map<String, Value> =
            serde_json::from_slice(&entry.value).map_err(|error| RemoteError::BadDocument {
                session: session.to_owned(),
                message: error.to_string(),
            })?;
        let still_pending = ModeRequest::of(&doc).is_some_and(|r| r.id == reply.id)
            && ModeReply::of(&doc).is_none_or(|r| r.id != reply.id);
        if !still_pending {
            return Ok(false);
        }
        doc.insert("permission_mode".into(), Value::from(reply.mode.clone()));
        doc.insert(MODE_REPLY.into(), encoded.clone());
        doc.insert("updated_at".into(), Value::from(reply.at.clone()));
        let bytes = serde_json::to_vec(&doc)
            .map_err(|error| RemoteError::js("encoding session metadata", error))?;
        match bucket.update(session, bytes.into(), entry.revision).await {
            Ok(_) => return Ok(true),
            Err(error) => tracing::debug!(%error, session, "mode reply conflicted; re-reading"),
        }
    }
    Err(RemoteError::js(
        "answering a permission-mode request",
        format!("{MAX_CONFLICTS} compare-and-set conflicts in a row"),
    ))
}

/// The answer to the request `stored` holds, when a mode change the session made while it
/// could not reach the server is written over that document (`port`: such a change has
/// no base revision, and the request is not applied). Its asker is told the mode the
/// session is in, rather than left waiting for a reply that would never come. `None`
/// when there is no request waiting.
pub(crate) fn overridden_reply(
    stored: &Map<String, Value>,
    mode: ExternalPermissionMode,
) -> Option<ModeReply> {
    let request = ModeRequest::of(stored)?;
    if ModeReply::of(stored).is_some_and(|reply| reply.id == request.id) {
        return None;
    }
    let accepted = request
        .mode
        .parse::<ExternalPermissionMode>()
        .is_ok_and(|wanted| wanted == mode);
    Some(ModeReply {
        id: request.id,
        requested: request.mode,
        mode: mode.as_str().to_owned(),
        accepted,
        reason: (!accepted).then(|| {
            "the session changed its own mode while it could not reach the server, and \
             that change was kept"
                .to_owned()
        }),
        at: chrono::Utc::now().to_rfc3339(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(mode: &str) -> ModeRequest {
        ModeRequest {
            id: "r1".into(),
            mode: mode.into(),
            at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_mode_the_session_entered_is_accepted() {
        let reply = reply_to(&request("plan"), PermissionMode::Plan, false);
        assert!(reply.accepted);
        assert_eq!(reply.mode, "plan");
        assert_eq!(reply.reason, None);
    }

    #[test]
    fn a_bypass_the_session_may_not_enter_is_refused_with_the_reason() {
        let reply = reply_to(
            &request("bypassPermissions"),
            PermissionMode::Default,
            false,
        );
        assert!(!reply.accepted);
        assert_eq!(reply.mode, "default", "the mode really in force");
        assert!(
            reply
                .reason
                .unwrap()
                .contains("--dangerously-skip-permissions")
        );
    }

    #[test]
    fn an_internal_or_unknown_mode_is_refused_naming_the_modes() {
        for name in ["bubble", "yolo"] {
            let reply = reply_to(&request(name), PermissionMode::Default, true);
            assert!(!reply.accepted, "{name}");
            assert!(reply.reason.unwrap().contains("acceptEdits"), "{name}");
        }
    }

    #[test]
    fn a_request_overridden_by_a_change_made_offline_gets_an_answer_once() {
        let mut doc = Map::new();
        assert_eq!(
            overridden_reply(&doc, ExternalPermissionMode::Plan),
            None,
            "no request, no answer"
        );
        doc.insert(
            MODE_REQUEST.into(),
            serde_json::to_value(request("acceptEdits")).unwrap(),
        );
        let reply = overridden_reply(&doc, ExternalPermissionMode::Plan).unwrap();
        assert_eq!((reply.id.as_str(), reply.mode.as_str()), ("r1", "plan"));
        assert!(!reply.accepted);
        assert!(reply.reason.unwrap().contains("could not reach the server"));
        // The offline change happens to be the mode asked for: accepted.
        assert!(
            overridden_reply(&doc, ExternalPermissionMode::AcceptEdits)
                .unwrap()
                .accepted
        );
        // Answered already: nothing more.
        let answered = reply_to(&request("acceptEdits"), PermissionMode::Plan, false);
        doc.insert(MODE_REPLY.into(), serde_json::to_value(answered).unwrap());
        assert_eq!(overridden_reply(&doc, ExternalPermissionMode::Plan), None);
    }

    #[test]
    fn the_request_and_reply_are_read_back_from_the_document() {
        let mut doc = Map::new();
        doc.insert(
            MODE_REQUEST.into(),
            serde_json::to_value(request("plan")).unwrap(),
        );
        assert_eq!(ModeRequest::of(&doc), Some(request("plan")));
        assert_eq!(ModeReply::of(&doc), None);
        doc.insert(MODE_REQUEST.into(), Value::from("not an object"));
        assert_eq!(ModeRequest::of(&doc), None, "a wrong shape is no request");
    }
}
