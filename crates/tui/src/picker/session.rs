//! The `/resume` picker: sessions newest first, fuzzy over title and first prompt; each
//! row says how long ago the session was last written, how many messages it has and the
//! git branch it was on.

use ratatui::style::{Color, Modifier, Style};
use std::time::{Duration, SystemTime};

use ratatui::text::{Line, Span};
use strata_session::listing::SessionSummary;

use super::FuzzyList;

/// The sessions a user can resume.
pub struct SessionPicker {
    list: FuzzyList<SessionSummary>,
}

impl SessionPicker {
    /// A picker over `sessions` (a listing's summaries), ordered newest first.
    pub fn new(mut sessions: Vec<SessionSummary>) -> Self {
        sessions.sort_by(|a, b| {
            b.modified
                .cmp(&a.modified)
                .then_with(|| b.session_id.cmp(&a.session_id))
        });
        let list = FuzzyList::new(sessions, |s| {
            format!(
                "{} {}",
                s.title.as_deref().unwrap_or(""),
                s.first_prompt.as_deref().unwrap_or("")
            )
        });
        Self { list }
    }

    /// Filters by `query`.
    pub fn set_query(&mut self, query: &str) {
        self.list.set_query(query);
    }

    /// The matches, best first (newest first with no query).
    pub fn matches(&self) -> &[(u32, usize)] {
        self.list.matches()
    }

    /// The list (items, selection).
    pub fn list(&self) -> &FuzzyList<SessionSummary> {
        &self.list
    }

    /// Moves the selection.
    pub fn move_selection(&mut self, delta: isize) {
        self.list.move_selection(delta);
    }

    /// The session to resume.
    pub fn selected(&self) -> Option<&SessionSummary> {
        self.list.selected_item()
    }

    /// The visible rows: up to `height` matches around the selection, one line each.
    pub fn render(&self, width: u16, height: usize, color: bool) -> Vec<Line<'static>> {
        let st = |s: Style| if color { s } else { Style::default() };
        let sel = self.list.selected();
        let now = SystemTime::now();
        let start = sel.saturating_sub(height.saturating_sub(1));
        (start..self.matches().len().min(start + height))
            .filter_map(|n| {
                let s = self.list.matched(n)?;
                let label = s
                    .title
                    .as_deref()
                    .or(s.first_prompt.as_deref())
                    .unwrap_or("(no prompt)");
                let label: String = label
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .filter(|c| !c.is_control())
                    .collect();
                let meta = meta(s, now);
                let mark = if n == sel { "❯ " } else { "  " };
                let room = (width as usize)
                    .saturating_sub(2 + meta.chars().count())
                    .max(1);
                let label: String = label.chars().take(room).collect();
                let style = if n == sel {
                    st(Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD))
                } else {
                    Style::default()
                };
                Some(Line::from(vec![
                    Span::styled(mark, style),
                    Span::styled(label, style),
                    Span::styled(meta, st(Style::default().fg(Color::DarkGray))),
                ]))
            })
            .collect()
    }
}

/// A row's details: `  3 minutes ago · 12 messages · main`.
fn meta(s: &SessionSummary, now: SystemTime) -> String {
    let messages = match s.message_count {
        1 => "1 message".to_owned(),
        n => format!("{n} messages"),
    };
    let mut out = format!("  {} · {messages}", age(s.modified, now));
    if let Some(branch) = s.git_branch.as_deref().filter(|b| !b.is_empty()) {
        let branch: String = branch.chars().filter(|c| !c.is_control()).collect();
        out.push_str(&format!(" · {branch}"));
    }
    out
}

/// How long before `now` `then` was, in words: `just now`, `3 minutes ago`, `1 hour
/// ago`, `2 days ago`, `5 months ago`, `2 years ago` (a clock set back reads `just now`).
pub(super) fn age(then: SystemTime, now: SystemTime) -> String {
    let secs = now.duration_since(then).unwrap_or(Duration::ZERO).as_secs();
    let (n, unit) = match secs {
        0..60 => return "just now".to_owned(),
        60..3_600 => (secs / 60, "minute"),
        3_600..86_400 => (secs / 3_600, "hour"),
        86_400..2_592_000 => (secs / 86_400, "day"),
        2_592_000..31_536_000 => (secs / 2_592_000, "month"),
        _ => (secs / 31_536_000, "year"),
    };
    let plural = if n == 1 { "" } else { "s" };
    format!("{n} {unit}{plural} ago")
}
