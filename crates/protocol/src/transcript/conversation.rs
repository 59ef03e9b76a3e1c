//! Conversation entries: the lines that form the message chain (`user`, `assistant`,
//! `system`, `attachment`, legacy `progress`).
//!
//! They share an [`Envelope`] (`parentUuid`, `isSidechain`, `userType`, `cwd`, `sessionId`,
//! `version`, `gitBranch`, …, `uuid`, `timestamp`) and are written with `parentUuid` first,
//! in the key order of the reference agent's current writer. Fields strata does not model
//! are kept in `extra` and written after the known ones. (Re-writing a foreign line with
//! its exact original key order is [`super::RawEntry`]'s job.)

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use crate::message::fields::{Fields, serialize_extra};
use crate::message::{AssistantMessage, Message};

use super::EntryError;

/// The fields every conversation entry carries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Envelope {
    /// The previous entry of the chain; `None` at the start and on a compact boundary.
    pub parent_uuid: Option<String>,
    /// On a compact boundary: the entry that preceded it logically.
    pub logical_parent_uuid: Option<String>,
    /// Whether this line belongs to a sub-agent's conversation.
    pub is_sidechain: bool,
    /// `external` for a person at a terminal.
    pub user_type: Option<String>,
    /// The working directory when the entry was written.
    pub cwd: Option<String>,
    /// The session id (a sub-agent's lines carry the parent session's id).
    pub session_id: Option<String>,
    /// The writer's version.
    pub version: Option<String>,
    /// The git branch of `cwd`, empty outside a repository.
    pub git_branch: Option<String>,
    /// The sub-agent id, on sub-agent lines.
    pub agent_id: Option<String>,
    /// The session's human-readable slug.
    pub slug: Option<String>,
    /// This entry's id.
    pub uuid: String,
    /// When it was written (ISO 8601 with milliseconds, UTC).
    pub timestamp: String,
}

/// A `user` entry: a prompt, a tool result, or a meta message.
#[derive(Debug, Clone, PartialEq)]
pub struct UserEntry {
    /// Common fields.
    pub envelope: Envelope,
    /// The message.
    pub message: Message,
    /// A message the model sees but the user did not type (caveats, hook output).
    pub is_meta: Option<bool>,
    /// Shown in the transcript view only.
    pub is_visible_in_transcript_only: Option<bool>,
    /// The summary that starts a compacted conversation.
    pub is_compact_summary: Option<bool>,
    /// The tool's structured result, for the UI (the model gets `message`).
    pub tool_use_result: Option<Value>,
    /// The assistant line whose tool use this answers.
    pub source_tool_assistant_uuid: Option<String>,
    /// Fields strata does not model (`thinkingMetadata`, `todos`, `permissionMode`, …).
    pub extra: Map<String, Value>,
}

