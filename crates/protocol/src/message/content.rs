//! Content blocks: the parts a model message is made of.
//!
//! The known block types are typed; any other block (server tool results, documents, new
//! types the API grows) is kept as [`ContentBlock::Unknown`] with its fields in order, and
//! a known block with a field strata does not model keeps it in `extra`, so re-writing a
//! transcript never drops data. Blocks are written back with their keys in the order the
//! reference agent writes them (`tool_result` starts with `tool_use_id`).

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::fields::{Fields, serialize_extra};

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{"type":"text","text":…}`.
    Text(TextBlock),
    /// `{"type":"thinking","thinking":…,"signature":…}`: kept with its signature, which
    /// the API needs to accept the block back.
    Thinking(ThinkingBlock),
    /// `{"type":"redacted_thinking","data":…}`.
    RedactedThinking(RedactedThinkingBlock),
    /// `{"type":"tool_use","id":…,"name":…,"input":…}`.
    ToolUse(ToolUseBlock),
    /// `{"tool_use_id":…,"type":"tool_result","content":…,"is_error":…}`.
    ToolResult(ToolResultBlock),
    /// `{"type":"image","source":…}`.
    Image(ImageBlock),
    /// Any other block (or a known type missing a required field), kept as read.
    Unknown(Map<String, Value>),
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// Fields strata does not model (`citations`, `cache_control`, …), in order.
    pub extra: Map<String, Value>,
}

/// A thinking block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ThinkingBlock {
    /// The model's reasoning text.
    pub thinking: String,
    /// The opaque signature the API checks when the block is sent back.
    pub signature: String,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

/// A redacted thinking block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RedactedThinkingBlock {
    /// The encrypted reasoning.
    pub data: String,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

/// A tool call by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUseBlock {
    /// The call's id (`toolu_…`), answered by a [`ToolResultBlock`] with the same id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the model wrote them.
    pub input: Value,
    /// Who issued the call (`{"type":"direct"}` in recent transcripts). Kept in the
    /// transcript, never sent to the model.
    pub caller: Option<Value>,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

/// The result of a tool call, sent back in a user message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultBlock {
    /// The id of the [`ToolUseBlock`] this answers.
    pub tool_use_id: String,
    /// The result; absent when the tool returned nothing.
    pub content: Option<ToolResultContent>,
    /// `Some(true)` when the tool failed.
    pub is_error: Option<bool>,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

/// A tool result's content: a string or a list of blocks (text and images).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResultContent {
    /// Plain text.
    Text(String),
    /// Blocks.
    Blocks(Vec<ContentBlock>),
}

/// An image block.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageBlock {
    /// The source (`{"type":"base64","media_type":…,"data":…}` or a URL), kept as read.
    pub source: Value,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextBlock {
            text: text.into(),
            extra: Map::new(),
        })
    }

    /// A tool call.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::ToolUse(ToolUseBlock {
            id: id.into(),
            name: name.into(),
            input,
            caller: None,
            extra: Map::new(),
        })
    }

    /// A tool result holding text; `is_error` is written only when true.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::ToolResult(ToolResultBlock {
            tool_use_id: tool_use_id.into(),
            content: Some(ToolResultContent::Text(text.into())),
            is_error: is_error.then_some(true),
            extra: Map::new(),
        })
    }

    /// The block's `type` string.
    pub fn type_name(&self) -> &str {
        match self {
            Self::Text(_) => "text",
            Self::Thinking(_) => "thinking",
            Self::RedactedThinking(_) => "redacted_thinking",
            Self::ToolUse(_) => "tool_use",
            Self::ToolResult(_) => "tool_result",
            Self::Image(_) => "image",
            Self::Unknown(m) => m.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// Builds a block from an object's fields (see the module docs for the fallback).
    fn from_fields(mut f: Fields<'_>) -> Self {
        let ty = match f.get("type") {
            Some(Value::String(s)) => s.clone(),
            _ => return Self::Unknown(f.into_map()),
        };
        match ty.as_str() {
            "text" if f.has_string("text") => {
                f.take("type");
                let text = f.take_string("text").unwrap_or_default();
                Self::Text(TextBlock {
                    text,
                    extra: f.into_map(),
                })
            }
            "thinking" if f.has_string("thinking") && f.has_string("signature") => {
                f.take("type");
                let thinking = f.take_string("thinking").unwrap_or_default();
                let signature = f.take_string("signature").unwrap_or_default();
                Self::Thinking(ThinkingBlock {
                    thinking,
                    signature,
                    extra: f.into_map(),
                })
            }
            "redacted_thinking" if f.has_string("data") => {
                f.take("type");
                let data = f.take_string("data").unwrap_or_default();
                Self::RedactedThinking(RedactedThinkingBlock {
                    data,
                    extra: f.into_map(),
                })
            }
            "tool_use"
                if f.has_string("id") && f.has_string("name") && f.get("input").is_some() =>
            {
                f.take("type");
                let id = f.take_string("id").unwrap_or_default();
                let name = f.take_string("name").unwrap_or_default();
                let input = f.take("input").unwrap_or(Value::Null);
                let caller = f.take("caller");
                Self::ToolUse(ToolUseBlock {
                    id,
                    name,
                    input,
                    caller,
                    extra: f.into_map(),
                })
            }
            "tool_result" if f.has_string("tool_use_id") && tool_result_parts_ok(&f) => {
                f.take("type");
                let tool_use_id = f.take_string("tool_use_id").unwrap_or_default();
                let content = f.take("content").and_then(tool_result_content);
                let is_error = f.take("is_error").and_then(|v| v.as_bool());
                Self::ToolResult(ToolResultBlock {
                    tool_use_id,
                    content,
                    is_error,
                    extra: f.into_map(),
                })
            }
            "image" if f.get("source").is_some() => {
                f.take("type");
                let source = f.take("source").unwrap_or(Value::Null);
                Self::Image(ImageBlock {
                    source,
                    extra: f.into_map(),
                })
            }
            _ => Self::Unknown(f.into_map()),
        }
    }
}

/// Whether a `tool_result`'s `content` and `is_error` have shapes strata models; other
/// shapes keep the whole block as [`ContentBlock::Unknown`] so nothing is lost.
fn tool_result_parts_ok(f: &Fields<'_>) -> bool {
    let content_ok = match f.get("content") {
        None | Some(Value::String(_)) => true,
        Some(Value::Array(items)) => items.iter().all(Value::is_object),
        Some(_) => false,
    };
    let is_error_ok = matches!(f.get("is_error"), None | Some(Value::Bool(_)));
    content_ok && is_error_ok
}

fn tool_result_content(v: Value) -> Option<ToolResultContent> {
    match v {
        Value::String(s) => Some(ToolResultContent::Text(s)),
        Value::Array(items) => Some(ToolResultContent::Blocks(
            items
                .into_iter()
                .filter_map(|item| match item {
                    Value::Object(map) => Some(ContentBlock::from_fields(Fields::from_map(map))),
                    _ => None, // excluded by `tool_result_parts_ok`
                })
                .collect(),
        )),
        _ => None,
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BlockVisitor;
        impl<'de> Visitor<'de> for BlockVisitor {
            type Value = ContentBlock;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ContentBlock, A::Error> {
                Ok(ContentBlock::from_fields(Fields::collect(map)?))
            }
        }
        d.deserialize_map(BlockVisitor)
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(b) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "text")?;
                m.serialize_entry("text", &b.text)?;
                serialize_extra(&mut m, &b.extra)?;
                m.end()
            }
            Self::Thinking(b) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "thinking")?;
                m.serialize_entry("thinking", &b.thinking)?;
                m.serialize_entry("signature", &b.signature)?;
                serialize_extra(&mut m, &b.extra)?;
                m.end()
            }
            Self::RedactedThinking(b) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "redacted_thinking")?;
                m.serialize_entry("data", &b.data)?;
                serialize_extra(&mut m, &b.extra)?;
                m.end()
            }
            Self::ToolUse(b) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "tool_use")?;
                m.serialize_entry("id", &b.id)?;
                m.serialize_entry("name", &b.name)?;
                m.serialize_entry("input", &b.input)?;
                if let Some(caller) = &b.caller {
                    m.serialize_entry("caller", caller)?;
                }
                serialize_extra(&mut m, &b.extra)?;
                m.end()
            }
            Self::ToolResult(b) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("tool_use_id", &b.tool_use_id)?;
                m.serialize_entry("type", "tool_result")?;
                if let Some(content) = &b.content {
                    m.serialize_entry("content", content)?;
                }
                if let Some(is_error) = b.is_error {
                    m.serialize_entry("is_error", &is_error)?;
                }
                serialize_extra(&mut m, &b.extra)?;
                m.end()
            }
            Self::Image(b) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "image")?;
                m.serialize_entry("source", &b.source)?;
                serialize_extra(&mut m, &b.extra)?;
                m.end()
            }
            Self::Unknown(map) => map.serialize(s),
        }
    }
}

impl Serialize for ToolResultContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(t) => s.serialize_str(t),
            Self::Blocks(b) => b.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ToolResultContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ToolResultContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ToolResultContent::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(ToolResultContent::Text(v))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(ToolResultContent::Blocks(blocks))
            }
        }
        d.deserialize_any(V)
    }
}
