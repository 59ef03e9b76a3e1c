//! How a scripted message is written on the wire, in each dialect.
//!
//! Anthropic Messages API ([`anthropic_frames`]): `message_start` (usage with input and
//! cache tokens and `output_tokens: 1`), `ping`, then per block `content_block_start`
//! (text and thinking start empty, a thinking block without its signature, a tool use
//! with `input: {}`), its deltas (text and thinking in up to three pieces, the signature
//! as a `signature_delta`, a tool's input JSON as an empty `input_json_delta` followed by
//! up to three fragments that split the JSON text mid-token), `content_block_stop`; then
//! `message_delta` (stop reason, `usage: {output_tokens}`) and `message_stop`. Other
//! block types are sent whole in their `content_block_start`.
//!
//! OpenAI chat completions ([`openai_frames`]): a first chunk with `role: assistant`;
//! thinking as `reasoning_content` pieces; text as `content` pieces; each tool call as
//! its own `tool_calls` entry (`index` counting the calls, `id`, `function.name`, empty
//! arguments) followed by argument fragments; a final chunk with `finish_reason`
//! (`tool_use` → `tool_calls`, `max_tokens` → `length`, else `stop`); a usage chunk
//! (`choices: []`, `prompt_tokens` including cache reads, `cached_tokens`); `[DONE]`.

use serde_json::{Value, json};
use strata_protocol::message::{AssistantMessage, ContentBlock, StopReason};

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The `event:` line, if any.
    pub event: Option<String>,
    /// The `data:` payload (one line).
    pub data: String,
}

impl Frame {
    fn named(event: &str, data: &Value) -> Self {
        Self {
            event: Some(event.to_owned()),
            data: data.to_string(),
        }
    }

    fn data(data: impl Into<String>) -> Self {
        Self {
            event: None,
            data: data.into(),
        }
    }

