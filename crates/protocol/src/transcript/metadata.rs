//! Metadata entries: lines that describe the session rather than carry the conversation.
//!
//! Each is written as `{"type":"<kind>", …fields}` with `type` first, as the reference agent
//! writes them; unknown fields are kept (`extra`) and written after the known ones. The
//! last line of a kind wins when a session is resumed (a later `custom-title` renames).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::message::fields::CowKey;

/// A metadata line, tagged by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum MetadataEntry {
    /// `summary`: a generated summary of the conversation ending at `leafUuid`.
    #[serde(rename = "summary")]
    Summary(SummaryEntry),
    /// `custom-title`: a title the user chose (`/rename`); wins over the AI title.
    #[serde(rename = "custom-title")]
    CustomTitle(CustomTitleEntry),
    /// `ai-title`: a generated title.
    #[serde(rename = "ai-title")]
    AiTitle(AiTitleEntry),
    /// `last-prompt`: the last prompt typed, for the session picker.
    #[serde(rename = "last-prompt")]
    LastPrompt(LastPromptEntry),
    /// `tag`: a user tag on the session.
    #[serde(rename = "tag")]
    Tag(TagEntry),
    /// `agent-name`: the agent's display name.
    #[serde(rename = "agent-name")]
    AgentName(AgentNameEntry),
    /// `agent-color`: the agent's colour.
    #[serde(rename = "agent-color")]
    AgentColor(AgentColorEntry),
    /// `agent-setting`: the agent definition the session runs as.
    #[serde(rename = "agent-setting")]
    AgentSetting(AgentSettingEntry),
    /// `permission-mode`: the permission mode in force.
    #[serde(rename = "permission-mode")]
    PermissionMode(PermissionModeEntry),
    /// `mode`: the session mode (e.g. coordinator or normal).
    #[serde(rename = "mode")]
    Mode(ModeEntry),
    /// `worktree-state`: the git worktree the session works in (`null` after leaving it).
    #[serde(rename = "worktree-state")]
    WorktreeState(WorktreeStateEntry),
    /// `pr-link`: the pull request the session opened or works on.
    #[serde(rename = "pr-link")]
    PrLink(PrLinkEntry),
    /// `file-history-snapshot`: backups of edited files at a user message, for rewind.
    #[serde(rename = "file-history-snapshot")]
    FileHistorySnapshot(FileHistorySnapshotEntry),
    /// `attribution-snapshot`: which lines of which files the agent wrote.
    #[serde(rename = "attribution-snapshot")]
    AttributionSnapshot(OpaqueEntry),
    /// `queue-operation`: a prompt queued or dequeued while the agent was busy.
    #[serde(rename = "queue-operation")]
    QueueOperation(QueueOperationEntry),
    /// `content-replacement`: tool outputs replaced by references to save context.
    #[serde(rename = "content-replacement")]
    ContentReplacement(OpaqueEntry),
}

/// `{"type":"summary","summary":…,"leafUuid":…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryEntry {
    /// The summary text.
    pub summary: String,
    /// The last entry the summary covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_uuid: Option<String>,
    /// Fields strata does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

macro_rules! session_text_entry {
    ($(#[$doc:meta])* $name:ident, $field:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// The value.
            pub $field: String,
            /// The session it belongs to.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub session_id: Option<String>,
            /// Fields strata does not model.
            #[serde(flatten)]
            pub extra: Map<String, Value>,
        }

        impl $name {
            /// The entry for `session_id`.
            pub fn new(session_id: impl Into<String>, value: impl Into<String>) -> Self {
                Self { $field: value.into(), session_id: Some(session_id.into()), extra: Map::new() }
            }
        }
    };
}

session_text_entry!(
    /// `{"type":"custom-title","customTitle":…,"sessionId":…}`.
    CustomTitleEntry, custom_title
);
session_text_entry!(
    /// `{"type":"ai-title","aiTitle":…,"sessionId":…}`.
    AiTitleEntry, ai_title
);
session_text_entry!(
    /// `{"type":"last-prompt","lastPrompt":…,"sessionId":…}`.
    LastPromptEntry, last_prompt
);
session_text_entry!(
    /// `{"type":"tag","tag":…,"sessionId":…}`.
    TagEntry, tag
);
session_text_entry!(
    /// `{"type":"agent-name","agentName":…,"sessionId":…}`.
    AgentNameEntry, agent_name
);
session_text_entry!(
    /// `{"type":"agent-color","agentColor":…,"sessionId":…}`.
    AgentColorEntry, agent_color
);
session_text_entry!(
    /// `{"type":"agent-setting","agentSetting":…,"sessionId":…}`.
    AgentSettingEntry, agent_setting
);
session_text_entry!(
    /// `{"type":"permission-mode","permissionMode":…,"sessionId":…}` (the external mode
    /// name, e.g. `acceptEdits`).
    PermissionModeEntry, permission_mode
);
session_text_entry!(
    /// `{"type":"mode","mode":…,"sessionId":…}`.
    ModeEntry, mode
);

