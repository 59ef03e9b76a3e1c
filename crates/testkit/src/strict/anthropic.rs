//! The Messages API's request rules (`POST /v1/messages`), each refused with the
//! message the real API answers with (HTTP 400, `invalid_request_error`):
//!
//! - `max_tokens` is required (not for `count_tokens`); `messages` is required and
//!   not empty; every message's role is `user` or `assistant`;
//! - tools: a custom tool's name matches `^[a-zA-Z0-9_-]{1,64}$`, names are unique,
//!   and its `input_schema` is present with `"type": "object"`. Server tools (those
//!   with a `type` other than `custom`, such as `web_search_20250305`) carry no schema;
//! - a request holding `tool_use` or `tool_result` blocks defines `tools`;
//! - every `tool_use` of an assistant message is answered by a `tool_result` in the
//!   next message, and those results come first in it; every `tool_result` answers a
//!   `tool_use` of the previous message;
//! - text blocks (in messages, tool results and the system prompt) are not empty and not
//!   only whitespace;
//! - no message has empty content (`""` or `[]`) except a final assistant message;
//! - at most 4 blocks carry `cache_control` (system, tools and messages together);
//! - with thinking enabled: `budget_tokens` ≥ 1024 and below `max_tokens`,
//!   `temperature` unset or 1, `top_k` unset, `top_p` unset or ≥ 0.95, and no
//!   `tool_choice` forcing a tool.
//!
//! Not enforced, because the API documents the opposite: consecutive messages of one
//! role are combined into one turn, and the first message may be an assistant's.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{Violation, valid_tool_name};

/// Where the API's extended-thinking errors point.
const THINKING_DOCS: &str = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking";

