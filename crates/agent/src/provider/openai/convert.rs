//! Anthropic-shaped messages → chat-completions messages, and the request body.
//!
//! | Messages API                         | chat completions                                  |
//! |--------------------------------------|---------------------------------------------------|
//! | system prompt                        | first message, `role: system`                     |
//! | user text / image blocks             | `role: user`; text only → one string (blocks joined with a blank line, which every local server accepts); with images → content parts (`image_url`, base64 as a data URL) |
//! | user `tool_result` blocks            | one `role: tool` message each, `tool_call_id`, text content (`Error: ` first when `is_error`); they come before the user's other blocks, since tool messages must follow the assistant's call |
//! | images inside a tool result          | content parts of a user message after the tool messages (tool messages carry text only) |
//! | documents (PDFs) inside a tool result | a note in the tool message's text that the document could not be sent |
//! | assistant text blocks                | `content`, concatenated                            |
//! | assistant `tool_use` blocks          | `tool_calls: [{id, type: function, function: {name, arguments}}]`, arguments as a JSON string |
//! | thinking, redacted thinking, unknown | dropped (no place for them)                       |

use serde_json::{Map, Value, json};
use std::sync::Arc;
use strata_protocol::message::{
    ContentBlock, ImageBlock, Message, MessageContent, Role, ToolResultContent,
};

use super::NAME;
use crate::provider::{ModelRequest, ProviderError};

/// The JSON body of a streamed chat-completions request. `max_completion_tokens` names
/// the limit for OpenAI's own service, `max_tokens` elsewhere.
pub(super) fn request_body(
    request: &ModelRequest,
    max_completion_tokens: bool,
) -> Result<Vec<u8>, ProviderError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert(
        "messages".into(),
        Value::Array(chat_messages(&request.system, &request.messages)),
    );
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    let limit = if max_completion_tokens {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body.insert(limit.into(), json!(request.max_tokens));
    if !request.tools.is_empty() {
        // Server tools (web search) are the Anthropic API's; a chat-completions server
        // has none, so they are left out. strata's own callers (WebSearch) refuse with
        // this provider before they build such a request; one that arrives anyway is
        // dropped with a note in the log rather than sent as a function the model could
        // call and nobody would run.
        for t in request.tools.iter().filter(|t| t.server.is_some()) {
            tracing::debug!(
                tool = %t.name,
                "left out of the request: a server tool of the Anthropic API, which an \
                 OpenAI-compatible server does not have"
            );
        }
        let tools = request
            .tools
            .iter()
            .filter(|t| t.server.is_none())
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    crate::provider::transport::json_body(&Value::Object(body)).map_err(|e| {
        ProviderError::Protocol {
            provider: NAME,
            message: format!("cannot encode the request: {e}"),
        }
    })
}

/// The conversation as chat-completions messages (see the module docs).
pub(crate) fn chat_messages(system: &str, messages: &[Arc<Message>]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match (message.role, &message.content) {
            (Role::User, MessageContent::Text(text)) => {
                out.push(json!({"role": "user", "content": text}));
            }
            (Role::Assistant, MessageContent::Text(text)) => {
                out.push(json!({"role": "assistant", "content": text}));
            }
            (Role::User, MessageContent::Blocks(blocks)) => user_blocks(blocks, &mut out),
            (Role::Assistant, MessageContent::Blocks(blocks)) => {
                out.push(assistant_blocks(blocks));
            }
        }
    }
    out
}

fn user_blocks(blocks: &[ContentBlock], out: &mut Vec<Value>) {
    let mut parts: Vec<Value> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::ToolResult(result) => {
                let mut text = String::new();
                if let Some(content) = &result.content {
                    match content {
                        ToolResultContent::Text(t) => text.push_str(t),
                        ToolResultContent::Blocks(inner) => {
                            for b in inner {
                                match b {
                                    ContentBlock::Text(t) => {
                                        if !text.is_empty() {
                                            text.push('\n');
                                        }
                                        text.push_str(&t.text);
                                    }
                                    ContentBlock::Image(image) => parts.push(image_part(image)),
                                    // Chat completions has no document part: the model
                                    // is told the PDF could not be shown, not left
                                    // believing it saw it.
                                    ContentBlock::Unknown(m)
                                        if m.get("type").and_then(Value::as_str)
                                            == Some("document") =>
                                    {
                                        if !text.is_empty() {
                                            text.push('\n');
                                        }
                                        text.push_str(
                                            "[A PDF document was attached here, but this model \
                                             service cannot receive documents; extract its text \
                                             with a command (for example pdftotext) instead.]",
                                        );
                                    }
                                    _ => {}
                                }
                            }
                        }
                    }
                }
                if result.is_error == Some(true) {
                    text.insert_str(0, "Error: ");
                }
                if text.is_empty() {
                    // Some servers reject an empty tool message.
                    text.push_str("(no output)");
                }
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": result.tool_use_id,
                    "content": text,
                }));
            }
            ContentBlock::Text(t) => parts.push(json!({"type": "text", "text": t.text})),
            ContentBlock::Image(image) => parts.push(image_part(image)),
            _ => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    let text_only = parts.iter().all(|p| p["type"] == "text");
    let content = if text_only {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        Value::String(texts.join("\n\n"))
    } else {
        Value::Array(parts)
    };
    out.push(json!({"role": "user", "content": content}));
}

