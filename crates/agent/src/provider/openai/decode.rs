//! Streamed chat-completion chunks → [`StreamEvent`]s, and error bodies.
//!
//! The mapping, for the first choice of each chunk:
//! - the first chunk → `message_start` (its `id` and `model`);
//! - `delta.reasoning_content` / `delta.reasoning` (llama.cpp, vLLM, Ollama, DeepSeek) →
//!   a thinking block without a signature;
//! - `delta.content` → a text block (one per run of text);
//! - `delta.tool_calls[i]` → one tool-use block per call `index`, started when the call
//!   first appears (its `id` and `function.name`), its `function.arguments` fragments as
//!   input JSON deltas; a call without an id gets `call_<response id>_<index>`;
//! - `finish_reason` → every open block stops; `stop` → `end_turn` (or `tool_use` when
//!   tool calls were streamed: some local servers say `stop` for them), `tool_calls` →
//!   `tool_use`, `length` → `max_tokens`, `content_filter` → `refusal`;
//! - `usage` (the last chunk, with `include_usage`) → `prompt_tokens` minus cached tokens
//!   as input tokens, `prompt_tokens_details.cached_tokens` as cache reads,
//!   `completion_tokens` as output tokens;
//! - `[DONE]` → `message_delta` (stop reason, usage) and `message_stop`. A server that
//!   closes the connection after a finish reason without `[DONE]` is accepted.
//!
//! An `error` object in a chunk (servers report failures mid-stream that way) is an
//! API error.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value};
use strata_protocol::message::{ContentBlock, StopReason, ThinkingBlock, Usage};

use super::NAME;
use crate::provider::retry::retryable_status;
use crate::provider::sse::SseEvent;
use crate::provider::transport::{WireDecoder, body_excerpt};
use crate::provider::{BlockDelta, ProviderError, StreamEvent};

