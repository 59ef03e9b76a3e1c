//! History cells: the finished items of the conversation as the UI shows them.
//!
//! A cell is built from the store's messages ([`cells_from_messages`], which pairs each
//! `tool_use` with the `tool_result` that answers it) and rendered once, at a width, into
//! lines written to the terminal's scrollback ([`render_cell`]). Rendering is pure: the
//! same cell, width and options give the same lines, and nothing is cached here, because
//! a cell is rendered once. The caller separates cells with one blank line.

mod markdown;
mod render;
mod wrap;

use std::collections::HashMap;

use serde_json::Value;
use strata_protocol::message::{ContentBlock, Message, MessageContent, Role, ToolResultContent};

pub use markdown::render_markdown;
pub use render::render_cell;

/// How cells render.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Show thinking (Ctrl-O verbose).
    pub verbose: bool,
    /// Show tool results in full instead of a one-line summary.
    pub expanded: bool,
    /// Styled output; `false` gives plain text (`TERM=dumb`, no colour support).
    pub color: bool,
}

/// One finished history item.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryCell {
    /// A prompt the user typed.
    User {
        /// Its text.
        text: String,
    },
    /// An assistant answer (markdown).
    Assistant {
        /// The markdown.
        markdown: String,
    },
    /// The model's reasoning; shown only when verbose.
    Thinking {
        /// The reasoning text (`[redacted]` for redacted thinking).
        text: String,
    },
    /// A tool call and its result, when it has one.
    Tool(ToolCall),
    /// A notice from strata itself (a command's output).
    Info {
        /// The text.
        text: String,
    },
    /// An error (shown in red).
    Error {
        /// The text.
        text: String,
    },
}

/// A tool call, paired with its result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The `tool_use` id.
    pub id: String,
    /// The tool's name (`Bash`, `Edit`, …).
    pub name: String,
    /// The arguments.
    pub input: Value,
    /// The result; `None` while the call runs (or when it never got one).
    pub result: Option<ToolOutcome>,
}

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The result's text (text blocks joined; images as `[image]`).
    pub text: String,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// Builds the history cells of a conversation. Each tool call is one cell holding its
/// result (found by `tool_use_id` in a later user message); a result whose call is not
/// in `msgs` becomes a call named `?` so nothing is hidden.
pub fn cells_from_messages<'a>(msgs: impl IntoIterator<Item = &'a Message>) -> Vec<HistoryCell> {
    let mut cells = Vec::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    for msg in msgs {
        let blocks: &[ContentBlock] = match &msg.content {
            MessageContent::Text(t) => {
                push_text(&mut cells, msg.role, t);
                continue;
            }
            MessageContent::Blocks(b) => b,
        };
        for block in blocks {
            match block {
                ContentBlock::Text(t) => push_text(&mut cells, msg.role, &t.text),
                ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                    cells.push(HistoryCell::Thinking {
                        text: t.thinking.clone(),
                    });
                }
                ContentBlock::RedactedThinking(_) => {
                    cells.push(HistoryCell::Thinking {
                        text: "[redacted]".to_owned(),
                    });
                }
                ContentBlock::ToolUse(u) => {
                    calls.insert(u.id.clone(), cells.len());
                    cells.push(HistoryCell::Tool(ToolCall {
                        id: u.id.clone(),
                        name: u.name.clone(),
                        input: u.input.clone(),
                        result: None,
                    }));
                }
                ContentBlock::ToolResult(r) => {
                    let outcome = ToolOutcome {
                        text: result_text(r.content.as_ref()),
                        is_error: r.is_error == Some(true),
                    };
                    match calls.get(&r.tool_use_id).and_then(|&i| cells.get_mut(i)) {
                        Some(HistoryCell::Tool(call)) => call.result = Some(outcome),
                        _ => cells.push(HistoryCell::Tool(ToolCall {
                            id: r.tool_use_id.clone(),
                            name: "?".to_owned(),
                            input: Value::Null,
                            result: Some(outcome),
                        })),
                    }
                }
                ContentBlock::Image(_) if msg.role == Role::User => {
                    push_text(&mut cells, msg.role, "[image]");
                }
                _ => {}
            }
        }
    }
    cells
}

fn push_text(cells: &mut Vec<HistoryCell>, role: Role, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    // A background task's notification to the model: the user saw its one line when
    // the task ended (`UiEvent::TaskEnded`); the model's copy is not shown again.
    if role == Role::User && text.trim_start().starts_with("<task-notification>") {
        return;
    }
    // The engine's record of an interrupted turn is not something the user typed.
    if role == Role::User
        && text
            .trim_start()
            .starts_with(strata_session::model_messages::INTERRUPTED_PREFIX)
    {
        cells.push(HistoryCell::Info {
            text: "⎿ Interrupted · what should strata do instead?".to_owned(),
        });
        return;
    }
    let text = text.to_owned();
    cells.push(match role {
        Role::User => HistoryCell::User { text },
        Role::Assistant => HistoryCell::Assistant { markdown: text },
    });
}

fn result_text(content: Option<&ToolResultContent>) -> String {
    match content {
        None => String::new(),
        Some(ToolResultContent::Text(t)) => t.clone(),
        Some(ToolResultContent::Blocks(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                ContentBlock::Image(_) => Some("[image]"),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[cfg(test)]
mod tests;
