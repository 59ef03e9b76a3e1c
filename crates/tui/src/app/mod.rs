//! The app: what the UI holds between frames and how keys, engine events and store
//! changes change it. It draws nothing itself: [`App::frame`] builds the live area and
//! [`App::take_commit`] hands over the history lines due for the scrollback; the event
//! loop (`run.rs`) decides when.
//!
//! The conversation is the store's (one copy, UI-1): the app keeps only how many of its
//! messages are already in the scrollback. Each part of the screen declares the store
//! slice it renders as a selection (UI-2): the history the messages (by pointer), the
//! footer the model, mode and verbosity, the todo list the todos; a commit that changes
//! none of them draws nothing.

mod actions;
mod command_menu;
mod complete;
mod frame;
mod overlays;
mod prompt_keys;
mod status;
mod tasks;

pub use tasks::Viewed;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use strata_agent::engine::Engine;
use strata_protocol::message::Message;
use strata_protocol::permission::PermissionMode;
use strata_protocol::sdk::ResultMessage;
use strata_state::{AppState, Messages};
use strata_store::{ByFn, ByValue, Selection};
use tokio_util::sync::CancellationToken;

use crate::bridge::{UiEvent, UiSender};
use crate::dialog::PermissionDialog;
use crate::history::{self, HistoryOptions};
use crate::input::{PromptInput, Submitted};
use crate::overlay::Overlay;
use crate::view::FooterData;

/// Two Ctrl-C within this long exit.
pub(super) const DOUBLE_PRESS: Duration = Duration::from_millis(1500);
/// A turn at least this long rings the bell when it ends (the user may have looked
/// away).
const LONG_TURN: Duration = Duration::from_secs(10);

type MessagesSel = Selection<
    AppState,
    Messages,
    fn(&AppState) -> Messages,
    ByFn<fn(&Messages, &Messages) -> bool>,
>;
/// What the footer shows of the store: model, mode, verbosity and the context usage.
type FooterSlice = (
    Option<smol_str::SmolStr>,
    PermissionMode,
    bool,
    strata_state::ContextUsage,
);
type FooterSel = Selection<AppState, FooterSlice, fn(&AppState) -> FooterSlice, ByValue>;
type TodosSel =
    Selection<AppState, strata_state::Todos, fn(&AppState) -> strata_state::Todos, ByValue>;
type RemoteSel = Selection<
    AppState,
    Option<strata_state::RemoteConnectionStatus>,
    fn(&AppState) -> Option<strata_state::RemoteConnectionStatus>,
    ByValue,
>;

/// What the loop should do after an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Nothing beyond redrawing what changed.
    None,
    /// Leave the UI.
    Exit,
    /// Clear the screen and draw the live area again (Ctrl-L).
    ClearScreen,
    /// Open the transcript view (Ctrl-O).
    Transcript,
    /// Stop the process until `fg` (Ctrl-Z).
    Suspend,
    /// Leave this session for another ([`App::take_switch`] says which): the binary
    /// closes the engine and opens the next one in the same terminal.
    Switch,
    /// Run `$EDITOR` on a file with the terminal handed over, then call
    /// [`App::editor_done`].
    Editor(EditorJob),
    /// Show [`App::viewer_lines`] full screen (a background agent's conversation, a
    /// shell's output) until a key closes it, then call [`App::viewer_closed`].
    Viewer,
}

/// Which session the UI moves to (`/resume`, `/clear`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    /// Resume this session id.
    Resume(String),
    /// Start a new, empty session (`/clear`).
    New,
}

/// A file to edit in `$EDITOR` and what to do with it afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditorJob {
    /// The file.
    pub path: PathBuf,
    /// Read it back into the prompt (Ctrl-G) rather than only edit it (`/memory`).
    pub into_prompt: bool,
}

/// A running turn.
#[derive(Debug)]
struct Turn {
    started: Instant,
    tokens: u64,
    cancel: CancellationToken,
}

