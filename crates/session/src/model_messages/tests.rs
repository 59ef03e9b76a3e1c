//! The COMPAT.md conversion rules, one test each.

use serde_json::json;
use strata_protocol::message::{AssistantMessage, ContentBlock, Message, MessageContent, Role};

use super::*;

fn assistant(id: &str, blocks: Vec<ContentBlock>) -> LiveItem {
    LiveItem::Assistant(Box::new(AssistantMessage {
        model: "claude-opus-4-6".into(),
        id: id.into(),
        content: blocks,
        ..AssistantMessage::default()
    }))
}

fn user_blocks(blocks: Vec<ContentBlock>) -> LiveItem {
    LiveItem::User(Message::blocks(Role::User, blocks))
}

fn user(text: &str) -> LiveItem {
    LiveItem::User(Message::user_text(text))
}

fn tool_use(id: &str, name: &str) -> ContentBlock {
    ContentBlock::tool_use(id, name, json!({"command": "ls"}))
}

fn result(id: &str) -> ContentBlock {
    ContentBlock::tool_result(id, format!("out {id}"), false)
}

fn shape(c: &ModelConversation) -> Vec<(Role, Vec<String>)> {
    c.messages
        .iter()
        .map(|m| {
            let MessageContent::Blocks(b) = &m.content else {
                panic!("blocks expected")
            };
            let names = b
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(t) => format!("text:{}", t.text),
                    ContentBlock::ToolUse(u) => format!("use:{}:{}", u.id, u.name),
                    ContentBlock::ToolResult(r) => format!("result:{}", r.tool_use_id),
                    ContentBlock::Thinking(t) => format!("thinking:{}", t.signature),
                    other => other.type_name().to_owned(),
                })
                .collect();
            (m.role, names)
        })
        .collect()
}

#[test]
fn sp3_a_split_response_becomes_one_assistant_message_followed_by_all_its_results() {
    let c = to_model_messages(vec![
        user("go"),
        assistant("m1", vec![ContentBlock::text("looking")]),
        assistant("m1", vec![tool_use("t1", "Bash")]),
        user_blocks(vec![result("t1")]),
        assistant("m1", vec![tool_use("t2", "Read")]),
        user_blocks(vec![result("t2")]),
        assistant("m2", vec![ContentBlock::text("done")]),
    ]);
    assert_eq!(
        shape(&c),
        [
            (Role::User, vec!["text:go".to_owned()]),
            (
                Role::Assistant,
                vec![
                    "text:looking".into(),
                    "use:t1:Bash".into(),
                    "use:t2:Read".into()
                ]
            ),
            (Role::User, vec!["result:t1".into(), "result:t2".into()]),
            (Role::Assistant, vec!["text:done".into()]),
        ]
    );
    assert!(!c.interrupted);
    assert_eq!(c.model.as_deref(), Some("claude-opus-4-6"));
}

#[test]
fn sp3_progress_system_and_whitespace_are_dropped_and_local_commands_kept() {
    let c = to_model_messages(vec![
        LiveItem::Other,
        user("hi"),
        assistant(
            "m1",
            vec![ContentBlock::text("\n\n"), ContentBlock::text("hello")],
        ),
        LiveItem::Other,
        LiveItem::LocalCommand("<local-command-stdout>ok</local-command-stdout>".into()),
    ]);
    assert_eq!(
        shape(&c),
        [
            (Role::User, vec!["text:hi".to_owned()]),
            (Role::Assistant, vec!["text:hello".to_owned()]),
            (
                Role::User,
                vec!["text:<local-command-stdout>ok</local-command-stdout>".to_owned()]
            ),
            (Role::Assistant, vec![format!("text:{NO_RESPONSE_TEXT}")]),
        ]
    );
}

