//! Tests of the request body, event decoding and error bodies.

use proptest::prelude::*;
use reqwest::header::HeaderValue;
use serde_json::json;
use strata_protocol::message::{AssistantMessage, Role, StopReason};
use strata_testkit::Reply;
use strata_testkit::render::{anthropic_frames, to_sse};

use super::decode::{AnthropicDecoder, read_error};
use super::*;
use crate::provider::MessageAccumulator;
use crate::provider::sse::SseParser;
use crate::provider::transport::WireDecoder;

fn request(messages: Vec<Message>) -> ModelRequest {
    let messages = messages.into_iter().map(std::sync::Arc::new).collect();
    ModelRequest {
        model: "claude-test".into(),
        system: "You are strata.".into(),
        messages,
        tools: vec![
            ToolDefinition::function("Read", "read a file", json!({"type": "object"})),
            ToolDefinition::function(
                "Bash",
                "run a command",
                json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            ),
        ],
        max_tokens: 1000,
        thinking_budget: None,
    }
}

fn body(request: ModelRequest, caching: bool) -> Value {
    serde_json::from_slice(&request_body(request, caching).unwrap()).unwrap()
}

#[test]
fn body_streams_with_system_tools_and_cache_breakpoints() {
    let mut tool_use = ContentBlock::tool_use("toolu_1", "Bash", json!({"command": "ls"}));
    if let ContentBlock::ToolUse(t) = &mut tool_use {
        t.caller = Some(json!({"type": "direct"}));
    }
    let b = body(
        request(vec![
            Message::user_text("list files"),
            Message::blocks(Role::Assistant, vec![tool_use]),
            Message::blocks(
                Role::User,
                vec![ContentBlock::tool_result("toolu_1", "a.rs", false)],
            ),
        ]),
        true,
    );
    assert_eq!(b["model"], "claude-test");
    assert_eq!(b["max_tokens"], 1000);
    assert_eq!(b["stream"], true);
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "You are strata.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        b["tools"][0],
        json!({"name": "Read", "description": "read a file", "input_schema": {"type": "object"}})
    );
    assert_eq!(b["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
    // Earlier messages are sent as they are (minus `caller`), the last block is marked.
    assert_eq!(
        b["messages"][0],
        json!({"role": "user", "content": "list files"})
    );
    assert_eq!(
        b["messages"][1],
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]})
    );
    assert_eq!(
        b["messages"][2]["content"][0],
        json!({"tool_use_id": "toolu_1", "type": "tool_result", "content": "a.rs", "cache_control": {"type": "ephemeral"}})
    );
    assert!(b.get("thinking").is_none());
}

#[test]
fn plain_text_last_message_becomes_a_marked_block_and_caching_can_be_off() {
    let b = body(request(vec![Message::user_text("hi")]), true);
    assert_eq!(
        b["messages"][0]["content"],
        json!([{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}])
    );
    let b = body(request(vec![Message::user_text("hi")]), false);
    assert_eq!(b["messages"][0], json!({"role": "user", "content": "hi"}));
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "You are strata."}])
    );
    assert!(b["tools"][1].get("cache_control").is_none());
}

#[test]
fn thinking_budget_is_sent_and_max_tokens_leaves_room_for_the_answer() {
    let mut r = request(vec![Message::user_text("hi")]);
    r.thinking_budget = Some(4000);
    let b = body(r, true);
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 4000})
    );
    assert_eq!(b["max_tokens"], 5000);
    let mut r = request(vec![Message::user_text("hi")]);
    r.thinking_budget = Some(500);
    assert_eq!(body(r, true)["max_tokens"], 1000);
}

/// Regression: every request asked for thinking and 32,000 output tokens, which Claude 3
/// models refuse with a 400; `--model opus` was sent as the literal name `opus`.
#[test]
fn the_request_is_fitted_to_the_model_and_aliases_are_resolved() {
    let mut r = request(vec![Message::user_text("hi")]);
    r.model = "claude-3-5-haiku-20241022".into();
    r.max_tokens = 32_000;
    r.thinking_budget = Some(8_000);
    let b = body(r, true);
    assert_eq!(b["max_tokens"], 8_192);
    assert!(b.get("thinking").is_none(), "{b}");
    let mut r = request(vec![Message::user_text("hi")]);
    r.model = "haiku".into();
    r.max_tokens = 32_000;
    r.thinking_budget = Some(8_000);
    let b = body(r, true);
    assert_eq!(b["model"], "claude-haiku-4-5");
    assert_eq!(b["max_tokens"], 32_000);
    assert_eq!(b["thinking"]["budget_tokens"], 8_000);
}

#[test]
fn empty_system_prompt_is_left_out() {
    let mut r = request(vec![Message::user_text("hi")]);
    r.system.clear();
    r.tools.clear();
    let b = body(r, true);
    assert!(b.get("system").is_none() && b.get("tools").is_none());
}

/// Parses `chunks` as one streamed response and accumulates it.
fn decode(chunks: &[&[u8]]) -> Result<AssistantMessage, ProviderError> {
    let mut parser = SseParser::new();
    let mut decoder = AnthropicDecoder::default();
    let mut acc = MessageAccumulator::new();
    let mut sse = Vec::new();
    let mut events = Vec::new();
    for c in chunks {
        parser.feed(c, &mut sse);
    }
    parser.finish(&mut sse);
    for e in sse {
        decoder.event(e, &mut events)?;
    }
    decoder.end(&mut events)?;
    for e in &events {
        acc.push(e)?;
    }
    Ok(acc.finish()?)
}

