//! Session transcripts in the reference agent's format, generated from the product's own
//! entry types ([`strata_protocol::transcript::Entry`]), so resume is tested on a fresh
//! clone without the real corpus (which `crate::corpus` locates when it is there).
//!
//! A [`TranscriptBuilder`] writes one line at a time the way the reference agent does:
//! every conversation line names the previous one as `parentUuid` (the builder keeps the
//! *tip*; [`TranscriptBuilder::at`] moves it to build branches and lines that hang off the
//! chain), one API response becomes one `assistant` line per content block sharing
//! `message.id` and `requestId`, tool results are `user` lines with `toolUseResult` and
//! `sourceToolAssistantUUID`, and a compaction is a `compact_boundary` with a `null`
//! parent followed by the summary line (COMPAT.md). It covers every entry type the corpus
//! has: `user`, `assistant`, `system` (`compact_boundary`, `turn_duration`,
//! `local_command`, `stop_hook_summary`), `progress` (`hook_progress`, `bash_progress`,
//! `agent_progress`, `waiting_for_task`), `file-history-snapshot`, `queue-operation` and
//! `summary`, plus the titles. [`TranscriptBuilder::subagent`] writes a sub-agent's own
//! transcript (every line a sidechain line with its `agentId`), and [`torn`] cuts a line
//! the way a crash does.
//!
//! Uuids and timestamps are deterministic (a per-transcript prefix and a counter; one
//! second per line from 2026-01-01T00:00:00Z), so a test can name what it expects.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use strata_protocol::message::{AssistantMessage, ContentBlock, Message, Role, StopReason, Usage};
use strata_protocol::transcript::{
    AssistantEntry, COMPACT_BOUNDARY, CustomTitleEntry, Entry, Envelope, FileBackup,
    FileHistorySnapshot, FileHistorySnapshotEntry, LOCAL_COMMAND, MetadataEntry, ProgressEntry,
    QueueOperationEntry, SummaryEntry, SystemEntry, UserEntry,
};

/// The model recorded on generated responses.
pub const MODEL: &str = "claude-sonnet-4-5-20250929";
/// The writer version recorded on generated lines.
pub const VERSION: &str = "2.1.39";

/// Writes a transcript line by line (see the module docs).
#[derive(Debug, Clone)]
pub struct TranscriptBuilder {
    session_id: String,
    cwd: String,
    agent_id: Option<String>,
    prefix: u32,
    counter: u64,
    clock: u64,
    tip: Option<String>,
    lines: Vec<String>,
    /// The assistant line that holds each tool use, for the results that answer it.
    tool_lines: HashMap<String, String>,
}

impl TranscriptBuilder {
    /// A main session's transcript, its lines recorded in `cwd`.
    pub fn new(session_id: &str, cwd: &str) -> Self {
        Self {
            session_id: session_id.to_owned(),
            cwd: cwd.to_owned(),
            agent_id: None,
            prefix: prefix_of(session_id),
            counter: 0,
            clock: 0,
            tip: None,
            lines: Vec::new(),
            tool_lines: HashMap::new(),
        }
    }

