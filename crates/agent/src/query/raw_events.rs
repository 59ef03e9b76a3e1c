//! `--include-partial-messages`: every event of the model's response stream goes to the
//! client as a `stream_event` message holding the event in the Messages API's own shape
//! (`message_start`, `content_block_start`, `content_block_delta`, …), as the reference
//! agent forwards them. Providers decode their wire protocol into [`StreamEvent`]s; this
//! writes them back in the Anthropic shape, so an OpenAI-compatible server's stream reads
//! the same to the client.

use serde_json::{Value, json};
use strata_protocol::sdk::{SdkMessage, StreamEventMessage};

use super::TurnContext;
use crate::provider::{BlockDelta, StreamEvent};

/// Emits `event` as a `stream_event` message.
pub(super) fn emit(inner: &TurnContext<'_>, event: &StreamEvent) {
    inner
        .events
        .emit(SdkMessage::StreamEvent(StreamEventMessage {
            event: to_api_json(event),
            parent_tool_use_id: None,
            session_id: inner.session_id.clone(),
            uuid: uuid::Uuid::new_v4().to_string(),
        }));
}

/// `event` in the Messages API's streaming shape.
pub(crate) fn to_api_json(event: &StreamEvent) -> Value {
    match event {
        StreamEvent::MessageStart { id, model, usage } => json!({
            "type": "message_start",
            "message": {
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage,
            },
        }),
        StreamEvent::ContentBlockStart { index, block } => json!({
            "type": "content_block_start", "index": index, "content_block": block,
        }),
        StreamEvent::ContentBlockDelta { index, delta } => {
            let delta = match delta {
                BlockDelta::Text(text) => json!({"type": "text_delta", "text": text}),
                BlockDelta::Thinking(t) => json!({"type": "thinking_delta", "thinking": t}),
                BlockDelta::Signature(s) => json!({"type": "signature_delta", "signature": s}),
                BlockDelta::InputJson(p) => json!({"type": "input_json_delta", "partial_json": p}),
                BlockDelta::Citation(c) => json!({"type": "citations_delta", "citation": c}),
            };
            json!({"type": "content_block_delta", "index": index, "delta": delta})
        }
        StreamEvent::ContentBlockStop { index } => {
            json!({"type": "content_block_stop", "index": index})
        }
        StreamEvent::MessageDelta { stop_reason, usage } => json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": usage,
        }),
        StreamEvent::MessageStop => json!({"type": "message_stop"}),
        StreamEvent::Ping => json!({"type": "ping"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_protocol::message::ContentBlock;

    #[test]
    fn events_are_written_in_the_messages_api_shape() {
        let start = to_api_json(&StreamEvent::ContentBlockStart {
            index: 0,
            block: ContentBlock::text(""),
        });
        assert_eq!(start["content_block"]["type"], "text");
        let delta = to_api_json(&StreamEvent::ContentBlockDelta {
            index: 1,
            delta: BlockDelta::InputJson("{\"a\"".into()),
        });
        assert_eq!(
            delta,
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "input_json_delta", "partial_json": "{\"a\""}})
        );
        assert_eq!(
            to_api_json(&StreamEvent::MessageStop)["type"],
            "message_stop"
        );
    }
}