/// The UI's state.
pub struct App {
    engine: Arc<Engine>,
    tx: UiSender,
    input: PromptInput,
    history_file: Option<strata_session::history::History>,
    project: String,
    /// The answer streaming right now (dropped once its block is in the store).
    live: frame::LiveText,
    /// Thinking streaming right now (shown when verbose).
    live_thinking: String,
    block_done: bool,
    turn: Option<Turn>,
    queued: Vec<Submitted>,
    dialog: Option<PermissionDialog>,
    /// An AskUserQuestion call waiting for the user's answers.
    ask: Option<crate::ask_dialog::AskDialog>,
    /// The tasks panel, in the prompt's place.
    tasks_panel: Option<crate::tasks_panel::TasksPanel>,
    /// What the full-screen viewer shows.
    viewed: Option<Viewed>,
    /// The viewed agent's conversation and status, as the store has them.
    viewed_sel: tasks::ViewedSel,
    /// The viewer's lines, kept while the conversation and width stay the same.
    viewer_cache: Option<tasks::ViewerCache>,
    /// Project MCP servers still to ask about.
    mcp_pending: Vec<String>,
    tasks_sel: tasks::TasksSel,
    /// How many of the store's messages are in the scrollback.
    committed: usize,
    pending_commit: Vec<Line<'static>>,
    messages: MessagesSel,
    footer_sel: FooterSel,
    todos_sel: TodosSel,
    remote_sel: RemoteSel,
    footer: FooterData,
    show_todos: bool,
    ctrl_c_at: Option<Instant>,
    esc_at: Option<Instant>,
    placeholder: String,
    width: u16,
    /// The open overlay (pickers, history search, rewind), in the prompt's place.
    overlay: Option<Overlay>,
    /// `@` completion under the prompt.
    completion: complete::Completion,
    /// The command menu under a prompt that starts with `/`.
    menu: command_menu::MenuState,
    /// The session to move to once the loop ends.
    switch: Option<Switch>,
    /// The file the loop stopped to edit.
    editor: Option<EditorJob>,
    /// The config directory (sessions to list, user memory), when known.
    config_dir: Option<PathBuf>,
    /// The session's working directory.
    cwd: PathBuf,
    /// The `statusLine` command's last output, shown under the footer.
    status_line: Option<String>,
    /// The `statusLine` command's task, once started.
    status_runner: Option<crate::status_line::StatusLine>,
    /// The terminal bell is due (a prompt waits for the user, or a long turn ended).
    bell: bool,
    dirty: bool,
    /// The UI has not drawn since the last change.
    exit: bool,
}

fn messages_of(s: &AppState) -> Messages {
    s.messages.clone()
}
fn same_messages(a: &Messages, b: &Messages) -> bool {
    strata_state::same_conversation(a, b)
}
fn footer_of(s: &AppState) -> FooterSlice {
    (
        s.main_loop_model.clone(),
        s.tool_permission_context.mode,
        s.verbose,
        s.context_usage,
    )
}
fn todos_of(s: &AppState) -> strata_state::Todos {
    s.todos.clone()
}
/// The remote's status for the footer: only for a session that has a remote.
fn remote_of(s: &AppState) -> Option<strata_state::RemoteConnectionStatus> {
    s.remote.server.as_ref().map(|_| s.remote.connection_status)
}