    /// The event as written: `event: …\ndata: …\n\n`.
    pub fn to_sse(&self) -> String {
        match &self.event {
            Some(e) => format!("event: {e}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        }
    }
}

/// A whole SSE body from frames.
pub fn to_sse(frames: &[Frame]) -> String {
    frames.iter().map(Frame::to_sse).collect()
}

/// Splits `s` into at most `n` non-empty pieces at character boundaries.
fn pieces(s: &str, n: usize) -> Vec<&str> {
    let chars = s.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let per = chars.div_ceil(n.max(1));
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let cut = rest.char_indices().nth(per).map_or(rest.len(), |(i, _)| i);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

/// The Messages API events that stream `m` (see the module docs).
pub fn anthropic_frames(m: &AssistantMessage) -> Vec<Frame> {
    let mut start_usage = serde_json::to_value(&m.usage).unwrap_or_else(|_| json!({}));
    start_usage["output_tokens"] = json!(1);
    let mut frames = vec![
        Frame::named(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": m.id, "type": "message", "role": "assistant", "model": m.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": start_usage,
            }}),
        ),
        Frame::named("ping", &json!({"type": "ping"})),
    ];
    for (index, block) in m.content.iter().enumerate() {
        let start = |block: Value| {
            Frame::named(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": block}),
            )
        };
        let delta = |delta: Value| {
            Frame::named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        };
        match block {
            ContentBlock::Text(t) => {
                frames.push(start(json!({"type": "text", "text": ""})));
                for p in pieces(&t.text, 3) {
                    frames.push(delta(json!({"type": "text_delta", "text": p})));
                }
            }
            ContentBlock::Thinking(t) => {
                frames.push(start(json!({"type": "thinking", "thinking": ""})));
                for p in pieces(&t.thinking, 3) {
                    frames.push(delta(json!({"type": "thinking_delta", "thinking": p})));
                }
                frames.push(delta(
                    json!({"type": "signature_delta", "signature": t.signature}),
                ));
            }
            ContentBlock::ToolUse(t) => {
                frames.push(start(
                    json!({"type": "tool_use", "id": t.id, "name": t.name, "input": {}}),
                ));
                frames.push(delta(
                    json!({"type": "input_json_delta", "partial_json": ""}),
                ));
                for p in pieces(&t.input.to_string(), 3) {
                    frames.push(delta(
                        json!({"type": "input_json_delta", "partial_json": p}),
                    ));
                }
            }
            other => {
                frames.push(start(serde_json::to_value(other).unwrap_or(Value::Null)));
            }
        }
        frames.push(Frame::named(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    frames.push(Frame::named(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": m.stop_reason, "stop_sequence": m.stop_sequence},
                "usage": {"output_tokens": m.usage.output_tokens}}),
    ));
    frames.push(Frame::named(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    frames
}

/// A Messages API `error` event.
pub fn anthropic_error_frame(kind: &str, message: &str) -> Frame {
    Frame::named(
        "error",
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

/// A Messages API error body.
pub fn anthropic_error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

/// The chat-completion chunks that stream `m` (see the module docs).
pub fn openai_frames(m: &AssistantMessage) -> Vec<Frame> {
    let chunk = |delta: Value, finish: Value| {
        Frame::data(
            json!({"id": m.id, "object": "chat.completion.chunk", "created": 0, "model": m.model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        )
    };
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut call = 0;
    for block in &m.content {
        match block {
            ContentBlock::Thinking(t) => {
                for p in pieces(&t.thinking, 3) {
                    frames.push(chunk(json!({"reasoning_content": p}), Value::Null));
                }
            }
            ContentBlock::Text(t) => {
                for p in pieces(&t.text, 3) {
                    frames.push(chunk(json!({"content": p}), Value::Null));
                }
            }
            ContentBlock::ToolUse(t) => {
                frames.push(chunk(
                    json!({"tool_calls": [{"index": call, "id": t.id, "type": "function",
                                           "function": {"name": t.name, "arguments": ""}}]}),
                    Value::Null,
                ));
                for p in pieces(&t.input.to_string(), 3) {
                    frames.push(chunk(
                        json!({"tool_calls": [{"index": call, "function": {"arguments": p}}]}),
                        Value::Null,
                    ));
                }
                call += 1;
            }
            // Nothing else has a place in chat completions.
            _ => {}
        }
    }
    let finish = match m.stop_reason {
        Some(StopReason::ToolUse) => "tool_calls",
        Some(StopReason::MaxTokens) => "length",
        _ => "stop",
    };
    frames.push(chunk(json!({}), json!(finish)));
    let cached = m.usage.cache_read_input_tokens.unwrap_or(0);
    let prompt = m.usage.input_tokens + cached;
    frames.push(Frame::data(
        json!({"id": m.id, "object": "chat.completion.chunk", "created": 0, "model": m.model,
               "choices": [],
               "usage": {"prompt_tokens": prompt, "completion_tokens": m.usage.output_tokens,
                         "total_tokens": prompt + m.usage.output_tokens,
                         "prompt_tokens_details": {"cached_tokens": cached}}})
        .to_string(),
    ));
    frames.push(Frame::data("[DONE]"));
    frames
}

/// A chat-completions error chunk (how servers report a failure mid-stream).
pub fn openai_error_frame(kind: &str, message: &str) -> Frame {
    Frame::data(json!({"error": {"message": message, "type": kind, "code": null}}).to_string())
}

/// A chat-completions error body.
pub fn openai_error_body(kind: &str, message: &str) -> String {
    json!({"error": {"message": message, "type": kind, "code": null}}).to_string()
}

/// The body of OpenAI's 400 for a request it refuses:
/// `{"error":{"message","type":"invalid_request_error","param","code"}}`.
pub fn openai_invalid_request_body(
    message: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> String {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_at_char_boundaries_and_rejoin() {
        for s in ["", "a", "héllo wörld ✓✓", "{\"command\":\"echo hi\"}"] {
            let p = pieces(s, 3);
            assert!(p.len() <= 3);
            assert_eq!(p.concat(), s);
            assert!(p.iter().all(|x| !x.is_empty()));
        }
    }
}
