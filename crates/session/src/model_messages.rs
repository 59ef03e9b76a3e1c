//! Turning the live conversation into the messages sent to the model on resume, by the
//! rules of `COMPAT.md` ("Turning the live conversation into model messages"), so a
//! resumed session continues with the same conversation in strata and in the reference
//! agent.
//!
//! 1. Each response (`message.id`) becomes one assistant message with its blocks in chain
//!    order, followed by one user message with all of that response's tool results.
//! 2. Dropped: `progress` lines, `system` lines other than `local_command` (which becomes
//!    a user text message), `attachment` lines, whitespace-only text blocks, and the
//!    `caller` field of tool uses.
//! 3. Thinking blocks are kept with their signatures.
//! 4. The legacy tool name `Task` is sent as `Agent`.
//! 5. Consecutive messages of the same role are merged; in a merged user message a text
//!    block followed by another message's blocks gets a trailing `"\n"`.
//! 6. A conversation whose last user/assistant line is a tool result or an interruption
//!    notice gets `Continue from where you left off.`; a conversation that then ends with
//!    a user message gets the assistant reply `No response requested.`.
//! 7. The model recorded last in the transcript is kept.
//!
//! The Messages API rejects a tool use without its result, a result without its tool use,
//! a tool id used twice and tool blocks in the wrong role, so such blocks (left by an
//! interrupted turn, a lost line or a damaged file) are dropped and counted; a dropped
//! tool use in the last turn marks the session as interrupted.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

use crate::chain::IdHasher;

/// Maps keyed by tool and response ids: short strings, hashed cheaply.
type IdKeyed<V> = HashMap<String, V, BuildHasherDefault<IdHasher>>;
type IdSet = HashSet<String, BuildHasherDefault<IdHasher>>;

use strata_protocol::message::{
    AssistantMessage, ContentBlock, Message, MessageContent, Role, Usage,
};

/// The text a resumed conversation gets when it stopped in the middle of a turn.
pub const CONTINUE_TEXT: &str = "Continue from where you left off.";
/// The assistant reply put after a conversation that ends with a user message.
pub const NO_RESPONSE_TEXT: &str = "No response requested.";
/// The start of the text the reference agent records when the user interrupts a turn.
pub const INTERRUPTED_PREFIX: &str = "[Request interrupted by user";

/// One entry of the live conversation, as the conversion needs it.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveItem {
    /// A `user` line's message.
    User(Message),
    /// An `assistant` line's message (boxed: it is several times the size of the others,
    /// and a long conversation holds one item per entry).
    Assistant(Box<AssistantMessage>),
    /// A `system` `local_command` line's content.
    LocalCommand(String),
    /// Any other line of the chain (progress, attachments, other system lines).
    Other,
}

/// What the conversion needs of an assistant line's message: its stop reason and the
/// rest are skipped unparsed (cost comes from the line index, and a split response's
/// lines are merged into one message anyway). The usage is kept as raw text and read
/// leniently for its token counts: a usage strata cannot read never makes the line
/// unreadable.
#[derive(serde::Deserialize)]
struct AssistantBody<'a> {
    #[serde(default)]
    id: String,
    #[serde(default)]
    model: String,
    content: MessageContent,
    #[serde(default, borrow)]
    usage: Option<&'a serde_json::value::RawValue>,
}

