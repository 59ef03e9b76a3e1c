//! Model messages and content blocks: the shapes the providers send and transcripts hold.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use strata_protocol::message::{
    AssistantMessage, ContentBlock, Message, MessageContent, Role, StopReason, ToolResultContent,
    Usage,
};

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(text: &str) -> (T, String) {
    let v: T = serde_json::from_str(text).unwrap();
    let out = serde_json::to_string(&v).unwrap();
    (v, out)
}

#[test]
fn blocks_are_written_in_the_reference_key_order() {
    let cases = [
        r#"{"type":"text","text":"hi"}"#,
        r#"{"type":"thinking","thinking":"hmm","signature":"sig=="}"#,
        r#"{"type":"redacted_thinking","data":"xyz"}"#,
        r#"{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls","z":1,"a":2},"caller":{"type":"direct"}}"#,
        r#"{"tool_use_id":"toolu_1","type":"tool_result","content":"out","is_error":true}"#,
        r#"{"tool_use_id":"toolu_2","type":"tool_result","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}"#,
        r#"{"type":"text","text":"cited","citations":[{"x":1}],"cache_control":{"type":"ephemeral"}}"#,
        r#"{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}"#,
    ];
    for c in cases {
        let (_, out): (ContentBlock, _) = round_trip(c);
        assert_eq!(out, c);
    }
}

#[test]
fn blocks_are_typed_and_unknown_ones_kept_whole() {
    let b: ContentBlock = serde_json::from_str(
        r#"{"type":"tool_use","id":"t","name":"Task","input":{"a":1},"caller":{"type":"direct"}}"#,
    )
    .unwrap();
    let ContentBlock::ToolUse(u) = &b else {
        panic!("{b:?}")
    };
    assert_eq!((u.id.as_str(), u.name.as_str()), ("t", "Task"));
    assert_eq!(u.caller, Some(json!({"type":"direct"})));

    // A known type with an unexpected shape is not forced into a type: nothing is lost.
    let odd = r#"{"type":"tool_result","tool_use_id":"t","content":{"weird":true}}"#;
    let b: ContentBlock = serde_json::from_str(odd).unwrap();
    assert!(matches!(b, ContentBlock::Unknown(_)));
    assert_eq!(serde_json::to_string(&b).unwrap(), odd);
    assert_eq!(b.type_name(), "tool_result");

    let no_type: ContentBlock = serde_json::from_str(r#"{"x":1}"#).unwrap();
    assert!(matches!(no_type, ContentBlock::Unknown(_)));
}

#[test]
fn tool_result_content_is_a_string_or_blocks() {
    let b: ContentBlock = serde_json::from_str(
        r#"{"tool_use_id":"t","type":"tool_result","content":[{"type":"text","text":"a"}]}"#,
    )
    .unwrap();
    let ContentBlock::ToolResult(r) = b else {
        panic!()
    };
    assert_eq!(
        r.content,
        Some(ToolResultContent::Blocks(vec![ContentBlock::text("a")]))
    );
    assert_eq!(r.is_error, None);
    let built = ContentBlock::tool_result("t", "boom", true);
    assert_eq!(
        serde_json::to_value(&built).unwrap(),
        json!({"tool_use_id":"t","type":"tool_result","content":"boom","is_error":true})
    );
}

#[test]
fn messages_hold_a_string_or_blocks() {
    let (m, out): (Message, _) = round_trip(r#"{"role":"user","content":"hello"}"#);
    assert_eq!(m, Message::user_text("hello"));
    assert_eq!(out, r#"{"role":"user","content":"hello"}"#);
    let (m, _): (Message, _) =
        round_trip(r#"{"role":"assistant","content":[{"type":"text","text":"a"}],"x":1}"#);
    assert_eq!(m.role, Role::Assistant);
    assert_eq!(m.content.first_text(), Some("a"));
    assert_eq!(m.extra["x"], json!(1));
    assert_eq!(
        MessageContent::Text("t".into()).into_blocks(),
        vec![ContentBlock::text("t")]
    );
}

#[test]
fn assistant_messages_round_trip_with_usage_breakdown() {
    let text = r#"{"model":"claude-opus-4-6","id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":50,"cache_creation":{"ephemeral_5m_input_tokens":60,"ephemeral_1h_input_tokens":40},"output_tokens":9,"service_tier":"standard","inference_geo":"global"},"context_management":null}"#;
    let (m, out): (AssistantMessage, _) = round_trip(text);
    assert_eq!(out, text);
    assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
    assert!(!m.is_synthetic());
    let u = &m.usage;
    assert_eq!(
        (u.cache_write_5m_tokens(), u.cache_write_1h_tokens()),
        (60, 40)
    );
    assert_eq!(u.cache_write_tokens(), 100);
    assert_eq!(u.total_tokens(), 3 + 100 + 50 + 9);
    assert_eq!(u.extra["inference_geo"], json!("global"));
}

#[test]
fn usage_without_breakdown_counts_all_cache_writes_as_five_minute() {
    let u: Usage = serde_json::from_str(
        r#"{"input_tokens":1,"cache_creation_input_tokens":10,"output_tokens":2}"#,
    )
    .unwrap();
    assert_eq!(
        (
            u.cache_write_5m_tokens(),
            u.cache_write_1h_tokens(),
            u.cache_read_tokens()
        ),
        (10, 0, 0)
    );
    let nulls: Usage = serde_json::from_str(
        r#"{"input_tokens":1,"cache_read_input_tokens":null,"output_tokens":2}"#,
    )
    .unwrap();
    assert_eq!(nulls.cache_read_input_tokens, None);
}

#[test]
fn unknown_stop_reasons_are_kept() {
    let s: StopReason =
        serde_json::from_value(Value::String("model_context_window_exceeded".into())).unwrap();
    assert_eq!(s, StopReason::Other("model_context_window_exceeded".into()));
    assert_eq!(
        serde_json::to_value(&s).unwrap(),
        json!("model_context_window_exceeded")
    );
}