#[test]
fn sp3_task_is_sent_as_agent_without_caller_and_thinking_keeps_its_signature() {
    let mut with_caller = tool_use("t1", "Task");
    if let ContentBlock::ToolUse(u) = &mut with_caller {
        u.caller = Some(json!({"type": "direct"}));
    }
    let thinking: ContentBlock =
        serde_json::from_value(json!({"type":"thinking","thinking":"hmm","signature":"SIG"}))
            .unwrap();
    let c = to_model_messages(vec![
        user("go"),
        assistant("m1", vec![thinking, with_caller]),
        user_blocks(vec![result("t1")]),
        assistant("m2", vec![ContentBlock::text("ok")]),
    ]);
    assert_eq!(shape(&c)[1].1, ["thinking:SIG", "use:t1:Agent"]);
    let sent = serde_json::to_value(&c.messages[1]).unwrap();
    assert!(sent["content"][1].get("caller").is_none());
}

#[test]
fn sp3_consecutive_user_messages_merge_with_a_newline_after_text() {
    let c = to_model_messages(vec![
        user("first"),
        user("second"),
        assistant("m1", vec![ContentBlock::text("a")]),
    ]);
    assert_eq!(shape(&c)[0].1, ["text:first\n", "text:second"]);
}

#[test]
fn sp3_a_conversation_cut_after_a_tool_result_is_continued() {
    let c = to_model_messages(vec![
        user("go"),
        assistant("m1", vec![tool_use("t1", "Bash")]),
        user_blocks(vec![result("t1")]),
    ]);
    assert!(c.interrupted);
    assert_eq!(
        shape(&c)[2..],
        [
            (
                Role::User,
                vec!["result:t1".to_owned(), format!("text:{CONTINUE_TEXT}")]
            ),
            (Role::Assistant, vec![format!("text:{NO_RESPONSE_TEXT}")]),
        ]
    );
}

#[test]
fn sp3_an_interruption_notice_is_continued_with_a_newline() {
    let c = to_model_messages(vec![
        user("go"),
        assistant("m1", vec![ContentBlock::text("working")]),
        user("[Request interrupted by user]"),
    ]);
    assert!(c.interrupted);
    assert_eq!(
        shape(&c)[2].1,
        [
            "text:[Request interrupted by user]\n".to_owned(),
            format!("text:{CONTINUE_TEXT}")
        ]
    );
    assert_eq!(c.messages.last().unwrap().role, Role::Assistant);
}

#[test]
fn sp3_unresolved_tool_uses_of_the_last_turn_are_dropped_and_mark_an_interruption() {
    let c = to_model_messages(vec![
        user("go"),
        assistant("m1", vec![ContentBlock::text("let me run it")]),
        assistant("m1", vec![tool_use("t1", "Bash")]),
    ]);
    assert!(c.interrupted);
    assert_eq!(c.dropped_tool_uses, 1);
    assert_eq!(
        shape(&c),
        [
            (Role::User, vec!["text:go".to_owned()]),
            (Role::Assistant, vec!["text:let me run it".to_owned()])
        ]
    );
}

#[test]
fn orphan_tool_results_are_dropped_and_counted() {
    let c = to_model_messages(vec![
        user_blocks(vec![result("ghost"), ContentBlock::text("hi")]),
        assistant("m1", vec![ContentBlock::text("a")]),
    ]);
    assert_eq!(c.dropped_tool_results, 1);
    assert_eq!(shape(&c)[0].1, ["text:hi"]);
}

#[test]
fn synthetic_responses_do_not_choose_the_model() {
    let mut synthetic = AssistantMessage {
        model: "<synthetic>".into(),
        id: "s".into(),
        ..Default::default()
    };
    synthetic.content.push(ContentBlock::text("API Error"));
    let c = to_model_messages(vec![
        user("a"),
        assistant("m1", vec![ContentBlock::text("x")]),
        user("b"),
        LiveItem::Assistant(Box::new(synthetic)),
    ]);
    assert_eq!(c.model.as_deref(), Some("claude-opus-4-6"));
}
