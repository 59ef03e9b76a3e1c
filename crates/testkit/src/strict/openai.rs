//! OpenAI chat completions' request rules (`POST /v1/chat/completions`), each refused
//! with the real API's 400 body (`invalid_request_error`, with its `param` and `code`):
//!
//! - `messages` is present and not empty; every role is `system`, `developer`, `user`,
//!   `assistant` or `tool`;
//! - an assistant message has `content` or `tool_calls`;
//! - a `tool` message answers a `tool_call_id` of the assistant message whose
//!   `tool_calls` precede it (only other tool messages between them);
//! - every `tool_calls` id of an assistant message is answered by tool messages before
//!   the next message that is not a tool message;
//! - function names match `^[a-zA-Z0-9_-]+$`, are at most 64 characters and unique;
//!   `parameters`, when given, is a JSON Schema object (`"type": "object"`).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::Violation;

/// The first rule `body` breaks.
pub fn check(body: &Map<String, Value>) -> Option<Violation> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Some(
            Violation::new("Missing required parameter: 'messages'.")
                .param("messages")
                .code("missing_required_parameter"),
        );
    };
    if messages.is_empty() {
        return Some(
            Violation::new(
                "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            )
            .param("messages")
            .code("empty_array"),
        );
    }
    if let Some(v) = check_tools(body.get("tools").and_then(Value::as_array)) {
        return Some(v);
    }
    check_messages(messages)
}

fn check_tools(tools: Option<&Vec<Value>>) -> Option<Violation> {
    let mut seen = HashSet::new();
    for (i, tool) in tools.into_iter().flatten().enumerate() {
        let function = tool.get("function").unwrap_or(&Value::Null);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let param = format!("tools[{i}].function.name");
        if name.len() > 64 {
            return Some(
                Violation::new(format!(
                    "Invalid '{param}': string too long. Expected a string with maximum length 64, but got a string with length {} instead.",
                    name.len()
                ))
                .param(param)
                .code("string_above_max_length"),
            );
        }
        if name.is_empty() || !super::valid_tool_name(name) {
            return Some(
                Violation::new(format!(
                    "Invalid '{param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                ))
                .param(param)
                .code("invalid_value"),
            );
        }
        if !seen.insert(name) {
            return Some(
                Violation::new(format!(
                    "Invalid 'tools': duplicate function name '{name}'. Function names must be unique."
                ))
                .param("tools")
                .code("invalid_value"),
            );
        }
        match function.get("parameters") {
            None | Some(Value::Null) => {}
            Some(Value::Object(p)) if p.get("type") == Some(&"object".into()) => {}
            Some(other) => {
                let got = other
                    .get("type")
                    .and_then(Value::as_str)
                    .map_or_else(|| "None".to_owned(), |t| format!("\"{t}\""));
                return Some(
                    Violation::new(format!(
                        "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', got 'type: {got}'."
                    ))
                    .param(format!("tools[{i}].function.parameters"))
                    .code("invalid_function_parameters"),
                );
            }
        }
    }
    None
}

fn role_of(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or_default()
}

fn call_ids(m: &Value) -> Vec<&str> {
    m.get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("id").and_then(Value::as_str))
        .collect()
}

fn check_messages(messages: &[Value]) -> Option<Violation> {
    // The calls of the last assistant message with `tool_calls` that are still
    // unanswered, and its index; cleared by the first message that is not a tool's.
    let mut open: Option<(usize, Vec<&str>)> = None;
    for (i, m) in messages.iter().enumerate() {
        let role = role_of(m);
        if !matches!(role, "system" | "developer" | "user" | "assistant" | "tool") {
            return Some(
                Violation::new(format!(
                    "Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."
                ))
                .param(format!("messages[{i}].role"))
                .code("invalid_value"),
            );
        }
        if role == "tool" {
            let id = m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let answers = open
                .as_mut()
                .and_then(|(_, ids)| ids.iter().position(|c| *c == id).map(|p| ids.remove(p)));
            if answers.is_none() {
                return Some(
                    Violation::new(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    )
                    .param(format!("messages.[{i}].role")),
                );
            }
            continue;
        }
        if let Some((at, ids)) = open.take()
            && !ids.is_empty()
        {
            return Some(
                Violation::new(format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                    ids.join(", ")
                ))
                .param(format!("messages.[{at}].role")),
            );
        }
        if role == "assistant" {
            let calls = call_ids(m);
            let content_missing = m.get("content").is_none_or(Value::is_null);
            if content_missing && calls.is_empty() {
                return Some(
                    Violation::new("Invalid value for 'content': expected a string, got null.")
                        .param(format!("messages.[{i}].content")),
                );
            }
            if !calls.is_empty() {
                open = Some((i, calls));
            }
        }
    }
    // Calls left unanswered at the end of the conversation.
    if let Some((at, ids)) = open
        && !ids.is_empty()
    {
        return Some(
            Violation::new(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                ids.join(", ")
            ))
            .param(format!("messages.[{at}].role")),
        );
    }
    None
}
