//! Resume on transcripts the test kit generates from the product's own entry types
//! (`strata_testkit::transcripts`): the COMPAT.md rules without the real corpus, so a
//! fresh clone covers them too. Together the sessions hold every entry type the corpus
//! has (`user`, `assistant`, `system` of four subtypes, `progress` of four kinds,
//! `file-history-snapshot`, `queue-operation`, `summary`), compact boundaries, split
//! responses with parallel tool calls, sidechains in both places, and torn lines (SP-3,
//! SP-5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::json;
use strata_protocol::message::{ContentBlock, Message, MessageContent, Role, ThinkingBlock};
use strata_protocol::transcript::EntryKind;
use strata_session::chain::Repair;
use strata_session::resume::LoadedSession;
use strata_testkit::transcripts::{MODEL, TranscriptBuilder, torn};

fn thinking(text: &str) -> ContentBlock {
    ContentBlock::Thinking(ThinkingBlock {
        thinking: text.to_owned(),
        signature: "c2lnbmF0dXJl".to_owned(),
        extra: serde_json::Map::new(),
    })
}

/// Each message as its role and one short word per block (`text:…`, `tool_use:Name`,
/// `tool_result:id`, `thinking`).
fn shape(messages: &[Message]) -> Vec<(Role, Vec<String>)> {
    messages
        .iter()
        .map(|m| {
            let blocks = match &m.content {
                MessageContent::Text(t) => vec![format!("text:{t}")],
                MessageContent::Blocks(b) => b
                    .iter()
                    .map(|b| match b {
                        ContentBlock::Text(t) => format!("text:{}", t.text),
                        ContentBlock::ToolUse(u) => format!("tool_use:{}", u.name),
                        ContentBlock::ToolResult(r) => format!("tool_result:{}", r.tool_use_id),
                        other => other.type_name().to_owned(),
                    })
                    .collect(),
            };
            (m.role, blocks)
        })
        .collect()
}

fn words(ws: &[&str]) -> Vec<String> {
    ws.iter().map(|w| (*w).to_owned()).collect()
}

/// One turn as the reference agent writes it: a prompt, a response split over four lines
/// (thinking, text, two parallel tool calls), progress lines, the two results (the first
/// one, with its progress, left hanging off the chain, as parallel results are), the final answer and the
/// turn's system lines, with a snapshot and queued prompts around it.
fn one_turn(b: &mut TranscriptBuilder) -> (Vec<String>, String) {
    let prompt_id = b.next_uuid();
    b.file_history_snapshot(&prompt_id, &[], false);
    let prompt = b.prompt("fix the failing test");
    assert_eq!(prompt, prompt_id);
    b.queue_operation("enqueue", Some("and run clippy"));
    b.queue_operation("dequeue", None);
    let call = b.response(
        "msg_1",
        vec![
            thinking("the test reads a file"),
            ContentBlock::text("Let me look."),
            ContentBlock::tool_use("toolu_1", "Bash", json!({"command": "cargo test"})),
            ContentBlock::tool_use("toolu_2", "Read", json!({"file_path": "/w/p/src/lib.rs"})),
        ],
    );
    // The Bash call's progress and result hang off its own line; the Read call's hook
    // progress and result follow the last tool-use line, which is the chain the walk
    // takes. COMPAT.md rule 5 brings the first result back.
    b.at(Some(&call[2]));
    b.progress(
        "toolu_1",
        json!({"type": "bash_progress", "output": "running 3 tests", "fullOutput": "running 3 tests", "elapsedTimeSeconds": 1, "totalLines": 1}),
    );
    let r1 = b.tool_result("toolu_1", "test result: FAILED", false);
    b.at(Some(&call[3]));
    let hook = b.progress(
        "toolu_2",
        json!({"type": "hook_progress", "hookEvent": "PreToolUse", "hookName": "PreToolUse:Read", "command": "true"}),
    );
    let r2 = b.tool_result("toolu_2", "pub fn answer() -> u32 { 41 }", false);
    b.file_history_snapshot(&prompt, &[("src/lib.rs", Some("abc123@v1"), 1)], true);
    let answer = b.response("msg_2", vec![ContentBlock::text("Fixed: 41 is now 42.")]);
    b.stop_hook_summary();
    let leaf = b.turn_duration(4200);
    let mut live = vec![prompt];
    live.extend(call);
    live.extend([hook, r1, r2]);
    live.extend(answer);
    (live, leaf)
}

