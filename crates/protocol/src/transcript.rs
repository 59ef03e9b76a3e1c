//! Transcript entries: one JSON object per line of a session file, in the reference
//! agent's format (DESIGN.md "Sessions", COMPAT.md).
//!
//! - [`Entry`]: a whole line, typed. Conversation entries ([`UserEntry`],
//!   [`AssistantEntry`], [`SystemEntry`], [`AttachmentEntry`], [`ProgressEntry`]) form the
//!   message chain through `parentUuid`; [`MetadataEntry`] lines describe the session; any
//!   other `type` is kept whole as [`Entry::Unknown`]. Typed entries keep unknown fields
//!   and write `parentUuid` first, in the key order of the reference writer.
//! - [`EntryKind`]: the `type` strings, and which of them take part in the chain.
//! - [`RawEntry`]: a line kept byte-exact per value and key order, for copying a session
//!   (fork) with only `sessionId` changed.
//!
//! The typed [`Entry`] is for writers and tools. The resume path does not build it for
//! every line: `strata-session` reads only the few fields the chain needs and parses
//! message bodies of the live conversation alone.

mod conversation;
mod metadata;
mod raw;

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use conversation::{
    AssistantEntry, AttachmentEntry, COMPACT_BOUNDARY, Envelope, LOCAL_COMMAND, ProgressEntry,
    SystemEntry, UserEntry,
};
pub use metadata::{
    AgentColorEntry, AgentNameEntry, AgentSettingEntry, AiTitleEntry, CustomTitleEntry, FileBackup,
    FileHistorySnapshot, FileHistorySnapshotEntry, LastPromptEntry, MetadataEntry, ModeEntry,
    OpaqueEntry, PermissionModeEntry, PrLinkEntry, QueueOperationEntry, SummaryEntry, TagEntry,
    WorktreeStateEntry,
};
pub use raw::RawEntry;

use crate::message::fields::Fields;

/// Why a line is not a valid entry of its `type`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The line is not a JSON object (or not JSON at all).
    #[error("not a JSON object: {0}")]
    NotJson(String),
    /// The line has no string `type`.
    #[error("the line has no \"type\" field")]
    NoType,
    /// A required field is absent.
    #[error("missing field \"{0}\"")]
    Missing(String),
    /// A field has the wrong JSON type.
    #[error("field \"{field}\" must be {expected}")]
    Field {
        /// The field.
        field: String,
        /// What it must be.
        expected: String,
    },
    /// A field's value does not have the expected shape.
    #[error("field \"{field}\": {reason}")]
    Invalid {
        /// The field.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

/// The `type` of a transcript line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// `system`.
    System,
    /// `attachment`.
    Attachment,
    /// `progress` (legacy).
    Progress,
    /// `summary`.
    Summary,
    /// `custom-title`.
    CustomTitle,
    /// `ai-title`.
    AiTitle,
    /// `last-prompt`.
    LastPrompt,
    /// `tag`.
    Tag,
    /// `agent-name`.
    AgentName,
    /// `agent-color`.
    AgentColor,
    /// `agent-setting`.
    AgentSetting,
    /// `permission-mode`.
    PermissionMode,
    /// `mode`.
    Mode,
    /// `worktree-state`.
    WorktreeState,
    /// `pr-link`.
    PrLink,
    /// `file-history-snapshot`.
    FileHistorySnapshot,
    /// `attribution-snapshot`.
    AttributionSnapshot,
    /// `queue-operation`.
    QueueOperation,
    /// `content-replacement`.
    ContentReplacement,
}

impl EntryKind {
    /// Every kind, in the order of the list above.
    pub const ALL: [EntryKind; 21] = [
        Self::User,
        Self::Assistant,
        Self::System,
        Self::Attachment,
        Self::Progress,
        Self::Summary,
        Self::CustomTitle,
        Self::AiTitle,
        Self::LastPrompt,
        Self::Tag,
        Self::AgentName,
        Self::AgentColor,
        Self::AgentSetting,
        Self::PermissionMode,
        Self::Mode,
        Self::WorktreeState,
        Self::PrLink,
        Self::FileHistorySnapshot,
        Self::AttributionSnapshot,
        Self::QueueOperation,
        Self::ContentReplacement,
    ];

    /// The `type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::System => "system",
            Self::Attachment => "attachment",
            Self::Progress => "progress",
            Self::Summary => "summary",
            Self::CustomTitle => "custom-title",
            Self::AiTitle => "ai-title",
            Self::LastPrompt => "last-prompt",
            Self::Tag => "tag",
            Self::AgentName => "agent-name",
            Self::AgentColor => "agent-color",
            Self::AgentSetting => "agent-setting",
            Self::PermissionMode => "permission-mode",
            Self::Mode => "mode",
            Self::WorktreeState => "worktree-state",
            Self::PrLink => "pr-link",
            Self::FileHistorySnapshot => "file-history-snapshot",
            Self::AttributionSnapshot => "attribution-snapshot",
            Self::QueueOperation => "queue-operation",
            Self::ContentReplacement => "content-replacement",
        }
    }

    /// The kind of a `type` string; `None` for types strata does not know.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether lines of this kind take part in the `parentUuid` chain (COMPAT.md:
    /// `user`, `assistant`, `system`, `attachment`, `progress`).
    pub fn is_chain_participant(self) -> bool {
        matches!(
            self,
            Self::User | Self::Assistant | Self::System | Self::Attachment | Self::Progress
        )
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One transcript line.
// Entries are built and written one at a time (never stored by the thousand), so the
// size gap between variants costs nothing worth a box on every access.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A `user` line.
    User(UserEntry),
    /// An `assistant` line.
    Assistant(AssistantEntry),
    /// A `system` line.
    System(SystemEntry),
    /// An `attachment` line.
    Attachment(AttachmentEntry),
    /// A legacy `progress` line.
    Progress(ProgressEntry),
    /// A metadata line.
    Metadata(MetadataEntry),
    /// A line of a type strata does not know, kept whole (including `type`).
    Unknown(Map<String, Value>),
}

