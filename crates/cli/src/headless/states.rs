//! `session_state_changed` messages (`CLAUDE_CODE_SDK_READS_SESSION_STATE=1`, which the
//! Python SDK sets when its user reads the session's state): `running` when a prompt
//! starts, `requires_action` while a permission prompt waits for the client, `running`
//! again once it is answered, `idle` when the last queued prompt ended. Without the
//! variable nothing is sent.

use std::sync::Arc;

use strata_protocol::sdk::{SdkMessage, SessionStateMessage, SystemMessage};

use super::output::Lines;

/// Sends the session's state changes when the client asked for them.
pub(crate) struct SessionStates {
    lines: Option<Lines>,
    session_id: String,
}

impl SessionStates {
    /// Reads the environment variable; sends on `lines` when it is `1`.
    pub(crate) fn from_env(lines: Lines, session_id: String) -> Arc<Self> {
        let on = std::env::var("CLAUDE_CODE_SDK_READS_SESSION_STATE").is_ok_and(|v| v == "1");
        Arc::new(Self {
            lines: on.then_some(lines),
            session_id,
        })
    }

    /// Sends `state` (`running`, `requires_action`, `idle`).
    pub(crate) fn send(&self, state: &str) {
        if let Some(lines) = &self.lines {
            lines.send_json(&SdkMessage::System(SystemMessage::SessionStateChanged(
                SessionStateMessage {
                    state: state.to_owned(),
                    session_id: self.session_id.clone(),
                    uuid: uuid::Uuid::new_v4().to_string(),
                },
            )));
        }
    }
}
