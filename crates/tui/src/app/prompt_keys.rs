//! The prompt's keys: editing (the editor itself is `input.rs`), submitting, and the
//! session keys that work from the prompt — Ctrl-C (clear, twice: exit), Ctrl-D, Esc
//! (interrupt; twice on an empty prompt: rewind), Shift+Tab (the mode), Ctrl-O, Ctrl-L,
//! Ctrl-Z, Ctrl-T, Ctrl-R, Ctrl-G, and ↓ on an empty prompt for the tasks panel; the
//! readline keys (Ctrl-U, Ctrl-K, Ctrl-W, Alt-Backspace, Alt-D, Ctrl-Y, Alt-B/F,
//! Ctrl-←/→) edit the prompt.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, DOUBLE_PRESS, Request};

impl App {
    /// A key for the prompt (no dialog, panel or overlay is open).
    pub(super) fn on_prompt_key(&mut self, key: KeyEvent, ctrl: bool) -> Request {
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Char('c') if ctrl => {
                let now = Instant::now();
                // Clearing the prompt does not arm the exit: only a Ctrl-C on an empty
                // prompt does, and it says so, so a quick second press after clearing
                // text never closes the session unannounced.
                if self.input.clear() {
                    self.ctrl_c_at = None;
                    return Request::None;
                }
                if self.ctrl_c_at.is_some_and(|t| now - t < DOUBLE_PRESS) {
                    return self.request_exit();
                }
                self.ctrl_c_at = Some(now);
                if let Some(t) = &self.turn {
                    t.cancel.cancel();
                }
                self.footer.notice = Some("Press Ctrl-C again to exit".into());
                Request::None
            }
            KeyCode::Char('d') if ctrl => {
                if self.input.is_empty() {
                    self.request_exit()
                } else {
                    self.input.delete();
                    Request::None
                }
            }
            KeyCode::Char('l') if ctrl => Request::ClearScreen,
            KeyCode::Char('o') if ctrl => Request::Transcript,
            KeyCode::Char('z') if ctrl => Request::Suspend,
            KeyCode::Char('t') if ctrl => {
                self.show_todos = !self.show_todos;
                Request::None
            }
            KeyCode::Char('r') if ctrl => {
                self.open_history_search();
                Request::None
            }
            KeyCode::Char('g') if ctrl => self.edit_prompt(),
            KeyCode::Char('j') if ctrl => {
                self.input.newline();
                Request::None
            }
            KeyCode::Char('a') if ctrl => {
                self.input.home();
                Request::None
            }
            KeyCode::Char('e') if ctrl => {
                self.input.end();
                Request::None
            }
            // Readline's keys (`input/edit.rs`): kills, the yank, word motion. Alt
            // arrives as the key with ALT, or as ESC then the key, which crossterm
            // reads as the same.
            KeyCode::Char('u') if ctrl => {
                self.input.kill_to_line_start();
                Request::None
            }
            KeyCode::Char('k') if ctrl => {
                self.input.kill_to_line_end();
                Request::None
            }
            KeyCode::Char('w') if ctrl => {
                self.input.kill_word_before_to_blank();
                Request::None
            }
            KeyCode::Char('y') if ctrl => {
                self.input.yank();
                Request::None
            }
            KeyCode::Backspace if alt => {
                self.input.kill_word_before();
                Request::None
            }
            KeyCode::Char('d') if alt => {
                self.input.kill_word_after();
                Request::None
            }
            KeyCode::Char('b') if alt => {
                self.input.word_left();
                Request::None
            }
            KeyCode::Char('f') if alt => {
                self.input.word_right();
                Request::None
            }
            KeyCode::Left if ctrl || alt => {
                self.input.word_left();
                Request::None
            }
            KeyCode::Right if ctrl || alt => {
                self.input.word_right();
                Request::None
            }
            KeyCode::BackTab => {
                self.cycle_mode();
                Request::None
            }
            KeyCode::Tab if key.modifiers.contains(KeyModifiers::SHIFT) => {
                self.cycle_mode();
                Request::None
            }
            KeyCode::Esc => {
                let now = Instant::now();
                if let Some(t) = &self.turn {
                    t.cancel.cancel();
                    self.engine.interrupt();
                    self.footer.notice = Some("Interrupted".into());
                } else if self.esc_at.is_some_and(|t| now - t < DOUBLE_PRESS)
                    && self.input.is_empty()
                {
                    self.esc_at = None;
                    self.open_rewind();
                    return Request::None;
                }
                self.esc_at = Some(now);
                Request::None
            }
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.input.newline();
                Request::None
            }
            KeyCode::Enter => {
                if self.input.backslash_newline() {
                    return Request::None;
                }
                match self.input.submit() {
                    Some(s) => self.submit(s),
                    None => Request::None,
                }
            }
            // Another Alt+letter is not text (a terminal's Meta key): it does nothing.
            KeyCode::Char(c) if !ctrl && !alt => {
                self.input.insert_char(c);
                Request::None
            }
            KeyCode::Backspace => {
                self.input.backspace();
                Request::None
            }
            KeyCode::Delete => {
                self.input.delete();
                Request::None
            }
            KeyCode::Left => {
                self.input.left();
                Request::None
            }
            KeyCode::Right => {
                self.input.right();
                Request::None
            }
            KeyCode::Home => {
                self.input.home();
                Request::None
            }
            KeyCode::End => {
                self.input.end();
                Request::None
            }
            KeyCode::Up => {
                self.input.up();
                Request::None
            }
            KeyCode::Down if self.input.is_empty() && self.footer.background > 0 => {
                // The footer says "↓ to view" while background tasks run.
                self.open_tasks();
                Request::None
            }
            KeyCode::Down => {
                self.input.down();
                Request::None
            }
            _ => {
                self.dirty = false;
                Request::None
            }
        }
    }
}
