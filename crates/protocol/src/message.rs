//! Model messages: roles, content blocks (text, thinking, tool use, tool result, image),
//! assistant responses and their token usage.
//!
//! These are the Messages API shapes as the reference agent stores them in transcripts and
//! as strata sends them to a model. Two types cover the two uses:
//!
//! - [`Message`] `{role, content}`: what goes into a request (and what a transcript `user`
//!   entry holds). Content is a string or a list of [`ContentBlock`]s.
//! - [`AssistantMessage`] `{model, id, type, role, content, stop_reason, stop_sequence,
//!   usage}`: one model response (what a transcript `assistant` entry holds).
//!
//! Every type keeps fields it does not model (in order) and writes them back, so a
//! transcript re-written by strata loses nothing. Parsing is hand-written rather than
//! derived: `#[serde(flatten)]` would buffer every message twice, and messages are parsed
//! on the resume path where a 100 MB transcript must load in a fraction of a second.

mod content;
pub(crate) mod fields;
mod usage;

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use content::{
    ContentBlock, ImageBlock, RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolResultBlock,
    ToolResultContent, ToolUseBlock,
};
pub use usage::{CacheCreation, Usage};

use fields::{CowKey, serialize_extra};

/// The model name the reference agent gives to assistant lines it made up itself (API
/// errors, interruptions); they are not API calls and cost nothing.
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user (and tool results).
    User,
    /// The model.
    Assistant,
}

/// A message as sent to the model: `{"role":…,"content":…}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub content: MessageContent,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

/// A message's content: a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageContent {
    /// `"content": "…"`.
    Text(String),
    /// `"content": [ … ]`.
    Blocks(Vec<ContentBlock>),
}

impl Message {
    /// A user message with plain text content.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: MessageContent::Text(text.into()),
            extra: Map::new(),
        }
    }

    /// A message of `role` made of `blocks`.
    pub fn blocks(role: Role, blocks: Vec<ContentBlock>) -> Self {
        Self {
            role,
            content: MessageContent::Blocks(blocks),
            extra: Map::new(),
        }
    }
}

impl MessageContent {
    /// The content as blocks, a plain string becoming one text block.
    pub fn into_blocks(self) -> Vec<ContentBlock> {
        match self {
            Self::Text(t) => vec![ContentBlock::text(t)],
            Self::Blocks(b) => b,
        }
    }

    /// The blocks, or `None` for plain-string content.
    pub fn as_blocks(&self) -> Option<&[ContentBlock]> {
        match self {
            Self::Text(_) => None,
            Self::Blocks(b) => Some(b),
        }
    }

    /// The text of plain-string content, or of the first text block.
    pub fn first_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(t),
            Self::Blocks(b) => b.iter().find_map(ContentBlock::as_text),
        }
    }
}

/// Why a response stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// The output token limit was reached.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// A long-running server tool paused the turn.
    PauseTurn,
    /// The model declined.
    Refusal,
    /// Any other value, kept as read.
    Other(String),
}

impl StopReason {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
            Self::StopSequence => "stop_sequence",
            Self::PauseTurn => "pause_turn",
            Self::Refusal => "refusal",
            Self::Other(s) => s,
        }
    }

    /// Parses a wire string; unknown values become [`StopReason::Other`].
    pub fn parse(s: &str) -> Self {
        match s {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "max_tokens" => Self::MaxTokens,
            "stop_sequence" => Self::StopSequence,
            "pause_turn" => Self::PauseTurn,
            "refusal" => Self::Refusal,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s: std::borrow::Cow<'de, str> = d.deserialize_str(StrVisitor)?;
        Ok(Self::parse(&s))
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = std::borrow::Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(v.to_owned()))
    }
}

/// One model response: `{"model","id","type":"message","role":"assistant","content",
/// "stop_reason","stop_sequence","usage"}`, written back in that order (the reference
/// agent's transcript order) followed by unknown fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AssistantMessage {
    /// The model that answered (or [`SYNTHETIC_MODEL`]).
    pub model: String,
    /// The response id (`msg_…`); shared by every transcript line of one response.
    pub id: String,
    /// The blocks.
    pub content: Vec<ContentBlock>,
    /// Why the response stopped; `None` on the partial lines of a split response.
    pub stop_reason: Option<StopReason>,
    /// The stop sequence that matched.
    pub stop_sequence: Option<String>,
    /// Token usage.
    pub usage: Usage,
    /// Fields strata does not model (`container`, `context_management`, …), in order.
    pub extra: Map<String, Value>,
}

impl AssistantMessage {
    /// Whether this response was made up by the client rather than returned by the API.
    pub fn is_synthetic(&self) -> bool {
        self.model == SYNTHETIC_MODEL
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("role", &self.role)?;
        m.serialize_entry("content", &self.content)?;
        serialize_extra(&mut m, &self.extra)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Message;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
                let (mut role, mut content, mut extra) = (None, None, Map::new());
                while let Some(key) = map.next_key_seed(CowKey)? {
                    match &*key {
                        "role" => role = Some(map.next_value()?),
                        "content" => content = Some(map.next_value()?),
                        _ => {
                            extra.insert(key.into_owned(), map.next_value()?);
                        }
                    }
                }
                Ok(Message {
                    role: role.ok_or_else(|| de::Error::missing_field("role"))?,
                    content: content.ok_or_else(|| de::Error::missing_field("content"))?,
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for MessageContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(t) => s.serialize_str(t),
            Self::Blocks(b) => b.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(v))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(MessageContent::Blocks(blocks))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for AssistantMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("model", &self.model)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("type", "message")?;
        m.serialize_entry("role", "assistant")?;
        m.serialize_entry("content", &self.content)?;
        m.serialize_entry("stop_reason", &self.stop_reason)?;
        m.serialize_entry("stop_sequence", &self.stop_sequence)?;
        m.serialize_entry("usage", &self.usage)?;
        serialize_extra(&mut m, &self.extra)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for AssistantMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AssistantMessage;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an assistant message object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<AssistantMessage, A::Error> {
                let mut msg = AssistantMessage::default();
                while let Some(key) = map.next_key_seed(CowKey)? {
                    match &*key {
                        "model" => msg.model = map.next_value()?,
                        "id" => msg.id = map.next_value()?,
                        // Always "message" / "assistant": written back as constants.
                        "type" | "role" => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                        "content" => {
                            msg.content = map.next_value::<MessageContent>()?.into_blocks();
                        }
                        "stop_reason" => msg.stop_reason = map.next_value()?,
                        "stop_sequence" => msg.stop_sequence = map.next_value()?,
                        "usage" => msg.usage = map.next_value()?,
                        _ => {
                            msg.extra.insert(key.into_owned(), map.next_value()?);
                        }
                    }
                }
                Ok(msg)
            }
        }
        d.deserialize_map(V)
    }
}
