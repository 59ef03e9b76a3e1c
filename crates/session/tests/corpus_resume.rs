//! The reference agent's real transcripts (`shared/corpus/claude-code`): every line reads,
//! every main session rebuilds the live conversation the COMPAT.md rules give (SP-3).
//!
//! The pinned numbers were computed independently from the rules (a separate script over
//! the JSON) and agree with the reference agent's renderings in
//! `spotter/*.terminal.txt` for the three sessions it rendered (see the tests below).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use strata_protocol::message::{ContentBlock, MessageContent, Role};
use strata_protocol::transcript::EntryKind;
use strata_session::reader::Transcript;
use strata_session::resume::LoadedSession;

/// The reference agent's corpus (`STRATA_CORPUS_DIR`); every test that reads it starts
/// with `require_corpus!()`, which skips the test on a fresh clone.
fn corpus() -> PathBuf {
    strata_testkit::corpus::claude_code().expect("checked by require_corpus!() first")
}

fn all_jsonl(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all_jsonl(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

#[test]
fn sp3_every_corpus_file_reads_with_zero_malformed_lines() {
    strata_testkit::require_corpus!();
    let mut files = Vec::new();
    all_jsonl(&corpus(), &mut files);
    assert_eq!(files.len(), 30);
    let mut total = 0;
    for f in &files {
        let t = Transcript::read(f).unwrap();
        let lines = std::fs::read_to_string(f)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count();
        assert!(
            t.malformed().is_empty(),
            "{}: {:?}",
            f.display(),
            t.malformed()
        );
        assert_eq!(t.entry_count(), lines, "{}", f.display());
        total += lines;
    }
    assert!(total > 10_000, "{total}");
}

/// (file, live entries, user+assistant entries, first uuid, last uuid)
const MAIN_SESSIONS: &[(&str, usize, usize, &str, &str)] = &[
    (
        "codemie/claude/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        19,
        19,
        "40523152-693d-4e07-8434-7f0c8f28cc05",
        "556d2e86-494c-4e6f-ba98-ce28538213d1",
    ),
    (
        "codemie/claude/incremental-simple/turn-1.jsonl",
        4,
        3,
        "35937d53-187b-47de-a087-ed3c617e74a4",
        "a86d81d3-6913-469b-af79-ae12bb02c16c",
    ),
    (
        "codemie/claude/incremental-simple/turn-2.jsonl",
        26,
        20,
        "35937d53-187b-47de-a087-ed3c617e74a4",
        "d00ffe68-60df-4f79-9691-5873b9ac3e1b",
    ),
    (
        "codemie/claude/incremental-subagents/turn-2.jsonl",
        47,
        45,
        "e26ae34f-889a-4206-9975-9c59ad264b67",
        "c72ed4c1-5de2-46b7-8403-c658500b6c50",
    ),
    (
        "codemie/session-196820da.jsonl",
        214,
        214,
        "6d8468c7-fbf7-42b4-b2f8-dbe1ce4ca450",
        "96da2358-9434-439c-90c5-897e60cddf7a",
    ),
    (
        "codemie/session-3fe1b6bc.jsonl",
        261,
        261,
        "ea69a906-77f4-4e7c-9ff5-4426a96667e0",
        "7dd82c29-06fe-4d1d-85ab-77390925d0e1",
    ),
    (
        "codemie/session-624a4a58.jsonl",
        59,
        58,
        "0ef6aa04-0891-4fae-8565-2dae6810816f",
        "87e29831-7b82-47d8-b8bd-e03da9271314",
    ),
    (
        "codemie/session-9eda1058.jsonl",
        21,
        19,
        "e245710f-879e-4f91-ac1f-d496e93a0df3",
        "23dc4268-ecab-43bc-a16d-25e136c038e4",
    ),
    (
        "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        202,
        165,
        "d46d6800-2f43-4360-ba84-c1de9c1ecbae",
        "e48bcdbd-3567-43c5-978d-0568187510b7",
    ),
    (
        "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        237,
        217,
        "dd3cc2e6-a191-4331-a0f0-2473e6d7692d",
        "efb6d5df-ead3-4685-a373-7d174ad61d5d",
    ),
    (
        "spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
        267,
        230,
        "43e7d802-cfb8-45fb-a4b0-4260c4f4c19b",
        "56db2309-dc71-46ec-a73e-fd41dac53f51",
    ),
    (
        "spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        274,
        248,
        "434dc859-6299-4713-8613-d28662692f06",
        "5cafd95d-28af-456d-b379-beea59afc6c2",
    ),
    (
        "spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
        126,
        98,
        "7b6887e9-15c3-485b-98c7-eb986f5abc7f",
        "16af1a30-bb5d-4e73-af54-b6b7e8d54bf3",
    ),
    (
        "spotter/short.jsonl",
        14,
        9,
        "3579fa66-0f5d-400c-97b8-e2fbecfeb4ba",
        "40003bdd-2613-4975-83d5-36fb0b6bbc59",
    ),
    (
        "spotter/subagent.jsonl",
        57,
        48,
        "527398ad-ae38-4620-b5f6-ce4895a501a3",
        "ee1ff9df-75d6-4535-a195-22863f4e7d27",
    ),
    (
        "spotter/tool_heavy.jsonl",
        26,
        22,
        "abb8e681-7984-49d8-8890-f4a2b130c894",
        "29e6224a-ea4f-445c-964f-d2bbddd138d0",
    ),
];

#[test]
fn sp3_every_corpus_main_session_rebuilds_the_compat_chain() {
    strata_testkit::require_corpus!();
    for &(file, live, messages, first, last) in MAIN_SESSIONS {
        let mut s = LoadedSession::load(&corpus().join(file)).unwrap();
        let entries = s.live_entries().unwrap();
        assert_eq!(entries.len(), live, "{file}");
        assert_eq!(s.message_count(), messages, "{file}");
        assert_eq!(
            entries.first().unwrap().uuid.as_deref(),
            Some(first),
            "{file}"
        );
        assert_eq!(
            entries.last().unwrap().uuid.as_deref(),
            Some(last),
            "{file}"
        );
        assert!(s.leaf_uuid().is_some(), "{file}");
        assert!(s.repairs().is_empty(), "{file}: {:?}", s.repairs());
        assert!(s.malformed().is_empty(), "{file}");
        // Every tool use sent to the model has its result, and vice versa.
        let conv = s.model_messages();
        assert!(conv.unreadable_lines.is_empty(), "{file}");
        assert_eq!(conv.dropped_tool_results, 0, "{file}");
        for pair in conv.messages.windows(2) {
            assert_ne!(pair[0].role, pair[1].role, "{file}: roles alternate");
        }
        assert_eq!(
            conv.messages.last().unwrap().role,
            Role::Assistant,
            "{file}"
        );
    }
}

#[test]
fn sp3_sessions_with_compaction_start_at_their_last_boundary() {
    strata_testkit::require_corpus!();
    for file in [
        "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        "codemie/session-624a4a58.jsonl",
        "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    ] {
        let s = LoadedSession::load(&corpus().join(file)).unwrap();
        let first = s.live_entries().unwrap().remove(0);
        assert_eq!(first.kind, EntryKind::System, "{file}");
        assert!(
            first.json.contains("\"subtype\":\"compact_boundary\""),
            "{file}"
        );
    }
}

fn texts(blocks: &[ContentBlock]) -> Vec<String> {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => format!("text:{}", t.text),
            ContentBlock::ToolUse(u) => format!("tool_use:{}", u.name),
            ContentBlock::ToolResult(_) => "tool_result".into(),
            ContentBlock::Thinking(_) => "thinking".into(),
            other => other.type_name().into(),
        })
        .collect()
}