impl App {
    /// The app over an open engine. `history` are earlier prompts (newest first) for
    /// Up/Down; `history_file` records new ones.
    pub fn new(
        engine: Arc<Engine>,
        tx: UiSender,
        history: Vec<String>,
        history_file: Option<strata_session::history::History>,
        project: String,
        width: u16,
    ) -> Self {
        let store = engine.store().clone();
        let messages = store.select_by(
            messages_of as fn(&AppState) -> Messages,
            same_messages as fn(&Messages, &Messages) -> bool,
        );
        let footer_sel = store.select(footer_of as fn(&AppState) -> _);
        let todos_sel = store.select(todos_of as fn(&AppState) -> _);
        let remote_sel = store.select(remote_of as fn(&AppState) -> _);
        let tasks_sel = tasks::select_tasks(&store);
        let viewed_sel = tasks::select_viewed(&store);
        let background = crate::tasks_panel::running_count(tasks_sel.value());
        let mode = store.with(|s| s.tool_permission_context.mode);
        let footer = FooterData {
            model: engine.model(),
            mode,
            background,
            remote: *remote_sel.value(),
            // A resumed session's cost goes on from what it had (SP-4).
            cost_usd: engine.restored_cost_usd(),
            ..FooterData::default()
        };
        let cwd = PathBuf::from(engine.init_message().cwd);
        let mut app = Self {
            engine,
            tx,
            input: PromptInput::with_history(history.into_iter().map(Into::into).collect()),
            history_file,
            project,
            live: frame::LiveText::default(),
            live_thinking: String::new(),
            block_done: false,
            turn: None,
            queued: Vec::new(),
            dialog: None,
            ask: None,
            tasks_panel: None,
            viewed: None,
            viewed_sel,
            viewer_cache: None,
            mcp_pending: Vec::new(),
            tasks_sel,
            committed: 0,
            pending_commit: Vec::new(),
            messages,
            footer_sel,
            todos_sel,
            remote_sel,
            footer,
            show_todos: false,
            ctrl_c_at: None,
            esc_at: None,
            placeholder: "Try \"explain this project\" · /help for commands".to_owned(),
            width,
            overlay: None,
            completion: complete::Completion::default(),
            menu: command_menu::MenuState::default(),
            switch: None,
            editor: None,
            config_dir: None,
            cwd,
            status_line: None,
            status_runner: None,
            bell: false,
            dirty: true,
            exit: false,
        };
        // A resumed session's context is known before any response (the store has it
        // from the transcript): the footer shows it from the first frame.
        app.sync_context();
        app
    }

    /// The footer's context figure from the store's `context_usage` (issue 13), which the
    /// query loop sets after every response. Right after a compaction, before the next
    /// response counts it, the engine's estimate stands in; before the first response of
    /// a new session there is no figure.
    fn sync_context(&mut self) {
        let (usage, percent, any) = self.engine.store().with(|s| {
            (
                s.context_usage,
                strata_state::context_percent(s),
                !s.messages.is_empty(),
            )
        });
        let (tokens, percent) = if usage.tokens > 0 {
            (Some(usage.tokens), percent)
        } else if any {
            let report = self.engine.context_usage();
            let total = report["totalTokens"].as_u64().filter(|&t| t > 0);
            let pct = report["percentage"]
                .as_f64()
                .filter(|_| usage.window > 0)
                .map(|p| p.clamp(0.0, 100.0) as u8);
            (total, pct.filter(|_| total.is_some()))
        } else {
            (None, None)
        };
        self.footer.context_tokens = tokens;
        self.footer.context_percent = percent;
    }

    /// The input history with the pastes behind its chips (read from `history.jsonl`),
    /// newest first; replaces what [`App::new`] was given.
    pub fn set_history(&mut self, history: Vec<crate::input::HistoryItem>) {
        self.input.set_history(history);
    }

    /// Where the config directory is (needed by `/resume` and `/memory`).
    pub fn set_config_dir(&mut self, dir: PathBuf) {
        self.config_dir = Some(dir);
    }

    /// The session to move to after the loop ended with [`Request::Switch`].
    pub fn take_switch(&mut self) -> Option<Switch> {
        self.switch.take()
    }

    /// Remembers the file the loop stopped to edit ([`Request::Editor`]).
    pub fn set_editor_job(&mut self, job: EditorJob) {
        self.editor = Some(job);
    }

    /// The file to edit now that the loop stopped, if that is why it stopped.
    pub fn take_editor_job(&mut self) -> Option<EditorJob> {
        self.editor.take()
    }

    /// Whether the loop must run again after it stopped: for the editor (the binary
    /// runs it, then calls [`App::editor_done`]) or to switch sessions.
    pub fn resumes_loop(&self) -> bool {
        self.editor.is_some()
    }

    /// The answer streaming right now, as received (for `strata-bench tui`).
    pub fn live_text(&self) -> &str {
        self.live.as_str()
    }