    /// A sub-agent's own transcript: every line is a sidechain line carrying `agent_id`
    /// and the parent's `session_id` (what the reference agent writes to
    /// `<session>/subagents/agent-<id>.jsonl`).
    pub fn subagent(session_id: &str, agent_id: &str, cwd: &str) -> Self {
        let mut b = Self::new(session_id, cwd);
        b.prefix = prefix_of(agent_id);
        b.agent_id = Some(agent_id.to_owned());
        b
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The sub-agent id, for a sub-agent's transcript.
    pub fn agent_id(&self) -> Option<&str> {
        self.agent_id.as_deref()
    }

    /// The uuid the next conversation line will name as its parent.
    pub fn tip(&self) -> Option<&str> {
        self.tip.as_deref()
    }

    /// Makes the next conversation line a child of `uuid` (`None`: a new root), to build a
    /// branch (an edited prompt, a rewind) or a line that hangs off the chain.
    pub fn at(&mut self, uuid: Option<&str>) -> &mut Self {
        self.tip = uuid.map(str::to_owned);
        self
    }

    /// The lines written so far, without newlines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Appends a line as it is (a foreign or damaged line; see [`torn`]).
    pub fn raw(&mut self, line: impl Into<String>) -> &mut Self {
        self.lines.push(line.into());
        self
    }

    /// The file's text: every line followed by a newline.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    /// Writes the transcript to `path` (creating its directory).
    pub fn write(&self, path: &Path) -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, self.text())
    }

    /// Writes a main session into `project_dir` as the reference agent lays it out:
    /// `<session>.jsonl`, and each sub-agent at `<session>/subagents/agent-<id>.jsonl`.
    /// Returns the main file's path.
    pub fn write_session(&self, project_dir: &Path, agents: &[&Self]) -> io::Result<PathBuf> {
        let main = project_dir.join(format!("{}.jsonl", self.session_id));
        self.write(&main)?;
        for a in agents {
            let id = a.agent_id.as_deref().unwrap_or("unnamed");
            a.write(
                &project_dir
                    .join(&self.session_id)
                    .join("subagents")
                    .join(format!("agent-{id}.jsonl")),
            )?;
        }
        Ok(main)
    }

    // ---- conversation lines -----------------------------------------------------------

    /// A prompt typed by the user (plain-string content).
    pub fn prompt(&mut self, text: &str) -> String {
        self.user(Message::user_text(text), |_| {})
    }

    /// A user line holding `blocks` (text and images of a prompt, or several results).
    pub fn user_blocks(&mut self, blocks: Vec<ContentBlock>) -> String {
        self.user(Message::blocks(Role::User, blocks), |_| {})
    }

    /// A meta user line the model sees but the user did not type (caveats, hook output).
    pub fn meta(&mut self, text: &str) -> String {
        self.user(Message::user_text(text), |e| e.is_meta = Some(true))
    }

    /// One API response `message_id`, written as one `assistant` line per block (the
    /// reference agent's split form), each the child of the one before. Only the last
    /// line has a `stop_reason` (`tool_use` when the response calls a tool) and the real
    /// output token count; the others carry a placeholder of 1, as older versions wrote.
    /// Returns the lines' uuids.
    pub fn response(&mut self, message_id: &str, blocks: Vec<ContentBlock>) -> Vec<String> {
        let calls_tool = blocks.iter().any(|b| matches!(b, ContentBlock::ToolUse(_)));
        let n = blocks.len();
        let mut uuids = Vec::with_capacity(n);
        for (i, block) in blocks.into_iter().enumerate() {
            let last = i + 1 == n;
            if let ContentBlock::ToolUse(t) = &block {
                self.tool_lines.insert(t.id.clone(), self.next_uuid());
            }
            let message = AssistantMessage {
                model: MODEL.to_owned(),
                id: message_id.to_owned(),
                content: vec![block],
                stop_reason: last.then_some(if calls_tool {
                    StopReason::ToolUse
                } else {
                    StopReason::EndTurn
                }),
                stop_sequence: None,
                usage: Usage {
                    input_tokens: 10,
                    cache_creation_input_tokens: Some(0),
                    cache_read_input_tokens: Some(100),
                    output_tokens: if last { 20 } else { 1 },
                    ..Usage::default()
                },
                extra: Map::new(),
            };
            let envelope = self.envelope();
            let uuid = envelope.uuid.clone();
            self.push(Entry::Assistant(AssistantEntry {
                envelope,
                message,
                request_id: Some(format!("req_{message_id}")),
                is_api_error_message: None,
                extra: Map::new(),
            }));
            uuids.push(uuid);
        }
        uuids
    }

    /// The result of tool use `tool_use_id` (a `user` line with the structured
    /// `toolUseResult` and the uuid of the assistant line that called the tool).
    pub fn tool_result(&mut self, tool_use_id: &str, text: &str, is_error: bool) -> String {
        let source = self.tool_lines.get(tool_use_id).cloned();
        let message = Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result(tool_use_id, text, is_error)],
        );
        self.user(message, |e| {
            e.tool_use_result = Some(json!({"stdout": text, "stderr": "", "interrupted": false}));
            e.source_tool_assistant_uuid = source;
        })
    }

    /// A `progress` line about `tool_use_id` (`data.type`: `hook_progress`,
    /// `bash_progress`, `agent_progress`, `waiting_for_task`, …).
    pub fn progress(&mut self, tool_use_id: &str, data: Value) -> String {
        let envelope = self.envelope();
        let uuid = envelope.uuid.clone();
        self.push(Entry::Progress(ProgressEntry {
            envelope,
            data,
            tool_use_id: Some(tool_use_id.to_owned()),
            parent_tool_use_id: Some(tool_use_id.to_owned()),
            extra: Map::new(),
        }));
        uuid
    }

    /// A `system` line of `subtype` with `content` and extra fields (`durationMs`, …).
    pub fn system(&mut self, subtype: &str, content: Option<&str>, extra: Value) -> String {
        let extra = match extra {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let envelope = self.envelope();
        let uuid = envelope.uuid.clone();
        self.push(Entry::System(SystemEntry {
            envelope,
            subtype: Some(subtype.to_owned()),
            content: content.map(str::to_owned),
            level: Some("info".to_owned()),
            is_meta: Some(false),
            tool_use_id: None,
            compact_metadata: None,
            extra,
        }));
        uuid
    }

    /// `system`/`turn_duration`: how long the turn took (often the session's leaf).
    pub fn turn_duration(&mut self, ms: u64) -> String {
        self.system("turn_duration", None, json!({"durationMs": ms}))
    }

    /// `system`/`local_command`: a slash command's output, which the model does see.
    pub fn local_command(&mut self, content: &str) -> String {
        self.system(LOCAL_COMMAND, Some(content), json!({}))
    }

    /// `system`/`stop_hook_summary`: the Stop hooks that ran after a turn.
    pub fn stop_hook_summary(&mut self) -> String {
        self.system(
            "stop_hook_summary",
            None,
            json!({"hookCount": 1, "hookInfos": [{"command": "true"}], "hookErrors": [],
                   "preventedContinuation": false, "stopReason": "", "hasOutput": false}),
        )
    }

    /// A compaction: a `compact_boundary` (parent `null`, `logicalParentUuid` the tip)
    /// and the summary line that the chain continues from. Returns both uuids.
    pub fn compact(&mut self, summary: &str, pre_tokens: u64) -> (String, String) {
        let logical = self.tip.take();
        let mut envelope = self.envelope();
        envelope.logical_parent_uuid = logical;
        let boundary = envelope.uuid.clone();
        self.push(Entry::System(SystemEntry {
            envelope,
            subtype: Some(COMPACT_BOUNDARY.to_owned()),
            content: Some("Conversation compacted".to_owned()),
            level: Some("info".to_owned()),
            is_meta: Some(false),
            tool_use_id: None,
            compact_metadata: Some(json!({"trigger": "auto", "preTokens": pre_tokens})),
            extra: Map::new(),
        }));
        let summary = self.user(Message::user_text(summary), |e| {
            e.is_compact_summary = Some(true);
            e.is_visible_in_transcript_only = Some(true);
        });
        (boundary, summary)
    }

    // ---- metadata lines ---------------------------------------------------------------

    /// A `summary` line naming `leaf_uuid` (it describes the conversation ending there,
    /// possibly in another session).
    pub fn summary(&mut self, text: &str, leaf_uuid: &str) -> &mut Self {
        self.push(Entry::Metadata(MetadataEntry::Summary(SummaryEntry {
            summary: text.to_owned(),
            leaf_uuid: Some(leaf_uuid.to_owned()),
            extra: Map::new(),
        })));
        self
    }

    /// A `custom-title` line (a title the user gave; the last one wins).
    pub fn custom_title(&mut self, title: &str) -> &mut Self {
        let entry = CustomTitleEntry::new(self.session_id.clone(), title);
        self.push(Entry::Metadata(MetadataEntry::CustomTitle(entry)));
        self
    }

    /// A `queue-operation` line (`enqueue`, `dequeue`, `remove`) for a prompt typed
    /// while a turn was running.
    pub fn queue_operation(&mut self, operation: &str, content: Option<&str>) -> &mut Self {
        let timestamp = Some(self.now());
        self.push(Entry::Metadata(MetadataEntry::QueueOperation(
            QueueOperationEntry {
                operation: operation.to_owned(),
                timestamp,
                session_id: Some(self.session_id.clone()),
                content: content.map(str::to_owned),
                extra: Map::new(),
            },
        )));
        self
    }

    /// A `file-history-snapshot` for the prompt whose uuid is `message_id` (see
    /// [`Self::next_uuid`]): each file as
    /// `(path, backup file name or None for "did not exist", version)`.
    pub fn file_history_snapshot(
        &mut self,
        message_id: &str,
        files: &[(&str, Option<&str>, u32)],
        is_update: bool,
    ) -> &mut Self {
        let timestamp = self.now();
        let tracked_file_backups: BTreeMap<String, FileBackup> = files
            .iter()
            .map(|(path, backup, version)| {
                (
                    (*path).to_owned(),
                    FileBackup {
                        backup_file_name: backup.map(str::to_owned),
                        version: *version,
                        backup_time: timestamp.clone(),
                        extra: Map::new(),
                    },
                )
            })
            .collect();
        self.push(Entry::Metadata(MetadataEntry::FileHistorySnapshot(
            FileHistorySnapshotEntry {
                message_id: message_id.to_owned(),
                snapshot: FileHistorySnapshot {
                    message_id: message_id.to_owned(),
                    tracked_file_backups,
                    timestamp,
                    extra: Map::new(),
                },
                is_snapshot_update: is_update,
                extra: Map::new(),
            },
        )));
        self
    }

    // ---- plumbing ---------------------------------------------------------------------

    fn user(&mut self, message: Message, edit: impl FnOnce(&mut UserEntry)) -> String {
        let envelope = self.envelope();
        let uuid = envelope.uuid.clone();
        let mut entry = UserEntry {
            envelope,
            message,
            is_meta: None,
            is_visible_in_transcript_only: None,
            is_compact_summary: None,
            tool_use_result: None,
            source_tool_assistant_uuid: None,
            extra: Map::new(),
        };
        edit(&mut entry);
        self.push(Entry::User(entry));
        uuid
    }

    /// The uuid the next conversation line will get (a `file-history-snapshot` is
    /// written just before the prompt it belongs to, naming it).
    pub fn next_uuid(&self) -> String {
        uuid_of(self.prefix, self.counter + 1)
    }

    /// The envelope of the next conversation line: a fresh uuid and time, the tip as
    /// parent (the new line becomes the tip).
    fn envelope(&mut self) -> Envelope {
        self.counter += 1;
        let uuid = uuid_of(self.prefix, self.counter);
        let parent = self.tip.replace(uuid.clone());
        Envelope {
            parent_uuid: parent,
            logical_parent_uuid: None,
            is_sidechain: self.agent_id.is_some(),
            user_type: Some("external".to_owned()),
            cwd: Some(self.cwd.clone()),
            session_id: Some(self.session_id.clone()),
            version: Some(VERSION.to_owned()),
            git_branch: Some("main".to_owned()),
            agent_id: self.agent_id.clone(),
            slug: None,
            uuid,
            timestamp: self.now(),
        }
    }

    /// The next line's timestamp (one second after the previous line's).
    fn now(&mut self) -> String {
        self.clock += 1;
        let s = self.clock;
        format!(
            "2026-01-01T{:02}:{:02}:{:02}.000Z",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60
        )
    }

    fn push(&mut self, entry: Entry) {
        // Serializing the product's own entry types cannot fail: every map key is a
        // string and every value came from JSON or plain data.
        match entry.to_line() {
            Ok(line) => self.lines.push(line),
            Err(e) => panic!("a generated entry did not serialize: {e}"),
        }
    }
}

