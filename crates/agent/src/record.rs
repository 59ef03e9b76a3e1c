//! [`Recorder`]: writes the session's transcript lines in the reference format and keeps
//! the chain (`parentUuid`) going.
//!
//! Every conversation line (user prompt, one assistant line per completed content block,
//! one user line per tool result) gets a fresh uuid and the previous line as its parent,
//! exactly as the reference agent writes them, so either program can resume the other's
//! sessions. Metadata lines (file-history snapshots) do not join the chain.
//!
//! Conversation lines are appended with the writer's *written* acknowledgement
//! ([`TranscriptWriter::append_written`]): `user` and `assistant` return only once the
//! line has been handed to the kernel, because their callers emit the message to the
//! client right after, and a client must never see a record that a kill -9 could keep
//! out of the file (issue 16: "acknowledged means written"). Metadata lines are not
//! shown to anyone and are appended without waiting.
//!
//! A [`TranscriptMirror`] (the remote replica, issue 17) gets every line the file gets,
//! as the same bytes, after the file: it must not wait (a slow replica never slows a
//! turn).

use crate::sync::lock;
use std::sync::Mutex;

use serde_json::{Map, Value};
use strata_protocol::message::{AssistantMessage, Message};
use strata_protocol::transcript::{
    AssistantEntry, COMPACT_BOUNDARY, Entry, Envelope, SystemEntry, UserEntry,
};
use strata_session::writer::{TranscriptWriter, WriterError};

/// Where a session's transcript lines are copied besides its file (the remote replica).
/// Called on the turn's path: an implementation queues and returns.
pub trait TranscriptMirror: Send + Sync {
    /// One line of session `session_id` (the JSON text, without its newline); `uuid` is
    /// the entry's own uuid, absent for metadata lines.
    fn line(&self, session_id: &str, uuid: Option<&str>, json: &str);

    /// A turn of the session started (`true`) or ended (`false`): the replica may hold
    /// its background work back meanwhile (a backlog is paced while a turn runs). Lines
    /// keep coming through [`TranscriptMirror::line`] either way.
    fn turn(&self, running: bool) {
        let _ = running;
    }
}

/// Tells a mirror that a turn runs, and that it ended when dropped — also when the
/// turn's future is dropped half-way.
pub(crate) struct TurnSignal(Option<std::sync::Arc<dyn TranscriptMirror>>);

impl TurnSignal {
    /// Says a turn started to `mirror`, if any.
    pub(crate) fn start(mirror: Option<std::sync::Arc<dyn TranscriptMirror>>) -> Self {
        if let Some(mirror) = &mirror {
            mirror.turn(true);
        }
        Self(mirror)
    }
}

impl Drop for TurnSignal {
    fn drop(&mut self) {
        if let Some(mirror) = &self.0 {
            mirror.turn(false);
        }
    }
}

/// The transcript writer of one session, with the chain's current leaf.
pub(crate) struct Recorder {
    writer: TranscriptWriter,
    session_id: String,
    cwd: String,
    git_branch: String,
    leaf: Mutex<Option<String>>,
    /// A sub-agent's id: its lines are sidechain lines (`isSidechain`, `agentId`).
    agent_id: Option<String>,
    /// `false` with `--no-session-persistence`: lines are built (their uuids chain and
    /// are shown) but never written, so no transcript exists afterwards.
    persist: bool,
    /// The replica that gets every line too.
    mirror: Option<std::sync::Arc<dyn TranscriptMirror>>,
}

/// Extra fields of a user line.
#[derive(Default)]
pub(crate) struct UserLine {
    /// The tool's structured result (`toolUseResult`).
    pub(crate) tool_use_result: Option<Value>,
    /// The assistant line whose tool use this answers.
    pub(crate) source_assistant_uuid: Option<String>,
    /// The permission mode at the time (written on prompts, as the reference does).
    pub(crate) permission_mode: Option<String>,
    /// The line's uuid when the caller chose it (a client's prompt uuid); else a new one.
    pub(crate) uuid: Option<String>,
    /// A message the model sees but the user did not type (`isMeta`).
    pub(crate) is_meta: bool,
    /// The summary that starts a compacted conversation (`isCompactSummary` and
    /// `isVisibleInTranscriptOnly`, as the reference writes it).
    pub(crate) compact_summary: bool,
}

