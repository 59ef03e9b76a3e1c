//! The prompt editor: multi-line text with a cursor, pasted-text chips, and the input
//! history (Up/Down).
//!
//! A large paste is shown as a chip, `[Pasted text #N +M lines]`, and kept whole beside
//! the text; submitting expands every chip to its full text, so nothing pasted is lost,
//! and the history records the prompt as shown with the pastes alongside (the reference
//! agent's `history.jsonl` shape, through `strata_session::history`).
//!
//! Pure data: no terminal, no I/O; the app feeds it keys and renders it. The readline
//! keys (kills, yank, word motion) are `input/edit.rs`.

mod edit;

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use strata_session::history::Paste;
use unicode_width::UnicodeWidthStr as _;

/// A paste larger than this many line breaks, or characters, becomes a chip.
const CHIP_MIN_LINE_BREAKS: usize = 3;
const CHIP_MIN_CHARS: usize = 800;

/// What a submitted prompt is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The prompt as the user saw it (chips as placeholders): for the history.
    pub display: String,
    /// The text sent to the model (chips expanded).
    pub text: String,
    /// The pastes behind the chips.
    pub pastes: Vec<Paste>,
}

/// An earlier prompt of the input history: as it was shown (chips as placeholders) and
/// the pastes behind its chips, so a recalled prompt sends what was pasted, not the chip.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HistoryItem {
    /// The prompt as shown.
    pub display: String,
    /// The pastes its chips stand for (empty when it had none, or their text is gone).
    pub pastes: Vec<Paste>,
}

impl From<String> for HistoryItem {
    fn from(display: String) -> Self {
        Self {
            display,
            pastes: Vec::new(),
        }
    }
}

impl From<&str> for HistoryItem {
    fn from(display: &str) -> Self {
        Self::from(display.to_owned())
    }
}

/// The prompt editor.
#[derive(Debug, Default, Clone)]
pub struct PromptInput {
    text: String,
    /// Byte offset of the cursor in `text` (always on a char boundary).
    cursor: usize,
    pastes: Vec<Paste>,
    next_paste: u32,
    /// Earlier prompts, newest first.
    history: Vec<HistoryItem>,
    /// Which history entry is shown (`None`: the draft).
    browsing: Option<usize>,
    /// The draft kept while browsing the history, with its pastes.
    draft: HistoryItem,
    /// The last kill, for Ctrl-Y.
    kill: edit::Kill,
}

impl PromptInput {
    /// An empty editor with `history` (newest first) for Up/Down.
    pub fn with_history(history: Vec<HistoryItem>) -> Self {
        Self {
            history,
            next_paste: 1,
            ..Self::default()
        }
    }

    /// The text as shown (chips as placeholders).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The cursor's byte offset in [`PromptInput::text`].
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Whether an earlier prompt is shown (Up/Down walk the history).
    pub fn is_browsing(&self) -> bool {
        self.browsing.is_some()
    }

    /// The earlier prompts, newest first (Ctrl-R searches them).
    pub fn history(&self) -> &[HistoryItem] {
        &self.history
    }

    /// Replaces the earlier prompts (newest first), e.g. once the history file is read.
    pub fn set_history(&mut self, history: Vec<HistoryItem>) {
        self.history = history;
        self.browsing = None;
    }

    /// Shows history entry `index` (newest first) with its pastes, as Up would; false
    /// when there is no such entry. The prompt being typed is replaced.
    pub fn recall(&mut self, index: usize) -> bool {
        let Some(item) = self.history.get(index).cloned() else {
            return false;
        };
        self.show(item);
        self.browsing = None;
        true
    }

    /// Puts `item` in the editor, its chips backed by its pastes; later pastes get ids
    /// after the highest one shown.
    fn show(&mut self, item: HistoryItem) {
        self.text = item.display;
        self.cursor = self.text.len();
        self.next_paste = item.pastes.iter().map(|p| p.id + 1).max().unwrap_or(1);
        self.pastes = item.pastes;
    }

    /// The prompt being typed, taken out of the editor with its pastes.
    fn take_current(&mut self) -> HistoryItem {
        HistoryItem {
            display: std::mem::take(&mut self.text),
            pastes: std::mem::take(&mut self.pastes),
        }
    }

