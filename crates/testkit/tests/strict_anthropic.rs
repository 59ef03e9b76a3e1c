//! Issue 25 item 1: the strict Messages API refuses, with the real API's wording, each
//! request the real API is documented to refuse; one test per rule, and a valid
//! conversation (tools, tool calls, thinking, cache breakpoints) passes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use strata_testkit::strict::{Api, check};

/// A request the real API accepts: a tool call answered, thinking on, three cache
/// breakpoints, a server tool without a schema.
fn valid() -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "temperature": 1,
        "system": [{"type": "text", "text": "You are strata.", "cache_control": {"type": "ephemeral"}}],
        "tools": [
            {"name": "Bash", "description": "Runs a command",
             "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
            {"name": "mcp__everything__echo", "input_schema": {"type": "object"},
             "cache_control": {"type": "ephemeral"}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
        ],
        "messages": [
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "ls will do", "signature": "sig"},
                {"type": "text", "text": "Listing them."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_2", "name": "mcp__everything__echo", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "echo"},
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": [{"type": "text", "text": "a.txt"}]},
                {"type": "text", "text": "Go on.", "cache_control": {"type": "ephemeral"}}
            ]},
            // Consecutive messages of one role are combined by the API, not refused.
            {"role": "user", "content": "And then stop."}
        ]
    })
}

fn refusal(body: &Value) -> String {
    check(Api::Messages, body.to_string().as_bytes())
        .map(|v| v.message)
        .unwrap_or_else(|| panic!("the request was accepted: {body}"))
}

fn messages(body: &mut Value) -> &mut Vec<Value> {
    body["messages"].as_array_mut().unwrap()
}

#[test]
fn i25_1_a_valid_conversation_passes() {
    assert_eq!(check(Api::Messages, valid().to_string().as_bytes()), None);
    // A final assistant message may be empty (a prefill) and a first message may be
    // the assistant's: the API documents neither as an error.
    let mut body = valid();
    messages(&mut body).push(json!({"role": "assistant", "content": ""}));
    messages(&mut body).insert(0, json!({"role": "assistant", "content": "Hello."}));
    assert_eq!(check(Api::Messages, body.to_string().as_bytes()), None);
}

#[test]
fn i25_1_tool_blocks_without_tools_are_refused() {
    let mut body = valid();
    body.as_object_mut().unwrap().remove("tools");
    assert_eq!(
        refusal(&body),
        "Requests which include `tool_use` or `tool_result` blocks must define tools."
    );
    body["tools"] = json!([]);
    assert_eq!(
        refusal(&body),
        "Requests which include `tool_use` or `tool_result` blocks must define tools."
    );
}

#[test]
fn i25_1_a_tool_result_that_answers_no_call_of_the_previous_message_is_refused() {
    let mut body = valid();
    body["messages"][2]["content"][1]["tool_use_id"] = json!("toolu_9");
    assert_eq!(
        refusal(&body),
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. \
         Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    );
    // A result two messages after its call does not count either.
    let mut body = valid();
    messages(&mut body)[3] = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "again"}]});
    assert!(refusal(&body).starts_with("messages.3.content.0: unexpected `tool_use_id`"));
}