/// An `assistant` entry: one content block of a model response (a response with several
/// blocks is written as several lines sharing `message.id` and `requestId`).
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantEntry {
    /// Common fields.
    pub envelope: Envelope,
    /// The response.
    pub message: AssistantMessage,
    /// The API request id (`req_…`).
    pub request_id: Option<String>,
    /// Set on lines that report an API error rather than a response.
    pub is_api_error_message: Option<bool>,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

/// A `system` entry (`subtype`: `compact_boundary`, `turn_duration`, `local_command`,
/// `stop_hook_summary`, `api_error`, …).
#[derive(Debug, Clone, PartialEq)]
pub struct SystemEntry {
    /// Common fields.
    pub envelope: Envelope,
    /// The kind of system line.
    pub subtype: Option<String>,
    /// Its text (`Conversation compacted`, a local command's output, …).
    pub content: Option<String>,
    /// `info`, `suggestion`, `warning`, `error`.
    pub level: Option<String>,
    /// Whether the model should not see it.
    pub is_meta: Option<bool>,
    /// The tool use this line is about (`stop_hook_summary`).
    pub tool_use_id: Option<String>,
    /// On a compact boundary: `{"trigger":"auto"|"manual","preTokens":…}`.
    pub compact_metadata: Option<Value>,
    /// Fields strata does not model (`durationMs`, `hookCount`, …), in order.
    pub extra: Map<String, Value>,
}

/// The `subtype` of a compact boundary.
pub const COMPACT_BOUNDARY: &str = "compact_boundary";
/// The `subtype` of a local slash command's output, which the model does see.
pub const LOCAL_COMMAND: &str = "local_command";

impl SystemEntry {
    /// Whether this is a compact boundary (only what follows the last one is live).
    pub fn is_compact_boundary(&self) -> bool {
        self.subtype.as_deref() == Some(COMPACT_BOUNDARY)
    }
}

/// An `attachment` entry (newer writers: context attached to a turn).
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentEntry {
    /// Common fields.
    pub envelope: Envelope,
    /// The attachment, kept as read.
    pub attachment: Value,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

/// A legacy `progress` entry (hook and tool progress, sub-agent progress).
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressEntry {
    /// Common fields.
    pub envelope: Envelope,
    /// The progress payload, kept as read.
    pub data: Value,
    /// The tool use this reports on (`toolUseID`).
    pub tool_use_id: Option<String>,
    /// The enclosing tool use (`parentToolUseID`).
    pub parent_tool_use_id: Option<String>,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

// ---- reading -------------------------------------------------------------------------

fn wrong(key: &str, want: &str) -> EntryError {
    EntryError::Field {
        field: key.to_owned(),
        expected: want.to_owned(),
    }
}

pub(super) fn opt_string(f: &mut Fields<'_>, key: &str) -> Result<Option<String>, EntryError> {
    match f.take(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(wrong(key, "a string")),
    }
}

fn opt_bool(f: &mut Fields<'_>, key: &str) -> Result<Option<bool>, EntryError> {
    match f.take(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(wrong(key, "true or false")),
    }
}

fn req_string(f: &mut Fields<'_>, key: &str) -> Result<String, EntryError> {
    opt_string(f, key)?.ok_or_else(|| EntryError::Missing(key.to_owned()))
}

fn take_envelope(f: &mut Fields<'_>) -> Result<Envelope, EntryError> {
    Ok(Envelope {
        parent_uuid: opt_string(f, "parentUuid")?,
        logical_parent_uuid: opt_string(f, "logicalParentUuid")?,
        is_sidechain: opt_bool(f, "isSidechain")?.unwrap_or(false),
        user_type: opt_string(f, "userType")?,
        cwd: opt_string(f, "cwd")?,
        session_id: opt_string(f, "sessionId")?,
        version: opt_string(f, "version")?,
        git_branch: opt_string(f, "gitBranch")?,
        agent_id: opt_string(f, "agentId")?,
        slug: opt_string(f, "slug")?,
        uuid: req_string(f, "uuid")?,
        timestamp: opt_string(f, "timestamp")?.unwrap_or_default(),
    })
}

fn typed<T: serde::de::DeserializeOwned>(f: &mut Fields<'_>, key: &str) -> Result<T, EntryError> {
    let v = f
        .take(key)
        .ok_or_else(|| EntryError::Missing(key.to_owned()))?;
    serde_json::from_value(v).map_err(|e| EntryError::Invalid {
        field: key.to_owned(),
        reason: e.to_string(),
    })
}

impl UserEntry {
    pub(super) fn from_fields(mut f: Fields<'_>) -> Result<Self, EntryError> {
        f.take("type");
        Ok(Self {
            envelope: take_envelope(&mut f)?,
            message: typed(&mut f, "message")?,
            is_meta: opt_bool(&mut f, "isMeta")?,
            is_visible_in_transcript_only: opt_bool(&mut f, "isVisibleInTranscriptOnly")?,
            is_compact_summary: opt_bool(&mut f, "isCompactSummary")?,
            tool_use_result: f.take("toolUseResult"),
            source_tool_assistant_uuid: opt_string(&mut f, "sourceToolAssistantUUID")?,
            extra: f.into_map(),
        })
    }
}

impl AssistantEntry {
    pub(super) fn from_fields(mut f: Fields<'_>) -> Result<Self, EntryError> {
        f.take("type");
        Ok(Self {
            envelope: take_envelope(&mut f)?,
            message: typed(&mut f, "message")?,
            request_id: opt_string(&mut f, "requestId")?,
            is_api_error_message: opt_bool(&mut f, "isApiErrorMessage")?,
            extra: f.into_map(),
        })
    }
}

impl SystemEntry {
    pub(super) fn from_fields(mut f: Fields<'_>) -> Result<Self, EntryError> {
        f.take("type");
        Ok(Self {
            envelope: take_envelope(&mut f)?,
            subtype: opt_string(&mut f, "subtype")?,
            content: opt_string(&mut f, "content")?,
            level: opt_string(&mut f, "level")?,
            is_meta: opt_bool(&mut f, "isMeta")?,
            tool_use_id: opt_string(&mut f, "toolUseID")?,
            compact_metadata: f.take("compactMetadata"),
            extra: f.into_map(),
        })
    }
}

impl AttachmentEntry {
    pub(super) fn from_fields(mut f: Fields<'_>) -> Result<Self, EntryError> {
        f.take("type");
        Ok(Self {
            envelope: take_envelope(&mut f)?,
            attachment: f.take("attachment").unwrap_or(Value::Null),
            extra: f.into_map(),
        })
    }
}

impl ProgressEntry {
    pub(super) fn from_fields(mut f: Fields<'_>) -> Result<Self, EntryError> {
        f.take("type");
        Ok(Self {
            envelope: take_envelope(&mut f)?,
            data: f.take("data").unwrap_or(Value::Null),
            tool_use_id: opt_string(&mut f, "toolUseID")?,
            parent_tool_use_id: opt_string(&mut f, "parentToolUseID")?,
            extra: f.into_map(),
        })
    }
}

// ---- writing -------------------------------------------------------------------------

/// Writes the envelope's leading fields (everything before `type`).
fn head<M: SerializeMap>(m: &mut M, e: &Envelope) -> Result<(), M::Error> {
    m.serialize_entry("parentUuid", &e.parent_uuid)?;
    if let Some(v) = &e.logical_parent_uuid {
        m.serialize_entry("logicalParentUuid", v)?;
    }
    m.serialize_entry("isSidechain", &e.is_sidechain)?;
    let optional = [
        ("userType", &e.user_type),
        ("cwd", &e.cwd),
        ("sessionId", &e.session_id),
        ("version", &e.version),
        ("gitBranch", &e.git_branch),
        ("agentId", &e.agent_id),
        ("slug", &e.slug),
    ];
    for (k, v) in optional {
        if let Some(v) = v {
            m.serialize_entry(k, v)?;
        }
    }
    Ok(())
}

fn some<M: SerializeMap, T: Serialize>(m: &mut M, k: &str, v: &Option<T>) -> Result<(), M::Error> {
    match v {
        Some(v) => m.serialize_entry(k, v),
        None => Ok(()),
    }
}

impl Serialize for UserEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        head(&mut m, &self.envelope)?;
        m.serialize_entry("type", "user")?;
        m.serialize_entry("message", &self.message)?;
        some(&mut m, "isMeta", &self.is_meta)?;
        some(
            &mut m,
            "isVisibleInTranscriptOnly",
            &self.is_visible_in_transcript_only,
        )?;
        some(&mut m, "isCompactSummary", &self.is_compact_summary)?;
        m.serialize_entry("uuid", &self.envelope.uuid)?;
        m.serialize_entry("timestamp", &self.envelope.timestamp)?;
        some(&mut m, "toolUseResult", &self.tool_use_result)?;
        some(
            &mut m,
            "sourceToolAssistantUUID",
            &self.source_tool_assistant_uuid,
        )?;
        serialize_extra(&mut m, &self.extra)?;
        m.end()
    }
}

impl Serialize for AssistantEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        head(&mut m, &self.envelope)?;
        m.serialize_entry("message", &self.message)?;
        some(&mut m, "requestId", &self.request_id)?;
        m.serialize_entry("type", "assistant")?;
        m.serialize_entry("uuid", &self.envelope.uuid)?;
        m.serialize_entry("timestamp", &self.envelope.timestamp)?;
        some(&mut m, "isApiErrorMessage", &self.is_api_error_message)?;
        serialize_extra(&mut m, &self.extra)?;
        m.end()
    }
}