/// The first half of `line` (cut at a character boundary): what a crash in the middle of
/// a write leaves.
pub fn torn(line: &str) -> &str {
    let mut cut = line.len() / 2;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    &line[..cut]
}

fn uuid_of(prefix: u32, n: u64) -> String {
    format!("{prefix:08x}-0000-4000-8000-{n:012x}")
}

/// A stable 32-bit prefix for a transcript's uuids (FNV-1a of its id), so a sub-agent's
/// lines never share a uuid with its parent's.
fn prefix_of(id: &str) -> u32 {
    id.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_split_response_is_one_line_per_block_sharing_the_message_id() {
        let mut b = TranscriptBuilder::new("s", "/w");
        let p = b.prompt("hi");
        let a = b.response(
            "msg_1",
            vec![
                ContentBlock::text("look"),
                ContentBlock::tool_use("toolu_1", "Read", json!({"file_path": "/w/a"})),
            ],
        );
        let r = b.tool_result("toolu_1", "text", false);
        let parsed: Vec<Value> = b
            .lines()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(parsed[1]["parentUuid"], p.as_str());
        assert_eq!(parsed[2]["parentUuid"], a[0].as_str());
        assert_eq!(parsed[1]["message"]["id"], parsed[2]["message"]["id"]);
        assert_eq!(parsed[1]["message"]["stop_reason"], Value::Null);
        assert_eq!(parsed[2]["message"]["stop_reason"], "tool_use");
        assert_eq!(parsed[3]["uuid"], r.as_str());
        assert_eq!(parsed[3]["sourceToolAssistantUUID"], a[1].as_str());
        assert!(b.lines()[0].starts_with("{\"parentUuid\":null,"));
    }

    #[test]
    fn a_compaction_starts_a_new_root_that_remembers_its_logical_parent() {
        let mut b = TranscriptBuilder::new("s", "/w");
        let p = b.prompt("hi");
        let (boundary, summary) = b.compact("what happened", 1000);
        let v: Value = serde_json::from_str(&b.lines()[1]).unwrap();
        assert_eq!(v["uuid"], boundary.as_str());
        assert_eq!(v["parentUuid"], Value::Null);
        assert_eq!(v["logicalParentUuid"], p.as_str());
        let s: Value = serde_json::from_str(&b.lines()[2]).unwrap();
        assert_eq!(s["parentUuid"], boundary.as_str());
        assert_eq!(s["isCompactSummary"], true);
        assert_eq!(b.tip(), Some(summary.as_str()));
    }

    #[test]
    fn subagent_lines_are_sidechain_lines_with_their_own_uuids() {
        let mut main = TranscriptBuilder::new("s", "/w");
        let mut agent = TranscriptBuilder::subagent("s", "a1b2c3d", "/w");
        let m = main.prompt("x");
        let a = agent.prompt("x");
        assert_ne!(m, a);
        let v: Value = serde_json::from_str(&agent.lines()[0]).unwrap();
        assert_eq!(v["isSidechain"], true);
        assert_eq!(v["agentId"], "a1b2c3d");
        assert_eq!(v["sessionId"], "s");
    }

    #[test]
    fn torn_cuts_inside_the_line_at_a_character_boundary() {
        assert_eq!(torn("{\"a\":\"ééé\"}").len(), 6);
        assert!(serde_json::from_str::<Value>(torn("{\"type\":\"user\"}")).is_err());
    }
}
