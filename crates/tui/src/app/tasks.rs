//! The app's side of background work (issue 12 item 4) and of the dialogs that answer
//! for a tool or a server: the tasks panel and what its keys do through the engine
//! (stop: `Engine::request_stop`, the path that kills the process group or cancels the
//! agent; dismiss: the store's SL-3 updater; open: `Engine::view_agent`, leaving:
//! `Engine::leave_agent_view`), the footer's count of running tasks, the one history
//! line a task's end gets, `/agents`, the AskUserQuestion dialog, and the approval of
//! the project's `.mcp.json` servers at start.
//!
//! The panel reads the task map through its own selection (pointer equality: a commit
//! that does not touch the tasks costs one comparison), so it is rebuilt — and a frame
//! drawn — only when the tasks changed. The viewer of an agent selects that agent's
//! conversation and status the same way: while it runs, its conversation grows in its
//! retained task (the engine follows it there, SL-3), and each change is one redraw —
//! nothing re-reads its transcript on a timer.

use std::time::Instant;

use crossterm::event::KeyEvent;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use strata_agent::engine::ProjectServerAnswer;
use strata_state::AppState;
use strata_state::tasks::{TaskId, TaskKind, TaskMap, TaskMessages, TaskStatus, updaters};
use strata_store::{ByFn, Selection};

use super::{App, Request};
use crate::ask_dialog::AskDialog;
use crate::overlay::{Entry, Overlay, Purpose};
use crate::tasks_panel::{self, PanelAction, RowKind, TasksPanel};

/// The app's selection of the task map.
pub(super) type TasksSel =
    Selection<AppState, TaskMap, fn(&AppState) -> TaskMap, ByFn<fn(&TaskMap, &TaskMap) -> bool>>;

fn tasks_of(s: &AppState) -> TaskMap {
    s.tasks.tasks.clone()
}
fn same_tasks(a: &TaskMap, b: &TaskMap) -> bool {
    a.ptr_eq(b)
}

/// The selection the app keeps on the task map.
pub(super) fn select_tasks(store: &strata_store::Store<AppState>) -> TasksSel {
    store.select_by(
        tasks_of as fn(&AppState) -> TaskMap,
        same_tasks as fn(&TaskMap, &TaskMap) -> bool,
    )
}

/// What the viewer shows of the agent viewed (SL-1: a failed lookup is `None`).
type ViewedAgent = Option<(TaskMessages, TaskStatus)>;

/// The app's selection of the viewed agent's conversation and status.
pub(super) type ViewedSel = Selection<
    AppState,
    ViewedAgent,
    fn(&AppState) -> ViewedAgent,
    ByFn<fn(&ViewedAgent, &ViewedAgent) -> bool>,
>;

fn viewed_of(s: &AppState) -> ViewedAgent {
    let task = s.tasks.tasks.get(s.tasks.viewing_agent_task_id.as_ref()?)?;
    match &task.kind {
        TaskKind::LocalAgent(agent) => Some((agent.messages.clone(), task.status)),
        _ => None,
    }
}

fn same_viewed(a: &ViewedAgent, b: &ViewedAgent) -> bool {
    match (a, b) {
        (Some((m, s)), Some((n, t))) => strata_state::same_conversation(m, n) && s == t,
        (None, None) => true,
        _ => false,
    }
}

/// The selection the app keeps on the viewed agent.
pub(super) fn select_viewed(store: &strata_store::Store<AppState>) -> ViewedSel {
    store.select_by(
        viewed_of as fn(&AppState) -> ViewedAgent,
        same_viewed as fn(&ViewedAgent, &ViewedAgent) -> bool,
    )
}

/// The viewer's lines for one conversation at one width.
pub(super) struct ViewerCache {
    messages: TaskMessages,
    width: u16,
    lines: Vec<Line<'static>>,
}

/// What the full-screen viewer shows (an agent's conversation, a shell's output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewed {
    /// A background agent's conversation (the task is retained while viewed, SL-3).
    Agent(String),
    /// A background shell's output file.
    Shell(String),
}

/// How many lines of a shell's output the viewer reads (from the end).
const SHELL_VIEW_BYTES: u64 = 256 * 1024;

