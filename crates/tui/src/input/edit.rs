//! Readline editing in the prompt: the kills (Ctrl-U, Ctrl-K, Ctrl-W, Alt-Backspace,
//! Alt-D), the yank of the last kill (Ctrl-Y) and word motion (Alt-B/Alt-F,
//! Ctrl-←/Ctrl-→), as bash's emacs mode has them, over a prompt of several lines with
//! paste chips in it.
//!
//! Decisions:
//! - A paste chip is one unit: no motion stops inside it, a kill that touches it takes it
//!   whole, and the kill keeps the paste behind it, so Ctrl-Y brings the chip back
//!   standing for the same text.
//! - Words are as readline counts them: Alt-B/F/D and Alt-Backspace stop at runs of
//!   letters, digits and `_`; Ctrl-W (unix-word-rubout) kills back to the previous blank,
//!   so `ls src/main.rs` loses the whole path.
//! - Ctrl-U and Ctrl-K work on the cursor's line of a multi-line prompt; at the line's
//!   edge they take the line break, so pressing again goes on into the next line.
//! - Kills in a row (no other key between them) add to one kill, as readline does:
//!   Ctrl-W Ctrl-W then Ctrl-Y gives back both words in their order.

use std::ops::Range;

use strata_session::history::Paste;

use super::{PromptInput, chip, next_boundary, prev_boundary};

/// The last kill: its text and the pastes behind the chips in it.
#[derive(Debug, Default, Clone)]
pub(super) struct Kill {
    text: String,
    pastes: Vec<Paste>,
    /// `(cursor, text length)` right after the last kill: a kill that finds the editor
    /// still like that continues it (nothing was typed or moved in between).
    after: Option<(usize, usize)>,
}

/// Letters, digits and `_`: what Alt-B/F/D and Alt-Backspace count as a word.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Anything but blanks: what Ctrl-W counts as a word.
fn unix_word_char(c: char) -> bool {
    !c.is_whitespace()
}

impl PromptInput {
    /// Where each chip of the prompt is (the chips whose pastes are known).
    pub(super) fn chip_ranges(&self) -> Vec<Range<usize>> {
        self.pastes
            .iter()
            .filter_map(|p| {
                let c = chip(p.id, p.text.matches('\n').count());
                self.text.find(&c).map(|s| s..s + c.len())
            })
            .collect()
    }

    /// `pos` moved out of any chip it is strictly inside: to the chip's start when
    /// `back`, else to its end.
    pub(super) fn outside_chip(&self, pos: usize, back: bool) -> usize {
        match self
            .chip_ranges()
            .into_iter()
            .find(|r| r.start < pos && pos < r.end)
        {
            Some(r) if back => r.start,
            Some(r) => r.end,
            None => pos,
        }
    }

    /// The chip ending at `pos`, if any.
    pub(super) fn chip_ending_at(&self, pos: usize) -> Option<Range<usize>> {
        self.chip_ranges().into_iter().find(|r| r.end == pos)
    }

    /// The chip starting at `pos`, if any.
    pub(super) fn chip_starting_at(&self, pos: usize) -> Option<Range<usize>> {
        self.chip_ranges().into_iter().find(|r| r.start == pos)
    }

    /// The start of the word before `pos` (a chip is one word).
    fn word_start_before(&self, pos: usize, is_word: fn(char) -> bool) -> usize {
        let mut i = pos;
        // The gap first, then the word.
        while i > 0 && self.chip_ending_at(i).is_none() {
            match self.text[..i].chars().next_back() {
                Some(c) if !is_word(c) => i = prev_boundary(&self.text, i),
                _ => break,
            }
        }
        if let Some(chip) = self.chip_ending_at(i) {
            return chip.start;
        }
        while i > 0 && self.chip_ending_at(i).is_none() {
            match self.text[..i].chars().next_back() {
                Some(c) if is_word(c) => i = prev_boundary(&self.text, i),
                _ => break,
            }
        }
        i
    }

