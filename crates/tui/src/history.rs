//! The history as lines for the scrollback: the store's messages, rendered once each.
//!
//! The rich rendering (markdown, code blocks, diffs, collapsible tool results) is the
//! `cells` module's; this adapter is where the app asks for it, so the app does not
//! depend on how cells are made. Until the cells land it renders plain text: user
//! prompts, the answer's text, a one-line header per tool call and the first line of its
//! result, thinking only when verbose.

use std::sync::Arc;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use strata_protocol::message::{ContentBlock, Message, MessageContent, Role, ToolResultContent};

/// How history is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryOptions {
    /// Show thinking and full tool results.
    pub verbose: bool,
}

/// The lines of `messages` at `width`, one blank line between items.
pub fn render(messages: &[Arc<Message>], width: u16, opts: HistoryOptions) -> Vec<Line<'static>> {
    let width = usize::from(width).max(8);
    let mut out = Vec::new();
    for m in messages {
        let blocks: Vec<ContentBlock> = match &m.content {
            MessageContent::Text(t) => {
                vec![ContentBlock::Text(strata_protocol::message::TextBlock {
                    text: t.clone(),
                    extra: Default::default(),
                })]
            }
            MessageContent::Blocks(b) => b.clone(),
        };
        for block in &blocks {
            let item = block_lines(m.role, block, width, opts);
            if !item.is_empty() {
                out.push(Line::from(""));
                out.extend(item);
            }
        }
    }
    out
}

fn block_lines(
    role: Role,
    block: &ContentBlock,
    width: usize,
    opts: HistoryOptions,
) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    match (role, block) {
        (Role::User, ContentBlock::Text(t)) => {
            if t.text.trim().is_empty() {
                return Vec::new();
            }
            let style = Style::default().add_modifier(Modifier::BOLD);
            crate::text::wrap(&t.text, width - 2)
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    Line::styled(format!("{}{l}", if i == 0 { "> " } else { "  " }), style)
                })
                .collect()
        }
        (Role::Assistant, ContentBlock::Text(t)) => {
            let mut lines = Vec::new();
            for (i, l) in crate::text::wrap(t.text.trim_end(), width - 2)
                .into_iter()
                .enumerate()
            {
                lines.push(Line::from(format!(
                    "{}{l}",
                    if i == 0 { "● " } else { "  " }
                )));
            }
            lines
        }
        (_, ContentBlock::Thinking(t)) if opts.verbose => crate::text::wrap(&t.thinking, width - 2)
            .into_iter()
            .map(|l| Line::styled(format!("✻ {l}"), dim.add_modifier(Modifier::ITALIC)))
            .collect(),
        (_, ContentBlock::ToolUse(u)) => {
            let subject = ["command", "file_path", "pattern", "path"]
                .iter()
                .find_map(|k| u.input.get(*k).and_then(|v| v.as_str()))
                .unwrap_or("");
            let head =
                crate::text::cut_to_width(&format!("● {}({subject})", u.name), width).to_owned();
            vec![Line::styled(
                head,
                Style::default().add_modifier(Modifier::BOLD),
            )]
        }
        (_, ContentBlock::ToolResult(r)) => {
            let text = match &r.content {
                Some(ToolResultContent::Text(t)) => t.clone(),
                Some(ToolResultContent::Blocks(b)) => b
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                None => String::new(),
            };
            let all: Vec<&str> = text.lines().collect();
            let shown = if opts.verbose {
                all.len()
            } else {
                all.len().min(3)
            };
            let style = if r.is_error == Some(true) {
                Style::default().fg(Color::Red)
            } else {
                dim
            };
            let mut lines: Vec<Line<'static>> = all[..shown]
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let l = crate::text::cut_to_width(l, width - 5).to_owned();
                    Line::styled(
                        format!("{}{l}", if i == 0 { "  ⎿  " } else { "     " }),
                        style,
                    )
                })
                .collect();
            if shown < all.len() {
                lines.push(Line::styled(
                    format!("     … +{} lines (ctrl+o to expand)", all.len() - shown),
                    dim,
                ));
            }
            if lines.is_empty() {
                lines.push(Line::styled("  ⎿  (no output)", dim));
            }
            lines
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                        text: "hi there".into(),
                        extra: Default::default(),
                    }),
                ],
            )),
        ];
        let text: Vec<String> = render(&msgs, 40, HistoryOptions::default())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(text, ["", "> hello", "", "● hi there"]);
        let verbose: Vec<String> = render(&msgs, 40, HistoryOptions { verbose: true })
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(verbose.iter().any(|l| l.contains("hmm")));
    }
}