impl App {
    /// The task map changed: the footer's count and, when open, the panel.
    pub(super) fn tasks_changed(&mut self) {
        let tasks = self.tasks_sel.value().clone();
        let running = tasks_panel::running_count(&tasks);
        if self.footer.background != running {
            self.footer.background = running;
            self.dirty = true;
        }
        if let Some(panel) = self.tasks_panel.as_mut() {
            panel.set_rows(tasks_panel::rows(&tasks));
            self.dirty = true;
        }
    }

    /// `/tasks` (or ↓ on an empty prompt while tasks run): the panel.
    pub fn open_tasks(&mut self) {
        let rows = tasks_panel::rows(self.tasks_sel.value());
        self.tasks_panel = Some(TasksPanel::new(rows));
        self.overlay = None;
        self.dirty = true;
    }

    /// Whether the tasks panel is open.
    pub fn tasks_panel_open(&self) -> bool {
        self.tasks_panel.is_some()
    }

    pub(super) fn on_panel_key(&mut self, key: KeyEvent) -> Request {
        let Some(panel) = self.tasks_panel.as_mut() else {
            return Request::None;
        };
        self.dirty = true;
        match panel.on_key(key) {
            PanelAction::None => {}
            PanelAction::Close => self.tasks_panel = None,
            PanelAction::Explain(why) => self.footer.notice = Some(format!("This task: {why}")),
            PanelAction::Stop(id) => match self.engine.request_stop(&id) {
                Ok(()) => self.footer.notice = Some(format!("Stopping {id}…")),
                Err(e) => self.footer.notice = Some(e.to_string()),
            },
            PanelAction::Dismiss(id) => {
                let _ = self
                    .engine
                    .store()
                    .set(updaters::dismiss(TaskId::from_string(&id)));
            }
            PanelAction::Open(id) => return self.open_task(&id),
        }
        Request::None
    }

    fn open_task(&mut self, id: &str) -> Request {
        let kind = self
            .tasks_panel
            .as_ref()
            .and_then(|p| p.rows().iter().find(|r| r.id == id).map(|r| r.kind));
        match kind {
            Some(RowKind::Agent) => match self.engine.view_agent(id) {
                Ok(()) => {
                    self.viewed = Some(Viewed::Agent(id.to_owned()));
                    Request::Viewer
                }
                Err(e) => {
                    self.notify(&format!("The agent cannot be shown: {e}"));
                    Request::None
                }
            },
            Some(RowKind::Shell) => {
                self.viewed = Some(Viewed::Shell(id.to_owned()));
                Request::Viewer
            }
            None => Request::None,
        }
    }

    /// What the viewer shows now: a title and the lines (the loop draws the last ones
    /// that fit, scrolled by the user).
    pub fn viewer_lines(&mut self, width: u16) -> (String, Vec<Line<'static>>) {
        let state = self.engine.store().get();
        match self.viewed.clone().as_ref() {
            Some(Viewed::Agent(id)) => {
                let Some(task) = state.tasks.tasks.get(&TaskId::from_string(id)) else {
                    return (
                        format!("agent {id}"),
                        vec![Line::from("(the task is gone)")],
                    );
                };
                let title = format!(
                    "agent {id} · {} · {}",
                    task.description,
                    tasks_panel::status_word(task.status)
                );
                let TaskKind::LocalAgent(agent) = &task.kind else {
                    return (title, Vec::new());
                };
                // Rendered again only when the conversation grew or the width changed.
                let fresh = self.viewer_cache.as_ref().is_some_and(|c| {
                    c.width == width
                        && strata_state::same_conversation(&c.messages, &agent.messages)
                });
                if !fresh {
                    let msgs: Vec<_> = agent.messages.iter().cloned().collect();
                    let mut lines = crate::history::render(
                        &msgs,
                        width,
                        crate::history::HistoryOptions { verbose: false },
                    );
                    if lines.is_empty() {
                        lines.push(Line::from("(nothing recorded yet)"));
                    }
                    self.viewer_cache = Some(ViewerCache {
                        messages: agent.messages.clone(),
                        width,
                        lines,
                    });
                }
                let lines = self
                    .viewer_cache
                    .as_ref()
                    .map(|c| c.lines.clone())
                    .unwrap_or_default();
                (title, lines)
            }
            Some(Viewed::Shell(id)) => {
                let task = state.tasks.tasks.get(&TaskId::from_string(id));
                let (command, file) = match task.map(|t| &t.kind) {
                    Some(TaskKind::LocalShell(s)) => (s.command.to_string(), s.output_file.clone()),
                    _ => (String::new(), None),
                };
                let title = format!("shell {id} · $ {command}");
                let text = file
                    .as_deref()
                    .map(|p| read_tail(p, SHELL_VIEW_BYTES))
                    .unwrap_or_else(|| "(no output file)".to_owned());
                let lines = text
                    .lines()
                    .flat_map(|l| crate::text::wrap(l, usize::from(width).max(1)))
                    .map(Line::from)
                    .collect();
                (title, lines)
            }
            None => (String::new(), Vec::new()),
        }
    }