fn assistant_blocks(blocks: &[ContentBlock]) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ToolUse(t) => calls.push(json!({
                "id": t.id,
                "type": "function",
                "function": {"name": t.name, "arguments": t.input.to_string()},
            })),
            _ => {}
        }
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    let content = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        Value::String(text)
    };
    m.insert("content".into(), content);
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}

fn image_part(image: &ImageBlock) -> Value {
    let source = &image.source;
    let url = match source["type"].as_str() {
        Some("base64") => format!(
            "data:{};base64,{}",
            source["media_type"].as_str().unwrap_or("image/png"),
            source["data"].as_str().unwrap_or("")
        ),
        _ => source["url"].as_str().unwrap_or("").to_owned(),
    };
    json!({"type": "image_url", "image_url": {"url": url}})
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use strata_protocol::message::{ContentBlock, Message, Role};

    use super::*;

    #[test]
    fn system_user_assistant_tool_round_trip() {
        let messages = vec![
            Message::user_text("list files"),
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::text("Let me look."),
                    ContentBlock::tool_use("toolu_1", "Bash", json!({"command": "ls"})),
                    ContentBlock::tool_use("toolu_2", "Glob", json!({"pattern": "*.rs"})),
                ],
            ),
            Message::blocks(
                Role::User,
                vec![
                    ContentBlock::tool_result("toolu_1", "a.rs\nb.rs", false),
                    ContentBlock::tool_result("toolu_2", "no such dir", true),
                    ContentBlock::text("also check tests"),
                ],
            ),
        ];
        let messages: Vec<Arc<Message>> = messages.into_iter().map(Arc::new).collect();
        let out = chat_messages("be brief", &messages);
        assert_eq!(
            Value::Array(out),
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "Let me look.", "tool_calls": [
                    {"id": "toolu_1", "type": "function",
                     "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}},
                    {"id": "toolu_2", "type": "function",
                     "function": {"name": "Glob", "arguments": "{\"pattern\":\"*.rs\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "toolu_1", "content": "a.rs\nb.rs"},
                {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: no such dir"},
                {"role": "user", "content": "also check tests"},
            ])
        );
    }

    #[test]
    fn assistant_with_only_tool_calls_has_null_content_and_thinking_is_dropped() {
        let blocks = vec![
            ContentBlock::Thinking(strata_protocol::message::ThinkingBlock {
                thinking: "hmm".into(),
                signature: "sig".into(),
                extra: Map::new(),
            }),
            ContentBlock::tool_use("t", "Read", json!({})),
        ];
        let v = assistant_blocks(&blocks);
        assert_eq!(v["content"], Value::Null);
        assert_eq!(v["tool_calls"][0]["function"]["arguments"], "{}");
    }

    #[test]
    fn a_document_in_a_tool_result_becomes_a_note_for_the_model() {
        let mut doc = Map::new();
        doc.insert("type".into(), json!("document"));
        doc.insert(
            "source".into(),
            json!({"type": "base64", "media_type": "application/pdf", "data": "JVBE"}),
        );
        let result = ContentBlock::ToolResult(strata_protocol::message::ToolResultBlock {
            tool_use_id: "toolu_1".into(),
            content: Some(ToolResultContent::Blocks(vec![
                ContentBlock::text("PDF /a.pdf: 1 page(s)"),
                ContentBlock::Unknown(doc),
            ])),
            is_error: None,
            extra: Map::new(),
        });
        let messages = chat_messages("", &[Arc::new(Message::blocks(Role::User, vec![result]))]);
        let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
        let text = tool["content"].as_str().unwrap();
        assert!(text.starts_with("PDF /a.pdf"), "{text}");
        assert!(text.contains("cannot receive documents"), "{text}");
        assert!(!text.contains("JVBE"), "{text}");
    }

    #[test]
    fn images_become_data_url_parts() {
        let image = ContentBlock::Image(ImageBlock {
            source: json!({"type": "base64", "media_type": "image/jpeg", "data": "AAAA"}),
            extra: Map::new(),
        });
        let out = chat_messages(
            "",
            &[Arc::new(Message::blocks(
                Role::User,
                vec![ContentBlock::text("what is this"), image],
            ))],
        );
        assert_eq!(
            out[0]["content"],
            json!([
                {"type": "text", "text": "what is this"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
            ])
        );
    }

    #[test]
    fn body_has_stream_options_tools_and_the_right_limit_field() {
        let request = ModelRequest {
            model: "llama".into(),
            system: String::new(),
            messages: vec![Arc::new(Message::user_text("hi"))],
            tools: vec![
                crate::provider::ToolDefinition::function("Bash", "run", json!({"type": "object"})),
                crate::provider::ToolDefinition::server_tool(
                    crate::provider::ServerTool::WebSearch(
                        crate::provider::WebSearchSpec::default(),
                    ),
                ),
            ],
            max_tokens: 100,
            thinking_budget: None,
        };
        let local: Value = serde_json::from_slice(&request_body(&request, false).unwrap()).unwrap();
        assert_eq!(local["stream"], true);
        assert_eq!(local["stream_options"], json!({"include_usage": true}));
        assert_eq!(local["max_tokens"], 100);
        assert_eq!(
            local["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
        // The server tool is the Anthropic API's: left out here.
        assert_eq!(local["tools"].as_array().unwrap().len(), 1, "{local}");
        let openai: Value = serde_json::from_slice(&request_body(&request, true).unwrap()).unwrap();
        assert_eq!(openai["max_completion_tokens"], 100);
        assert!(openai.get("max_tokens").is_none());
    }
}