impl Recorder {
    /// A recorder appending to `writer`, continuing after `leaf` (a resumed session's
    /// last line) or starting a new chain.
    pub(crate) fn new(
        writer: TranscriptWriter,
        session_id: String,
        cwd: String,
        git_branch: String,
        leaf: Option<String>,
    ) -> Self {
        Self {
            writer,
            session_id,
            cwd,
            git_branch,
            leaf: Mutex::new(leaf),
            agent_id: None,
            persist: true,
            mirror: None,
        }
    }

    /// A recorder of sub-agent `agent_id`'s transcript (`subagents/agent-<id>.jsonl`):
    /// the session's id on every line, `isSidechain: true` and `agentId`, a chain of its
    /// own from a first line without parent (the reference layout).
    pub(crate) fn sidechain(
        writer: TranscriptWriter,
        session_id: String,
        cwd: String,
        git_branch: String,
        agent_id: String,
    ) -> Self {
        Self {
            agent_id: Some(agent_id),
            ..Self::new(writer, session_id, cwd, git_branch, None)
        }
    }

    /// Copies every line to `mirror` too.
    #[must_use]
    pub(crate) fn mirrored(mut self, mirror: Option<std::sync::Arc<dyn TranscriptMirror>>) -> Self {
        self.mirror = mirror;
        self
    }

    /// A recorder that writes nothing (`--no-session-persistence`) when `persist` is
    /// false.
    #[must_use]
    pub(crate) fn persisting(mut self, persist: bool) -> Self {
        self.persist = persist;
        self
    }

    /// Writes a line the caller will show, when the session is persisted (and only then
    /// mirrors it: `--no-session-persistence` publishes nothing to a remote either).
    fn write_shown(&self, entry: &Entry, uuid: &str) -> Result<(), WriterError> {
        if self.persist {
            // The mirror gets the very line written (a rebuilt transcript is
            // byte-identical), serialized once.
            match &self.mirror {
                Some(mirror) => {
                    let line = self.writer.append_written_line(entry)?;
                    mirror.line(&self.session_id, Some(uuid), &line);
                }
                None => self.writer.append_written(entry)?,
            }
        }
        Ok(())
    }

    /// The transcript file (created with the first line).
    pub(crate) fn path(&self) -> std::path::PathBuf {
        self.writer.path().to_path_buf()
    }

    /// Appends a user line; returns its uuid once the line is written (see the module
    /// docs), so the caller may show it.
    pub(crate) fn user(&self, message: Message, line: UserLine) -> Result<String, WriterError> {
        let mut leaf = lock(&self.leaf);
        let mut envelope = self.envelope(leaf.clone());
        if let Some(chosen) = line.uuid {
            envelope.uuid = chosen;
        }
        let uuid = envelope.uuid.clone();
        let mut extra = Map::new();
        if let Some(mode) = line.permission_mode {
            extra.insert("permissionMode".into(), Value::String(mode));
        }
        let entry = Entry::User(UserEntry {
            envelope,
            message,
            is_meta: line.is_meta.then_some(true),
            is_visible_in_transcript_only: line.compact_summary.then_some(true),
            is_compact_summary: line.compact_summary.then_some(true),
            tool_use_result: line.tool_use_result,
            source_tool_assistant_uuid: line.source_assistant_uuid,
            extra,
        });
        self.write_shown(&entry, &uuid)?;
        *leaf = Some(uuid.clone());
        Ok(uuid)
    }