#[test]
fn sp3_generated_split_response_with_parallel_tools_rebuilds_one_message_each() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = TranscriptBuilder::new("gen-split", "/w/p");
    let (expected, leaf) = one_turn(&mut b);
    b.summary("Fixing the failing test", &leaf);
    b.custom_title("test fix");
    let path = tmp.path().join("gen-split.jsonl");
    b.write(&path).unwrap();

    let mut s = LoadedSession::load(&path).unwrap();
    assert!(s.malformed().is_empty() && s.repairs().is_empty());
    // The turn_duration line is the newest unreferenced line: it is the leaf.
    assert_eq!(s.leaf_uuid().as_deref(), Some(leaf.as_str()));
    let live = s.live_uuids();
    for uuid in &expected {
        assert!(live.contains(uuid), "{uuid} is live");
    }
    let kinds: BTreeSet<String> = s
        .live_entries()
        .unwrap()
        .iter()
        .map(|e| e.kind.as_str().to_owned())
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["assistant", "progress", "system", "user"].map(String::from))
    );
    // prompt + 4 split lines + 2 results + answer.
    assert_eq!(s.message_count(), 8);
    assert_eq!(s.metadata.title(), Some("test fix"));
    assert_eq!(
        s.metadata.summary.as_deref(),
        Some("Fixing the failing test")
    );
    assert_eq!(
        s.file_history.len(),
        1,
        "the update replaces the first snapshot"
    );
    assert!(
        s.latest_snapshot
            .as_ref()
            .unwrap()
            .tracked_file_backups
            .contains_key("src/lib.rs")
    );

    let conv = s.model_messages();
    assert_eq!(conv.model.as_deref(), Some(MODEL));
    assert!(!conv.interrupted);
    assert_eq!(conv.dropped_tool_results + conv.dropped_tool_uses, 0);
    assert_eq!(
        shape(&conv.messages),
        [
            (Role::User, words(&["text:fix the failing test"])),
            (
                Role::Assistant,
                words(&[
                    "thinking",
                    "text:Let me look.",
                    "tool_use:Bash",
                    "tool_use:Read"
                ])
            ),
            (
                Role::User,
                words(&["tool_result:toolu_1", "tool_result:toolu_2"])
            ),
            (Role::Assistant, words(&["text:Fixed: 41 is now 42."])),
        ]
    );
    // Thinking keeps its signature (COMPAT.md, model messages rule 3).
    let ContentBlock::Thinking(t) = &conv.messages[1].content.as_blocks().unwrap()[0] else {
        panic!("thinking first")
    };
    assert_eq!(t.signature, "c2lnbmF0dXJl");
}

#[test]
fn sp3_generated_compactions_send_only_what_follows_the_last_boundary() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = TranscriptBuilder::new("gen-compact", "/w/p");
    one_turn(&mut b);
    b.compact("Summary one: the test was fixed.", 50_000);
    b.prompt("now update the docs");
    b.response("msg_3", vec![ContentBlock::text("Updated README.md.")]);
    let (boundary, summary) = b.compact("Summary two: test fixed, docs updated.", 90_000);
    let prompt = b.prompt("and the changelog");
    let answer = b.response("msg_4", vec![ContentBlock::text("Added an entry.")]);
    let leaf = b.turn_duration(900);
    let path = tmp.path().join("gen-compact.jsonl");
    b.write(&path).unwrap();

    let mut s = LoadedSession::load(&path).unwrap();
    assert!(s.repairs().is_empty(), "{:?}", s.repairs());
    assert_eq!(
        s.live_uuids(),
        [boundary, summary, prompt, answer[0].clone(), leaf]
    );
    let first = s.live_entries().unwrap().remove(0);
    assert_eq!(first.kind, EntryKind::System);
    assert!(first.json.contains("\"subtype\":\"compact_boundary\""));
    assert_eq!(s.message_count(), 3);

    let conv = s.model_messages();
    let shape = shape(&conv.messages);
    assert_eq!(shape.len(), 2, "{shape:?}");
    assert_eq!(shape[0].0, Role::User);
    // The summary and the prompt after it are one user message (consecutive messages of a
    // role merge); nothing from before the boundary is sent again.
    let user = shape[0].1.join("|");
    assert!(
        user.starts_with("text:Summary two: test fixed, docs updated.")
            && user.ends_with("text:and the changelog"),
        "{user}"
    );
    assert!(
        !user.contains("Summary one") && !user.contains("docs\n"),
        "{user}"
    );
    assert_eq!(
        shape[1],
        (Role::Assistant, words(&["text:Added an entry."]))
    );
    // Usage still counts the calls made before the boundaries.
    assert!(s.usage.total_cost_usd > 0.0);
}