/// The first rule `body` breaks. `messages_endpoint` is false for `count_tokens`, which
/// takes no `max_tokens`.
pub fn check(body: &Map<String, Value>, messages_endpoint: bool) -> Option<Violation> {
    let max_tokens = body.get("max_tokens").and_then(Value::as_u64);
    if messages_endpoint && body.get("max_tokens").is_none_or(Value::is_null) {
        return fail("max_tokens: Field required");
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return fail("messages: Field required");
    };
    if messages.is_empty() {
        return fail("messages: at least one message is required");
    }
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        if role != "user" && role != "assistant" {
            return fail(format!(
                "messages.{i}.role: Input should be 'user' or 'assistant'"
            ));
        }
    }
    let tools = body.get("tools").and_then(Value::as_array);
    if let Some(v) = check_tools(tools.map(Vec::as_slice).unwrap_or_default()) {
        return Some(v);
    }
    if let Some(v) = check_thinking(body, max_tokens) {
        return Some(v);
    }
    if let Some(v) = check_system(body.get("system")) {
        return Some(v);
    }
    if let Some(v) = check_text_blocks(messages) {
        return Some(v);
    }
    if let Some(v) = check_empty_messages(messages) {
        return Some(v);
    }
    let breakpoints = count_cache_control(body);
    if breakpoints > 4 {
        return fail(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    let has_tools = tools.is_some_and(|t| !t.is_empty());
    if !has_tools && messages.iter().any(has_tool_blocks) {
        return fail(
            "Requests which include `tool_use` or `tool_result` blocks must define tools.",
        );
    }
    check_tool_pairing(messages)
}

fn fail(message: impl Into<String>) -> Option<Violation> {
    Some(Violation::new(message))
}

/// The blocks of a message's content (a string content has none).
fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn block_type(block: &Value) -> &str {
    block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn check_tools(tools: &[Value]) -> Option<Violation> {
    let mut seen = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or("custom");
        if kind == "custom" {
            if !valid_tool_name(name) {
                return fail(format!(
                    "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                ));
            }
            match tool.get("input_schema") {
                None | Some(Value::Null) => {
                    return fail(format!("tools.{i}.custom.input_schema: Field required"));
                }
                Some(Value::Object(schema)) if schema.get("type") == Some(&"object".into()) => {}
                Some(_) => {
                    return fail(format!(
                        "tools.{i}.custom.input_schema.type: Input should be 'object'"
                    ));
                }
            }
        }
        if !seen.insert(name) {
            return fail("tools: Tool names must be unique.");
        }
    }
    None
}

fn check_thinking(body: &Map<String, Value>, max_tokens: Option<u64>) -> Option<Violation> {
    let thinking = body.get("thinking")?;
    let kind = thinking.get("type").and_then(Value::as_str)?;
    if kind == "disabled" {
        return None;
    }
    if kind == "enabled" {
        let budget = thinking.get("budget_tokens").and_then(Value::as_u64);
        match budget {
            None => return fail("thinking.enabled.budget_tokens: Field required"),
            Some(b) if b < 1024 => {
                return fail(
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                );
            }
            Some(b) if max_tokens.is_some_and(|m| b >= m) => {
                return fail(format!(
                    "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at {THINKING_DOCS}#max-tokens-and-context-window-size"
                ));
            }
            Some(_) => {}
        }
    }
    // Sampling: "Thinking isn't compatible with temperature or top_k modifications as
    // well as forced tool use"; top_p may be set between 0.95 and 1.
    if body
        .get("temperature")
        .and_then(Value::as_f64)
        .is_some_and(|t| t != 1.0)
    {
        return fail(format!(
            "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode. Please consult our documentation at {THINKING_DOCS}#feature-compatibility"
        ));
    }
    if body.get("top_k").is_some_and(|v| !v.is_null()) {
        return fail(format!(
            "`top_k` is not compatible with thinking. Please consult our documentation at {THINKING_DOCS}#feature-compatibility"
        ));
    }
    if body
        .get("top_p")
        .and_then(Value::as_f64)
        .is_some_and(|p| p < 0.95)
    {
        return fail(format!(
            "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our documentation at {THINKING_DOCS}#feature-compatibility"
        ));
    }
    let forced = body
        .get("tool_choice")
        .and_then(|c| c.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t == "any" || t == "tool");
    if forced {
        return fail("Thinking may not be enabled when tool_choice forces tool use.");
    }
    None
}

/// The system prompt's text blocks follow the text-block rule.
fn check_system(system: Option<&Value>) -> Option<Violation> {
    let blocks = system?.as_array()?;
    blocks
        .iter()
        .filter(|b| block_type(b) == "text")
        .find_map(|b| text_rule("system", b.get("text")))
}

/// The empty-text rule for one text: `Some` when it is empty or only whitespace.
fn text_rule(place: &str, text: Option<&Value>) -> Option<Violation> {
    let text = text.and_then(Value::as_str).unwrap_or_default();
    if text.is_empty() {
        fail(format!("{place}: text content blocks must be non-empty"))
    } else if text.trim().is_empty() {
        fail(format!(
            "{place}: text content blocks must contain non-whitespace text"
        ))
    } else {
        None
    }
}

fn check_text_blocks(messages: &[Value]) -> Option<Violation> {
    for m in messages {
        // A string content is one text block; an empty string is the empty-message rule.
        if let Some(Value::String(s)) = m.get("content")
            && !s.is_empty()
            && let Some(v) = text_rule("messages", m.get("content"))
        {
            return Some(v);
        }
        for b in blocks(m) {
            match block_type(b) {
                "text" => {
                    if let Some(v) = text_rule("messages", b.get("text")) {
                        return Some(v);
                    }
                }
                "tool_result" => {
                    let nested = b
                        .get("content")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default();
                    if let Some(v) = nested
                        .iter()
                        .filter(|n| block_type(n) == "text")
                        .find_map(|n| text_rule("messages", n.get("text")))
                    {
                        return Some(v);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

fn check_empty_messages(messages: &[Value]) -> Option<Violation> {
    let last = messages.len() - 1;
    for (i, m) in messages.iter().enumerate() {
        let empty = match m.get("content") {
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            _ => true,
        };
        let final_assistant = i == last && m["role"] == "assistant";
        if empty && !final_assistant {
            return fail(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            ));
        }
    }
    None
}

/// Blocks carrying `cache_control`: system blocks, tools, message blocks and the blocks
/// nested in tool results.
fn count_cache_control(body: &Map<String, Value>) -> usize {
    let marked = |v: &Value| v.get("cache_control").is_some_and(|c| !c.is_null());
    let system = body
        .get("system")
        .and_then(Value::as_array)
        .map_or(0, |b| b.iter().filter(|b| marked(b)).count());
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map_or(0, |t| t.iter().filter(|t| marked(t)).count());
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, |ms| {
            ms.iter()
                .flat_map(blocks)
                .map(|b| {
                    let nested = b
                        .get("content")
                        .and_then(Value::as_array)
                        .map_or(0, |n| n.iter().filter(|n| marked(n)).count());
                    usize::from(marked(b)) + nested
                })
                .sum()
        });
    system + tools + messages
}

fn has_tool_blocks(message: &Value) -> bool {
    blocks(message)
        .iter()
        .any(|b| matches!(block_type(b), "tool_use" | "tool_result"))
}

fn tool_use_ids(message: &Value) -> Vec<&str> {
    if message["role"] != "assistant" {
        return Vec::new();
    }
    blocks(message)
        .iter()
        .filter(|b| block_type(b) == "tool_use")
        .filter_map(|b| b.get("id").and_then(Value::as_str))
        .collect()
}

fn check_tool_pairing(messages: &[Value]) -> Option<Violation> {
    // Every result answers a call of the message just before.
    for (i, m) in messages.iter().enumerate() {
        let previous_calls = i
            .checked_sub(1)
            .map(|p| tool_use_ids(&messages[p]))
            .unwrap_or_default();
        for (k, b) in blocks(m).iter().enumerate() {
            if block_type(b) != "tool_result" {
                continue;
            }
            let id = b
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if m["role"] != "user" || !previous_calls.contains(&id) {
                return fail(format!(
                    "messages.{i}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                ));
            }
        }
    }
    // Every call is answered first thing in the next message.
    for (i, m) in messages.iter().enumerate() {
        let calls = tool_use_ids(m);
        if calls.is_empty() {
            continue;
        }
        let Some(next) = messages.get(i + 1) else {
            // A final assistant message (a prefill) has no next message to check.
            continue;
        };
        let next_blocks = if next["role"] == "user" {
            blocks(next)
        } else {
            &[]
        };
        let answered: Vec<&str> = next_blocks
            .iter()
            .filter(|b| block_type(b) == "tool_result")
            .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
            .collect();
        let missing: Vec<&str> = calls
            .iter()
            .copied()
            .filter(|c| !answered.contains(c))
            .collect();
        if !missing.is_empty() {
            return fail(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                missing.join(", ")
            ));
        }
        let leading = next_blocks
            .iter()
            .take_while(|b| block_type(b) == "tool_result")
            .count();
        if leading < answered.len() {
            return fail(format!(
                "messages.{}: Did not find {} `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
                i + 1,
                calls.len()
            ));
        }
    }
    None
}
