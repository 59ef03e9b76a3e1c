//! Overlays: a list that takes the prompt's place until a choice is made or Esc closes
//! it — the `/resume` session picker, the `/model` picker, Ctrl-R history search, the
//! Esc Esc rewind picker, `/permissions`, `/config`, `/memory`, `/mcp`.
//!
//! Every overlay is a fuzzy-filtered list with a query line (typing filters, Up/Down
//! move, Enter picks, Esc closes); what a pick does is the app's business, named by the
//! overlay's [`Purpose`]. Pure data and rendering: no terminal, no I/O, so each overlay
//! is tested with plain keys.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::picker::{FuzzyList, SessionPicker};
use crate::text::cut_to_width;

/// How many rows of choices an overlay shows at most.
pub const MAX_ROWS: usize = 10;

/// What picking an entry does (the app acts on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// `/resume`: switch to the picked session.
    Resume,
    /// `/model`: use the picked model (or the typed name when nothing matches).
    Model,
    /// Ctrl-R: put the picked prompt in the editor.
    History,
    /// Esc Esc: pick the prompt to rewind to.
    RewindPrompt,
    /// Esc Esc, second step: what to restore for the prompt with this uuid, which was
    /// the `index`th message of the conversation.
    RewindHow {
        /// The prompt's uuid.
        uuid: String,
        /// Its position in the store's conversation.
        index: usize,
        /// Its text, put back in the editor after a conversation rewind.
        text: String,
    },
    /// `/permissions`: remove the picked rule (value: `behavior\trule\tdestination`).
    Permissions,
    /// `/config`: toggle the picked setting.
    Config,
    /// `/memory`: open the picked memory file in `$EDITOR`.
    Memory,
    /// `/mcp`: act on the picked server (value: `action\tserver`).
    Mcp,
    /// At start: the user's answer about this project server of `.mcp.json` (value:
    /// `all`, `one` or `reject`).
    McpApproval(String),
}

/// One row of a list overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What is shown (and matched).
    pub label: String,
    /// Shown dimmed after the label (not matched).
    pub detail: String,
    /// What the app receives when it is picked.
    pub value: String,
}

impl Entry {
    /// An entry showing `label`, returning `value`.
    pub fn new(
        label: impl Into<String>,
        detail: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            label: label.into(),
            detail: detail.into(),
            value: value.into(),
        }
    }
}

/// The choices of an overlay.
enum Choices {
    /// Sessions, newest first (`/resume`).
    Sessions(SessionPicker),
    /// Any list of entries.
    List(FuzzyList<Entry>),
}

/// An open overlay.
pub struct Overlay {
    /// What a pick does.
    pub purpose: Purpose,
    title: String,
    hint: String,
    query: String,
    choices: Choices,
    /// Still being filled (the session listing runs off the event loop).
    pub loading: bool,
}

/// What a key did to an overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Still open.
    Open,
    /// Closed without a choice (Esc, Ctrl-C).
    Closed,
    /// An entry was picked: its value (for [`Purpose::Model`] the typed name when
    /// nothing matched).
    Picked(String),
}

impl Overlay {
    /// A list overlay.
    pub fn list(purpose: Purpose, title: impl Into<String>, entries: Vec<Entry>) -> Self {
        Self {
            purpose,
            title: title.into(),
            hint: "type to filter · ↑↓ move · enter pick · esc close".into(),
            query: String::new(),
            choices: Choices::List(FuzzyList::new(entries, |e| e.label.clone())),
            loading: false,
        }
    }

    /// The `/resume` picker, still loading (filled by [`Overlay::set_sessions`]).
    pub fn sessions_loading() -> Self {
        Self {
            purpose: Purpose::Resume,
            title: "Resume a session".into(),
            hint: "type to search titles and first prompts · enter resume · esc close".into(),
            query: String::new(),
            choices: Choices::Sessions(SessionPicker::new(Vec::new())),
            loading: true,
        }
    }

