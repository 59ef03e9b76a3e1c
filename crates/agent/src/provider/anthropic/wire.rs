//! The conversation as the Messages API gets it, written straight from the shared
//! messages.
//!
//! Two fields of a recorded conversation are never sent: a tool use's `caller` (recent
//! transcripts put it on every call) and, when strata places its own cache breakpoints,
//! a `cache_control` from elsewhere. Cleaning them by copying the message first would
//! copy most of a resumed conversation (every response that called a tool; about 30 MB
//! for a 100 MB transcript) on the way to the first request. Instead a message that
//! needs cleaning is written block by block here, leaving those fields out; the bytes
//! are the same as for the cleaned copy.

use std::sync::Arc;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use strata_protocol::message::{ContentBlock, Message, MessageContent};

use super::{block_extra, needs_cleaning};

/// All messages of a request. The last one is written as it is: the request builder
/// cleaned it in place and put the cache breakpoint on it, which must stay.
pub(super) struct Messages<'a> {
    pub(super) messages: &'a [Arc<Message>],
    pub(super) caching: bool,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.messages.len()))?;
        let last = self.messages.len().saturating_sub(1);
        for (i, m) in self.messages.iter().enumerate() {
            if i == last || !needs_cleaning(m, self.caching) {
                seq.serialize_element(&**m)?;
            } else {
                seq.serialize_element(&Cleaned {
                    message: m,
                    caching: self.caching,
                })?;
            }
        }
        seq.end()
    }
}

/// A message that needs cleaning, written without the fields that are not sent.
struct Cleaned<'a> {
    message: &'a Message,
    caching: bool,
}

impl Serialize for Cleaned<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.message;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("role", &m.role)?;
        match &m.content {
            MessageContent::Blocks(blocks) => map.serialize_entry(
                "content",
                &Blocks {
                    blocks,
                    caching: self.caching,
                },
            )?,
            text @ MessageContent::Text(_) => map.serialize_entry("content", text)?,
        }
        for (k, v) in &m.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

struct Blocks<'a> {
    blocks: &'a [ContentBlock],
    caching: bool,
}

impl Serialize for Blocks<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.blocks.len()))?;
        for block in self.blocks {
            match block {
                // The common case, and the one that can be large (a file's contents as
                // the input): written field by field, as the protocol writes a tool use,
                // without `caller`.
                ContentBlock::ToolUse(t) => seq.serialize_element(&ToolUse {
                    block: t,
                    caching: self.caching,
                })?,
                b if self.caching && has_cache_control(b) => {
                    // Rare (a transcript that recorded its own breakpoints): this block
                    // alone is copied and cleaned.
                    let mut copy = b.clone();
                    if let Some(extra) = block_extra(&mut copy) {
                        extra.remove("cache_control");
                    }
                    seq.serialize_element(&copy)?;
                }
                b => seq.serialize_element(b)?,
            }
        }
        seq.end()
    }
}

fn has_cache_control(block: &ContentBlock) -> bool {
    let extra: &Map<String, Value> = match block {
        ContentBlock::Text(b) => &b.extra,
        ContentBlock::ToolResult(b) => &b.extra,
        ContentBlock::Image(b) => &b.extra,
        ContentBlock::ToolUse(b) => &b.extra,
        ContentBlock::Thinking(_)
        | ContentBlock::RedactedThinking(_)
        | ContentBlock::Unknown(_) => {
            return false;
        }
    };
    extra.contains_key("cache_control")
}

/// A tool use as the protocol writes it (`type`, `id`, `name`, `input`, then the fields
/// strata does not model), without `caller` and, when caching, without `cache_control`.
struct ToolUse<'a> {
    block: &'a strata_protocol::message::ToolUseBlock,
    caching: bool,
}

impl Serialize for ToolUse<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b = self.block;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", "tool_use")?;
        map.serialize_entry("id", &b.id)?;
        map.serialize_entry("name", &b.name)?;
        map.serialize_entry("input", &b.input)?;
        for (k, v) in &b.extra {
            if !(self.caching && k == "cache_control") {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use strata_protocol::message::Role;

    /// The old way: a cleaned copy of every message, serialized as the protocol does.
    fn cleaned_copies(messages: &[Arc<Message>], caching: bool) -> Vec<u8> {
        let copies: Vec<Message> = messages
            .iter()
            .map(|m| {
                let mut m = (**m).clone();
                if let MessageContent::Blocks(blocks) = &mut m.content {
                    for block in blocks {
                        if let ContentBlock::ToolUse(t) = block {
                            t.caller = None;
                        }
                        if caching && let Some(extra) = block_extra(block) {
                            extra.remove("cache_control");
                        }
                    }
                }
                m
            })
            .collect();
        serde_json::to_vec(&copies).unwrap()
    }

    fn conversation() -> Vec<Arc<Message>> {
        let mut tool_use =
            ContentBlock::tool_use("toolu_1", "Write", json!({"content": "x".repeat(100)}));
        if let ContentBlock::ToolUse(t) = &mut tool_use {
            t.caller = Some(json!({"type": "direct"}));
            t.extra
                .insert("cache_control".into(), json!({"type": "ephemeral"}));
            t.extra.insert("later_field".into(), json!(1));
        }
        let mut text = ContentBlock::text("done");
        if let ContentBlock::Text(t) = &mut text {
            t.extra
                .insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        let mut assistant = Message::blocks(
            Role::Assistant,
            vec![ContentBlock::text("writing"), tool_use, text],
        );
        assistant.extra.insert("odd".into(), json!(true));
        vec![
            Arc::new(Message::user_text("write it")),
            Arc::new(assistant),
            Arc::new(Message::blocks(
                Role::User,
                vec![ContentBlock::tool_result("toolu_1", "ok", false)],
            )),
            Arc::new(Message::user_text("last")),
        ]
    }

    /// The request body of a conversation with `caller` and foreign breakpoints is the
    /// same bytes as the cleaned copies gave, with caching and without.
    #[test]
    fn cleaning_while_writing_gives_the_bytes_of_a_cleaned_copy() {
        let ms = conversation();
        for caching in [true, false] {
            let ours = serde_json::to_vec(&Messages {
                messages: &ms,
                caching,
            })
            .unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(cleaned_copies(&ms, caching)).unwrap(),
                "caching: {caching}"
            );
        }
    }

    #[test]
    fn caller_is_never_sent_and_the_shared_messages_are_untouched() {
        let ms = conversation();
        let body: Value = serde_json::to_value(Messages {
            messages: &ms,
            caching: false,
        })
        .unwrap();
        let tool_use = &body[1]["content"][1];
        assert_eq!(tool_use["type"], "tool_use");
        assert!(tool_use.get("caller").is_none());
        // Without caching, breakpoints recorded in the transcript are sent as they are.
        assert_eq!(tool_use["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(tool_use["later_field"], 1);
        let MessageContent::Blocks(blocks) = &ms[1].content else {
            panic!("blocks")
        };
        assert!(matches!(&blocks[1], ContentBlock::ToolUse(t) if t.caller.is_some()));
    }
}