/// The token counts of a usage object (what the context size is made of).
#[derive(serde::Deserialize)]
struct Counts {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

fn counts(raw: Option<&serde_json::value::RawValue>) -> Usage {
    raw.and_then(|r| serde_json::from_str::<Counts>(r.get()).ok())
        .map(|c| Usage {
            input_tokens: c.input_tokens.unwrap_or(0),
            cache_creation_input_tokens: c.cache_creation_input_tokens,
            cache_read_input_tokens: c.cache_read_input_tokens,
            output_tokens: c.output_tokens.unwrap_or(0),
            ..Usage::default()
        })
        .unwrap_or_default()
}

/// Parses the `message` of a `user` (`assistant` when `!user`) line; `None` when it is
/// not a valid message.
pub(crate) fn parse_body(user: bool, bytes: &[u8]) -> Option<LiveItem> {
    if user {
        return serde_json::from_slice::<Message>(bytes)
            .ok()
            .map(LiveItem::User);
    }
    let b: AssistantBody<'_> = serde_json::from_slice(bytes).ok()?;
    Some(LiveItem::Assistant(Box::new(AssistantMessage {
        usage: counts(b.usage),
        model: b.model,
        id: b.id,
        content: b.content.into_blocks(),
        ..AssistantMessage::default()
    })))
}

/// The messages to send, and what the conversion noticed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelConversation {
    /// The messages, alternating user and assistant.
    pub messages: Vec<Message>,
    /// The model of the last real (non-synthetic) response.
    pub model: Option<String>,
    /// Whether the last turn was cut off (tool calls without results, a pending tool
    /// result, or an interruption notice).
    pub interrupted: bool,
    /// Tool uses dropped because no result answers them.
    pub dropped_tool_uses: usize,
    /// Tool results dropped because no earlier tool use in the conversation issued them.
    pub dropped_tool_results: usize,
    /// Line numbers of live entries whose message body could not be parsed (left out).
    pub unreadable_lines: Vec<u32>,
    /// The token usage of the last real response, if the live conversation has one: how
    /// full the context was when it was answered (the reference agent's count after a
    /// resume). Only the token counts are read.
    pub last_usage: Option<Usage>,
    /// How many of `messages` (from the start) that usage counted; the ones after it were
    /// added later (its tool results, a prompt not yet answered).
    pub usage_covers: usize,
}

#[derive(Debug)]
enum Slot {
    /// The assistant message of one response.
    Response,
    /// The user message holding that response's tool results.
    Results,
    /// Any other message.
    Plain,
}

#[derive(Debug)]
struct Group {
    role: Role,
    slot: Slot,
    blocks: Vec<ContentBlock>,
}

/// Converts the live conversation (in chain order) into model messages.
pub fn to_model_messages(items: Vec<LiveItem>) -> ModelConversation {
    let mut out = ModelConversation::default();
    let last_line = items
        .iter()
        .rev()
        .find(|i| matches!(i, LiveItem::User(_) | LiveItem::Assistant(_)))
        .map(ends_mid_turn);
    let mut groups: Vec<Group> = Vec::new();
    let mut response_at: IdKeyed<usize> = IdKeyed::default();
    let mut tool_owner: IdKeyed<String> = IdKeyed::default();
    let mut answered: IdSet = IdSet::default();
    // The group of the last real response, and its usage.
    let mut last_real: Option<(usize, Usage)> = None;
    for (n, item) in items.into_iter().enumerate() {
        match item {
            LiveItem::Assistant(m) => {
                let real = !m.is_synthetic();
                if real {
                    out.model = Some(m.model.clone());
                }
                // A response without an id is its own response.
                let id = if m.id.is_empty() {
                    format!("\u{0}line{n}")
                } else {
                    m.id
                };
                let at = *response_at.entry(id.clone()).or_insert_with(|| {
                    groups.push(Group {
                        role: Role::Assistant,
                        slot: Slot::Response,
                        blocks: Vec::new(),
                    });
                    groups.push(Group {
                        role: Role::User,
                        slot: Slot::Results,
                        blocks: Vec::new(),
                    });
                    groups.len() - 2
                });
                // A line without a usage says nothing of the context's size.
                if real && m.usage != Usage::default() {
                    last_real = Some((at, m.usage.clone()));
                }
                // A tool id must be unique in a conversation; a result belongs in a user
                // message. Either kind of damage is dropped. The blocks are filtered in
                // place and the vector handed over whole when the response is new, so a
                // long conversation's blocks are not copied one by one.
                let mut content = m.content;
                content.retain(|b| match b {
                    ContentBlock::ToolUse(u) if tool_owner.contains_key(&u.id) => {
                        out.dropped_tool_uses += 1;
                        false
                    }
                    ContentBlock::ToolUse(u) => {
                        tool_owner.insert(u.id.clone(), id.clone());
                        true
                    }
                    ContentBlock::ToolResult(_) => {
                        out.dropped_tool_results += 1;
                        false
                    }
                    _ => true,
                });
                if groups[at].blocks.is_empty() {
                    groups[at].blocks = content;
                } else {
                    groups[at].blocks.append(&mut content);
                }
            }
            LiveItem::User(m) => {
                let mut plain = m.content.into_blocks();
                if plain
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult(_) | ContentBlock::ToolUse(_)))
                {
                    for b in std::mem::take(&mut plain) {
                        match &b {
                            ContentBlock::ToolResult(r) => match tool_owner.get(&r.tool_use_id) {
                                Some(owner) if answered.insert(r.tool_use_id.clone()) => {
                                    groups[response_at[owner] + 1].blocks.push(b);
                                }
                                // No tool use issued it, or it was answered already.
                                _ => out.dropped_tool_results += 1,
                            },
                            ContentBlock::ToolUse(_) => out.dropped_tool_uses += 1,
                            _ => plain.push(b),
                        }
                    }
                }
                if !plain.is_empty() {
                    groups.push(Group {
                        role: Role::User,
                        slot: Slot::Plain,
                        blocks: plain,
                    });
                }
            }
            LiveItem::LocalCommand(text) => {
                groups.push(Group {
                    role: Role::User,
                    slot: Slot::Plain,
                    blocks: vec![ContentBlock::text(text)],
                });
            }
            LiveItem::Other => {}
        }
    }

    drop_unanswered_tool_uses(&mut groups, &mut out);
    for g in &mut groups {
        g.blocks
            .retain(|b| !b.as_text().is_some_and(|t| t.trim().is_empty()));
        for b in &mut g.blocks {
            if let ContentBlock::ToolUse(u) = b {
                u.caller = None;
                if u.name == "Task" {
                    u.name = "Agent".to_owned();
                }
            }
        }
    }

    let mut messages: Vec<Message> = Vec::new();
    let last_real_group = last_real.as_ref().map(|(at, _)| *at);
    for (i, g) in groups.into_iter().enumerate() {
        if !g.blocks.is_empty() {
            push_merged(&mut messages, g.role, g.blocks);
        }
        if Some(i) == last_real_group {
            out.usage_covers = messages.len();
        }
    }
    out.last_usage = last_real.map(|(_, usage)| usage);
    if last_line == Some(true) {
        out.interrupted = true;
        push_merged(
            &mut messages,
            Role::User,
            vec![ContentBlock::text(CONTINUE_TEXT)],
        );
    }
    if messages.last().is_some_and(|m| m.role == Role::User) {
        push_merged(
            &mut messages,
            Role::Assistant,
            vec![ContentBlock::text(NO_RESPONSE_TEXT)],
        );
    }
    out.messages = messages;
    out
}