impl Entry {
    /// Parses one line.
    pub fn parse(line: &str) -> Result<Self, EntryError> {
        let mut de = serde_json::Deserializer::from_str(line);
        let fields = (&mut de)
            .deserialize_map(FieldsVisitor)
            .map_err(|e| EntryError::NotJson(e.to_string()))?;
        de.end().map_err(|e| EntryError::NotJson(e.to_string()))?;
        Self::from_fields(fields)
    }

    fn from_fields(f: Fields<'_>) -> Result<Self, EntryError> {
        let kind = match f.get("type") {
            Some(Value::String(s)) => EntryKind::parse(s),
            _ => return Err(EntryError::NoType),
        };
        Ok(match kind {
            Some(EntryKind::User) => Self::User(UserEntry::from_fields(f)?),
            Some(EntryKind::Assistant) => Self::Assistant(AssistantEntry::from_fields(f)?),
            Some(EntryKind::System) => Self::System(SystemEntry::from_fields(f)?),
            Some(EntryKind::Attachment) => Self::Attachment(AttachmentEntry::from_fields(f)?),
            Some(EntryKind::Progress) => Self::Progress(ProgressEntry::from_fields(f)?),
            Some(_) => {
                Self::Metadata(serde_json::from_value(Value::Object(f.into_map())).map_err(
                    |e| EntryError::Invalid {
                        field: "type".into(),
                        reason: e.to_string(),
                    },
                )?)
            }
            None => Self::Unknown(f.into_map()),
        })
    }

    /// The line's kind; `None` for [`Entry::Unknown`].
    pub fn kind(&self) -> Option<EntryKind> {
        Some(match self {
            Self::User(_) => EntryKind::User,
            Self::Assistant(_) => EntryKind::Assistant,
            Self::System(_) => EntryKind::System,
            Self::Attachment(_) => EntryKind::Attachment,
            Self::Progress(_) => EntryKind::Progress,
            Self::Metadata(m) => m.kind(),
            Self::Unknown(_) => return None,
        })
    }

    /// The common fields of a conversation entry.
    pub fn envelope(&self) -> Option<&Envelope> {
        match self {
            Self::User(e) => Some(&e.envelope),
            Self::Assistant(e) => Some(&e.envelope),
            Self::System(e) => Some(&e.envelope),
            Self::Attachment(e) => Some(&e.envelope),
            Self::Progress(e) => Some(&e.envelope),
            Self::Metadata(_) | Self::Unknown(_) => None,
        }
    }

    /// The line as compact JSON, without a trailing newline.
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

impl MetadataEntry {
    /// The entry's kind.
    pub fn kind(&self) -> EntryKind {
        match self {
            Self::Summary(_) => EntryKind::Summary,
            Self::CustomTitle(_) => EntryKind::CustomTitle,
            Self::AiTitle(_) => EntryKind::AiTitle,
            Self::LastPrompt(_) => EntryKind::LastPrompt,
            Self::Tag(_) => EntryKind::Tag,
            Self::AgentName(_) => EntryKind::AgentName,
            Self::AgentColor(_) => EntryKind::AgentColor,
            Self::AgentSetting(_) => EntryKind::AgentSetting,
            Self::PermissionMode(_) => EntryKind::PermissionMode,
            Self::Mode(_) => EntryKind::Mode,
            Self::WorktreeState(_) => EntryKind::WorktreeState,
            Self::PrLink(_) => EntryKind::PrLink,
            Self::FileHistorySnapshot(_) => EntryKind::FileHistorySnapshot,
            Self::AttributionSnapshot(_) => EntryKind::AttributionSnapshot,
            Self::QueueOperation(_) => EntryKind::QueueOperation,
            Self::ContentReplacement(_) => EntryKind::ContentReplacement,
        }
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Fields<'de>, A::Error> {
        Fields::collect(map)
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let fields = d.deserialize_map(FieldsVisitor)?;
        Self::from_fields(fields).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::User(e) => e.serialize(s),
            Self::Assistant(e) => e.serialize(s),
            Self::System(e) => e.serialize(s),
            Self::Attachment(e) => e.serialize(s),
            Self::Progress(e) => e.serialize(s),
            Self::Metadata(e) => e.serialize(s),
            Self::Unknown(m) => m.serialize(s),
        }
    }
}

impl From<MetadataEntry> for Entry {
    fn from(m: MetadataEntry) -> Self {
        Self::Metadata(m)
    }
}
