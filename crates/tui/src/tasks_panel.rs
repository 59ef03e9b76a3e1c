//! The tasks panel (`/tasks`, ↓ on an empty prompt; issue 12 item 4): the session's
//! background shells and agents, running and finished, each with its kind, description,
//! status, elapsed time and last output line, in the prompt's place.
//!
//! The rows are built from the store's task map (SA-3: every background task of the
//! session is registered there, whichever agent started it), so the app rebuilds them
//! only when its task selection changed. What a key asks for (stop, dismiss, open) is
//! returned as a [`PanelAction`] for the app to carry out through the engine: the
//! panel itself is pure data and rendering, tested with plain keys and a fixed clock.
//!
//! The one piece of I/O is a shell's last output line, read from the tail of its output
//! file at most every [`TAIL_REFRESH`] while the panel is open (a few kilobytes, never
//! the whole file), so the frame path never reads a large file.

use std::collections::HashMap;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use strata_state::tasks::{TaskKind, TaskMap, TaskState, TaskStatus};

use crate::text::cut_to_width;

/// How often a shown shell's last output line is read again.
pub const TAIL_REFRESH: Duration = Duration::from_millis(500);
/// How much of an output file's end is read for its last line.
const TAIL_BYTES: u64 = 4096;
/// How many tasks the panel shows at once (two rows each).
const MAX_TASKS_SHOWN: usize = 8;

/// What kind of background work a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// A shell command (Bash `run_in_background`).
    Shell,
    /// A sub-agent running in the background.
    Agent,
}

/// One task as the panel shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    /// The task id (what the engine's stop and view take).
    pub id: String,
    /// Shell or agent.
    pub kind: RowKind,
    /// What it does.
    pub description: String,
    /// A shell's command line, an agent's type.
    pub what: String,
    /// Where it is in its life.
    pub status: TaskStatus,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it ended.
    pub end_ms: Option<u64>,
    /// A shell's output file (its last line is shown).
    pub output_file: Option<PathBuf>,
    /// An agent's progress, in words (tool uses, last tool, tokens).
    pub progress: String,
    /// Why it failed.
    pub error: Option<String>,
}

impl TaskRow {
    /// The row of `task`, or `None` for kinds the panel does not list (teammates and
    /// remote agents have views of their own).
    pub fn of(task: &TaskState) -> Option<Self> {
        let (kind, what, output_file, progress) = match &task.kind {
            TaskKind::LocalShell(shell) => (
                RowKind::Shell,
                shell.command.to_string(),
                shell.output_file.as_deref().map(Path::to_path_buf),
                String::new(),
            ),
            TaskKind::LocalAgent(agent) => {
                let p = &agent.progress;
                let mut words = vec![format!(
                    "{} tool use{}",
                    p.tool_uses,
                    if p.tool_uses == 1 { "" } else { "s" }
                )];
                if let Some(tool) = &p.last_tool {
                    words.push(format!("last {tool}"));
                }
                if p.tokens > 0 {
                    words.push(format!("{} tokens", crate::view::human_tokens(p.tokens)));
                }
                (
                    RowKind::Agent,
                    agent.agent_type.as_deref().unwrap_or("agent").to_owned(),
                    None,
                    words.join(" · "),
                )
            }
            TaskKind::InProcessTeammate(_) | TaskKind::RemoteAgent(_) => return None,
        };
        Some(Self {
            id: task.id.to_string(),
            kind,
            description: task.description.to_string(),
            what,
            status: task.status,
            start_ms: task.start_time_ms,
            end_ms: task.end_time_ms,
            output_file,
            progress,
            error: task.error.as_deref().map(str::to_owned),
        })
    }

    /// Still pending or running.
    pub fn running(&self) -> bool {
        !self.status.is_terminal()
    }
}

/// The rows of `tasks`: running ones first, then finished ones, each in start order.
pub fn rows(tasks: &TaskMap) -> Vec<TaskRow> {
    let mut rows: Vec<TaskRow> = tasks.iter().filter_map(|t| TaskRow::of(t)).collect();
    rows.sort_by_key(|r| (!r.running(), r.start_ms));
    rows
}

/// How many listed tasks are running (the footer's count).
pub fn running_count(tasks: &TaskMap) -> usize {
    tasks
        .iter()
        .filter(|t| {
            !t.status.is_terminal()
                && matches!(t.kind, TaskKind::LocalShell(_) | TaskKind::LocalAgent(_))
        })
        .count()
}

/// What a key in the panel asks the app to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PanelAction {
    /// Nothing beyond a redraw.
    None,
    /// Close the panel.
    Close,
    /// Stop this running task (the engine's stop path: the process group dies, the
    /// agent is cancelled).
    Stop(String),
    /// Remove this finished task from the list.
    Dismiss(String),
    /// Open this task: an agent's conversation, a shell's output.
    Open(String),
    /// The key does not apply to the selected task: say this in the footer.
    Explain(&'static str),
}