/// `short.terminal.txt`: the reference agent shows the prompt, "Let me check the project
/// structure…", a search (the Glob call; the Bash call was rejected), then `/model`.
#[test]
fn sp3_short_session_matches_the_reference_rendering_and_is_continued() {
    strata_testkit::require_corpus!();
    let mut s = LoadedSession::load(&corpus().join("spotter/short.jsonl")).unwrap();
    let conv = s.model_messages();
    // A second call reads the messages from the file again and gives the same answer.
    assert_eq!(s.model_messages(), conv);
    assert!(conv.interrupted, "the turn was interrupted by the user");
    assert_eq!(conv.model.as_deref(), Some("claude-opus-4-6"));
    let shape: Vec<(Role, Vec<String>)> = conv
        .messages
        .iter()
        .map(|m| match &m.content {
            MessageContent::Blocks(b) => (m.role, texts(b)),
            MessageContent::Text(t) => (m.role, vec![format!("text:{t}")]),
        })
        .collect();
    assert_eq!(
        shape[0],
        (
            Role::User,
            vec!["text:mix phx.server doesnt seem to start".to_owned()]
        )
    );
    assert_eq!(shape[1].0, Role::Assistant);
    assert_eq!(
        shape[1].1,
        [
            "thinking",
            "text:Let me check the project structure and try running the server to see the error.",
            "tool_use:Bash",
            "tool_use:Glob"
        ]
    );
    let user = &shape[2].1;
    assert_eq!(&user[..2], ["tool_result", "tool_result"]);
    assert_eq!(user[2], "text:[Request interrupted by user for tool use]\n");
    assert!(user[3].starts_with("text:<command-name>/model</command-name>"));
    assert!(user[4].starts_with("text:<local-command-stdout>Kept model as"));
    assert_eq!(user[5], "text:Continue from where you left off.");
    assert_eq!(
        shape[3],
        (
            Role::Assistant,
            vec!["text:No response requested.".to_owned()]
        )
    );
    assert_eq!(shape.len(), 4);
}