/// `{"type":"worktree-state","worktreeSession":{…}|null,"sessionId":…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeStateEntry {
    /// The worktree (path, branch, original cwd, …) kept as written; `None` after the
    /// session left its worktree.
    #[serde(default)]
    pub worktree_session: Option<Value>,
    /// The session it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Fields strata does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `{"type":"pr-link","sessionId":…,"prNumber":…,"prUrl":…,"prRepository":…,"timestamp":…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrLinkEntry {
    /// The session it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The pull request number.
    pub pr_number: u64,
    /// Its URL.
    pub pr_url: String,
    /// `owner/name`.
    pub pr_repository: String,
    /// When it was linked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Fields strata does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `{"type":"file-history-snapshot","messageId":…,"snapshot":{…},"isSnapshotUpdate":…}`.
///
/// A snapshot is written when a user message starts a turn (`isSnapshotUpdate: false`)
/// and re-written with more files whenever a tool first edits another file in that turn
/// (`isSnapshotUpdate: true`, `snapshot.messageId` still the turn's user message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileHistorySnapshotEntry {
    /// The id of this line (a fresh uuid on updates, the user message's uuid otherwise).
    pub message_id: String,
    /// The snapshot.
    pub snapshot: FileHistorySnapshot,
    /// Whether this line updates an earlier snapshot of the same user message.
    #[serde(default)]
    pub is_snapshot_update: bool,
    /// Fields strata does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The state of every tracked file at one user message.
///
/// Read by hand rather than derived: a resume reads a snapshot per user message, and a
/// derived reader with `flatten` would buffer every snapshot (and every file in it) twice.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileHistorySnapshot {
    /// The user message this snapshot belongs to.
    pub message_id: String,
    /// Backups by file path (as the tool saw it).
    pub tracked_file_backups: BTreeMap<String, FileBackup>,
    /// When the snapshot was taken.
    pub timestamp: String,
    /// Fields strata does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One tracked file in a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileBackup {
    /// The backup's name in `file-history/<session>/` (`<sha16>@v<n>`), or `None` when the
    /// file did not exist (rewind deletes it).
    pub backup_file_name: Option<String>,
    /// The backup version, counting from 1 per file.
    pub version: u32,
    /// When the backup was made.
    pub backup_time: String,
    /// Fields strata does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `{"type":"queue-operation","operation":"enqueue"|"dequeue"|…,"timestamp":…,…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueOperationEntry {
    /// `enqueue`, `dequeue`, `remove`, `popAll`.
    pub operation: String,
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The session it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The queued prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Fields strata does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A metadata entry whose fields strata keeps but does not interpret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct OpaqueEntry {
    /// Every field except `type`, in order.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

impl<'de> Deserialize<'de> for FileHistorySnapshot {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FileHistorySnapshot;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a file-history snapshot object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<FileHistorySnapshot, A::Error> {
                let (mut message_id, mut timestamp, mut files, mut extra) =
                    (None, None, BTreeMap::new(), Map::new());
                while let Some(key) = map.next_key_seed(CowKey)? {
                    match &*key {
                        "messageId" => message_id = Some(map.next_value()?),
                        "timestamp" => timestamp = Some(map.next_value()?),
                        "trackedFileBackups" => files = map.next_value()?,
                        _ => {
                            extra.insert(key.into_owned(), map.next_value()?);
                        }
                    }
                }
                Ok(FileHistorySnapshot {
                    message_id: message_id.ok_or_else(|| de::Error::missing_field("messageId"))?,
                    tracked_file_backups: files,
                    timestamp: timestamp.ok_or_else(|| de::Error::missing_field("timestamp"))?,
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for FileBackup {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FileBackup;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a file backup object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FileBackup, A::Error> {
                let (mut name, mut version, mut time, mut extra) = (None, None, None, Map::new());
                while let Some(key) = map.next_key_seed(CowKey)? {
                    match &*key {
                        "backupFileName" => name = map.next_value()?,
                        "version" => version = Some(map.next_value()?),
                        "backupTime" => time = Some(map.next_value()?),
                        _ => {
                            extra.insert(key.into_owned(), map.next_value()?);
                        }
                    }
                }
                Ok(FileBackup {
                    backup_file_name: name,
                    version: version.ok_or_else(|| de::Error::missing_field("version"))?,
                    backup_time: time.ok_or_else(|| de::Error::missing_field("backupTime"))?,
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
}
