//! Issue 25 item 1: the strict OpenAI chat completions server refuses, with the real
//! API's error (message, `param`, `code`), each request the API refuses; one test per
//! rule, and a valid conversation with tool calls passes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use strata_testkit::strict::{Api, Violation, check};

fn valid() -> Value {
    json!({
        "model": "gpt-5",
        "stream": true,
        "tools": [
            {"type": "function", "function": {"name": "Bash",
             "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "mcp__everything__echo"}}
        ],
        "messages": [
            {"role": "system", "content": "You are strata."},
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}},
                {"id": "call_2", "type": "function", "function": {"name": "mcp__everything__echo", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_2", "content": "echo"},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
            {"role": "assistant", "content": "There is a.txt."},
            {"role": "user", "content": "Thanks."}
        ]
    })
}

fn refusal(body: &Value) -> Violation {
    check(Api::ChatCompletions, body.to_string().as_bytes())
        .unwrap_or_else(|| panic!("the request was accepted: {body}"))
}

fn messages(body: &mut Value) -> &mut Vec<Value> {
    body["messages"].as_array_mut().unwrap()
}

#[test]
fn i25_1_openai_a_valid_conversation_passes() {
    assert_eq!(
        check(Api::ChatCompletions, valid().to_string().as_bytes()),
        None
    );
}

#[test]
fn i25_1_openai_a_tool_message_must_answer_a_preceding_tool_call() {
    let mut body = valid();
    body["messages"][4]["tool_call_id"] = json!("call_9");
    let v = refusal(&body);
    assert_eq!(
        v.message,
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
    );
    assert_eq!(v.param.as_deref(), Some("messages.[4].role"));
    // A tool message after the assistant's reply answers nothing any more.
    let mut body = valid();
    messages(&mut body).insert(
        6,
        json!({"role": "tool", "tool_call_id": "call_1", "content": "x"}),
    );
    assert_eq!(refusal(&body).param.as_deref(), Some("messages.[6].role"));
}

#[test]
fn i25_1_openai_every_tool_call_must_be_answered_before_the_next_message() {
    let mut body = valid();
    messages(&mut body).remove(3);
    let v = refusal(&body);
    assert_eq!(
        v.message,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. \
         The following tool_call_ids did not have response messages: call_2"
    );
    assert_eq!(v.param.as_deref(), Some("messages.[2].role"));
    // Also when the conversation ends on the unanswered calls.
    let mut body = valid();
    messages(&mut body).truncate(3);
    assert!(refusal(&body).message.ends_with("call_1, call_2"));
}

#[test]
fn i25_1_openai_function_names_must_match_the_pattern_and_length() {
    let mut body = valid();
    body["tools"][0]["function"]["name"] = json!("mcp__server.v2__tool");
    let v = refusal(&body);
    assert_eq!(
        v.message,
        "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
    );
    assert_eq!(v.code.as_deref(), Some("invalid_value"));
    let mut body = valid();
    body["tools"][0]["function"]["name"] = json!("t".repeat(65));
    let v = refusal(&body);
    assert_eq!(
        v.message,
        "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but got a string with length 65 instead."
    );
    assert_eq!(v.code.as_deref(), Some("string_above_max_length"));
}

#[test]
fn i25_1_openai_function_names_must_be_unique() {
    let mut body = valid();
    body["tools"][1]["function"]["name"] = json!("Bash");
    let v = refusal(&body);
    assert!(v.message.contains("duplicate function name 'Bash'"), "{v}");
    assert_eq!(v.param.as_deref(), Some("tools"));
}

#[test]
fn i25_1_openai_parameters_must_be_an_object_schema() {
    let mut body = valid();
    body["tools"][0]["function"]["parameters"] = json!({"type": "array"});
    let v = refusal(&body);
    assert_eq!(
        v.message,
        "Invalid schema for function 'Bash': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'."
    );
    assert_eq!(v.param.as_deref(), Some("tools[0].function.parameters"));
    assert_eq!(v.code.as_deref(), Some("invalid_function_parameters"));
}

#[test]
fn i25_1_openai_messages_must_not_be_empty() {
    let mut body = valid();
    body["messages"] = json!([]);
    let v = refusal(&body);
    assert_eq!(v.code.as_deref(), Some("empty_array"));
    assert_eq!(v.param.as_deref(), Some("messages"));
}

#[test]
fn i25_1_openai_an_assistant_message_needs_content_or_tool_calls() {
    let mut body = valid();
    body["messages"][5]["content"] = Value::Null;
    let v = refusal(&body);
    assert_eq!(
        v.message,
        "Invalid value for 'content': expected a string, got null."
    );
    assert_eq!(v.param.as_deref(), Some("messages.[5].content"));
}

#[test]
fn i25_1_openai_an_unknown_role_is_refused() {
    let mut body = valid();
    body["messages"][1]["role"] = json!("human");
    assert_eq!(refusal(&body).param.as_deref(), Some("messages[1].role"));
}
