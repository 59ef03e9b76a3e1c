//! The conversation as it is sent to the model.
//!
//! The store keeps every message as it happened (what a UI shows). The Messages API is
//! stricter: it refuses a message without content, a text block that is only
//! whitespace, and it expects the roles to alternate. A model that ends a turn with
//! nothing (it happens, mostly after tool results) or an interrupted turn followed by a
//! new prompt would otherwise make every later request of the session fail. So each
//! request is built by the rules resume uses for a recorded conversation (COMPAT.md):
//! whitespace-only text blocks and empty messages are left out, and consecutive
//! messages of one role are merged. Messages that need none of this are shared, not
//! copied.

use std::sync::Arc;

use strata_protocol::message::{ContentBlock, Message, MessageContent, Role};

/// The messages to send for `messages` (in conversation order).
pub(crate) fn request_messages<'a>(
    messages: impl IntoIterator<Item = &'a Arc<Message>>,
) -> Vec<Arc<Message>> {
    let messages = messages.into_iter();
    let mut out: Vec<Arc<Message>> = Vec::with_capacity(messages.size_hint().0);
    for m in messages {
        let m = if needs_cleaning(m) {
            match cleaned(m) {
                Some(c) => Arc::new(c),
                None => continue,
            }
        } else {
            Arc::clone(m)
        };
        match out.last_mut() {
            Some(last) if last.role == m.role => *last = Arc::new(merged(last, &m)),
            _ => out.push(m),
        }
    }
    out
}

fn blank(block: &ContentBlock) -> bool {
    block.as_text().is_some_and(|t| t.trim().is_empty())
}

/// Whether `m` holds nothing but blank text (it would be left out whole).
pub(crate) fn is_blank(m: &Message) -> bool {
    match &m.content {
        MessageContent::Text(t) => t.trim().is_empty(),
        MessageContent::Blocks(b) => b.iter().all(blank),
    }
}

fn needs_cleaning(m: &Message) -> bool {
    match &m.content {
        MessageContent::Text(t) => t.trim().is_empty(),
        MessageContent::Blocks(b) => b.is_empty() || b.iter().any(blank),
    }
}

/// `m` without its blank text; `None` when nothing is left.
fn cleaned(m: &Message) -> Option<Message> {
    let blocks: Vec<ContentBlock> = m
        .content
        .clone()
        .into_blocks()
        .into_iter()
        .filter(|b| !blank(b))
        .collect();
    (!blocks.is_empty()).then(|| Message {
        role: m.role,
        content: MessageContent::Blocks(blocks),
        extra: m.extra.clone(),
    })
}

/// `next`'s blocks appended to `last`'s. In a user message, text followed by another
/// message's blocks gets a trailing `"\n"` (COMPAT.md rule 5), so a live request and the
/// same conversation resumed are the same bytes (and hit the same prompt cache).
fn merged(last: &Message, next: &Message) -> Message {
    let mut blocks = last.content.clone().into_blocks();
    if last.role == Role::User
        && let Some(ContentBlock::Text(t)) = blocks.last_mut()
    {
        t.text.push('\n');
    }
    blocks.extend(next.content.clone().into_blocks());
    Message {
        role: last.role,
        content: MessageContent::Blocks(blocks),
        extra: last.extra.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arcs(ms: Vec<Message>) -> Vec<Arc<Message>> {
        ms.into_iter().map(Arc::new).collect()
    }

    fn texts(ms: &[Arc<Message>]) -> Vec<(Role, Vec<String>)> {
        ms.iter()
            .map(|m| {
                let blocks = m.content.clone().into_blocks();
                let t = blocks
                    .iter()
                    .map(|b| b.as_text().unwrap_or("<block>").to_owned())
                    .collect();
                (m.role, t)
            })
            .collect()
    }

    /// Regression: a model that answered with nothing left `{"role":"assistant",
    /// "content":[]}` in the conversation, and the API refused every later request.
    #[test]
    fn regression_empty_answers_are_left_out_and_the_prompts_around_them_merged() {
        let ms = arcs(vec![
            Message::user_text("one"),
            Message::blocks(Role::Assistant, vec![]),
            Message::user_text("two"),
            Message::blocks(Role::Assistant, vec![ContentBlock::text("  ")]),
            Message::user_text("three"),
        ]);
        let out = request_messages(&ms);
        assert_eq!(
            texts(&out),
            [(
                Role::User,
                vec!["one\n".into(), "two\n".into(), "three".into()]
            )]
        );
    }

    #[test]
    fn blank_prompts_are_recognised() {
        assert!(is_blank(&Message::user_text("  \n")));
        assert!(is_blank(&Message::blocks(Role::User, vec![])));
        assert!(!is_blank(&Message::user_text("hi")));
    }

    #[test]
    fn a_well_formed_conversation_is_shared_not_copied() {
        let ms = arcs(vec![
            Message::user_text("hi"),
            Message::blocks(Role::Assistant, vec![ContentBlock::text("hello")]),
        ]);
        let out = request_messages(&ms);
        assert_eq!(out.len(), 2);
        assert!(out.iter().zip(&ms).all(|(a, b)| Arc::ptr_eq(a, b)));
    }

    #[test]
    fn blank_blocks_go_and_the_rest_stays() {
        let ms = arcs(vec![
            Message::user_text("q"),
            Message::blocks(
                Role::Assistant,
                vec![ContentBlock::text(""), ContentBlock::text("a")],
            ),
        ]);
        assert_eq!(
            texts(&request_messages(&ms)),
            [
                (Role::User, vec!["q".into()]),
                (Role::Assistant, vec!["a".into()])
            ]
        );
    }
}