/// `tool_heavy.terminal.txt`: "start phoenix in background", Bash, a reply, a Read that was
/// interrupted, two `/mcp` commands, the xterm.js question, a web search, a Read, a Fetch,
/// interrupted.
#[test]
fn sp3_tool_heavy_session_matches_the_reference_rendering() {
    strata_testkit::require_corpus!();
    let mut s = LoadedSession::load(&corpus().join("spotter/tool_heavy.jsonl")).unwrap();
    let conv = s.model_messages();
    let tools: Vec<String> = conv
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| texts(m.content.as_blocks().unwrap_or(&[])))
        .filter(|t| t.starts_with("tool_use:"))
        .collect();
    // The terminal folds the `tail` Bash call and the Glob+Read pair into "Read 1 file".
    assert_eq!(
        tools,
        [
            "tool_use:Bash",
            "tool_use:Bash",
            "tool_use:WebSearch",
            "tool_use:Glob",
            "tool_use:Read",
            "tool_use:WebFetch"
        ]
    );
    let prompts: Vec<String> = conv
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| texts(m.content.as_blocks().unwrap_or(&[])))
        .filter(|t| t.starts_with("text:start phoenix") || t.starts_with("text:scrolling back"))
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(conv.interrupted);
}

/// `subagent.terminal.txt` shows the parent session; its sub-agents live in the newer
/// layout and the older one. Both are found, and their cost counts.
#[test]
fn sp4_subagent_transcripts_are_found_in_both_layouts_and_counted() {
    strata_testkit::require_corpus!();
    let nested =
        LoadedSession::load(&corpus().join("spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"))
            .unwrap();
    let ids: Vec<&str> = nested
        .subagents
        .iter()
        .map(|a| a.agent_id.as_str())
        .collect();
    assert_eq!(ids, ["a2898e3", "acompact-e1f845"]);
    assert!(nested.subagents.iter().all(|a| a.message_count > 0));

    let legacy = LoadedSession::load(
        &corpus().join("codemie/claude/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"),
    )
    .unwrap();
    let ids: Vec<&str> = legacy
        .subagents
        .iter()
        .map(|a| a.agent_id.as_str())
        .collect();
    assert_eq!(ids, ["36541525", "50243ee8"]);

    let alone =
        Transcript::read(&corpus().join("spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"))
            .unwrap();
    let mut c = strata_session::usage::UsageCollector::new();
    c.add(&alone);
    assert!(
        nested.usage.total_cost_usd > c.report().total_cost_usd,
        "sub-agent calls add cost"
    );
}

#[test]
fn sp3_metadata_and_file_history_are_recovered() {
    strata_testkit::require_corpus!();
    let s =
        LoadedSession::load(&corpus().join("spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"))
            .unwrap();
    assert_eq!(
        s.metadata.permission_mode.as_deref(),
        Some("bypassPermissions")
    );
    assert!(s.latest_snapshot.is_some());
    let s = LoadedSession::load(&corpus().join("codemie/session-9eda1058.jsonl")).unwrap();
    // Its 16 summary lines describe other sessions: none names an entry of this one.
    assert_eq!(s.metadata.summary, None);
    assert!(!s.file_history.is_empty());
}

#[test]
fn sp4_session_usage_matches_what_resume_reports() {
    strata_testkit::require_corpus!();
    for file in [
        "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        "codemie/claude/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
    ] {
        let path = corpus().join(file);
        let s = LoadedSession::load(&path).unwrap();
        let u = strata_session::usage::session_usage(&path).unwrap();
        assert_eq!(u, s.usage, "{file}");
        assert!(u.total_cost_usd > 0.0);
    }
}

/// A sub-agent's own transcript (every line `isSidechain: true`) rebuilds its own
/// conversation, with as many live messages as the parent's listing counts for it
/// (`sessions show subagents/agent-….jsonl` used to show an empty session).
#[test]
fn sp3_a_subagent_transcript_rebuilds_its_own_conversation() {
    strata_testkit::require_corpus!();
    let parent =
        LoadedSession::load(&corpus().join("spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"))
            .unwrap();
    let agent =
        corpus().join("spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl");
    let mut s = LoadedSession::load(&agent).unwrap();
    assert!(s.leaf_uuid().is_some(), "a leaf among the sidechain lines");
    let counted = parent
        .subagents
        .iter()
        .find(|a| a.agent_id == "a2898e3")
        .unwrap()
        .message_count;
    assert!(s.message_count() > 0);
    assert!(
        s.message_count() <= counted,
        "{} > {counted}",
        s.message_count()
    );
    let conv = s.model_messages();
    assert!(!conv.messages.is_empty());
    assert_eq!(conv.messages[0].role, strata_protocol::message::Role::User);
}
