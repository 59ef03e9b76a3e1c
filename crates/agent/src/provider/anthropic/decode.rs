//! Decoding the Messages API's streamed events and error bodies.
//!
//! Each SSE event's `data` is a JSON object whose `type` names it (the `event:` line
//! repeats it and is not needed). Unknown event and delta types are skipped, as the API
//! documentation asks of clients, so new additions to the protocol do not break strata.

use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value};
use strata_protocol::message::{AssistantMessage, ContentBlock, StopReason, ThinkingBlock, Usage};

use super::NAME;
use crate::provider::retry::retryable_status;
use crate::provider::sse::SseEvent;
use crate::provider::transport::{WireDecoder, body_excerpt};
use crate::provider::{BlockDelta, ProviderError, StreamEvent};

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: AssistantMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Map<String, Value>,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    CitationsDelta {
        citation: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<StopReason>,
}

#[derive(Deserialize, Default)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Error `type`s worth retrying when they arrive as an `error` event.
fn retryable_kind(kind: &str) -> bool {
    matches!(
        kind,
        "overloaded_error" | "rate_limit_error" | "api_error" | "timeout_error"
    )
}

/// Decodes one streamed response.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    done: bool,
}

impl WireDecoder for AnthropicDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let wire: WireEvent =
            serde_json::from_str(&event.data).map_err(|e| ProviderError::Protocol {
                provider: NAME,
                message: format!(
                    "event {} is not a valid event ({e}): {}",
                    event.event.as_deref().unwrap_or("(unnamed)"),
                    body_excerpt(event.data.as_bytes())
                ),
            })?;
        match wire {
            WireEvent::MessageStart { message } => out.push(StreamEvent::MessageStart {
                id: message.id,
                model: message.model,
                usage: message.usage,
            }),
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => out.push(StreamEvent::ContentBlockStart {
                index,
                block: start_block(content_block),
            }),
            WireEvent::ContentBlockDelta { index, delta } => {
                let delta = match delta {
                    WireDelta::TextDelta { text } => BlockDelta::Text(text),
                    WireDelta::ThinkingDelta { thinking } => BlockDelta::Thinking(thinking),
                    WireDelta::SignatureDelta { signature } => BlockDelta::Signature(signature),
                    WireDelta::InputJsonDelta { partial_json } => {
                        BlockDelta::InputJson(partial_json)
                    }
                    WireDelta::CitationsDelta { citation } => BlockDelta::Citation(citation),
                    WireDelta::Unknown => {
                        tracing::debug!(
                            "anthropic: skipping an unknown delta type: {}",
                            event.data
                        );
                        return Ok(());
                    }
                };
                out.push(StreamEvent::ContentBlockDelta { index, delta });
            }
            WireEvent::ContentBlockStop { index } => {
                out.push(StreamEvent::ContentBlockStop { index });
            }
            WireEvent::MessageDelta { delta, usage } => out.push(StreamEvent::MessageDelta {
                stop_reason: delta.stop_reason,
                usage,
            }),
            WireEvent::MessageStop => {
                self.done = true;
                out.push(StreamEvent::MessageStop);
            }
            WireEvent::Ping => out.push(StreamEvent::Ping),
            WireEvent::Error { error } => {
                let kind = error.kind;
                return Err(ProviderError::Api {
                    provider: NAME,
                    status: None,
                    retryable: kind.as_deref().is_some_and(retryable_kind),
                    message: error
                        .message
                        .unwrap_or_else(|| "the stream reported an error without a message".into()),
                    kind,
                });
            }
            WireEvent::Unknown => {
                tracing::debug!("anthropic: skipping an unknown event: {}", event.data);
            }
        }
        Ok(())
    }

    fn end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            Ok(())
        } else {
            // A cut connection, not a malformed response: worth retrying if nothing
            // has streamed yet.
            Err(ProviderError::Transport {
                provider: NAME,
                message: "the connection closed before the response was complete \
                          (no message_stop event)"
                    .into(),
            })
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

/// The block a `content_block_start` announces. Thinking blocks start without a
/// signature (it arrives as a delta), which the protocol type needs to know them, so
/// they are built here; tool uses without an `input` get `{}` so deltas can fill it.
fn start_block(mut m: Map<String, Value>) -> ContentBlock {
    let take_str = |m: &mut Map<String, Value>, k: &str| match m.remove(k) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    match m.get("type").and_then(Value::as_str) {
        Some("thinking") => {
            m.remove("type");
            let thinking = take_str(&mut m, "thinking");
            let signature = take_str(&mut m, "signature");
            ContentBlock::Thinking(ThinkingBlock {
                thinking,
                signature,
                extra: m,
            })
        }
        Some("text") if !m.contains_key("text") => {
            m.insert("text".into(), Value::String(String::new()));
            block_from(m)
        }
        Some("tool_use" | "server_tool_use") if !m.contains_key("input") => {
            m.insert("input".into(), Value::Object(Map::new()));
            block_from(m)
        }
        _ => block_from(m),
    }
}

fn block_from(m: Map<String, Value>) -> ContentBlock {
    // Deserializing a block from a map cannot fail: shapes it does not know become
    // `ContentBlock::Unknown`.
    serde_json::from_value(Value::Object(m.clone())).unwrap_or(ContentBlock::Unknown(m))
}

/// Reads an error response: `{"type":"error","error":{"type":…,"message":…}}`.
///
/// Whether to retry follows the API's `x-should-retry` header when present, else the
/// status (429, 5xx, 529).
pub(super) fn read_error(status: u16, headers: &HeaderMap, body: &[u8]) -> ProviderError {
    #[derive(Deserialize)]
    struct ErrorBody {
        #[serde(default)]
        error: WireError,
    }
    let parsed = serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.error);
    let (kind, message) = match parsed {
        Some(WireError {
            kind,
            message: Some(message),
        }) => (kind, message),
        Some(WireError {
            kind,
            message: None,
        }) => (kind, body_excerpt(body)),
        None => (None, body_excerpt(body)),
    };
    let mut message = if message.is_empty() {
        "(no error message)".to_owned()
    } else {
        message
    };
    match status {
        401 => message.push_str(" — check ANTHROPIC_API_KEY"),
        404 => message.push_str(" — check ANTHROPIC_BASE_URL and the model name"),
        _ => {}
    }
    if let Some(id) = headers.get("request-id").and_then(|v| v.to_str().ok()) {
        message.push_str(&format!(" (request id {id})"));
    }
    let should_retry = headers
        .get("x-should-retry")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| match v {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        });
    ProviderError::Api {
        provider: NAME,
        status: Some(status),
        kind,
        message,
        retryable: should_retry.unwrap_or_else(|| retryable_status(status)),
    }
}