    /// Whether the terminal bell is due; clears it.
    pub fn take_bell(&mut self) -> bool {
        std::mem::take(&mut self.bell)
    }

    /// The hint shown in an empty prompt.
    pub fn set_placeholder(&mut self, text: impl Into<String>) {
        self.placeholder = text.into();
        self.dirty = true;
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// What an empty prompt says (plain mode prints it as a line).
    pub fn placeholder(&self) -> &str {
        &self.placeholder
    }

    /// Commits the history already in the store (a resumed conversation) to the
    /// scrollback at the first frame.
    pub fn commit_existing(&mut self) {
        self.sync_history();
    }

    /// Adds a line of text to the scrollback (a notice, a command's output).
    pub fn notify(&mut self, text: &str) {
        self.pending_commit.push(Line::from(""));
        for l in text.lines() {
            self.pending_commit.push(Line::styled(
                format!("  {l}"),
                Style::default().fg(Color::DarkGray),
            ));
        }
        self.dirty = true;
    }

    /// Whether something changed that the next frame must show.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Whether something on screen moves by itself (the spinner of a running turn): the
    /// loop runs a frame clock only then.
    pub fn animating(&self) -> bool {
        let waiting = self.dialog.is_some() || self.ask.is_some();
        (self.turn.is_some() && !waiting)
            || self
                .tasks_panel
                .as_ref()
                .is_some_and(crate::tasks_panel::TasksPanel::any_running)
    }

    /// Whether the UI should close.
    pub fn exiting(&self) -> bool {
        self.exit
    }

    /// Whether a turn is running.
    pub fn turn_running(&self) -> bool {
        self.turn.is_some()
    }

    /// The terminal's width changed.
    pub fn resize(&mut self, width: u16) {
        self.width = width;
        self.dirty = true;
    }

    /// The history lines due for the scrollback (written once, then forgotten).
    pub fn take_commit(&mut self) -> Vec<Line<'static>> {
        std::mem::take(&mut self.pending_commit)
    }

    /// The store committed: re-check the selections.
    pub fn on_store_change(&mut self) {
        let store = self.engine.store().clone();
        if self.messages.changed(&store) {
            self.sync_history();
        }
        if self.footer_sel.changed(&store) {
            let mode = store.with(|s| s.tool_permission_context.mode);
            self.footer.mode = mode;
            self.footer.model = self.engine.model();
            self.sync_context();
            self.dirty = true;
            self.poke_status();
        }
        if self.remote_sel.changed(&store) {
            self.footer.remote = *self.remote_sel.value();
            self.dirty = true;
        }
        if self.todos_sel.changed(&store) && self.show_todos {
            self.dirty = true;
        }
        if self.tasks_sel.changed(&store) {
            self.tasks_changed();
        }
    }

    fn verbose(&self) -> bool {
        self.footer_sel.value().2
    }

    /// New messages in the store go to the scrollback; the live text of a block that is
    /// now stored is dropped.
    fn sync_history(&mut self) {
        let msgs = self.messages.value().clone();
        if msgs.len() < self.committed {
            // The conversation was replaced (rewind): what is on screen stays.
            self.committed = msgs.len();
            return;
        }
        // A tool call is committed with its result (scrollback is written once); only
        // what is new is looked at, so the cost does not grow with the session.
        let mut new: Vec<Arc<Message>> = msgs.iter().skip(self.committed).cloned().collect();
        new.truncate(history::settled(&new));
        if new.is_empty() {
            return;
        }
        self.committed += new.len();
        let opts = HistoryOptions {
            verbose: self.verbose(),
        };
        self.pending_commit
            .extend(history::render(&new, self.width, opts));
        if self.block_done || self.turn.is_none() {
            self.live.clear();
            self.live_thinking.clear();
        }
        self.dirty = true;
    }