#[test]
fn unknown_events_and_deltas_are_skipped() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
                event: brand_new\ndata: {\"type\":\"brand_new\",\"x\":1}\n\n\
                data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
                data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"future_delta\",\"v\":1}}\n\n\
                data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n\
                data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
                data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n\
                data: {\"type\":\"message_stop\"}\n\n";
    let m = decode(&[body.as_bytes()]).unwrap();
    assert_eq!(m.content, vec![ContentBlock::text("ok")]);
    assert_eq!(m.usage.output_tokens, 2);
}

#[test]
fn error_event_is_an_api_error_retryable_when_overloaded() {
    let mut d = AnthropicDecoder::default();
    let mut out = Vec::new();
    let ev = |data: &str| crate::provider::sse::SseEvent {
        event: Some("error".into()),
        data: data.into(),
        id: None,
    };
    let err = d
        .event(
            ev(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
            &mut out,
        )
        .unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(err.to_string(), "anthropic API error: Overloaded");
    let err = d
        .event(
            ev(r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#),
            &mut out,
        )
        .unwrap_err();
    assert!(!err.is_retryable());
    let err = d.event(ev("{not json"), &mut out).unwrap_err();
    assert!(matches!(err, ProviderError::Protocol { .. }), "{err}");
}

#[test]
fn a_body_that_ends_before_message_stop_is_a_retryable_transport_error() {
    let m = Reply::new().text("hello").build();
    let frames = anthropic_frames(&m);
    let cut = to_sse(&frames[..4]);
    let err = decode(&[cut.as_bytes()]).unwrap_err();
    assert!(
        matches!(err, ProviderError::Transport { .. }) && err.is_retryable(),
        "{err}"
    );
}

#[test]
fn error_bodies_name_the_kind_and_follow_x_should_retry() {
    let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let mut headers = HeaderMap::new();
    headers.insert("request-id", HeaderValue::from_static("req_1"));
    let err = read_error(529, &headers, body);
    let ProviderError::Api {
        status,
        kind,
        message,
        retryable,
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(
        (*status, kind.as_deref(), *retryable),
        (Some(529), Some("overloaded_error"), true)
    );
    assert_eq!(message, "Overloaded (request id req_1)");
    headers.insert("x-should-retry", HeaderValue::from_static("false"));
    assert!(!read_error(529, &headers, body).is_retryable());
    let err = read_error(401, &HeaderMap::new(), b"not json");
    assert!(
        err.to_string()
            .contains("not json — check ANTHROPIC_API_KEY"),
        "{err}"
    );
    assert!(!err.is_retryable());
}

fn arb_message() -> impl Strategy<Value = AssistantMessage> {
    let block = prop_oneof![
        "[a-zA-Z0-9 é✓\n\"\\\\]{0,40}".prop_map(|t| (0u8, t, String::new())),
        ("[a-z .]{1,30}", "[A-Za-z0-9+/=]{4,20}").prop_map(|(t, s)| (1u8, t, s)),
        ("[a-z_]{1,10}", "[a-zA-Z0-9 \"{}:,é]{0,30}").prop_map(|(k, v)| (2u8, k, v)),
    ];
    (
        proptest::collection::vec(block, 0..5),
        0u64..10_000,
        0u64..500,
    )
        .prop_map(|(blocks, input, output)| {
            let mut r = Reply::new().usage(input, output).cache(7, 9);
            for (i, (kind, a, b)) in blocks.into_iter().enumerate() {
                r = match kind {
                    0 => r.text(a),
                    1 => r.thinking(a, b),
                    _ => r.tool_use(
                        format!("toolu_{i}"),
                        "Tool",
                        json!({ a: b, "n": [1, 2.5, null] }),
                    ),
                };
            }
            r.build()
        })
}

proptest! {
    /// Any split of the byte stream into chunks yields the same message, and it is the
    /// message that was streamed (tool inputs reassembled from fragments).
    #[test]
    fn any_chunking_of_a_streamed_response_rebuilds_the_message(
        message in arb_message(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..16),
    ) {
        let bytes = to_sse(&anthropic_frames(&message)).into_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut at = 0;
        for p in points {
            chunks.push(&bytes[at..p]);
            at = p;
        }
        chunks.push(&bytes[at..]);
        let whole = decode(&[&bytes]).unwrap();
        prop_assert_eq!(&decode(&chunks).unwrap(), &whole);
        let mut expected = message;
        if expected.stop_reason.is_none() {
            expected.stop_reason = Some(StopReason::EndTurn);
        }
        prop_assert_eq!(whole, expected);
    }
}

#[test]
fn a_server_tool_is_sent_as_the_apis_own_spec_not_as_a_function() {
    let mut req = request(vec![Message::user_text("search")]);
    req.tools = vec![
        ToolDefinition::function("Read", "read a file", json!({"type": "object"})),
        ToolDefinition::server_tool(crate::provider::ServerTool::WebSearch(
            crate::provider::WebSearchSpec {
                max_uses: Some(8),
                allowed_domains: vec!["docs.rs".into()],
                blocked_domains: Vec::new(),
            },
        )),
    ];
    let v = body(req, false);
    assert_eq!(
        v["tools"][1],
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 8, "allowed_domains": ["docs.rs"]})
    );
    assert_eq!(v["tools"][0]["name"], "Read");
    assert!(v.to_string().find("x-strata").is_none(), "{v}");
}