impl Serialize for SystemEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        head(&mut m, &self.envelope)?;
        m.serialize_entry("type", "system")?;
        some(&mut m, "subtype", &self.subtype)?;
        some(&mut m, "content", &self.content)?;
        serialize_extra(&mut m, &self.extra)?;
        some(&mut m, "isMeta", &self.is_meta)?;
        m.serialize_entry("timestamp", &self.envelope.timestamp)?;
        m.serialize_entry("uuid", &self.envelope.uuid)?;
        some(&mut m, "level", &self.level)?;
        some(&mut m, "toolUseID", &self.tool_use_id)?;
        some(&mut m, "compactMetadata", &self.compact_metadata)?;
        m.end()
    }
}

impl Serialize for AttachmentEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        head(&mut m, &self.envelope)?;
        m.serialize_entry("type", "attachment")?;
        m.serialize_entry("attachment", &self.attachment)?;
        m.serialize_entry("uuid", &self.envelope.uuid)?;
        m.serialize_entry("timestamp", &self.envelope.timestamp)?;
        serialize_extra(&mut m, &self.extra)?;
        m.end()
    }
}

impl Serialize for ProgressEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        head(&mut m, &self.envelope)?;
        m.serialize_entry("type", "progress")?;
        m.serialize_entry("data", &self.data)?;
        some(&mut m, "toolUseID", &self.tool_use_id)?;
        some(&mut m, "parentToolUseID", &self.parent_tool_use_id)?;
        m.serialize_entry("uuid", &self.envelope.uuid)?;
        m.serialize_entry("timestamp", &self.envelope.timestamp)?;
        serialize_extra(&mut m, &self.extra)?;
        m.end()
    }
}