/// The open panel.
#[derive(Debug, Default)]
pub struct TasksPanel {
    rows: Vec<TaskRow>,
    selected: usize,
    tails: HashMap<String, String>,
    tails_read: Option<Instant>,
}

impl TasksPanel {
    /// A panel over `rows`.
    pub fn new(rows: Vec<TaskRow>) -> Self {
        let mut panel = Self::default();
        panel.set_rows(rows);
        panel
    }

    /// Replaces the rows (the task map changed), keeping the selected task selected
    /// when it is still listed.
    pub fn set_rows(&mut self, rows: Vec<TaskRow>) {
        let keep = self.selected_row().map(|r| r.id.clone());
        self.rows = rows;
        self.selected = keep
            .and_then(|id| self.rows.iter().position(|r| r.id == id))
            .unwrap_or(self.selected)
            .min(self.rows.len().saturating_sub(1));
        self.tails
            .retain(|id, _| self.rows.iter().any(|r| &r.id == id));
        // New rows want their last lines now.
        self.tails_read = None;
    }

    /// The rows shown.
    pub fn rows(&self) -> &[TaskRow] {
        &self.rows
    }

    /// The highlighted task.
    pub fn selected_row(&self) -> Option<&TaskRow> {
        self.rows.get(self.selected)
    }

    /// Whether a shown task is still running (its elapsed time moves, so the app keeps
    /// a clock while the panel is open).
    pub fn any_running(&self) -> bool {
        self.rows.iter().any(TaskRow::running)
    }

    /// Reads each shell's last output line again when [`TAIL_REFRESH`] has passed
    /// since the last read (or the rows changed). Returns whether any line changed.
    pub fn refresh_tails(&mut self, now: Instant) -> bool {
        if self
            .tails_read
            .is_some_and(|t| now.saturating_duration_since(t) < TAIL_REFRESH)
        {
            return false;
        }
        self.tails_read = Some(now);
        let mut changed = false;
        for row in &self.rows {
            let Some(path) = &row.output_file else {
                continue;
            };
            // A finished shell's file does not change: read it once.
            if !row.running() && self.tails.contains_key(&row.id) {
                continue;
            }
            let line = last_line(path).unwrap_or_default();
            if self.tails.get(&row.id) != Some(&line) {
                self.tails.insert(row.id.clone(), line);
                changed = true;
            }
        }
        changed
    }

