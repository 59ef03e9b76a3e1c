//! [`Reply`]: a builder for the assistant message a scripted response streams.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};
use strata_protocol::message::{
    AssistantMessage, ContentBlock, RedactedThinkingBlock, StopReason, ThinkingBlock, Usage,
};

use crate::MockResponse;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Builds an [`AssistantMessage`] block by block.
///
/// Defaults: a unique id `msg_mock_<n>`, model `mock-model`, usage of 10 input and 5
/// output tokens, stop reason `end_turn`, or `tool_use` once a tool call is added (unless
/// [`Reply::stop`] sets one).
#[derive(Debug, Clone)]
pub struct Reply {
    message: AssistantMessage,
    explicit_stop: bool,
}

impl Default for Reply {
    fn default() -> Self {
        Self::new()
    }
}

impl Reply {
    /// An empty reply with the defaults above.
    pub fn new() -> Self {
        let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Self {
            message: AssistantMessage {
                model: "mock-model".into(),
                id: format!("msg_mock_{n}"),
                content: Vec::new(),
                stop_reason: Some(StopReason::EndTurn),
                stop_sequence: None,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                    ..Usage::default()
                },
                extra: Map::new(),
            },
            explicit_stop: false,
        }
    }

    /// Sets the response id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.message.id = id.into();
        self
    }

    /// Sets the model name.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.message.model = model.into();
        self
    }

    /// Adds a text block.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.message.content.push(ContentBlock::text(text));
        self
    }

    /// Adds a thinking block with its signature.
    pub fn thinking(mut self, thinking: impl Into<String>, signature: impl Into<String>) -> Self {
        self.message
            .content
            .push(ContentBlock::Thinking(ThinkingBlock {
                thinking: thinking.into(),
                signature: signature.into(),
                extra: Map::new(),
            }));
        self
    }

    /// Adds a redacted thinking block.
    pub fn redacted_thinking(mut self, data: impl Into<String>) -> Self {
        self.message
            .content
            .push(ContentBlock::RedactedThinking(RedactedThinkingBlock {
                data: data.into(),
                extra: Map::new(),
            }));
        self
    }

    /// Adds a tool call (its input is streamed in several fragments).
    pub fn tool_use(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Self {
        self.message
            .content
            .push(ContentBlock::tool_use(id, name, input));
        if !self.explicit_stop {
            self.message.stop_reason = Some(StopReason::ToolUse);
        }
        self
    }

    /// Adds any block.
    pub fn block(mut self, block: ContentBlock) -> Self {
        self.message.content.push(block);
        self
    }

    /// Sets input and output tokens.
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.message.usage.input_tokens = input;
        self.message.usage.output_tokens = output;
        self
    }

    /// Sets cache write and read tokens.
    pub fn cache(mut self, creation: u64, read: u64) -> Self {
        self.message.usage.cache_creation_input_tokens = Some(creation);
        self.message.usage.cache_read_input_tokens = Some(read);
        self
    }

    /// Sets the stop reason.
    pub fn stop(mut self, reason: StopReason) -> Self {
        self.message.stop_reason = Some(reason);
        self.explicit_stop = true;
        self
    }

    /// The message.
    pub fn build(self) -> AssistantMessage {
        self.message
    }
}

impl From<Reply> for AssistantMessage {
    fn from(r: Reply) -> Self {
        r.build()
    }
}

impl From<Reply> for MockResponse {
    fn from(r: Reply) -> Self {
        MockResponse::message(r.build())
    }
}
