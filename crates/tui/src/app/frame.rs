//! The live area of a frame (streaming answer, spinner, todos, the dialog or an overlay
//! or the prompt, footer, status line) and the transcript view's lines.

use std::sync::Arc;
use std::time::Instant;

use ratatui::style::{Color, Style};
use ratatui::text::Line;
use strata_protocol::message::Message;
use strata_state::TodoItem;

use super::App;
use crate::history::{self, HistoryOptions};
use crate::term::Frame;
use crate::view;

impl App {
    /// The live area at the current width.
    pub fn frame(&mut self, now: Instant) -> Frame {
        self.dirty = false;
        let width = self.width.max(1);
        let mut lines: Vec<Line<'static>> = Vec::new();
        if self.verbose() && !self.live_thinking.is_empty() {
            for l in crate::text::wrap(
                visible_tail(&self.live_thinking, width),
                usize::from(width).saturating_sub(2),
            ) {
                lines.push(Line::styled(
                    format!("✻ {l}"),
                    Style::default().fg(Color::DarkGray),
                ));
            }
        }
        if !self.live.is_empty() {
            lines.push(Line::from(""));
            for (i, l) in crate::text::wrap(
                visible_tail(&self.live, width),
                usize::from(width).saturating_sub(2),
            )
            .into_iter()
            .enumerate()
            {
                lines.push(Line::from(format!(
                    "{}{l}",
                    if i == 0 { "● " } else { "  " }
                )));
            }
        }
        if let Some(t) = &self.turn {
            lines.push(Line::from(""));
            lines.push(view::spinner(now - t.started, t.tokens, width));
        }
        if self.show_todos {
            lines.push(Line::from(""));
            let items: Vec<Arc<TodoItem>> = self
                .todos_sel
                .value()
                .0
                .values()
                .flat_map(|v| v.iter().cloned())
                .collect();
            lines.extend(view::todos(&items, width));
        }
        lines.push(Line::from(""));
        let cursor;
        if let Some(d) = &self.dialog {
            lines.extend(d.render(width));
            cursor = None;
        } else if let Some(a) = &self.ask {
            lines.extend(a.render(width));
            cursor = None;
        } else if self.tasks_panel.is_some() {
            self.panel_tick(now);
            if let Some(p) = &self.tasks_panel {
                lines.extend(p.render(width, now_ms()));
            }
            cursor = None;
        } else if let Some(o) = &self.overlay {
            lines.extend(o.render(width, true));
            cursor = None;
        } else {
            let (input, (row, col)) = self.input.render(width, &self.placeholder);
            cursor = Some((lines.len() + row, col));
            lines.extend(input);
            lines.extend(self.completion.render(width));
        }
        lines.push(view::footer(&self.footer, width));
        if let Some(status) = &self.status_line {
            for l in status.lines().take(3) {
                lines.push(Line::from(
                    crate::text::cut_to_width(l, usize::from(width)).to_owned(),
                ));
            }
        }
        Frame { lines, cursor }
    }

    /// The whole conversation for the transcript view (verbose: thinking and full tool
    /// output).
    pub fn transcript(&self, width: u16) -> Vec<Line<'static>> {
        let msgs: Vec<Arc<Message>> = self.messages.value().iter().cloned().collect();
        history::render(&msgs, width, HistoryOptions { verbose: true })
    }
}

/// The end of a streaming text that can be on screen: the live area shows at most half a
/// screen ([`crate::term::max_live_rows`]), so only the last few thousand characters are
/// wrapped, starting at a line break where there is one, and a frame's cost does not
/// grow with the answer (a 1 MB answer is wrapped in full once, in the history).
fn visible_tail(text: &str, width: u16) -> &str {
    let keep = usize::from(width.max(20)) * 300;
    if text.len() <= keep {
        return text;
    }
    let mut start = text.len() - keep;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let tail = &text[start..];
    match tail.find('\n') {
        Some(i) => &tail[i + 1..],
        None => tail,
    }
}

/// The wall clock in ms since the epoch (task times are kept that way).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
