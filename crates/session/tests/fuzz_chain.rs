//! Property tests (fuzzing) of the line reader, the chain builder and the model-message
//! conversion: arbitrary and damaged input never panics and the invariants hold.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::json;
use strata_protocol::message::{AssistantMessage, ContentBlock, Message, MessageContent, Role};
use strata_session::chain;
use strata_session::model_messages::{LiveItem, to_model_messages};
use strata_session::reader::Transcript;

/// A participant line: `kind` 0 user, 1 assistant, 2 progress; parent by index (may be
/// missing, later, or itself); a shared message id for split responses.
fn line(i: usize, kind: u8, parent: Option<usize>, ts: u8, msg: u8, sidechain: bool) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"n{p}\""));
    let ts = format!("2026-01-01T00:00:{:02}.000Z", ts % 60);
    match kind {
        0 => format!(
            r#"{{"parentUuid":{parent},"isSidechain":{sidechain},"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t{msg}","type":"tool_result","content":"r"}}]}},"uuid":"n{i}","timestamp":"{ts}"}}"#
        ),
        1 => format!(
            r#"{{"parentUuid":{parent},"isSidechain":{sidechain},"message":{{"model":"m","id":"msg{msg}","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"t{msg}","name":"Bash","input":{{}}}}],"usage":{{"input_tokens":1,"output_tokens":1}}}},"type":"assistant","uuid":"n{i}","timestamp":"{ts}"}}"#
        ),
        _ => format!(
            r#"{{"parentUuid":{parent},"isSidechain":{sidechain},"type":"progress","data":{{}},"uuid":"n{i}","timestamp":"{ts}"}}"#
        ),
    }
}

fn graph() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        (
            0u8..3,
            prop::option::of(0usize..40),
            any::<u8>(),
            0u8..6,
            prop::bool::weighted(0.1),
        ),
        0..40,
    )
    .prop_map(|spec| {
        spec.into_iter()
            .enumerate()
            .map(|(i, (kind, parent, ts, msg, side))| line(i, kind, parent, ts, msg, side))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes: no panic, and every line is either read or reported.
    #[test]
    fn reading_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let t = Transcript::from_bytes(bytes.clone());
        let lines = bytes.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).count();
        let recovered = t.malformed().iter().filter(|m| m.recovered_record).count();
        prop_assert_eq!(t.entry_count() + t.malformed().len() - recovered, lines);
        let _ = chain::build(&t);
    }

    /// Valid transcripts damaged by crashes (a cut, a fused write, garbage): no panic,
    /// every line left whole is still read.
    #[test]
    fn damaged_transcripts_keep_every_whole_line(
        lines in graph(),
        cut_line in any::<prop::sample::Index>(),
        cut_at in any::<prop::sample::Index>(),
        fuse in any::<bool>(),
    ) {
        prop_assume!(!lines.is_empty());
        let k = cut_line.index(lines.len());
        let mut damaged = lines.clone();
        let cut = cut_at.index(damaged[k].len());
        damaged[k].truncate(cut);
        let text = if fuse && k + 1 < damaged.len() {
            let next = damaged.remove(k + 1);
            damaged[k].push_str(&next);
            damaged.join("\n")
        } else {
            damaged.join("\n")
        };
        let t = Transcript::from_bytes(text.into_bytes());
        // Every untouched line is read; the fused record (if any) is recovered.
        prop_assert!(t.entry_count() >= lines.len().saturating_sub(1));
        let c = chain::build(&t);
        prop_assert!(c.len() <= t.entry_count());
    }

    /// The chain over arbitrary parent graphs (cycles, missing parents, split responses,
    /// sidechains): no panic, no entry twice.
    #[test]
    fn chains_over_arbitrary_graphs_hold_each_entry_once(lines in graph()) {
        let t = Transcript::from_bytes((lines.join("\n") + "\n").into_bytes());
        prop_assert!(t.malformed().is_empty());
        let c = chain::build(&t);
        prop_assert!(c.len() <= lines.len());
    }
}

fn block_strategy() -> impl Strategy<Value = (u8, u8)> {
    (0u8..4, 0u8..5)
}

fn live_items() -> impl Strategy<Value = Vec<LiveItem>> {
    prop::collection::vec(
        (
            0u8..4,
            0u8..4,
            prop::collection::vec(block_strategy(), 1..4),
        ),
        0..20,
    )
    .prop_map(|spec| {
        spec.into_iter()
            .map(|(kind, msg, blocks)| {
                let blocks: Vec<ContentBlock> = blocks
                    .into_iter()
                    .map(|(b, id)| match b {
                        0 => ContentBlock::text(format!("text {id}")),
                        1 => ContentBlock::text("  \n"),
                        2 => ContentBlock::tool_use(format!("t{id}"), "Task", json!({})),
                        _ => ContentBlock::tool_result(format!("t{id}"), "ok", false),
                    })
                    .collect();
                match kind {
                    0 => LiveItem::User(Message::blocks(Role::User, blocks)),
                    1 => LiveItem::Assistant(Box::new(AssistantMessage {
                        model: "claude-sonnet-4-5".into(),
                        id: format!("msg{msg}"),
                        content: blocks,
                        ..AssistantMessage::default()
                    })),
                    2 => LiveItem::LocalCommand("cmd".into()),
                    _ => LiveItem::Other,
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the live conversation, the messages sent are valid for the Messages API:
    /// roles alternate, it ends with the assistant, every tool use is answered in the next
    /// message and every tool result answers the message before, tool ids are unique, no
    /// empty or whitespace-only text and no `Task`.
    #[test]
    fn model_messages_are_always_a_valid_conversation(items in live_items()) {
        let conv = to_model_messages(items);
        let msgs = &conv.messages;
        for w in msgs.windows(2) {
            prop_assert_ne!(w[0].role, w[1].role);
        }
        if let Some(last) = msgs.last() {
            prop_assert_eq!(last.role, Role::Assistant);
        }
        let blocks = |m: &Message| -> Vec<ContentBlock> {
            match &m.content { MessageContent::Blocks(b) => b.clone(), MessageContent::Text(t) => vec![ContentBlock::text(t.clone())] }
        };
        let mut seen_uses = HashSet::new();
        let mut seen_results = HashSet::new();
        for (i, m) in msgs.iter().enumerate() {
            let b = blocks(m);
            prop_assert!(!b.is_empty());
            for block in &b {
                match block {
                    ContentBlock::Text(t) => prop_assert!(!t.text.trim().is_empty()),
                    ContentBlock::ToolUse(u) => {
                        prop_assert_eq!(m.role, Role::Assistant);
                        prop_assert_ne!(u.name.as_str(), "Task");
                        prop_assert!(seen_uses.insert(u.id.clone()), "tool use id twice");
                        let next = msgs.get(i + 1).map(blocks).unwrap_or_default();
                        let answered = next.iter().any(|n| matches!(n, ContentBlock::ToolResult(r) if r.tool_use_id == u.id));
                        prop_assert!(answered, "tool use {} unanswered", u.id);
                    }
                    ContentBlock::ToolResult(r) => {
                        prop_assert_eq!(m.role, Role::User);
                        prop_assert!(seen_results.insert(r.tool_use_id.clone()), "tool result twice");
                        let prev = if i > 0 { blocks(&msgs[i - 1]) } else { Vec::new() };
                        let issued = prev.iter().any(|p| matches!(p, ContentBlock::ToolUse(u) if u.id == r.tool_use_id));
                        prop_assert!(issued, "tool result {} without its use", r.tool_use_id);
                    }
                    _ => {}
                }
            }
        }
    }
}