    /// Appends an assistant line (one content block of a response); returns its uuid once
    /// the line is written, so the caller may show it.
    pub(crate) fn assistant(
        &self,
        message: AssistantMessage,
        request_id: Option<String>,
    ) -> Result<String, WriterError> {
        let mut leaf = lock(&self.leaf);
        let envelope = self.envelope(leaf.clone());
        let uuid = envelope.uuid.clone();
        let entry = Entry::Assistant(AssistantEntry {
            envelope,
            message,
            request_id,
            is_api_error_message: None,
            extra: Map::new(),
        });
        self.write_shown(&entry, &uuid)?;
        *leaf = Some(uuid.clone());
        Ok(uuid)
    }

    /// Appends a `compact_boundary` line (COMPAT "Writing a compaction"): no parent, the
    /// previous leaf as its logical parent, `compactMetadata {trigger, preTokens}`; the
    /// chain continues from it. Returns its uuid once written.
    pub(crate) fn compact_boundary(
        &self,
        trigger: &str,
        pre_tokens: u64,
    ) -> Result<String, WriterError> {
        let mut leaf = lock(&self.leaf);
        let mut envelope = self.envelope(None);
        envelope.logical_parent_uuid = leaf.clone();
        let uuid = envelope.uuid.clone();
        let entry = Entry::System(SystemEntry {
            envelope,
            subtype: Some(COMPACT_BOUNDARY.into()),
            content: Some("Conversation compacted".into()),
            level: Some("info".into()),
            is_meta: Some(false),
            tool_use_id: None,
            compact_metadata: Some(serde_json::json!({
                "trigger": trigger,
                "preTokens": pre_tokens,
            })),
            extra: Map::new(),
        });
        self.write_shown(&entry, &uuid)?;
        *leaf = Some(uuid.clone());
        Ok(uuid)
    }

    /// Continues the chain from `leaf` (a rewind: the next line's parent is the line
    /// before the prompt rewound to; `None` starts a new root).
    pub(crate) fn set_leaf(&self, leaf: Option<String>) {
        *lock(&self.leaf) = leaf;
    }

    /// Appends a metadata line (not part of the chain).
    pub(crate) fn metadata(&self, entry: &Entry) -> Result<(), WriterError> {
        if !self.persist {
            return Ok(());
        }
        // Under the chain's lock, so the mirror gets the lines in the file's order.
        let _chain = lock(&self.leaf);
        match &self.mirror {
            Some(mirror) => {
                let line = self.writer.append_line(entry)?;
                mirror.line(&self.session_id, None, &line);
            }
            None => self.writer.append(entry)?,
        }
        Ok(())
    }

    /// Makes everything written so far durable (end of a turn).
    pub(crate) fn turn_end(&self) -> Result<(), WriterError> {
        if !self.persist {
            return Ok(());
        }
        self.writer.turn_end()
    }

    /// Ends the session's writing: everything written so far is durable and the file
    /// is closed and unlocked when this returns, whatever other handle still exists
    /// (a background task winding down); later lines are refused.
    pub(crate) fn shutdown(&self) -> Result<(), WriterError> {
        // Also without persistence: a resumed file is open and locked all the same.
        self.writer.shutdown()
    }

    /// Whether the transcript file exists yet (it is created with the first message).
    pub(crate) fn file_exists(&self) -> bool {
        self.writer.file_exists()
    }

    fn envelope(&self, parent: Option<String>) -> Envelope {
        Envelope {
            parent_uuid: parent,
            logical_parent_uuid: None,
            is_sidechain: self.agent_id.is_some(),
            user_type: Some("external".into()),
            cwd: Some(self.cwd.clone()),
            session_id: Some(self.session_id.clone()),
            version: Some(env!("CARGO_PKG_VERSION").into()),
            git_branch: Some(self.git_branch.clone()),
            agent_id: self.agent_id.clone(),
            slug: None,
            uuid: uuid::Uuid::new_v4().to_string(),
            timestamp: timestamp_now(),
        }
    }
}

/// The current time as the reference writes it: ISO 8601, milliseconds, UTC.
pub(crate) fn timestamp_now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}
