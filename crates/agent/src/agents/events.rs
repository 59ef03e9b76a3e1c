//! Where a sub-agent's messages go.
//!
//! A synchronous sub-agent's assistant and user messages go to the session's stream with
//! `parent_tool_use_id` naming the Agent call that started it (the SDKs' rule for
//! messages produced inside a sub-agent), so a client can show the nested work; its
//! turn's `result` and raw stream events stay inside. A background agent's messages stay
//! in its transcript: the stream hears of it through `task_progress` and
//! `task_notification` instead.

use std::sync::Arc;

use strata_protocol::sdk::SdkMessage;

use crate::query::ports::EventSink;

/// Forwards a synchronous sub-agent's messages under its Agent call.
pub(crate) struct ForwardEvents {
    pub(crate) inner: Arc<dyn EventSink>,
    pub(crate) parent_tool_use_id: Arc<str>,
}

impl EventSink for ForwardEvents {
    fn emit(&self, message: SdkMessage) {
        match message {
            SdkMessage::Assistant(mut event) => {
                event.parent_tool_use_id = Some(self.parent_tool_use_id.to_string());
                self.inner.emit(SdkMessage::Assistant(event));
            }
            SdkMessage::User(mut event) => {
                event.parent_tool_use_id = Some(self.parent_tool_use_id.to_string());
                self.inner.emit(SdkMessage::User(event));
            }
            _ => {}
        }
    }
}

/// Drops everything: a background agent's messages are in its transcript only.
pub(crate) struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _message: SdkMessage) {}
}