    /// Replaces the whole prompt (a history pick, the text back from `$EDITOR`); the
    /// cursor goes to the end and pasted chips are forgotten.
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
        self.pastes.clear();
        self.browsing = None;
    }

    /// The prompt with every chip expanded (what `$EDITOR` is given).
    pub fn expanded(&self) -> String {
        let mut text = self.text.clone();
        for p in &self.pastes {
            text = text.replacen(&chip(p.id, p.text.matches('\n').count()), &p.text, 1);
        }
        text
    }

    /// Replaces bytes `start..cursor` with `with` (an `@` completion); the cursor goes
    /// after it.
    pub fn replace_before_cursor(&mut self, start: usize, with: &str) {
        if start > self.cursor || !self.text.is_char_boundary(start) {
            return;
        }
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
        self.browsing = None;
    }

    /// Types `c` at the cursor.
    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
        self.browsing = None;
    }

    /// Inserts `s` at the cursor as typed text.
    pub fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
        self.browsing = None;
    }

    /// A new line in the prompt (Shift+Enter, `\`+Enter, Ctrl-J).
    pub fn newline(&mut self) {
        self.insert_char('\n');
    }

    /// Enter after a `\`: the backslash becomes a line break (`\`+Enter). Returns false
    /// when the character before the cursor is not a backslash.
    pub fn backslash_newline(&mut self) -> bool {
        if self.text[..self.cursor].ends_with('\\') {
            self.cursor -= 1;
            self.text.remove(self.cursor);
            self.newline();
            true
        } else {
            false
        }
    }

    /// A bracketed paste: small ones are typed in, large ones become a chip.
    pub fn paste(&mut self, text: &str) {
        // Terminals send pasted line ends as CR.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let breaks = text.matches('\n').count();
        if breaks < CHIP_MIN_LINE_BREAKS && text.chars().count() < CHIP_MIN_CHARS {
            self.insert_str(&text);
            return;
        }
        let id = self.next_paste.max(1);
        self.next_paste = id + 1;
        let chip = chip(id, breaks);
        self.pastes.push(Paste { id, text });
        self.insert_str(&chip);
    }

    /// Deletes the character before the cursor (a whole chip when the cursor is at its
    /// end).
    pub fn backspace(&mut self) {
        if self.cursor == 0 {
            return;
        }
        let before = &self.text[..self.cursor];
        if before.ends_with(']')
            && let Some(start) = before.rfind("[Pasted text #")
            && let Some(p) = self.paste_at(&before[start..])
        {
            self.pastes.retain(|x| x.id != p);
            self.text.replace_range(start..self.cursor, "");
            self.cursor = start;
            self.browsing = None;
            return;
        }
        let prev = prev_boundary(&self.text, self.cursor);
        self.text.replace_range(prev..self.cursor, "");
        self.cursor = prev;
        // An edited history entry is the prompt being typed now, as after a typed key.
        self.browsing = None;
    }

    fn paste_at(&self, chip_text: &str) -> Option<u32> {
        self.pastes
            .iter()
            .find(|p| chip(p.id, p.text.matches('\n').count()) == chip_text)
            .map(|p| p.id)
    }

    /// Deletes the character under the cursor (a whole chip when the cursor is at its
    /// start).
    pub fn delete(&mut self) {
        if let Some(chip) = self.chip_starting_at(self.cursor) {
            let chip_text = self.text[chip.clone()].to_owned();
            if let Some(p) = self.paste_at(&chip_text) {
                self.pastes.retain(|x| x.id != p);
            }
            self.text.replace_range(chip, "");
            return;
        }
        if self.cursor < self.text.len() {
            let next = next_boundary(&self.text, self.cursor);
            self.text.replace_range(self.cursor..next, "");
            self.browsing = None;
        }
    }

    /// Cursor one character left (over a whole chip).
    pub fn left(&mut self) {
        self.cursor = match self.chip_ending_at(self.cursor) {
            Some(chip) => chip.start,
            None => prev_boundary(&self.text, self.cursor),
        };
    }

    /// Cursor one character right (over a whole chip).
    pub fn right(&mut self) {
        self.cursor = match self.chip_starting_at(self.cursor) {
            Some(chip) => chip.end,
            None => next_boundary(&self.text, self.cursor),
        };
    }

    /// Cursor to the start of its line.
    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
    }

    /// Cursor to the end of its line.
    pub fn end(&mut self) {
        self.cursor += self.text[self.cursor..]
            .find('\n')
            .unwrap_or(self.text.len() - self.cursor);
    }

    /// Up: the line above, or on the first line the previous history entry.
    pub fn up(&mut self) {
        if self.text[..self.cursor].contains('\n') {
            self.vertical(-1);
            return;
        }
        let next = self.browsing.map_or(0, |i| i + 1);
        if let Some(entry) = self.history.get(next).cloned() {
            if self.browsing.is_none() {
                self.draft = self.take_current();
            }
            self.show(entry);
            self.browsing = Some(next);
        }
    }

    /// Down: the line below, or on the last line the next newer history entry (the
    /// draft after the newest).
    pub fn down(&mut self) {
        if self.text[self.cursor..].contains('\n') {
            self.vertical(1);
            return;
        }
        match self.browsing {
            None => {}
            Some(0) => {
                let draft = std::mem::take(&mut self.draft);
                self.show(draft);
                self.browsing = None;
            }
            Some(i) => {
                if let Some(entry) = self.history.get(i - 1).cloned() {
                    self.show(entry);
                }
                self.browsing = Some(i - 1);
            }
        }
    }

    fn vertical(&mut self, dir: i32) {
        let line_start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
        let col = self.text[line_start..self.cursor].chars().count();
        let target_start = if dir < 0 {
            let prev_end = line_start.saturating_sub(1);
            self.text[..prev_end].rfind('\n').map_or(0, |i| i + 1)
        } else {
            match self.text[self.cursor..].find('\n') {
                Some(i) => self.cursor + i + 1,
                None => return,
            }
        };
        let line_end = self.text[target_start..]
            .find('\n')
            .map_or(self.text.len(), |i| target_start + i);
        let line = &self.text[target_start..line_end];
        let offset: usize = line.chars().take(col).map(char::len_utf8).sum();
        self.cursor = self.outside_chip(target_start + offset, true);
    }

    /// Clears the prompt (Ctrl-C). Returns whether there was anything to clear.
    pub fn clear(&mut self) -> bool {
        let had = !self.text.is_empty();
        self.text.clear();
        self.cursor = 0;
        self.pastes.clear();
        self.browsing = None;
        had
    }

    /// Takes the prompt for sending (Enter); `None` when it is blank. The prompt is
    /// recorded in this editor's history.
    pub fn submit(&mut self) -> Option<Submitted> {
        if self.text.trim().is_empty() {
            return None;
        }
        let display = std::mem::take(&mut self.text);
        let mut text = display.clone();
        let pastes = std::mem::take(&mut self.pastes);
        for p in &pastes {
            text = text.replacen(&chip(p.id, p.text.matches('\n').count()), &p.text, 1);
        }
        self.cursor = 0;
        self.browsing = None;
        self.history.insert(
            0,
            HistoryItem {
                display: display.clone(),
                pastes: pastes.clone(),
            },
        );
        Some(Submitted {
            display,
            text,
            pastes,
        })
    }

    /// The editor's lines for a width: `> ` before the first, two spaces before the
    /// others, long lines wrapped; and the cursor's (row, column).
    pub fn render(&self, width: u16, placeholder: &str) -> (Vec<Line<'static>>, (usize, u16)) {
        let prompt_style = Style::default().fg(Color::Cyan);
        let inner = usize::from(width).saturating_sub(2).max(1);
        if self.text.is_empty() {
            let hint = crate::text::cut_to_width(placeholder, inner).to_owned();
            let line = Line::from(vec![
                Span::styled("> ", prompt_style),
                Span::styled(hint, Style::default().fg(Color::DarkGray)),
            ]);
            return (vec![line], (0, 2));
        }
        let mut lines = Vec::new();
        let mut cursor = (0, 2);
        let mut offset = 0;
        for (n, raw) in self.text.split('\n').enumerate() {
            let mut start = 0;
            let rows = split_columns(raw, inner);
            for (k, row) in rows.iter().enumerate() {
                let prefix = if n == 0 && k == 0 { "> " } else { "  " };
                let row_start = offset + start;
                let row_end = row_start + row.len();
                let last_row = k + 1 == rows.len();
                if self.cursor >= row_start
                    && (self.cursor < row_end || (last_row && self.cursor <= row_end))
                {
                    let col = self.text[row_start..self.cursor].width();
                    cursor = (lines.len(), u16::try_from(col + 2).unwrap_or(u16::MAX));
                }
                lines.push(Line::from(vec![
                    Span::styled(prefix, prompt_style),
                    Span::raw((*row).to_owned()),
                ]));
                start += row.len();
            }
            offset += raw.len() + 1;
        }
        (lines, cursor)
    }
}