#[derive(Deserialize, Default)]
struct Chunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize, Default)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Decodes one streamed chat completion (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    started: bool,
    id: String,
    next_index: usize,
    text: Option<usize>,
    thinking: Option<usize>,
    /// Tool-call index → block index.
    tools: BTreeMap<u32, usize>,
    /// Blocks started and not yet stopped.
    open: BTreeSet<usize>,
    finish: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl OpenAiDecoder {
    fn open_block(&mut self, block: ContentBlock, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.open.insert(index);
        out.push(StreamEvent::ContentBlockStart { index, block });
        index
    }

    fn close(&mut self, index: Option<usize>, out: &mut Vec<StreamEvent>) {
        if let Some(index) = index
            && self.open.remove(&index)
        {
            out.push(StreamEvent::ContentBlockStop { index });
        }
    }

    fn close_all(&mut self, out: &mut Vec<StreamEvent>) {
        for index in std::mem::take(&mut self.open) {
            out.push(StreamEvent::ContentBlockStop { index });
        }
        self.text = None;
        self.thinking = None;
    }

    fn finalize(&mut self, out: &mut Vec<StreamEvent>) {
        self.close_all(out);
        let stop_reason = match self.finish.as_deref() {
            Some("stop") | None if !self.tools.is_empty() => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        out.push(StreamEvent::MessageDelta {
            stop_reason: Some(stop_reason),
            usage: self.usage.take(),
        });
        out.push(StreamEvent::MessageStop);
        self.done = true;
    }

    fn start(&mut self, chunk: &Chunk, out: &mut Vec<StreamEvent>) {
        if self.started {
            return;
        }
        self.started = true;
        self.id = chunk
            .id
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| "chatcmpl-unnamed".to_owned());
        out.push(StreamEvent::MessageStart {
            id: self.id.clone(),
            model: chunk.model.clone().unwrap_or_default(),
            usage: Usage::default(),
        });
    }

    fn choice(&mut self, choice: Choice, out: &mut Vec<StreamEvent>) {
        let delta = choice.delta;
        let reasoning = delta
            .reasoning_content
            .or(delta.reasoning)
            .filter(|r| !r.is_empty());
        if let Some(reasoning) = reasoning {
            let index = match self.thinking {
                Some(i) => i,
                None => {
                    let text = self.text.take();
                    self.close(text, out);
                    let i = self.open_block(ContentBlock::Thinking(ThinkingBlock::default()), out);
                    self.thinking = Some(i);
                    i
                }
            };
            out.push(StreamEvent::ContentBlockDelta {
                index,
                delta: BlockDelta::Thinking(reasoning),
            });
        }
        if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
            let index = match self.text {
                Some(i) => i,
                None => {
                    let thinking = self.thinking.take();
                    self.close(thinking, out);
                    let i = self.open_block(ContentBlock::text(""), out);
                    self.text = Some(i);
                    i
                }
            };
            out.push(StreamEvent::ContentBlockDelta {
                index,
                delta: BlockDelta::Text(content),
            });
        }
        for (position, call) in delta.tool_calls.into_iter().enumerate() {
            let key = call
                .index
                .unwrap_or_else(|| u32::try_from(position).unwrap_or(u32::MAX));
            let function = call.function.unwrap_or_default();
            let index = match self.tools.get(&key) {
                Some(&i) => i,
                None => {
                    let text = self.text.take();
                    self.close(text, out);
                    let thinking = self.thinking.take();
                    self.close(thinking, out);
                    let id = call
                        .id
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(|| format!("call_{}_{key}", self.id));
                    let name = function.name.clone().unwrap_or_default();
                    let block = ContentBlock::tool_use(id, name, Value::Object(Map::new()));
                    let i = self.open_block(block, out);
                    self.tools.insert(key, i);
                    i
                }
            };
            if let Some(arguments) = function.arguments.filter(|a| !a.is_empty()) {
                out.push(StreamEvent::ContentBlockDelta {
                    index,
                    delta: BlockDelta::InputJson(arguments),
                });
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.close_all(out);
            self.finish = Some(reason);
        }
    }
}

impl WireDecoder for OpenAiDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            if !self.started {
                self.start(&Chunk::default(), out);
            }
            self.finalize(out);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
            provider: NAME,
            message: format!(
                "a chunk is not valid ({e}): {}",
                body_excerpt(data.as_bytes())
            ),
        })?;
        if let Some(error) = &chunk.error {
            return Err(api_error(None, error));
        }
        self.start(&chunk, out);
        if let Some(usage) = &chunk.usage {
            let cached = usage
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .filter(|&c| c > 0);
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens.saturating_sub(cached.unwrap_or(0)),
                cache_read_input_tokens: cached,
                output_tokens: usage.completion_tokens,
                ..Usage::default()
            });
        }
        for choice in chunk.choices {
            // Only one completion is asked for; others (n > 1 servers) are ignored.
            if choice.index == 0 {
                self.choice(choice, out);
            }
        }
        Ok(())
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if self.finish.is_some() {
            self.finalize(out);
            return Ok(());
        }
        Err(ProviderError::Transport {
            provider: NAME,
            message: "the connection closed before the response was complete (no finish \
                      reason, no [DONE])"
                .into(),
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

/// An error object (`{"message","type","code"}`, or a bare string as Ollama sends).
fn api_error(status: Option<u16>, error: &Value) -> ProviderError {
    let (kind, message) = match error {
        Value::String(s) => (None, s.clone()),
        Value::Object(m) => (
            m.get("type")
                .or_else(|| m.get("code"))
                .and_then(|v| v.as_str().map(str::to_owned)),
            m.get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned),
        ),
        other => (None, other.to_string()),
    };
    let retryable = match status {
        Some(s) => retryable_status(s),
        None => kind.as_deref().is_some_and(|k| {
            matches!(
                k,
                "server_error" | "rate_limit_exceeded" | "rate_limit_error" | "overloaded_error"
            )
        }),
    };
    ProviderError::Api {
        provider: NAME,
        status,
        kind,
        message,
        retryable,
    }
}

/// Reads an error response (`{"error": {...}}` or `{"error": "..."}`).
pub(super) fn read_error(status: u16, _headers: &HeaderMap, body: &[u8]) -> ProviderError {
    let parsed: Option<Value> = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").cloned());
    let mut error = match parsed {
        Some(e) => api_error(Some(status), &e),
        None => ProviderError::Api {
            provider: NAME,
            status: Some(status),
            kind: None,
            message: body_excerpt(body),
            retryable: retryable_status(status),
        },
    };
    if let ProviderError::Api { message, .. } = &mut error {
        if message.is_empty() {
            message.push_str("(no error message)");
        }
        match status {
            401 => message.push_str(" — check OPENAI_API_KEY"),
            404 => message.push_str(" — check OPENAI_BASE_URL and the model name"),
            _ => {}
        }
    }
    error
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;
    use strata_protocol::message::AssistantMessage;
    use strata_testkit::Reply;
    use strata_testkit::render::{openai_frames, to_sse};

    use super::*;
    use crate::provider::MessageAccumulator;
    use crate::provider::sse::SseParser;

    fn decode(chunks: &[&[u8]]) -> Result<AssistantMessage, ProviderError> {
        let mut parser = SseParser::new();
        let mut decoder = OpenAiDecoder::default();
        let (mut sse, mut events) = (Vec::new(), Vec::new());
        for c in chunks {
            parser.feed(c, &mut sse);
        }
        parser.finish(&mut sse);
        for e in sse {
            decoder.event(e, &mut events)?;
        }
        decoder.end(&mut events)?;
        let mut acc = MessageAccumulator::new();
        for e in &events {
            acc.push(e)?;
        }
        Ok(acc.finish()?)
    }

    #[test]
    fn ollama_style_string_errors_and_missing_bodies_are_read() {
        let err = read_error(500, &HeaderMap::new(), br#"{"error":"model crashed"}"#);
        assert_eq!(
            err.to_string(),
            "openai API error (HTTP 500): model crashed"
        );
        assert!(err.is_retryable());
        let err = read_error(401, &HeaderMap::new(), b"");
        assert_eq!(
            err.to_string(),
            "openai API error (HTTP 401): (no error message) — check OPENAI_API_KEY"
        );
    }

    proptest! {
        /// Any split of the chunk stream yields the message that was streamed: text,
        /// reasoning as thinking, tool calls with their arguments reassembled.
        #[test]
        fn any_chunking_of_a_streamed_completion_rebuilds_the_message(
            text in proptest::option::of("[a-zA-Z é✓\n\"]{1,30}"),
            reasoning in proptest::option::of("[a-z .]{1,20}"),
            calls in proptest::collection::vec("[a-z]{1,8}", 0..3),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let mut reply = Reply::new().id("chatcmpl-p").model("m").usage(40, 7);
            if let Some(r) = &reasoning {
                reply = reply.thinking(r.clone(), "");
            }
            if let Some(t) = &text {
                reply = reply.text(t.clone());
            }
            for (i, arg) in calls.iter().enumerate() {
                reply = reply.tool_use(format!("call_{i}"), "Bash", json!({"command": arg, "n": i}));
            }
            let expected = reply.build();
            let bytes = to_sse(&openai_frames(&expected)).into_bytes();
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut at = 0;
            for p in points {
                chunks.push(&bytes[at..p]);
                at = p;
            }
            chunks.push(&bytes[at..]);
            prop_assert_eq!(decode(&chunks).unwrap(), expected);
        }
    }
}
