//! `@` path completion under the prompt: while the word before the cursor starts with
//! `@`, the project's files that match it (fuzzy, `.gitignore` respected, through
//! [`PathCompleter`]) are listed under the prompt; Tab or Enter puts the highlighted one
//! in, Up/Down move, Esc hides the list.
//!
//! The file walk runs once per session, off the event loop (a large tree must not stall
//! a keystroke); until it is done the list says so.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use super::{App, Request};
use crate::bridge::UiEvent;
use crate::picker::{PathCompleter, at_token};
use crate::text::cut_to_width;

/// How many completions are shown.
const SHOWN: usize = 5;

/// The completion state of the prompt.
#[derive(Default)]
pub(crate) struct Completion {
    /// The project's paths, once walked.
    completer: Option<PathCompleter>,
    /// The walk is running.
    loading: bool,
    /// The `@` token being completed: its byte offset, and the matches.
    active: Option<(usize, Vec<String>)>,
    selected: usize,
    /// Esc hid the list for this token.
    hidden_at: Option<usize>,
}

impl Completion {
    /// The lines under the prompt (none when nothing is being completed).
    pub(crate) fn render(&self, width: u16) -> Vec<Line<'static>> {
        let Some((_, matches)) = &self.active else {
            return Vec::new();
        };
        let w = usize::from(width);
        if matches.is_empty() {
            let text = if self.loading {
                "  listing files…"
            } else {
                "  (no matching file)"
            };
            return vec![Line::styled(text, Style::default().fg(Color::DarkGray))];
        }
        let start = self.selected.saturating_sub(SHOWN - 1);
        matches
            .iter()
            .enumerate()
            .skip(start)
            .take(SHOWN)
            .map(|(i, m)| {
                let text = cut_to_width(&format!("  @{m}"), w).to_owned();
                if i == self.selected {
                    Line::styled(
                        text,
                        Style::default()
                            .fg(Color::Cyan)
                            .add_modifier(Modifier::BOLD),
                    )
                } else {
                    Line::styled(text, Style::default().fg(Color::DarkGray))
                }
            })
            .collect()
    }
}

impl App {
    /// Re-reads the `@` token before the cursor and its matches.
    pub(super) fn refresh_completion(&mut self) {
        let text = self.input.text();
        let Some((start, query)) = at_token(text, self.input.cursor()) else {
            self.completion.active = None;
            self.completion.hidden_at = None;
            return;
        };
        if self.completion.hidden_at == Some(start) {
            return;
        }
        let query = query.to_owned();
        let c = &mut self.completion;
        let matches = match c.completer.as_mut() {
            Some(completer) => completer
                .complete(&query)
                .into_iter()
                .take(200)
                .map(str::to_owned)
                .collect(),
            None => {
                if !c.loading {
                    c.loading = true;
                    let root = self.cwd.clone();
                    let tx = self.tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(UiEvent::Paths(Box::new(PathCompleter::new(&root))));
                    });
                }
                Vec::new()
            }
        };
        if c.active.as_ref().map(|(s, _)| *s) != Some(start) {
            c.selected = 0;
        }
        c.selected = c.selected.min(matches.len().saturating_sub(1));
        c.active = Some((start, matches));
    }

    /// The walk finished.
    pub(super) fn paths_ready(&mut self, completer: PathCompleter) {
        self.completion.completer = Some(completer);
        self.completion.loading = false;
        if self.completion.active.is_some() {
            self.refresh_completion();
            self.dirty = true;
        }
    }

    /// A key while completions are shown: `Some` when the completion took it.
    pub(super) fn on_completion_key(&mut self, key: KeyEvent) -> Option<Request> {
        let (start, matches) = self.completion.active.as_ref()?;
        if matches.is_empty() {
            return None;
        }
        let n = matches.len();
        match key.code {
            KeyCode::Up => {
                self.completion.selected = self.completion.selected.saturating_sub(1);
            }
            KeyCode::Down => self.completion.selected = (self.completion.selected + 1).min(n - 1),
            KeyCode::Tab | KeyCode::Enter if key.modifiers.is_empty() => {
                let path = matches[self.completion.selected].clone();
                let start = *start;
                // A file ends the token (a space follows); a folder keeps completing.
                let with = if path.ends_with('/') {
                    format!("@{path}")
                } else {
                    format!("@{path} ")
                };
                self.input.replace_before_cursor(start, &with);
                self.refresh_completion();
            }
            KeyCode::Esc => {
                self.completion.hidden_at = Some(*start);
                self.completion.active = None;
            }
            _ => return None,
        }
        Some(Request::None)
    }
}