#[test]
fn sp3_generated_interrupted_turn_with_local_commands_is_continued() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = TranscriptBuilder::new("gen-interrupt", "/w/p");
    b.prompt("start the server");
    b.response(
        "msg_1",
        vec![ContentBlock::tool_use(
            "toolu_1",
            "Bash",
            json!({"command": "mix phx.server"}),
        )],
    );
    b.tool_result(
        "toolu_1",
        "The user doesn't want to proceed with this tool use.",
        true,
    );
    b.user_blocks(vec![ContentBlock::text(
        "[Request interrupted by user for tool use]",
    )]);
    b.local_command("<command-name>/model</command-name>");
    b.local_command("<local-command-stdout>Kept model as sonnet</local-command-stdout>");
    let path = tmp.path().join("gen-interrupt.jsonl");
    b.write(&path).unwrap();

    let mut s = LoadedSession::load(&path).unwrap();
    let conv = s.model_messages();
    assert!(conv.interrupted);
    let shape = shape(&conv.messages);
    assert_eq!(shape.len(), 4, "{shape:?}");
    assert_eq!(shape[1], (Role::Assistant, words(&["tool_use:Bash"])));
    let user = &shape[2].1;
    assert_eq!(user[0], "tool_result:toolu_1");
    assert!(user[1].starts_with("text:[Request interrupted by user for tool use]"));
    assert!(user[2].starts_with("text:<command-name>/model</command-name>"));
    assert!(user[3].starts_with("text:<local-command-stdout>Kept model as sonnet"));
    assert_eq!(
        user.last().unwrap(),
        "text:Continue from where you left off."
    );
    assert_eq!(
        shape[3],
        (Role::Assistant, words(&["text:No response requested."]))
    );
}

/// The parent calls a sub-agent (Task, with `agent_progress` and `waiting_for_task`
/// lines); the sub-agent's own transcript sits in `<session>/subagents/`, and a stray
/// sidechain line in the main file, though newest, is never the leaf.
#[test]
fn sp4_generated_subagent_transcripts_are_found_and_sidechains_stay_out_of_the_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let mut main = TranscriptBuilder::new("gen-parent", "/w/p");
    let mut agent = TranscriptBuilder::subagent("gen-parent", "a1b2c3d", "/w/p");
    main.prompt("review the change");
    main.response(
        "msg_1",
        vec![ContentBlock::tool_use(
            "toolu_1",
            "Task",
            json!({"description": "review", "prompt": "Review the diff", "subagent_type": "general-purpose"}),
        )],
    );
    agent.prompt("Review the diff");
    agent.response(
        "msg_a1",
        vec![ContentBlock::tool_use(
            "toolu_a1",
            "Grep",
            json!({"pattern": "unwrap"}),
        )],
    );
    agent.tool_result("toolu_a1", "src/lib.rs:3: x.unwrap()", false);
    agent.response(
        "msg_a2",
        vec![ContentBlock::text("One unwrap in src/lib.rs.")],
    );
    main.progress(
        "toolu_1",
        json!({"type": "agent_progress", "agentId": "a1b2c3d", "prompt": "Review the diff", "message": {"type": "user"}}),
    );
    main.progress(
        "toolu_1",
        json!({"type": "waiting_for_task", "taskDescription": "review", "taskType": "local_agent"}),
    );
    main.tool_result("toolu_1", "One unwrap in src/lib.rs.", false);
    main.response(
        "msg_2",
        vec![ContentBlock::text("The review found one unwrap.")],
    );
    // An old writer put a sub-agent line into the main file, after everything else.
    let stray = agent.lines().last().unwrap().clone();
    let leaf = main.turn_duration(5000);
    main.raw(stray.replace("2026-01-01T00:00:04", "2026-01-01T23:59:59"));
    let path = main.write_session(tmp.path(), &[&agent]).unwrap();

    let mut s = LoadedSession::load(&path).unwrap();
    assert_eq!(s.leaf_uuid().as_deref(), Some(leaf.as_str()));
    let ids: Vec<&str> = s.subagents.iter().map(|a| a.agent_id.as_str()).collect();
    assert_eq!(ids, ["a1b2c3d"]);
    assert_eq!(s.subagents[0].message_count, 4);
    let conv = s.model_messages();
    assert_eq!(
        shape(&conv.messages),
        [
            (Role::User, words(&["text:review the change"])),
            (Role::Assistant, words(&["tool_use:Agent"])),
            (Role::User, words(&["tool_result:toolu_1"])),
            (
                Role::Assistant,
                words(&["text:The review found one unwrap."])
            ),
        ],
        "Task is sent as Agent; the sidechain line is not part of the conversation"
    );

    // The sub-agent's transcript rebuilds its own conversation.
    let mut a =
        LoadedSession::load(&tmp.path().join("gen-parent/subagents/agent-a1b2c3d.jsonl")).unwrap();
    assert!(a.leaf_uuid().is_some());
    assert_eq!(
        shape(&a.model_messages().messages),
        [
            (Role::User, words(&["text:Review the diff"])),
            (Role::Assistant, words(&["tool_use:Grep"])),
            (Role::User, words(&["tool_result:toolu_a1"])),
            (Role::Assistant, words(&["text:One unwrap in src/lib.rs."])),
        ]
    );
}