/// Whether the last user/assistant line shows a turn cut off (rule 6).
fn ends_mid_turn(item: &LiveItem) -> bool {
    let LiveItem::User(m) = item else {
        return false;
    };
    match &m.content {
        MessageContent::Text(t) => t.starts_with(INTERRUPTED_PREFIX),
        MessageContent::Blocks(b) => b.iter().any(|b| match b {
            ContentBlock::ToolResult(_) => true,
            ContentBlock::Text(t) => t.text.starts_with(INTERRUPTED_PREFIX),
            _ => false,
        }),
    }
}

/// Removes tool uses whose response is not followed by their result.
fn drop_unanswered_tool_uses(groups: &mut [Group], out: &mut ModelConversation) {
    let last_response = groups
        .iter()
        .rposition(|g| matches!(g.slot, Slot::Response));
    for at in 0..groups.len() {
        if !matches!(groups[at].slot, Slot::Response) {
            continue;
        }
        let answered: IdSet = groups[at + 1]
            .blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some(r.tool_use_id.clone()),
                _ => None,
            })
            .collect();
        let before = groups[at].blocks.len();
        groups[at].blocks.retain(|b| match b {
            ContentBlock::ToolUse(u) => answered.contains(&u.id),
            _ => true,
        });
        let dropped = before - groups[at].blocks.len();
        out.dropped_tool_uses += dropped;
        if dropped > 0 && Some(at) == last_response {
            out.interrupted = true;
        }
    }
}

/// Appends a message, merging it into the last one when the roles match (rule 5).
fn push_merged(messages: &mut Vec<Message>, role: Role, mut blocks: Vec<ContentBlock>) {
    match messages.last_mut() {
        Some(last) if last.role == role => {
            let MessageContent::Blocks(prev) = &mut last.content else {
                // Every message built here holds blocks.
                return;
            };
            if role == Role::User
                && let Some(ContentBlock::Text(t)) = prev.last_mut()
            {
                t.text.push('\n');
            }
            prev.append(&mut blocks);
        }
        _ => messages.push(Message::blocks(role, blocks)),
    }
}

#[cfg(test)]
mod tests;
