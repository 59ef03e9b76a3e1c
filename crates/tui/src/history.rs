//! The history as lines for the scrollback: the store's messages, rendered once each.
//!
//! The rendering itself (markdown, code blocks, tool calls with their results, diffs) is
//! the [`cells`](crate::cells) module's; this adapter is where the app asks for it, so the
//! app does not depend on how cells are made. Lines go into the terminal's scrollback and
//! are never written again, so a tool call is committed together with its result:
//! [`settled`] says how far the conversation can be committed now.

use std::collections::HashSet;
use std::sync::Arc;

use ratatui::text::Line;
use strata_protocol::message::{ContentBlock, Message, MessageContent};

use crate::cells::{RenderOptions, cells_from_messages, render_cell};

/// How history is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryOptions {
    /// Show thinking and full tool results.
    pub verbose: bool,
}

/// The lines of `messages` at `width`, one blank line before each item.
pub fn render(messages: &[Arc<Message>], width: u16, opts: HistoryOptions) -> Vec<Line<'static>> {
    let render_opts = RenderOptions {
        verbose: opts.verbose,
        expanded: opts.verbose,
        // The terminal writer drops styles when colour is off (NO_COLOR, TERM=dumb).
        color: true,
    };
    let mut out = Vec::new();
    for cell in cells_from_messages(messages.iter().map(AsRef::as_ref)) {
        let lines = render_cell(&cell, width.max(8), &render_opts);
        if !lines.is_empty() {
            out.push(Line::from(""));
            out.extend(lines);
        }
    }
    out
}

/// How many of `messages` (from the start) can be committed to the scrollback now: all
/// of them, except from the first one whose tool calls are still waiting for a result
/// (committed later with it, so the call and its outcome are one item).
pub fn settled(messages: &[Arc<Message>]) -> usize {
    let mut answered: HashSet<&str> = HashSet::new();
    for m in messages {
        for block in blocks(m) {
            if let ContentBlock::ToolResult(r) = block {
                answered.insert(r.tool_use_id.as_str());
            }
        }
    }
    let waiting = messages.iter().position(|m| {
        blocks(m)
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse(u) if !answered.contains(u.id.as_str())))
    });
    match waiting {
        // Only results can still come for it; anything else after it (a new prompt, an
        // interrupted turn's next answer) means its result never will, and the history
        // must not stop there.
        Some(at)
            if messages[at + 1..].iter().all(|m| {
                !blocks(m).is_empty()
                    && blocks(m)
                        .iter()
                        .all(|b| matches!(b, ContentBlock::ToolResult(_)))
            }) =>
        {
            at
        }
        _ => messages.len(),
    }
}

fn blocks(m: &Message) -> &[ContentBlock] {
    match &m.content {
        MessageContent::Blocks(b) => b,
        MessageContent::Text(_) => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_protocol::message::Role;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn prompts_and_answers_are_rendered_thinking_hidden_unless_verbose() {
        let msgs = vec![
            Arc::new(Message::user_text("hello")),
            Arc::new(Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::Thinking(strata_protocol::message::ThinkingBlock {
                        thinking: "hmm".into(),
                        ..Default::default()
                    }),
                    ContentBlock::Text(strata_protocol::message::TextBlock {
                        text: "hi **there**".into(),
                        extra: Default::default(),
                    }),
                ],
            )),
        ];
        let plain = text(&render(&msgs, 40, HistoryOptions::default()));
        assert!(plain.iter().any(|l| l.contains("hello")), "{plain:?}");
        assert!(plain.iter().any(|l| l.contains("hi there")), "{plain:?}");
        assert!(!plain.iter().any(|l| l.contains("hmm")), "{plain:?}");
        let verbose = text(&render(&msgs, 40, HistoryOptions { verbose: true }));
        assert!(verbose.iter().any(|l| l.contains("hmm")));
    }

    /// A tool call waits for its result before it goes to the scrollback (lines there are
    /// never rewritten), so the two are committed as one item.
    #[test]
    fn a_call_without_its_result_is_not_settled_yet() {
        let call = Message::blocks(
            Role::Assistant,
            vec![ContentBlock::tool_use(
                "t1",
                "Bash",
                serde_json::json!({"command": "ls"}),
            )],
        );
        let result = Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result("t1", "a.txt".to_owned(), false)],
        );
        let mut msgs = vec![Arc::new(Message::user_text("list")), Arc::new(call)];
        assert_eq!(settled(&msgs), 1);
        msgs.push(Arc::new(result));
        assert_eq!(settled(&msgs), 3);
        // A call whose result never comes (an interrupted turn) does not stop the
        // history once something else follows it.
        let lost = Message::blocks(
            Role::Assistant,
            vec![ContentBlock::tool_use(
                "t2",
                "Bash",
                serde_json::json!({"command": "ls"}),
            )],
        );
        let mut later = msgs.clone();
        later.push(Arc::new(lost));
        assert_eq!(settled(&later), 3);
        later.push(Arc::new(Message::user_text("never mind")));
        assert_eq!(settled(&later), 5);
        let lines = text(&render(&msgs[1..], 60, HistoryOptions::default()));
        assert!(lines.iter().any(|l| l.contains("Bash(ls)")), "{lines:?}");
        assert!(!lines.iter().any(|l| l.contains("?")), "paired: {lines:?}");
    }
}