fn write_lines(dir: &Path, name: &str, lines: &[String], tail: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n" + tail).unwrap();
    p
}

#[test]
fn sp5_generated_torn_final_line_loses_only_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = TranscriptBuilder::new("gen-torn", "/w/p");
    let (live, _) = one_turn(&mut b);
    let mut lines = b.lines().to_vec();
    // The crash hit while the turn_duration line was written.
    let last = lines.pop().unwrap();
    let p = write_lines(tmp.path(), "gen-torn.jsonl", &lines, torn(&last));

    let mut s = LoadedSession::load(&p).unwrap();
    assert_eq!(s.malformed().len(), 1);
    assert!(s.malformed()[0].torn_tail);
    assert_eq!(s.malformed()[0].line as usize, lines.len() + 1);
    assert!(s.repairs().is_empty());
    // The stop_hook_summary line before it is the leaf now; the conversation is whole.
    let uuids = s.live_uuids();
    for uuid in &live {
        assert!(uuids.contains(uuid));
    }
    assert_eq!(s.model_messages().messages.len(), 4);
}

/// A crash cut a line of a split response short and the next write landed on the same
/// line: the record after the fragment is kept, and the chain runs on through the split
/// response (rule 4) without losing the prompt before it.
#[test]
fn sp5_generated_fused_line_inside_a_split_response_keeps_the_history() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = TranscriptBuilder::new("gen-fused", "/w/p");
    let prompt = b.prompt("explain the module");
    let call = b.response(
        "msg_1",
        vec![
            ContentBlock::text("First part."),
            ContentBlock::text("Second part."),
            ContentBlock::text("Third part."),
        ],
    );
    let next = b.prompt("thanks");
    let answer = b.response("msg_2", vec![ContentBlock::text("You're welcome.")]);
    let mut lines = b.lines().to_vec();
    // Line 3 (the second block) is torn and fused with line 4 (the third block).
    let fused = format!("{}{}", torn(&lines[2]), lines[3]);
    lines.splice(2..4, [fused]);
    let p = write_lines(tmp.path(), "gen-fused.jsonl", &lines, "");

    let mut s = LoadedSession::load(&p).unwrap();
    let m = &s.malformed()[0];
    assert!(m.recovered_record && !m.torn_tail, "{m:?}");
    assert_eq!(m.line, 3);
    // The third block's parent (the torn second block) is gone; an earlier line of the
    // same response exists, so the walk continues there: no repair needed.
    assert_eq!(
        s.live_uuids(),
        [
            prompt,
            call[0].clone(),
            call[2].clone(),
            next,
            answer[0].clone()
        ]
    );
    assert!(s.repairs().is_empty(), "{:?}", s.repairs());
    let conv = s.model_messages();
    assert_eq!(
        shape(&conv.messages),
        [
            (Role::User, words(&["text:explain the module"])),
            (
                Role::Assistant,
                words(&["text:First part.", "text:Third part."])
            ),
            (Role::User, words(&["text:thanks"])),
            (Role::Assistant, words(&["text:You're welcome."])),
        ]
    );
}

/// A torn line that was a prompt (not inside a response) leaves a gap strata bridges and
/// reports, keeping everything before it (the reference agent drops it).
#[test]
fn sp3_generated_lost_prompt_is_bridged_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = TranscriptBuilder::new("gen-gap", "/w/p");
    let (first_turn, _) = one_turn(&mut b);
    let lost = b.prompt("second question");
    let answer = b.response("msg_9", vec![ContentBlock::text("Second answer.")]);
    let lines: Vec<String> = b
        .lines()
        .iter()
        .map(|l| {
            if l.contains(&format!("\"uuid\":\"{lost}\"")) {
                torn(l).to_owned()
            } else {
                l.clone()
            }
        })
        .collect();
    let p = write_lines(tmp.path(), "gen-gap.jsonl", &lines, "");

    let s = LoadedSession::load(&p).unwrap();
    assert_eq!(s.malformed().len(), 1);
    assert!(!s.malformed()[0].recovered_record);
    let uuids = s.live_uuids();
    assert_eq!(uuids.last(), Some(&answer[0]));
    assert!(
        first_turn.iter().all(|u| uuids.contains(u)),
        "nothing before the gap is lost"
    );
    assert!(
        matches!(s.repairs(), [Repair::BridgedGap { uuid, missing_parent, .. }] if *uuid == answer[0] && *missing_parent == lost),
        "{:?}",
        s.repairs()
    );
}