    /// The store committed while the viewer is open: whether what it shows changed (the
    /// viewed agent's conversation grew, or its status moved). A shell's output is a
    /// file, read again by the viewer's clock ([`App::viewer_reads_file`]).
    pub fn viewer_changed(&mut self) -> bool {
        let store = self.engine.store().clone();
        self.viewed_sel.changed(&store) && matches!(self.viewed, Some(Viewed::Agent(_)))
    }

    /// Whether the viewer shows a file that grows by itself (a shell's output), which
    /// it reads again on a clock.
    pub fn viewer_reads_file(&self) -> bool {
        matches!(self.viewed, Some(Viewed::Shell(_)))
    }

    /// The viewer's `r`: an agent's conversation read again from its transcript.
    pub fn viewer_reload(&mut self) {
        if let Some(Viewed::Agent(id)) = &self.viewed
            && let Err(e) = self.engine.view_agent(id)
        {
            self.footer.notice = Some(e.to_string());
        }
    }

    /// The viewer was left: an agent is released (SL-3: its messages dropped, evicted
    /// after the grace period once finished); the panel is shown again.
    pub fn viewer_closed(&mut self) {
        self.viewer_cache = None;
        if let Some(Viewed::Agent(_)) = self.viewed.take() {
            self.engine.leave_agent_view();
        }
        self.dirty = true;
    }

    /// A background task ended: one line in the history (the model hears of it through
    /// the engine's own notification path).
    pub(super) fn task_ended_line(&mut self, summary: &str, ok: bool) {
        let (mark, color) = if ok {
            ("●", Color::Green)
        } else {
            ("●", Color::Yellow)
        };
        self.pending_commit.push(Line::from(""));
        self.pending_commit.push(Line::from(vec![
            ratatui::text::Span::styled(format!("{mark} "), Style::default().fg(color)),
            ratatui::text::Span::styled(
                crate::text::cut_to_width(summary, usize::from(self.width).saturating_sub(2))
                    .to_owned(),
                Style::default().add_modifier(Modifier::DIM),
            ),
        ]));
        self.dirty = true;
    }

    /// `/agents`: the agent types this session can start, built-in and the user's and
    /// project's own (`.strata/agents`, `.claude/agents`, `<config>/agents`).
    pub fn list_agents(&mut self) {
        let defs = self.engine.agents().definitions();
        let mut out = String::from("Agent types:");
        for d in defs.iter() {
            let source = match &d.path {
                Some(p) => p.display().to_string(),
                None => format!("{:?}", d.source).to_lowercase(),
            };
            let mut extra = Vec::new();
            if let Some(m) = &d.model {
                extra.push(format!("model {m}"));
            }
            if let Some(tools) = &d.tools {
                extra.push(format!("tools {}", tools.join(", ")));
            }
            if d.read_only {
                extra.push("read-only".to_owned());
            }
            let first = d.description.lines().next().unwrap_or("");
            out.push_str(&format!("\n  {:<18} {first}", d.name));
            out.push_str(&format!("\n  {:<18} ({source})", ""));
            if !extra.is_empty() {
                out.push_str(&format!(" · {}", extra.join(" · ")));
            }
        }
        out.push_str(
            "\nAdd your own as markdown files with front matter (name, description, tools, \
             model) in .strata/agents/ or .claude/agents/.",
        );
        self.notify(&out);
    }