    /// A key typed while the panel is open.
    pub fn on_key(&mut self, key: KeyEvent) -> PanelAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => PanelAction::Close,
            KeyCode::Char('c' | 'd') if ctrl => PanelAction::Close,
            KeyCode::Up | KeyCode::Char('k') if !ctrl => {
                self.selected = self.selected.saturating_sub(1);
                PanelAction::None
            }
            KeyCode::Down | KeyCode::Tab | KeyCode::Char('j') if !ctrl => {
                self.selected = (self.selected + 1).min(self.rows.len().saturating_sub(1));
                PanelAction::None
            }
            KeyCode::Enter | KeyCode::Right => match self.selected_row() {
                Some(r) => PanelAction::Open(r.id.clone()),
                None => PanelAction::Close,
            },
            KeyCode::Char('x') | KeyCode::Delete => match self.selected_row() {
                Some(r) if r.running() => PanelAction::Stop(r.id.clone()),
                Some(_) => PanelAction::Explain("it has ended: d dismisses it"),
                None => PanelAction::None,
            },
            KeyCode::Char('d') | KeyCode::Backspace => match self.selected_row() {
                Some(r) if !r.running() => PanelAction::Dismiss(r.id.clone()),
                Some(_) => PanelAction::Explain("it is still running: x stops it"),
                None => PanelAction::None,
            },
            _ => PanelAction::None,
        }
    }

    /// The panel's lines at `width`, elapsed times as of `now_ms` (ms since the epoch).
    pub fn render(&self, width: u16, now_ms: u64) -> Vec<Line<'static>> {
        let w = usize::from(width);
        let dim = Style::default().fg(Color::DarkGray);
        let running = self.rows.iter().filter(|r| r.running()).count();
        let title = format!(
            "Background tasks · {running} running · {} finished",
            self.rows.len() - running
        );
        let mut lines = vec![Line::styled(
            cut_to_width(&title, w).to_owned(),
            Style::default().add_modifier(Modifier::BOLD),
        )];
        if self.rows.is_empty() {
            lines.push(Line::styled(
                "  No background tasks yet (Bash run_in_background, background agents)",
                dim,
            ));
            lines.push(Line::styled("esc close", dim));
            for l in &mut lines {
                *l = cut_line(l, w);
            }
            return lines;
        }
        let start = self.selected.saturating_sub(MAX_TASKS_SHOWN - 1);
        let end = self.rows.len().min(start + MAX_TASKS_SHOWN);
        for (n, row) in self.rows.iter().enumerate().take(end).skip(start) {
            lines.extend(self.render_row(row, n == self.selected, w, now_ms));
        }
        if self.rows.len() > end - start {
            lines.push(Line::styled(
                format!("  … {} more (↑↓)", self.rows.len() - (end - start)),
                dim,
            ));
        }
        let hint = match self.selected_row() {
            Some(r) if r.kind == RowKind::Agent && r.running() => {
                "↑↓ select · enter view conversation · x stop · esc close"
            }
            Some(r) if r.kind == RowKind::Agent => {
                "↑↓ select · enter view conversation · d dismiss · esc close"
            }
            Some(r) if r.running() => "↑↓ select · enter view output · x stop · esc close",
            _ => "↑↓ select · enter view output · d dismiss · esc close",
        };
        lines.push(Line::styled(cut_to_width(hint, w).to_owned(), dim));
        lines
    }

    fn render_row(
        &self,
        row: &TaskRow,
        selected: bool,
        w: usize,
        now_ms: u64,
    ) -> [Line<'static>; 2] {
        let (icon, status_style, status) = status_look(row);
        let elapsed = row
            .end_ms
            .unwrap_or(now_ms)
            .saturating_sub(row.start_ms.min(now_ms));
        let right = format!("{status} · {}", human_duration(elapsed));
        let kind = match row.kind {
            RowKind::Shell => "shell",
            RowKind::Agent => "agent",
        };
        let marker = if selected { "❯ " } else { "  " };
        let label_style = if selected {
            Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        let rw = unicode_width::UnicodeWidthStr::width(right.as_str());
        // marker, icon and a space, the kind padded to 6, a space.
        let fixed = 2 + 2 + 6 + 1;
        let room = w.saturating_sub(fixed + rw + 2);
        let mut desc = row.description.clone();
        if row.kind == RowKind::Agent && !row.what.is_empty() {
            desc = format!("{desc} ({})", row.what);
        }
        let desc: String = desc.chars().filter(|c| !c.is_control()).collect();
        let desc = cut_to_width(&desc, room).to_owned();
        let used = fixed + unicode_width::UnicodeWidthStr::width(desc.as_str());
        let gap = w.saturating_sub(used + rw).max(1);
        let first = Line::from(vec![
            Span::styled(marker, label_style),
            Span::styled(format!("{icon} "), status_style),
            Span::styled(format!("{kind:<6} "), Style::default().fg(Color::DarkGray)),
            Span::styled(desc, label_style),
            Span::raw(" ".repeat(gap)),
            Span::styled(right, status_style),
        ]);
        let detail = match row.kind {
            RowKind::Shell => {
                let tail = self.tails.get(&row.id).map(String::as_str).unwrap_or("");
                let tail = match (tail.is_empty(), row.running()) {
                    (false, _) => tail,
                    (true, true) => "(no output yet)",
                    (true, false) => "(no output)",
                };
                format!("$ {} ⎯ {tail}", row.what)
            }
            RowKind::Agent => row.progress.clone(),
        };
        let detail = match &row.error {
            Some(e) => format!("{detail} · {e}"),
            None => detail,
        };
        let detail: String = detail.chars().filter(|c| !c.is_control()).collect();
        let second = Line::styled(
            format!("      {}", cut_to_width(&detail, w.saturating_sub(6))),
            Style::default().fg(Color::DarkGray),
        );
        [cut_line(&first, w), second]
    }
}

/// The status's icon, colour and word.
fn status_look(row: &TaskRow) -> (&'static str, Style, &'static str) {
    let (icon, color) = match row.status {
        TaskStatus::Pending => ("○", Color::Yellow),
        TaskStatus::Running => ("●", Color::Yellow),
        TaskStatus::Completed => ("✓", Color::Green),
        TaskStatus::Failed => ("✗", Color::Red),
        TaskStatus::Killed => ("■", Color::DarkGray),
    };
    (icon, Style::default().fg(color), status_word(row.status))
}

/// A status in the panel's words.
pub fn status_word(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending => "starting",
        TaskStatus::Running => "running",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Killed => "stopped",
    }
}

/// `65_000` ms as `1m 5s`.
pub fn human_duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

/// A line cut to `width` columns, span styles kept.
fn cut_line(line: &Line<'static>, width: usize) -> Line<'static> {
    let mut left = width;
    let mut spans = Vec::new();
    for span in &line.spans {
        if left == 0 {
            break;
        }
        let text = cut_to_width(&span.content, left).to_owned();
        left -= unicode_width::UnicodeWidthStr::width(text.as_str());
        spans.push(Span::styled(text, span.style));
    }
    Line::from(spans).style(line.style)
}

/// The last non-blank line of the file at `path` (from its last few kilobytes), without
/// control characters (a shell's output may hold colours and carriage returns).
pub fn last_line(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let from = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut buf = Vec::with_capacity(usize::try_from(len - from).unwrap_or(0));
    file.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let line = text
        .lines()
        .rev()
        .map(|l| l.rsplit('\r').next().unwrap_or(l))
        .find(|l| !l.trim().is_empty())?;
    Some(strip_controls(line))
}

/// `text` without escape sequences and control characters.
fn strip_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ … final byte in @–~.
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        if !c.is_control() {
            out.push(c);
        }
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
#[path = "tasks_panel_tests.rs"]
mod tests;