    /// Fills the `/resume` picker (keeping what was typed meanwhile).
    pub fn set_sessions(&mut self, picker: SessionPicker) {
        let mut picker = picker;
        picker.set_query(&self.query);
        self.choices = Choices::Sessions(picker);
        self.loading = false;
    }

    /// Replaces the key hint under the list.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    /// The query typed so far.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// How many entries match.
    pub fn match_count(&self) -> usize {
        match &self.choices {
            Choices::Sessions(p) => p.matches().len(),
            Choices::List(l) => l.matches().len(),
        }
    }

    fn set_query(&mut self) {
        match &mut self.choices {
            Choices::Sessions(p) => p.set_query(&self.query),
            Choices::List(l) => l.set_query(&self.query),
        }
    }

    fn move_selection(&mut self, delta: isize) {
        match &mut self.choices {
            Choices::Sessions(p) => p.move_selection(delta),
            Choices::List(l) => l.move_selection(delta),
        }
    }

    /// The value of the highlighted entry.
    pub fn selected_value(&self) -> Option<String> {
        match &self.choices {
            Choices::Sessions(p) => p.selected().map(|s| s.session_id.clone()),
            Choices::List(l) => l.selected_item().map(|e| e.value.clone()),
        }
    }

    /// A key typed while the overlay is open.
    pub fn on_key(&mut self, key: KeyEvent) -> Outcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => Outcome::Closed,
            KeyCode::Char('c' | 'd') if ctrl => Outcome::Closed,
            KeyCode::Up => {
                self.move_selection(-1);
                Outcome::Open
            }
            KeyCode::Char('p' | 'r') if ctrl => {
                self.move_selection(1);
                Outcome::Open
            }
            KeyCode::Down | KeyCode::Tab => {
                self.move_selection(1);
                Outcome::Open
            }
            KeyCode::Char('n') if ctrl => {
                self.move_selection(1);
                Outcome::Open
            }
            KeyCode::Enter => match self.selected_value() {
                Some(v) => Outcome::Picked(v),
                None if self.purpose == Purpose::Model && !self.query.trim().is_empty() => {
                    Outcome::Picked(self.query.trim().to_owned())
                }
                None if self.loading => Outcome::Open,
                None => Outcome::Closed,
            },
            KeyCode::Backspace => {
                self.query.pop();
                self.set_query();
                Outcome::Open
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                self.set_query();
                Outcome::Open
            }
            _ => Outcome::Open,
        }
    }

    /// The overlay's lines at `width`: title, query, up to [`MAX_ROWS`] entries around
    /// the selection, the hint.
    pub fn render(&self, width: u16, color: bool) -> Vec<Line<'static>> {
        let st = |s: Style| if color { s } else { Style::default() };
        let w = usize::from(width);
        let mut lines = vec![
            Line::styled(
                cut_to_width(&self.title, w).to_owned(),
                st(Style::default().add_modifier(Modifier::BOLD)),
            ),
            Line::from(vec![
                Span::styled("⌕ ", st(Style::default().fg(Color::Cyan))),
                Span::raw(cut_to_width(&self.query, w.saturating_sub(2)).to_owned()),
            ]),
        ];
        match &self.choices {
            Choices::Sessions(p) => lines.extend(p.render(width, MAX_ROWS, color)),
            Choices::List(l) => lines.extend(render_list(l, width, color)),
        }
        if self.match_count() == 0 {
            let empty = if self.loading {
                "  loading…"
            } else if self.purpose == Purpose::Model && !self.query.trim().is_empty() {
                "  (enter: use this name)"
            } else {
                "  (nothing matches)"
            };
            lines.push(Line::styled(
                empty,
                st(Style::default().fg(Color::DarkGray)),
            ));
        }
        lines.push(Line::styled(
            cut_to_width(&self.hint, w).to_owned(),
            st(Style::default().fg(Color::DarkGray)),
        ));
        lines
    }
}