/// The chip for paste `id` with `breaks` line breaks.
pub fn chip(id: u32, breaks: usize) -> String {
    format!("[Pasted text #{id} +{breaks} lines]")
}

/// `text` in pieces of at most `width` columns (at least one piece, possibly empty).
fn split_columns(text: &str, width: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.width() > width {
        let head = crate::text::cut_to_width(rest, width);
        let head = if head.is_empty() {
            &rest[..next_boundary(rest, 0)]
        } else {
            head
        };
        out.push(head);
        rest = &rest[head.len()..];
    }
    out.push(rest);
    out
}

fn prev_boundary(s: &str, i: usize) -> usize {
    s[..i].char_indices().next_back().map_or(0, |(j, _)| j)
}

fn next_boundary(s: &str, i: usize) -> usize {
    s[i..].chars().next().map_or(i, |c| i + c.len_utf8())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_large_paste_becomes_a_chip_and_its_full_text_is_sent() {
        let mut input = PromptInput::with_history(Vec::new());
        input.insert_str("look: ");
        let pasted: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        input.paste(&pasted);
        assert_eq!(input.text(), "look: [Pasted text #1 +10000 lines]");
        let sent = input.submit().unwrap();
        assert_eq!(sent.text, format!("look: {pasted}"));
        assert_eq!(sent.display, "look: [Pasted text #1 +10000 lines]");
        assert_eq!(sent.pastes.len(), 1);
    }

    #[test]
    fn pasted_carriage_returns_are_line_breaks_and_small_pastes_are_typed() {
        let mut input = PromptInput::with_history(Vec::new());
        input.paste("a\rb");
        assert_eq!(input.text(), "a\nb");
    }

    #[test]
    fn backspace_after_a_chip_removes_the_whole_paste() {
        let mut input = PromptInput::with_history(Vec::new());
        input.paste("1\n2\n3\n4\n");
        input.backspace();
        assert!(input.is_empty());
        assert!(input.submit().is_none());
    }

    #[test]
    fn backslash_enter_and_newline_make_multi_line_prompts() {
        let mut input = PromptInput::with_history(Vec::new());
        input.insert_str("one\\");
        assert!(input.backslash_newline());
        input.insert_str("two");
        input.newline();
        input.insert_str("three");
        assert_eq!(input.submit().unwrap().text, "one\ntwo\nthree");
    }

    #[test]
    fn up_and_down_walk_the_history_and_return_to_the_draft() {
        let mut input = PromptInput::with_history(vec!["newest".into(), "older".into()]);
        input.insert_str("draft");
        input.up();
        assert_eq!(input.text(), "newest");
        input.up();
        assert_eq!(input.text(), "older");
        input.up();
        assert_eq!(input.text(), "older");
        input.down();
        input.down();
        assert_eq!(input.text(), "draft");
    }

    #[test]
    fn a_recalled_prompt_sends_its_pasted_text_not_the_chip() {
        let mut input = PromptInput::with_history(Vec::new());
        let pasted = "one\ntwo\nthree\nfour\n";
        input.insert_str("see ");
        input.paste(pasted);
        let first = input.submit().unwrap();
        assert_eq!(first.text, format!("see {pasted}"));
        // Up brings the prompt back with its chip, and the chip still stands for the paste.
        input.up();
        assert_eq!(input.text(), "see [Pasted text #1 +4 lines]");
        assert_eq!(input.submit().unwrap().text, format!("see {pasted}"));
        // So does a pick from the history search, and a new paste gets the next id.
        assert!(input.recall(0));
        input.paste(pasted);
        assert_eq!(
            input.text(),
            "see [Pasted text #1 +4 lines][Pasted text #2 +4 lines]"
        );
        assert_eq!(
            input.submit().unwrap().text,
            format!("see {pasted}{pasted}")
        );
    }

    #[test]
    fn the_draft_keeps_its_paste_while_the_history_is_browsed() {
        let mut input = PromptInput::with_history(vec!["older".into()]);
        input.paste("a\nb\nc\nd\n");
        input.up();
        assert_eq!(input.text(), "older");
        input.down();
        assert_eq!(input.submit().unwrap().text, "a\nb\nc\nd\n");
    }

    #[test]
    fn up_inside_a_multi_line_prompt_moves_between_its_lines() {
        let mut input = PromptInput::with_history(vec!["old".into()]);
        input.insert_str("ab\ncd");
        input.up();
        input.insert_char('X');
        assert_eq!(input.text(), "abX\ncd");
    }

    #[test]
    fn render_wraps_and_places_the_cursor() {
        let mut input = PromptInput::with_history(Vec::new());
        input.insert_str("abcdefgh");
        let (lines, cursor) = input.render(6, "");
        let rows: Vec<String> = lines.iter().map(ToString::to_string).collect();
        assert_eq!(rows, ["> abcd", "  efgh"]);
        assert_eq!(cursor, (1, 6));
    }
}