    /// The engine said something.
    pub fn on_ui_event(&mut self, event: UiEvent) {
        match event {
            UiEvent::BlockStart => {
                self.live.clear();
                self.live_thinking.clear();
                self.block_done = false;
            }
            UiEvent::Delta { text, thinking } => {
                if thinking {
                    self.live_thinking.push_str(&text);
                    if !self.verbose() {
                        return;
                    }
                } else {
                    self.live.push_str(&text);
                }
                if let Some(t) = &mut self.turn {
                    // A rough live count (≈ 4 characters a token) until the usage comes.
                    t.tokens = t
                        .tokens
                        .max(u64::try_from(self.live.len() / 4).unwrap_or(0));
                }
                self.dirty = true;
            }
            UiEvent::BlockStop => self.block_done = true,
            UiEvent::Tokens(n) => {
                if let Some(t) = &mut self.turn {
                    t.tokens = n;
                }
            }
            UiEvent::Permission(prompt, reply) if prompt.tool_name == crate::ask_dialog::TOOL => {
                self.open_question(prompt, reply);
            }
            UiEvent::TaskEnded { summary, ok } => self.task_ended_line(&summary, ok),
            UiEvent::Permission(prompt, reply) => {
                self.dialog = Some(PermissionDialog::new(prompt, reply));
                self.bell = true;
                self.dirty = true;
            }
            UiEvent::TurnDone(result) => self.turn_done(&result),
            other => self.on_background_event(other),
        }
    }

    fn turn_done(&mut self, result: &ResultMessage) {
        if let Some(t) = self.turn.take()
            && t.started.elapsed() >= LONG_TURN
        {
            self.bell = true;
        }
        self.dialog = None;
        self.ask = None;
        self.footer.cost_usd += result.total_cost_usd;
        // The context figure follows the store (`sync_context`), set by each response:
        // the turn's summed usage would count every request of the turn again.
        self.live.clear();
        self.live_thinking.clear();
        self.poke_status();
        if result.is_error && !result.errors.is_empty() {
            self.notify(&format!("⚠ {}", result.errors.join("; ")));
        }
        self.dirty = true;
        if !self.queued.is_empty() {
            let next = self.queued.remove(0);
            self.start_turn(next);
        }
    }

