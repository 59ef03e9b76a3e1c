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
            // The streaming answer is rendered as it will be committed (markdown), so
            // headings, emphasis and code blocks look the same before and after.
            lines.push(Line::from(""));
            let opts = crate::cells::RenderOptions {
                verbose: false,
                expanded: false,
                color: true,
            };
            let tail = self.live.visible_markdown(width);
            lines.extend(crate::cells::render_markdown(&tail, width.max(8), &opts));
        }
        if let Some(t) = &self.turn {
            lines.push(Line::from(""));
            let waiting = self.engine.store().with(|s| s.mcp.turn_waits_for.clone());
            lines.push(view::spinner(
                now - t.started,
                t.tokens,
                waiting.as_deref(),
                width,
            ));
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
        if let Some(question) = self.question_lines(width, now) {
            lines.extend(question);
            cursor = None;
        } else {
            let (input, (row, col)) = self.input.render(width, &self.placeholder);
            cursor = Some((lines.len() + row, col));
            lines.extend(input);
            lines.extend(self.completion.render(width));
            lines.extend(self.menu_lines(width));
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

    /// Whether something waits for the user in the prompt's place
    /// ([`App::question_lines`] would draw it).
    pub fn question_open(&self) -> bool {
        self.dialog.is_some()
            || self.ask.is_some()
            || self.tasks_panel.is_some()
            || self.overlay.is_some()
    }

    /// What waits for the user in the prompt's place — the permission dialog, a
    /// question, the tasks panel or a list (pickers, history search, rewind) — as lines;
    /// `None` while the prompt itself is open.
    pub fn question_lines(&mut self, width: u16, now: Instant) -> Option<Vec<Line<'static>>> {
        if let Some(d) = &self.dialog {
            return Some(d.render(width));
        }
        if let Some(a) = &self.ask {
            return Some(a.render(width));
        }
        if self.tasks_panel.is_some() {
            self.panel_tick(now);
            return self.tasks_panel.as_ref().map(|p| p.render(width, now_ms()));
        }
        self.overlay.as_ref().map(|o| o.render(width, true))
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

/// The streaming answer's text, with what a frame needs to draw only its visible tail as
/// markdown: how many code-fence lines stand before the tail's cut. The count moves with
/// the cut (the text only grows between clears), so over a whole answer each byte is
/// scanned once, and a frame's cost does not grow with the answer.
#[derive(Debug, Default)]
pub(super) struct LiveText {
    text: String,
    /// Bytes of `text` whose fence lines are counted in `fences`.
    counted: usize,
    fences: usize,
}

impl LiveText {
    pub(super) fn as_str(&self) -> &str {
        &self.text
    }

    pub(super) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.text.len()
    }

    pub(super) fn push_str(&mut self, more: &str) {
        self.text.push_str(more);
    }

    pub(super) fn clear(&mut self) {
        self.text.clear();
        self.counted = 0;
        self.fences = 0;
    }

    /// The markdown as it can be on screen: the [`visible_tail`], reopened with a fence
    /// when the cut falls inside a code block (an odd number of fence lines before it),
    /// so the tail of a long code block is still drawn as code.
    pub(super) fn visible_markdown(&mut self, width: u16) -> std::borrow::Cow<'_, str> {
        let cut = self.text.len() - visible_tail(&self.text, width).len();
        let bytes = self.text.as_bytes();
        let at_line_start = |i: usize| i == 0 || bytes[i - 1] == b'\n';
        if cut > self.counted {
            let from = self.counted;
            self.fences += memchr::memmem::find_iter(&bytes[from..cut], b"```")
                .filter(|&i| at_line_start(from + i))
                .count();
            self.counted = cut;
        }
        let tail = &self.text[cut..];
        if self.fences % 2 == 1 {
            std::borrow::Cow::Owned(format!("```\n{tail}"))
        } else {
            std::borrow::Cow::Borrowed(tail)
        }
    }
}

/// The wall clock in ms since the epoch (task times are kept that way).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(text: &str) -> LiveText {
        let mut live = LiveText::default();
        live.push_str(text);
        live
    }

    #[test]
    fn a_short_answer_is_its_own_tail() {
        let mut text = live("# Title\n\nsome **bold**");
        assert_eq!(text.visible_markdown(80), "# Title\n\nsome **bold**");
    }

    #[test]
    fn a_tail_cut_inside_a_code_block_is_reopened_as_code() {
        let code: String = (0..5_000).map(|i| format!("let x{i} = {i};\n")).collect();
        let full = format!("Here:\n\n```rust\n{code}");
        let mut text = live(&full);
        let tail = text.visible_markdown(40);
        assert!(tail.len() < full.len());
        assert!(tail.starts_with("```\n"), "{}", &tail[..40]);
        // A closed block before the cut is not reopened.
        let mut text = live(&format!("```\nshort\n```\n{}", "word ".repeat(40_000)));
        assert!(!text.visible_markdown(40).starts_with("```"));
    }

    #[test]
    fn the_fence_count_follows_the_growing_answer_and_starts_again_after_a_clear() {
        let mut text = live("intro\n```\n");
        for i in 0..5_000 {
            text.push_str(&format!("line {i}\n"));
            let _ = text.visible_markdown(40);
        }
        // Still inside the block: the tail is drawn as code, counted a piece at a time.
        assert!(text.visible_markdown(40).starts_with("```\n"));
        text.push_str("```\n");
        text.push_str(&"after the block\n".repeat(3_000));
        assert!(!text.visible_markdown(40).starts_with("```"));
        text.clear();
        text.push_str(&"plain words\n".repeat(5_000));
        assert!(!text.visible_markdown(40).starts_with("```"));
    }
}
