//! Tests of the accumulator: block assembly, per-block completion, usage merging and
//! protocol violations.

use serde_json::json;
use strata_protocol::message::{StopReason, TextBlock, ThinkingBlock};

use super::*;

fn start(id: &str, usage: Usage) -> StreamEvent {
    StreamEvent::MessageStart {
        id: id.into(),
        model: "claude-test".into(),
        usage,
    }
}

fn block_start(index: usize, block: ContentBlock) -> StreamEvent {
    StreamEvent::ContentBlockStart { index, block }
}

fn delta(index: usize, delta: BlockDelta) -> StreamEvent {
    StreamEvent::ContentBlockDelta { index, delta }
}

fn stop(index: usize) -> StreamEvent {
    StreamEvent::ContentBlockStop { index }
}

fn end(reason: StopReason, output: u64) -> [StreamEvent; 2] {
    [
        StreamEvent::MessageDelta {
            stop_reason: Some(reason),
            usage: Some(Usage {
                output_tokens: output,
                ..Usage::default()
            }),
        },
        StreamEvent::MessageStop,
    ]
}

fn empty_tool(id: &str, name: &str) -> ContentBlock {
    ContentBlock::tool_use(id, name, json!({}))
}

#[test]
fn assembles_thinking_text_and_tool_use_and_reports_each_block_as_it_completes() {
    let mut acc = MessageAccumulator::new();
    let events = vec![
        start(
            "msg_1",
            Usage {
                input_tokens: 12,
                ..Usage::default()
            },
        ),
        StreamEvent::Ping,
        block_start(0, ContentBlock::Thinking(ThinkingBlock::default())),
        delta(0, BlockDelta::Thinking("Let me ".into())),
        delta(0, BlockDelta::Thinking("think.".into())),
        delta(0, BlockDelta::Signature("sig==".into())),
        stop(0),
        block_start(1, ContentBlock::text("")),
        delta(1, BlockDelta::Text("Running ".into())),
        delta(1, BlockDelta::Text("it.".into())),
        stop(1),
        block_start(2, empty_tool("toolu_1", "Bash")),
        delta(2, BlockDelta::InputJson(String::new())),
        delta(2, BlockDelta::InputJson("{\"comm".into())),
        delta(2, BlockDelta::InputJson("and\": \"echo".into())),
        delta(2, BlockDelta::InputJson(" hi\"}".into())),
        stop(2),
    ];
    let mut completed = Vec::new();
    for e in &events {
        if let Some(done) = acc.push(e).unwrap() {
            completed.push(done);
        }
    }
    for e in &end(StopReason::ToolUse, 40) {
        assert_eq!(acc.push(e).unwrap(), None);
    }
    let thinking = ContentBlock::Thinking(ThinkingBlock {
        thinking: "Let me think.".into(),
        signature: "sig==".into(),
        extra: Map::new(),
    });
    let tool = ContentBlock::tool_use("toolu_1", "Bash", json!({"command": "echo hi"}));
    assert_eq!(
        completed,
        vec![
            CompletedBlock {
                index: 0,
                block: thinking.clone()
            },
            CompletedBlock {
                index: 1,
                block: ContentBlock::text("Running it.")
            },
            CompletedBlock {
                index: 2,
                block: tool.clone()
            },
        ]
    );
    // The transcript line of a block: this response's id, model and usage, no stop.
    let line = acc.line_message(&completed[2].block);
    assert_eq!(
        (line.id.as_str(), line.model.as_str()),
        ("msg_1", "claude-test")
    );
    assert_eq!(line.content, vec![tool.clone()]);
    assert_eq!(line.stop_reason, None);
    assert!(acc.is_complete());
    let message = acc.finish().unwrap();
    assert_eq!(
        message.content,
        vec![thinking, ContentBlock::text("Running it."), tool]
    );
    assert_eq!(message.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(message.usage.input_tokens, 12);
    assert_eq!(message.usage.output_tokens, 40);
}

#[test]
fn invalid_tool_input_json_is_kept_as_a_clear_error_naming_the_tool_and_position() {
    let mut acc = MessageAccumulator::new();
    acc.push(&start("m", Usage::default())).unwrap();
    acc.push(&block_start(0, empty_tool("toolu_9", "Edit")))
        .unwrap();
    acc.push(&delta(
        0,
        BlockDelta::InputJson("{\"file_path\": \"/a\",\n \"old\": }".into()),
    ))
    .unwrap();
    // The response goes on: the block closes with the input `{}`, and the error is kept
    // for the call's result.
    let done = acc.push(&stop(0)).unwrap().unwrap();
    let ContentBlock::ToolUse(t) = &done.block else {
        panic!("a tool use: {done:?}");
    };
    assert_eq!(t.input, serde_json::json!({}));
    let err = acc.invalid_input("toolu_9").unwrap().clone();
    assert_eq!(acc.invalid_input("other"), None);
    let AccumulatorError::InvalidToolInput {
        name,
        id,
        line,
        column,
        ..
    } = &err
    else {
        panic!("expected InvalidToolInput, got {err:?}");
    };
    assert_eq!((name.as_str(), id.as_str(), *line), ("Edit", "toolu_9", 2));
    assert!(*column > 1);
    let text = err.to_string();
    assert!(
        text.contains("tool Edit (toolu_9)") && text.contains("line 2"),
        "{text}"
    );
}

#[test]
fn tool_without_input_deltas_keeps_its_empty_input() {
    let mut acc = MessageAccumulator::new();
    acc.push(&start("m", Usage::default())).unwrap();
    acc.push(&block_start(0, empty_tool("t", "TodoRead")))
        .unwrap();
    acc.push(&delta(0, BlockDelta::InputJson(String::new())))
        .unwrap();
    let done = acc.push(&stop(0)).unwrap().unwrap();
    assert_eq!(done.block, empty_tool("t", "TodoRead"));
}

#[test]
fn usage_merges_start_and_delta_and_keeps_counts_the_delta_leaves_out() {
    let mut acc = MessageAccumulator::new();
    acc.push(&start(
        "m",
        Usage {
            input_tokens: 3,
            cache_creation_input_tokens: Some(1000),
            cache_read_input_tokens: Some(2000),
            output_tokens: 1,
            service_tier: Some("standard".into()),
            ..Usage::default()
        },
    ))
    .unwrap();
    acc.push(&StreamEvent::MessageDelta {
        stop_reason: Some(StopReason::EndTurn),
        usage: Some(Usage {
            output_tokens: 77,
            extra: [(
                "server_tool_use".to_owned(),
                json!({"web_search_requests": 1}),
            )]
            .into_iter()
            .collect(),
            ..Usage::default()
        }),
    })
    .unwrap();
    let u = acc.usage().clone();
    assert_eq!(u.input_tokens, 3);
    assert_eq!(u.cache_creation_input_tokens, Some(1000));
    assert_eq!(u.cache_read_input_tokens, Some(2000));
    assert_eq!(u.output_tokens, 77);
    assert_eq!(u.service_tier.as_deref(), Some("standard"));
    assert_eq!(
        u.extra["server_tool_use"],
        json!({"web_search_requests": 1})
    );
    // A delta that repeats input counts (newer API versions) replaces them.
    acc.push(&StreamEvent::MessageDelta {
        stop_reason: None,
        usage: Some(Usage {
            input_tokens: 5,
            cache_read_input_tokens: Some(2500),
            output_tokens: 80,
            ..Usage::default()
        }),
    })
    .unwrap();
    assert_eq!(
        (
            acc.usage().input_tokens,
            acc.usage().cache_read_input_tokens,
            acc.usage().output_tokens
        ),
        (5, Some(2500), 80)
    );
}

#[test]
fn interleaved_blocks_complete_independently_and_keep_index_order() {
    let mut acc = MessageAccumulator::new();
    acc.push(&start("m", Usage::default())).unwrap();
    acc.push(&block_start(0, empty_tool("a", "Read"))).unwrap();
    acc.push(&block_start(1, empty_tool("b", "Read"))).unwrap();
    acc.push(&delta(1, BlockDelta::InputJson("{\"p\":2}".into())))
        .unwrap();
    acc.push(&delta(0, BlockDelta::InputJson("{\"p\":1}".into())))
        .unwrap();
    assert_eq!(acc.push(&stop(1)).unwrap().unwrap().index, 1);
    assert_eq!(acc.push(&stop(0)).unwrap().unwrap().index, 0);
    for e in &end(StopReason::ToolUse, 1) {
        acc.push(e).unwrap();
    }
    let m = acc.finish().unwrap();
    assert_eq!(
        m.content,
        vec![
            ContentBlock::tool_use("a", "Read", json!({"p": 1})),
            ContentBlock::tool_use("b", "Read", json!({"p": 2})),
        ]
    );
}

#[test]
fn citations_and_redacted_thinking_and_unknown_blocks_are_kept() {
    let mut acc = MessageAccumulator::new();
    acc.push(&start("m", Usage::default())).unwrap();
    acc.push(&block_start(
        0,
        ContentBlock::RedactedThinking(strata_protocol::message::RedactedThinkingBlock {
            data: "opaque".into(),
            extra: Map::new(),
        }),
    ))
    .unwrap();
    acc.push(&stop(0)).unwrap();
    acc.push(&block_start(1, ContentBlock::text(""))).unwrap();
    acc.push(&delta(1, BlockDelta::Text("cited".into())))
        .unwrap();
    acc.push(&delta(
        1,
        BlockDelta::Citation(json!({"type": "char_location"})),
    ))
    .unwrap();
    acc.push(&stop(1)).unwrap();
    let server_tool: Map<String, Value> = serde_json::from_value(
        json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}),
    )
    .unwrap();
    acc.push(&block_start(2, ContentBlock::Unknown(server_tool)))
        .unwrap();
    acc.push(&delta(
        2,
        BlockDelta::InputJson("{\"query\":\"rust\"}".into()),
    ))
    .unwrap();
    let done = acc.push(&stop(2)).unwrap().unwrap();
    let ContentBlock::Unknown(m) = &done.block else {
        panic!("expected the server tool use kept as an unknown block");
    };
    assert_eq!(m["input"], json!({"query": "rust"}));
    let partial = acc.partial();
    let ContentBlock::Text(TextBlock { text, extra }) = &partial.content[1] else {
        panic!("expected text");
    };
    assert_eq!(text, "cited");
    assert_eq!(extra["citations"], json!([{"type": "char_location"}]));
}