    /// A terminal event.
    pub fn on_terminal_event(&mut self, event: Event) -> Request {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key),
            Event::Paste(text) => {
                if self.dialog.is_none() && self.overlay.is_none() {
                    self.input.paste(&text);
                    self.refresh_completion();
                    self.refresh_menu();
                    self.dirty = true;
                }
                Request::None
            }
            Event::Resize(w, _) => {
                self.resize(w);
                Request::None
            }
            _ => Request::None,
        }
    }

    fn on_key(&mut self, key: KeyEvent) -> Request {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if !(ctrl && key.code == KeyCode::Char('c')) && self.footer.notice.take().is_some() {
            self.dirty = true;
        }
        // A key the prompt ignores draws nothing new, but a redraw already due (a delta,
        // a store change, the notice just taken) must still happen.
        let due_before = self.dirty;
        if let Some(request) = self.route_to_layer(key) {
            return request;
        }
        self.dirty = true;
        if let Some(request) = self.on_completion_key(key) {
            return request;
        }
        if let Some(request) = self.on_menu_key(key) {
            self.refresh_menu();
            return request;
        }
        let request = self.on_prompt_key(key, ctrl);
        self.dirty |= due_before;
        self.refresh_completion();
        self.refresh_menu();
        request
    }

    fn request_exit(&mut self) -> Request {
        if let Some(t) = &self.turn {
            t.cancel.cancel();
        }
        self.exit = true;
        Request::Exit
    }

    /// Shift+Tab: the next mode through the engine's one gate (FX-1 reports it), and
    /// the transcript's `permission-mode` line.
    fn cycle_mode(&mut self) {
        let (mode, bypass) = self.engine.store().with(|s| {
            (
                s.tool_permission_context.mode,
                s.tool_permission_context
                    .is_bypass_permissions_mode_available,
            )
        });
        let next = mode.next_in_cycle(bypass);
        match self.engine.set_permission_mode(next.as_str()) {
            Ok(()) => self.engine.record_permission_mode(),
            Err(e) => self.notify(&format!("cannot switch to {next}: {e}")),
        }
    }

    /// Sends a prompt, or runs a slash command.
    fn submit(&mut self, submitted: Submitted) -> Request {
        if let Some(command) = submitted.text.trim_start().strip_prefix('!') {
            self.run_shell(command.trim().to_owned());
            return Request::None;
        }
        if let Some(command) = submitted.text.trim().strip_prefix('/') {
            // `/compact`, MCP prompts (`/mcp__server__prompt`), the user's custom
            // commands and skills are the engine's slash prompts, run as a turn as in
            // headless mode; the rest are the UI's.
            let name = command.split_whitespace().next().unwrap_or("");
            let engine_prompt = name == "compact"
                || name.starts_with("mcp__")
                || self
                    .engine
                    .slash_command_entries()
                    .iter()
                    .any(|e| e.name == name);
            if !engine_prompt {
                return crate::commands::run(self, command.trim());
            }
        }
        if self.turn.is_some() {
            self.notify("(queued: sent when the current turn ends)");
            self.queued.push(submitted);
            return Request::None;
        }
        self.start_turn(submitted);
        Request::None
    }

    /// Starts a turn with `submitted` (recorded in the input history first).
    pub fn start_turn(&mut self, submitted: Submitted) {
        if let Some(history) = self.history_file.clone() {
            let (display, pastes, project) = (
                submitted.display.clone(),
                submitted.pastes.clone(),
                self.project.clone(),
            );
            let session = self.engine.session_id();
            // The history is a side record: a failed write is logged, never fatal.
            tokio::task::spawn_blocking(move || {
                if let Err(e) = history.append(&display, &pastes, &project, Some(&session)) {
                    tracing::warn!("the prompt could not be added to the input history: {e}");
                }
            });
        }
        self.run_turn(Message::user_text(submitted.text));
    }

    /// Whether news of background work that ended should start a turn now: no turn
    /// runs and no prompt waits for one (either would give the model the news with its
    /// next request).
    pub fn idle_for_notifications(&self) -> bool {
        self.turn.is_none() && self.queued.is_empty()
    }

    /// Background work ended while no turn ran: the model hears of it in a turn of its
    /// own (`prompt`, from [`Engine::next_notification_prompt`]), without a keystroke, as
    /// the reference agent does. The task's one history line is already shown; the
    /// notification itself is not shown again (`cells`), the answer is.
    pub fn start_notification_turn(&mut self, prompt: Message) {
        self.run_turn(prompt);
    }

    /// Runs a turn with `prompt` on its own task; its end arrives as
    /// [`UiEvent::TurnDone`].
    fn run_turn(&mut self, prompt: Message) {
        let cancel = CancellationToken::new();
        self.turn = Some(Turn {
            started: Instant::now(),
            tokens: 0,
            cancel: cancel.clone(),
        });
        self.live.clear();
        self.dirty = true;
        let engine = self.engine.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            // The one report of the turn's end, sent once this task let go of the
            // engine (a `/resume` right after can close it).
            let result = engine.run_prompt(prompt, cancel).await;
            drop(engine);
            let _ = tx.send(UiEvent::TurnDone(Box::new(result)));
        });
    }

    /// The engine, for commands.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The footer's data, for commands (`/cost`).
    pub fn footer_data(&self) -> &FooterData {
        &self.footer
    }

    /// Toggles the store's `verbose` (persisted by the effects hub, FX-4).
    pub fn toggle_verbose(&mut self) {
        let _ = self.engine.store().update(|s| s.verbose = !s.verbose);
    }

    /// A permission dialog the engine gave up on (the turn was interrupted) is closed.
    pub fn drop_abandoned_dialog(&mut self) {
        if self
            .dialog
            .as_ref()
            .is_some_and(PermissionDialog::abandoned)
        {
            self.dialog = None;
            self.dirty = true;
        }
        if self
            .ask
            .as_ref()
            .is_some_and(crate::ask_dialog::AskDialog::abandoned)
        {
            self.ask = None;
            self.dirty = true;
        }
    }

    /// Marks the screen for a full redraw.
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }
}