#[test]
fn i25_1_a_tool_use_without_its_result_in_the_next_message_is_refused() {
    let mut body = valid();
    messages(&mut body)[2]["content"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    assert_eq!(
        refusal(&body),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. \
         Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    );
}

#[test]
fn i25_1_tool_results_after_other_blocks_are_refused() {
    let mut body = valid();
    let content = messages(&mut body)[2]["content"].as_array_mut().unwrap();
    let text = content.remove(2);
    content.insert(1, text);
    assert_eq!(
        refusal(&body),
        "messages.2: Did not find 2 `tool_result` block(s) at the beginning of this message. \
         Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."
    );
}

#[test]
fn i25_1_empty_text_blocks_are_refused() {
    let mut body = valid();
    body["messages"][1]["content"][1]["text"] = json!("");
    assert_eq!(
        refusal(&body),
        "messages: text content blocks must be non-empty"
    );
    let mut body = valid();
    body["messages"][1]["content"][1]["text"] = json!(" \n\t");
    assert_eq!(
        refusal(&body),
        "messages: text content blocks must contain non-whitespace text"
    );
    // Inside a tool result and in the system prompt too.
    let mut body = valid();
    body["messages"][2]["content"][1]["content"][0]["text"] = json!("");
    assert_eq!(
        refusal(&body),
        "messages: text content blocks must be non-empty"
    );
    let mut body = valid();
    body["system"][0]["text"] = json!("\n\n");
    assert_eq!(
        refusal(&body),
        "system: text content blocks must contain non-whitespace text"
    );
}

#[test]
fn i25_1_an_empty_message_other_than_a_final_assistant_one_is_refused() {
    for empty in [json!(""), json!([])] {
        let mut body = valid();
        messages(&mut body)[3]["content"] = empty.clone();
        assert_eq!(
            refusal(&body),
            "messages.3: all messages must have non-empty content except for the optional final assistant message"
        );
        let mut body = valid();
        messages(&mut body).insert(3, json!({"role": "assistant", "content": empty}));
        assert!(refusal(&body).starts_with("messages.3: all messages must have non-empty content"));
    }
}

#[test]
fn i25_1_tool_names_outside_the_pattern_are_refused() {
    for name in [
        "",
        "mcp__server.v2__tool",
        "has space",
        &format!("mcp__s__{}", "t".repeat(57)),
    ] {
        let mut body = valid();
        body["tools"][0]["name"] = json!(name);
        assert_eq!(
            refusal(&body),
            "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
            "{name:?}"
        );
    }
    let mut body = valid();
    body["tools"][0]["name"] = json!(format!("mcp__s__{}", "t".repeat(56)));
    body["messages"][1]["content"][2]["name"] = body["tools"][0]["name"].clone();
    assert_eq!(check(Api::Messages, body.to_string().as_bytes()), None);
}

#[test]
fn i25_1_repeated_tool_names_are_refused() {
    let mut body = valid();
    body["tools"][1]["name"] = json!("Bash");
    assert_eq!(refusal(&body), "tools: Tool names must be unique.");
}

#[test]
fn i25_1_an_input_schema_that_is_not_an_object_is_refused() {
    for schema in [json!({"type": "array"}), json!({}), json!("object")] {
        let mut body = valid();
        body["tools"][0]["input_schema"] = schema;
        assert_eq!(
            refusal(&body),
            "tools.0.custom.input_schema.type: Input should be 'object'"
        );
    }
    let mut body = valid();
    body["tools"][0]
        .as_object_mut()
        .unwrap()
        .remove("input_schema");
    assert_eq!(
        refusal(&body),
        "tools.0.custom.input_schema: Field required"
    );
}

#[test]
fn i25_1_more_than_four_cache_breakpoints_are_refused() {
    // valid() has three (system, a tool, a message); two more in messages make five.
    let mut body = valid();
    body["messages"][0] = json!({"role": "user", "content": [
        {"type": "text", "text": "List the files.", "cache_control": {"type": "ephemeral"}}]});
    assert_eq!(check(Api::Messages, body.to_string().as_bytes()), None);
    body["messages"][2]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
    assert_eq!(
        refusal(&body),
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    );
}

#[test]
fn i25_1_a_thinking_budget_under_1024_or_not_below_max_tokens_is_refused() {
    let mut body = valid();
    body["thinking"]["budget_tokens"] = json!(1023);
    assert_eq!(
        refusal(&body),
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    );
    for budget in [8192, 9000] {
        let mut body = valid();
        body["thinking"]["budget_tokens"] = json!(budget);
        assert!(
            refusal(&body)
                .starts_with("`max_tokens` must be greater than `thinking.budget_tokens`."),
            "{budget}"
        );
    }
}

#[test]
fn i25_1_sampling_changes_with_thinking_are_refused() {
    let mut body = valid();
    body["temperature"] = json!(0.2);
    assert!(
        refusal(&body).starts_with("`temperature` may only be set to 1 when thinking is enabled")
    );
    let mut body = valid();
    body["top_k"] = json!(5);
    assert!(refusal(&body).starts_with("`top_k` is not compatible with thinking."));
    let mut body = valid();
    body["top_p"] = json!(0.5);
    assert!(refusal(&body).starts_with("`top_p` must be greater than or equal to 0.95"));
    body["top_p"] = json!(0.95);
    assert_eq!(check(Api::Messages, body.to_string().as_bytes()), None);
    let mut body = valid();
    body["tool_choice"] = json!({"type": "any"});
    assert_eq!(
        refusal(&body),
        "Thinking may not be enabled when tool_choice forces tool use."
    );
    // Without thinking, any temperature goes.
    let mut body = valid();
    body.as_object_mut().unwrap().remove("thinking");
    body["temperature"] = json!(0);
    assert_eq!(check(Api::Messages, body.to_string().as_bytes()), None);
}

#[test]
fn i25_1_max_tokens_missing_is_refused() {
    let mut body = valid();
    body.as_object_mut().unwrap().remove("max_tokens");
    assert_eq!(refusal(&body), "max_tokens: Field required");
    // count_tokens takes no max_tokens.
    body.as_object_mut().unwrap().remove("thinking");
    assert_eq!(check(Api::CountTokens, body.to_string().as_bytes()), None);
}

#[test]
fn i25_1_no_messages_or_an_unknown_role_is_refused() {
    let mut body = valid();
    body["messages"] = json!([]);
    assert_eq!(refusal(&body), "messages: at least one message is required");
    let mut body = valid();
    body["messages"][3]["role"] = json!("system");
    assert_eq!(
        refusal(&body),
        "messages.3.role: Input should be 'user' or 'assistant'"
    );
}