    /// An AskUserQuestion prompt: the question dialog, or — if its input cannot be
    /// shown as questions — the plain permission dialog.
    pub(super) fn open_question(
        &mut self,
        prompt: strata_agent::engine::PermissionPrompt,
        reply: tokio::sync::oneshot::Sender<strata_protocol::sdk::PermissionResult>,
    ) {
        match AskDialog::new(&prompt, reply) {
            Ok(dialog) => self.ask = Some(dialog),
            Err(reply) => {
                self.dialog = Some(crate::dialog::PermissionDialog::new(prompt, reply));
            }
        }
        self.bell = true;
        self.dirty = true;
    }

    /// Asks about the project's `.mcp.json` servers nobody has answered for yet, one
    /// at a time (the binary calls it as the UI starts). Unanswered servers are not
    /// started (fail closed); closing the question with Esc leaves it for next time.
    pub fn ask_mcp_approvals(&mut self) {
        if self.overlay.is_some() {
            // Another question is open (`strata -r`'s picker): next session asks.
            return;
        }
        self.mcp_pending = self.engine.project_servers_awaiting_approval();
        self.next_mcp_approval();
    }

    fn next_mcp_approval(&mut self) {
        if self.mcp_pending.is_empty() {
            return;
        }
        let name = self.mcp_pending.remove(0);
        let status = self.engine.mcp_status();
        let detail = status["mcpServers"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name.as_str()))
            .map(|s| s["scope"].as_str().unwrap_or("project").to_owned())
            .unwrap_or_default();
        let entries = vec![
            Entry::new(
                "Use this and all future MCP servers in this project",
                "",
                "all",
            ),
            Entry::new("Use this MCP server", "", "one"),
            Entry::new("Continue without using this MCP server", "", "reject"),
        ];
        let title = format!(
            "New MCP server found in .mcp.json: {name} ({detail}) — it runs a program this \
             project's files name"
        );
        self.overlay = Some(
            Overlay::list(Purpose::McpApproval(name), title, entries)
                .with_hint("enter choose · esc ask again next time"),
        );
        self.dirty = true;
    }

    /// The answer picked in the approval overlay.
    pub(super) fn mcp_approval_pick(&mut self, name: &str, value: &str) {
        let answer = match value {
            "all" => ProjectServerAnswer::ApproveAll,
            "one" => ProjectServerAnswer::Approve,
            _ => ProjectServerAnswer::Reject,
        };
        match self.engine.answer_project_server(name, answer) {
            Ok(()) => self.notify(&match answer {
                ProjectServerAnswer::ApproveAll => {
                    "Every MCP server of this project's .mcp.json is approved; starting them"
                        .to_owned()
                }
                ProjectServerAnswer::Approve => {
                    format!("MCP server {name} approved for this project; starting it")
                }
                ProjectServerAnswer::Reject => format!(
                    "MCP server {name} rejected for this project (`strata mcp approve {name}` \
                     changes that)"
                ),
            }),
            Err(e) => self.notify(&format!("⚠ {e}")),
        }
        if answer == ProjectServerAnswer::ApproveAll {
            self.mcp_pending.clear();
        }
        self.next_mcp_approval();
    }

    /// The approval overlay closed without an answer: the next server's question.
    pub(super) fn mcp_approval_closed(&mut self) {
        self.next_mcp_approval();
    }

    /// Whether the panel wants a clock (a shown task's elapsed time moves) and reads
    /// shells' last lines when due.
    pub(super) fn panel_tick(&mut self, now: Instant) {
        if let Some(p) = self.tasks_panel.as_mut() {
            p.refresh_tails(now);
        }
    }
}

/// The last `max` bytes of the file at `path`, as text (starting at a line).
fn read_tail(path: &std::path::Path, max: u64) -> String {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return format!("({} cannot be read)", path.display());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(max);
    let mut buf = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_end(&mut buf).is_err() {
        return format!("({} cannot be read)", path.display());
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let text = if from > 0 {
        match text.find('\n') {
            Some(i) => format!(
                "… (earlier output in {})\n{}",
                path.display(),
                &text[i + 1..]
            ),
            None => text,
        }
    } else {
        text
    };
    if text.trim().is_empty() {
        "(no output yet)".to_owned()
    } else {
        text.chars()
            .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
            .collect()
    }
}