fn render_list(list: &FuzzyList<Entry>, width: u16, color: bool) -> Vec<Line<'static>> {
    let st = |s: Style| if color { s } else { Style::default() };
    let sel = list.selected();
    let start = sel.saturating_sub(MAX_ROWS - 1);
    let end = list.matches().len().min(start + MAX_ROWS);
    (start..end)
        .filter_map(|n| {
            let e = list.matched(n)?;
            let mark = if n == sel { "❯ " } else { "  " };
            let style = if n == sel {
                st(Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD))
            } else {
                Style::default()
            };
            let room = usize::from(width).saturating_sub(2);
            let label: String = e.label.chars().filter(|c| !c.is_control()).collect();
            let label = cut_to_width(&label, room).to_owned();
            let used = 2 + unicode_width::UnicodeWidthStr::width(label.as_str());
            let detail = if e.detail.is_empty() {
                String::new()
            } else {
                cut_to_width(
                    &format!("  {}", e.detail),
                    usize::from(width).saturating_sub(used),
                )
                .to_owned()
            };
            Some(Line::from(vec![
                Span::styled(mark, style),
                Span::styled(label, style),
                Span::styled(detail, st(Style::default().fg(Color::DarkGray))),
            ]))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn entries() -> Vec<Entry> {
        ["sonnet", "opus", "haiku"]
            .iter()
            .map(|m| Entry::new(*m, "", *m))
            .collect()
    }

    #[test]
    fn typing_filters_and_enter_picks_the_best_match() {
        let mut o = Overlay::list(Purpose::Model, "Model", entries());
        for c in "opu".chars() {
            assert_eq!(o.on_key(key(KeyCode::Char(c))), Outcome::Open);
        }
        assert_eq!(o.match_count(), 1);
        assert_eq!(
            o.on_key(key(KeyCode::Enter)),
            Outcome::Picked("opus".into())
        );
    }

    #[test]
    fn model_picker_takes_a_typed_name_nothing_matches() {
        let mut o = Overlay::list(Purpose::Model, "Model", entries());
        for c in "gpt-5".chars() {
            o.on_key(key(KeyCode::Char(c)));
        }
        assert!(
            o.render(60, false)
                .iter()
                .any(|l| l.to_string().contains("use this name"))
        );
        assert_eq!(
            o.on_key(key(KeyCode::Enter)),
            Outcome::Picked("gpt-5".into())
        );
    }

    #[test]
    fn arrows_move_and_esc_closes_without_a_choice() {
        let mut o = Overlay::list(Purpose::History, "History", entries());
        o.on_key(key(KeyCode::Down));
        assert_eq!(o.selected_value().as_deref(), Some("opus"));
        o.on_key(key(KeyCode::Up));
        o.on_key(key(KeyCode::Up));
        assert_eq!(o.selected_value().as_deref(), Some("sonnet"));
        assert_eq!(o.on_key(key(KeyCode::Esc)), Outcome::Closed);
    }

    #[test]
    fn the_list_shows_at_most_ten_rows_and_fits_the_width() {
        let many = (0..50)
            .map(|i| Entry::new(format!("entry number {i}"), "detail", i.to_string()))
            .collect();
        let o = Overlay::list(Purpose::History, "History", many);
        let lines = o.render(20, true);
        assert_eq!(lines.len(), MAX_ROWS + 3);
        assert!(lines.iter().all(|l| crate::text::line_width(l) <= 20));
    }

    #[test]
    fn the_session_picker_keeps_the_query_typed_while_loading() {
        let mut o = Overlay::sessions_loading();
        o.on_key(key(KeyCode::Char('x')));
        assert!(
            o.render(40, false)
                .iter()
                .any(|l| l.to_string().contains("loading"))
        );
        assert_eq!(o.on_key(key(KeyCode::Enter)), Outcome::Open);
        o.set_sessions(SessionPicker::new(Vec::new()));
        assert_eq!(o.query(), "x");
        assert!(!o.loading);
    }
}