    /// The end of the word after `pos` (a chip is one word).
    fn word_end_after(&self, pos: usize, is_word: fn(char) -> bool) -> usize {
        let mut i = pos;
        while i < self.text.len() && self.chip_starting_at(i).is_none() {
            match self.text[i..].chars().next() {
                Some(c) if !is_word(c) => i = next_boundary(&self.text, i),
                _ => break,
            }
        }
        if let Some(chip) = self.chip_starting_at(i) {
            return chip.end;
        }
        while i < self.text.len() && self.chip_starting_at(i).is_none() {
            match self.text[i..].chars().next() {
                Some(c) if is_word(c) => i = next_boundary(&self.text, i),
                _ => break,
            }
        }
        i
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Removes `range` (widened to whole chips) into the kill, the cursor at its start.
    /// `backward`: the kill went left of the cursor, so a kill in a row goes before it.
    fn kill(&mut self, range: Range<usize>, backward: bool) {
        // A kill right after a kill (the editor as that one left it) adds to it.
        let chained = self.kill.after == Some((self.cursor, self.text.len()));
        let mut range = range;
        for chip in self.chip_ranges() {
            if chip.start < range.end && range.start < chip.end {
                range.start = range.start.min(chip.start);
                range.end = range.end.max(chip.end);
            }
        }
        if range.is_empty() {
            return;
        }
        let (taken, kept): (Vec<Paste>, Vec<Paste>) =
            std::mem::take(&mut self.pastes).into_iter().partition(|p| {
                let c = chip(p.id, p.text.matches('\n').count());
                self.text[range.clone()].contains(&c)
            });
        self.pastes = kept;
        let text: String = self.text.drain(range.clone()).collect();
        self.cursor = range.start;
        self.browsing = None;
        if chained {
            if backward {
                self.kill.text.insert_str(0, &text);
            } else {
                self.kill.text.push_str(&text);
            }
            self.kill.pastes.extend(taken);
        } else {
            self.kill.text = text;
            self.kill.pastes = taken;
        }
        self.kill.after = Some((self.cursor, self.text.len()));
    }

    /// Ctrl-U: kills from the start of the cursor's line to the cursor; at the line's
    /// start, the line break before it.
    pub fn kill_to_line_start(&mut self) {
        let start = self.line_start();
        if start < self.cursor {
            self.kill(start..self.cursor, true);
        } else if self.cursor > 0 {
            self.kill(self.cursor - 1..self.cursor, true);
        }
    }

    /// Ctrl-K: kills from the cursor to the end of its line; at the line's end, the line
    /// break after it.
    pub fn kill_to_line_end(&mut self) {
        let end = self.line_end();
        if end > self.cursor {
            self.kill(self.cursor..end, false);
        } else if self.cursor < self.text.len() {
            self.kill(self.cursor..self.cursor + 1, false);
        }
    }

    /// Ctrl-W: kills back to the previous blank (the blanks right before the cursor
    /// with it).
    pub fn kill_word_before_to_blank(&mut self) {
        let start = self.word_start_before(self.cursor, unix_word_char);
        self.kill(start..self.cursor, true);
    }

    /// Alt-Backspace: kills the word before the cursor.
    pub fn kill_word_before(&mut self) {
        let start = self.word_start_before(self.cursor, word_char);
        self.kill(start..self.cursor, true);
    }

    /// Alt-D: kills to the end of the word after the cursor.
    pub fn kill_word_after(&mut self) {
        let end = self.word_end_after(self.cursor, word_char);
        self.kill(self.cursor..end, false);
    }

    /// Ctrl-Y: puts the last kill back at the cursor (its chips standing for their
    /// pastes again); the cursor goes after it.
    pub fn yank(&mut self) {
        if self.kill.text.is_empty() {
            return;
        }
        let mut text = self.kill.text.clone();
        for p in self.kill.pastes.clone() {
            let breaks = p.text.matches('\n').count();
            // The same paste can be yanked more than once: every chip needs its own id,
            // its old one while that is free.
            let id = if self.pastes.iter().any(|q| q.id == p.id) {
                self.next_paste.max(1)
            } else {
                p.id
            };
            self.next_paste = self.next_paste.max(id + 1);
            text = text.replacen(&chip(p.id, breaks), &chip(id, breaks), 1);
            self.pastes.push(Paste { id, text: p.text });
        }
        self.insert_str(&text);
        self.kill.after = None;
    }

    /// Alt-B, Ctrl-←: the cursor to the start of the word before it.
    pub fn word_left(&mut self) {
        self.cursor = self.word_start_before(self.cursor, word_char);
    }

    /// Alt-F, Ctrl-→: the cursor to the end of the word after it.
    pub fn word_right(&mut self) {
        self.cursor = self.word_end_after(self.cursor, word_char);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::PromptInput;

    /// An editor holding `text` with the cursor where `|` is.
    fn editor(text: &str) -> PromptInput {
        let mut input = PromptInput::with_history(Vec::new());
        let at = text.find('|').unwrap();
        input.insert_str(&text.replace('|', ""));
        input.cursor = at;
        input
    }

    /// The text with `|` at the cursor.
    fn shown(input: &PromptInput) -> String {
        let mut s = input.text().to_owned();
        s.insert(input.cursor(), '|');
        s
    }

    #[test]
    fn i25_6_ctrl_u_kills_to_the_line_start_and_ctrl_y_puts_it_back() {
        let mut input = editor("fix the |parser");
        input.kill_to_line_start();
        assert_eq!(shown(&input), "|parser");
        input.end();
        input.insert_char(' ');
        input.yank();
        assert_eq!(shown(&input), "parser fix the |");
    }

    #[test]
    fn i25_6_ctrl_k_kills_to_the_line_end_then_the_line_break() {
        let mut input = editor("one |two\nthree");
        input.kill_to_line_end();
        assert_eq!(shown(&input), "one |\nthree");
        // At the line's end the next Ctrl-K joins the lines; the kills add up.
        input.kill_to_line_end();
        assert_eq!(shown(&input), "one |three");
        input.yank();
        assert_eq!(shown(&input), "one two\n|three");
    }

    #[test]
    fn i25_6_ctrl_u_in_a_multi_line_prompt_kills_only_the_cursor_s_line() {
        let mut input = editor("first line\nsecond| line\nthird");
        input.kill_to_line_start();
        assert_eq!(shown(&input), "first line\n| line\nthird");
        // At a line's start it takes the break before it: the lines join.
        input.kill_to_line_start();
        assert_eq!(shown(&input), "first line| line\nthird");
        input.kill_to_line_start();
        assert_eq!(shown(&input), "| line\nthird");
        input.yank();
        assert_eq!(shown(&input), "first line\nsecond| line\nthird");
    }

    #[test]
    fn i25_6_ctrl_w_kills_to_the_blank_and_alt_backspace_to_the_word_edge() {
        let mut input = editor("open src/main.rs  |");
        input.kill_word_before_to_blank();
        assert_eq!(shown(&input), "open |");
        let mut input = editor("open src/main.rs|");
        input.kill_word_before();
        assert_eq!(shown(&input), "open src/main.|");
        input.kill_word_before();
        assert_eq!(shown(&input), "open src/|");
        input.kill_word_before();
        assert_eq!(shown(&input), "open |");
        // Identifiers are words whole.
        let mut input = editor("call snake_case_name|");
        input.kill_word_before();
        assert_eq!(shown(&input), "call |");
    }

    #[test]
    fn i25_6_alt_d_kills_the_next_word() {
        let mut input = editor("rename |old_name to new");
        input.kill_word_after();
        assert_eq!(shown(&input), "rename | to new");
        input.kill_word_after();
        assert_eq!(shown(&input), "rename | new");
        // Both kills in a row come back as one.
        input.yank();
        assert_eq!(shown(&input), "rename old_name to| new");
    }

    #[test]
    fn i25_6_ctrl_w_in_a_row_yanks_back_in_order_but_a_key_between_starts_a_new_kill() {
        let mut input = editor("a b c|");
        input.kill_word_before_to_blank();
        input.kill_word_before_to_blank();
        assert_eq!(shown(&input), "a |");
        input.yank();
        assert_eq!(shown(&input), "a b c|");
        let mut input = editor("a b c|");
        input.kill_word_before_to_blank();
        input.left();
        input.kill_word_before_to_blank();
        input.end();
        input.yank();
        // Only the second word came back: the Left between the kills began a new one.
        assert_eq!(shown(&input), "a  b|");
        // Nothing killed yet: Ctrl-Y does nothing.
        let mut input = editor("x|");
        input.yank();
        assert_eq!(shown(&input), "x|");
    }

    #[test]
    fn i25_6_word_motion_stops_at_word_edges_across_lines() {
        let mut input = editor("|let x = foo(bar);\nnext");
        input.word_right();
        assert_eq!(shown(&input), "let| x = foo(bar);\nnext");
        input.word_right();
        input.word_right();
        assert_eq!(shown(&input), "let x = foo|(bar);\nnext");
        input.word_right();
        input.word_right();
        assert_eq!(shown(&input), "let x = foo(bar);\nnext|");
        input.word_right();
        assert_eq!(shown(&input), "let x = foo(bar);\nnext|");
        input.word_left();
        input.word_left();
        assert_eq!(shown(&input), "let x = foo(|bar);\nnext");
        input.home();
        input.word_left();
        assert_eq!(shown(&input), "|let x = foo(bar);\nnext");
        // Non-ASCII letters are word characters; the cursor stays on char boundaries.
        let mut input = editor("grüße ändern|");
        input.word_left();
        assert_eq!(shown(&input), "grüße |ändern");
        input.kill_word_before();
        assert_eq!(shown(&input), "|ändern");
    }

    #[test]
    fn i25_6_a_chip_is_one_word_and_a_killed_chip_comes_back_with_its_paste() {
        let pasted = "l1\nl2\nl3\nl4\n";
        let mut input = editor("see |");
        input.paste(pasted);
        input.insert_str(" now");
        assert_eq!(input.text(), "see [Pasted text #1 +4 lines] now");
        input.word_left();
        input.word_left();
        assert_eq!(shown(&input), "see |[Pasted text #1 +4 lines] now");
        input.word_right();
        assert_eq!(shown(&input), "see [Pasted text #1 +4 lines]| now");
        // Ctrl-W takes the chip whole (it has blanks inside), and its paste with it.
        input.kill_word_before_to_blank();
        assert_eq!(shown(&input), "see | now");
        assert_eq!(input.clone().submit().unwrap().text, "see  now");
        input.yank();
        input.yank();
        assert_eq!(
            input.text(),
            "see [Pasted text #1 +4 lines][Pasted text #2 +4 lines] now"
        );
        assert_eq!(
            input.submit().unwrap().text,
            format!("see {pasted}{pasted} now")
        );
    }

    #[test]
    fn i25_6_a_kill_that_reaches_into_a_chip_takes_it_whole() {
        let mut input = editor("|");
        input.paste("a\nb\nc\nd\n");
        input.insert_str(" tail");
        // The cursor cannot stop inside the chip: Left from after it lands before it.
        input.end();
        for _ in 0..5 {
            input.left();
        }
        assert_eq!(shown(&input), "[Pasted text #1 +4 lines]| tail");
        input.left();
        assert_eq!(shown(&input), "|[Pasted text #1 +4 lines] tail");
        input.right();
        assert_eq!(shown(&input), "[Pasted text #1 +4 lines]| tail");
        input.home();
        input.delete();
        assert_eq!(shown(&input), "| tail");
        assert_eq!(input.clone().submit().unwrap().text, " tail");
        input.home();
        input.kill_to_line_end();
        assert!(input.is_empty());
        input.yank();
        assert_eq!(input.submit().unwrap().text, " tail");
    }
}