#[test]
fn events_out_of_protocol_order_are_errors() {
    let mut acc = MessageAccumulator::new();
    let err = acc
        .push(&block_start(0, ContentBlock::text("")))
        .unwrap_err();
    assert!(err.to_string().contains("before message_start"), "{err}");

    let mut acc = MessageAccumulator::new();
    acc.push(&start("m", Usage::default())).unwrap();
    assert!(acc.push(&start("m", Usage::default())).is_err());
    assert!(
        acc.push(&delta(3, BlockDelta::Text("x".into())))
            .unwrap_err()
            .to_string()
            .contains("not open")
    );
    assert!(acc.push(&stop(3)).is_err());
    acc.push(&block_start(0, ContentBlock::text(""))).unwrap();
    let err = acc
        .push(&delta(0, BlockDelta::InputJson("{}".into())))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("input_json delta for content block 0, which is a text block"),
        "{err}"
    );
    assert!(
        acc.push(&block_start(0, ContentBlock::text(""))).is_err(),
        "started twice"
    );
    let err = acc.push(&StreamEvent::MessageStop).unwrap_err();
    assert!(matches!(err, AccumulatorError::Incomplete(_)), "{err}");
    acc.push(&stop(0)).unwrap();
    acc.push(&StreamEvent::MessageStop).unwrap();
    assert!(
        acc.push(&block_start(1, ContentBlock::text("")))
            .unwrap_err()
            .to_string()
            .contains("after message_stop")
    );
    // Pings are harmless anywhere.
    assert_eq!(acc.push(&StreamEvent::Ping).unwrap(), None);
}

#[test]
fn a_response_cut_short_cannot_finish_but_keeps_its_completed_blocks() {
    let mut acc = MessageAccumulator::new();
    acc.push(&start("m", Usage::default())).unwrap();
    acc.push(&block_start(0, ContentBlock::text(""))).unwrap();
    acc.push(&delta(0, BlockDelta::Text("done".into())))
        .unwrap();
    acc.push(&stop(0)).unwrap();
    acc.push(&block_start(1, ContentBlock::text(""))).unwrap();
    acc.push(&delta(1, BlockDelta::Text("half".into())))
        .unwrap();
    assert_eq!(acc.partial().content, vec![ContentBlock::text("done")]);
    let err = acc.finish().unwrap_err();
    assert!(
        err.to_string()
            .contains("content block 1 was still streaming"),
        "{err}"
    );
    assert!(MessageAccumulator::new().finish().is_err());
}
