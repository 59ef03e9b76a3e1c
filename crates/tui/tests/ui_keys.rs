//! Issue 12's keys and commands that no other test drives, on a real engine over a
//! replay provider (responses recorded in a transcript written here), key by key through
//! the app as the event loop would, and checked on what a user notices: the live area's
//! lines, the scrollback lines, the frame drawn onto a small vt100 screen, files on disk
//! and the transcript.
//!
//! Esc interrupts a running turn; Ctrl-C clears, twice exits; Ctrl-D exits; Ctrl-T shows
//! and hides the todo list; `/cost`, `/status`, `/config`, `/exit`, `/export`, `/help`;
//! Shift+Tab reaches `bypassPermissions` only when it is available; rewind of the code
//! only and of the conversation only; the `/model` pick in the user settings file (FX-2);
//! a 30 × 8 terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use strata_agent::engine::{Engine, EngineHandles, EngineOptions};
use strata_agent::permissions::{LaunchFlags, PermissionLaunch};
use strata_agent::provider::ReplayProvider;
use strata_protocol::permission::PermissionMode;
use strata_tui::app::{App, Request};
use strata_tui::bridge::{UiEvent, UiEvents, UiPrompter};
use strata_tui::term::{Frame, InlineTerminal};
use strata_tui::text::line_width;
use tokio::sync::mpsc::UnboundedReceiver;

/// The model every recorded response names.
const MODEL: &str = "claude-sonnet-4-5";

/// One assistant response of a replay: its content blocks and usage.
fn response_with_usage(n: usize, blocks: Value, input: u64, output: u64) -> String {
    json!({
        "type": "assistant", "uuid": format!("00000000-0000-4000-8000-{n:012}"),
        "parentUuid": null, "sessionId": "replay", "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"model": MODEL, "id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "content": blocks, "stop_reason": null,
            "usage": {"input_tokens": input, "output_tokens": output}}
    })
    .to_string()
}

fn response(n: usize, blocks: Value) -> String {
    response_with_usage(n, blocks, 10, 5)
}

fn text_reply(n: usize, text: &str) -> String {
    response(n, json!([{"type": "text", "text": text}]))
}

fn tool_reply(n: usize, name: &str, input: Value) -> String {
    response(
        n,
        json!([{"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": input}]),
    )
}

/// How a session is opened: the replay, the launch's permission flags and the width.
struct Launch {
    replies: Vec<String>,
    mode: Option<PermissionMode>,
    allowed: Vec<String>,
    allow_bypass: bool,
    width: u16,
    /// The directory the project (`proj`) and config (`cfg`) are made in.
    dir: Option<tempfile::TempDir>,
}

impl Launch {
    fn new(replies: &[String]) -> Self {
        Self {
            replies: replies.to_vec(),
            mode: None,
            allowed: Vec::new(),
            allow_bypass: false,
            width: 80,
            dir: None,
        }
    }

    fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = Some(mode);
        self
    }

    fn allow(mut self, tool: &str) -> Self {
        self.allowed.push(tool.to_owned());
        self
    }

    /// `--allow-dangerously-skip-permissions`.
    fn allow_bypass(mut self) -> Self {
        self.allow_bypass = true;
        self
    }

    fn width(mut self, width: u16) -> Self {
        self.width = width;
        self
    }

    fn dir(mut self, dir: tempfile::TempDir) -> Self {
        self.dir = Some(dir);
        self
    }

    async fn open(self) -> Ui {
        let dir = match self.dir {
            Some(d) => d,
            None => tempfile::tempdir().unwrap(),
        };
        let cwd = dir.path().join("proj");
        std::fs::create_dir_all(cwd.join(".git")).unwrap();
        let cfg = dir.path().join("cfg");
        std::fs::create_dir_all(&cfg).unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let replay = self.replies.join("\n");
        let options = EngineOptions {
            cwd: cwd.clone(),
            config_dir: cfg.clone(),
            handles: EngineHandles::private(),
            provider: Arc::new(ReplayProvider::from_bytes("test", replay.as_bytes()).unwrap()),
            model: None,
            permission: PermissionLaunch {
                flags: LaunchFlags {
                    dangerously_skip_permissions: false,
                    allow_dangerously_skip_permissions: self.allow_bypass,
                },
                mode: self.mode,
                allowed_tools: self.allowed,
                ..Default::default()
            },
            settings_flag: None,
            resume: None,
            fork_session: false,
            max_turns: None,
            interactive: true,
            verbose: false,
            prompter: Some(Arc::new(UiPrompter::new(tx.clone()))),
            events: Arc::new(UiEvents::new(tx.clone())),
            system_prompt: None,
            append_system_prompt: None,
            mcp_config: Vec::new(),
            strict_mcp_config: true,
            max_thinking_tokens: None,
            sdk: Default::default(),
        };
        let engine = Arc::new(Engine::open(options).await.unwrap());
        let project = cwd.to_string_lossy().into_owned();
        let mut app = App::new(engine.clone(), tx, Vec::new(), None, project, self.width);
        app.set_config_dir(cfg.clone());
        Ui {
            app,
            rx,
            engine,
            _dir: dir,
            cwd,
            cfg,
            said: String::new(),
        }
    }
}

struct Ui {
    app: App,
    rx: UnboundedReceiver<UiEvent>,
    engine: Arc<Engine>,
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    cfg: PathBuf,
    /// Everything written to the scrollback so far.
    said: String,
}

impl Ui {
    fn key_with(&mut self, code: KeyCode, mods: KeyModifiers) -> Request {
        let r = self
            .app
            .on_terminal_event(Event::Key(KeyEvent::new(code, mods)));
        self.app.on_store_change();
        r
    }

    fn key(&mut self, code: KeyCode) -> Request {
        self.key_with(code, KeyModifiers::NONE)
    }

    fn ctrl(&mut self, c: char) -> Request {
        self.key_with(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
    }

    /// Types `line` and Enter.
    fn send(&mut self, line: &str) -> Request {
        self.type_text(line);
        self.key(KeyCode::Enter)
    }

    fn frame(&mut self) -> Frame {
        self.app.frame(Instant::now())
    }

    /// The live area as text.
    fn screen(&mut self) -> String {
        self.frame()
            .lines
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The footer: the live area's last line (no status line is configured).
    fn footer(&mut self) -> String {
        self.frame()
            .lines
            .last()
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    /// What went to the scrollback since the last call (also kept in `said`).
    fn scrollback(&mut self) -> String {
        let new = self
            .app
            .take_commit()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        self.said.push_str(&new);
        self.said.push('\n');
        new
    }

    /// Feeds engine and background events to the app until `done` holds.
    async fn until(&mut self, what: &str, mut done: impl FnMut(&mut Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "waited for {what}:\n{}\n--- scrollback ---\n{}",
                self.screen(),
                self.said
            );
            if let Ok(Some(ev)) =
                tokio::time::timeout(Duration::from_millis(50), self.rx.recv()).await
            {
                self.app.on_ui_event(ev);
            }
            self.app.on_store_change();
        }
    }

    async fn turn_done(&mut self) {
        self.until("the turn to end", |u| !u.app.turn_running())
            .await;
        self.scrollback();
    }

    fn mode(&self) -> PermissionMode {
        self.engine.store().with(|s| s.tool_permission_context.mode)
    }

    fn message_count(&self) -> usize {
        self.engine.store().with(|s| s.messages.len())
    }
}

/// Polls `path` until its text satisfies `ok` (effects are written off the key's path).
async fn file_until(path: &std::path::Path, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if ok(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {} holds:\n{text}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Pids of processes with `arg` among their arguments.
fn pids_with_arg(arg: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

// ---------------------------------------------------------------------------------------
// 1. Esc interrupts a running turn.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_esc_while_a_turn_runs_interrupts_it_and_the_prompt_works_again() {
    let marker = format!("7{}.5", std::process::id() % 100_000);
    let replies = [
        tool_reply(
            1,
            "Bash",
            json!({"command": format!("sleep {marker}"), "description": "a long wait"}),
        ),
        text_reply(2, "After the interrupt."),
    ];
    let mut ui = Launch::new(&replies).allow("Bash").open().await;
    ui.send("wait for a long time");
    assert!(ui.app.turn_running());
    ui.until("the command to run", |_| !pids_with_arg(&marker).is_empty())
        .await;
    assert!(ui.screen().contains("esc to interrupt"), "{}", ui.screen());
    let pressed = Instant::now();
    assert_eq!(ui.key(KeyCode::Esc), Request::None);
    assert!(
        ui.footer().contains("Interrupted"),
        "the footer says so at once: {}",
        ui.footer()
    );
    ui.turn_done().await;
    assert!(
        pressed.elapsed() < Duration::from_secs(10),
        "the turn ended because of Esc, not because the command finished"
    );
    assert!(!ui.screen().contains("esc to interrupt"), "{}", ui.screen());
    // The command was stopped, and the conversation records the interruption.
    ui.until("the command to be stopped", |_| {
        pids_with_arg(&marker).is_empty()
    })
    .await;
    let last_user = ui.engine.store().with(|s| {
        s.messages
            .iter()
            .rev()
            .find(|m| m.role == strata_protocol::message::Role::User)
            .map(|m| serde_json::to_string(&**m).unwrap())
            .unwrap_or_default()
    });
    assert!(
        last_user.contains("[Request interrupted by user]"),
        "{last_user}"
    );
    let transcript = file_until(&ui.engine.transcript_path(), "the interruption", |t| {
        t.contains("[Request interrupted by user]")
    })
    .await;
    assert!(transcript.contains("wait for a long time"), "{transcript}");
    assert!(
        ui.said.contains("nterrupted"),
        "the scrollback shows the interruption:\n{}",
        ui.said
    );
    // The prompt works again: the next prompt runs a turn and its answer shows.
    ui.send("and now something short");
    ui.turn_done().await;
    assert!(ui.said.contains("After the interrupt."), "{}", ui.said);
}

/// A session whose first prompt runs `sleep <marker>` (allowed), interrupted by `key`
/// once the command runs; the turn has ended.
async fn interrupted_by(key: (KeyCode, KeyModifiers)) -> Ui {
    let marker = format!("6{}.25", std::process::id() % 100_000);
    let replies = [tool_reply(
        1,
        "Bash",
        json!({"command": format!("sleep {marker}"), "description": "a long wait"}),
    )];
    let mut ui = Launch::new(&replies).allow("Bash").open().await;
    ui.send("wait for a long time");
    ui.until("the command to run", |_| !pids_with_arg(&marker).is_empty())
        .await;
    assert_eq!(ui.key_with(key.0, key.1), Request::None);
    ui.turn_done().await;
    ui.until("the command to be stopped", |_| {
        pids_with_arg(&marker).is_empty()
    })
    .await;
    ui
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_ctrl_c_while_a_turn_runs_interrupts_it_and_does_not_exit() {
    let ui = interrupted_by((KeyCode::Char('c'), KeyModifiers::CONTROL)).await;
    assert!(!ui.app.exiting());
    assert!(
        ui.said.contains("wait for a long time") && ui.said.contains("nterrupted"),
        "{}",
        ui.said
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_an_interrupted_turn_is_not_shown_as_a_prompt_the_user_typed() {
    let ui = interrupted_by((KeyCode::Esc, KeyModifiers::NONE)).await;
    let typed: Vec<&str> = ui.said.lines().filter(|l| l.starts_with("> ")).collect();
    assert_eq!(typed, ["> wait for a long time"], "{}", ui.said);
}

// ---------------------------------------------------------------------------------------
// 2. Ctrl-C and Ctrl-D.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_ctrl_c_with_text_in_the_prompt_clears_it_and_does_not_exit() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    ui.type_text("half a thought");
    assert!(ui.screen().contains("> half a thought"), "{}", ui.screen());
    assert_eq!(ui.ctrl('c'), Request::None);
    assert!(!ui.app.exiting());
    let screen = ui.screen();
    assert!(!screen.contains("half a thought"), "{screen}");
    // The placeholder of an empty prompt is back.
    assert!(screen.contains("/help for commands"), "{screen}");
    // And the prompt takes new text.
    ui.type_text("a new one");
    assert!(ui.screen().contains("> a new one"), "{}", ui.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_ctrl_c_twice_on_an_empty_prompt_exits() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.ctrl('c'), Request::None, "one press does not exit");
    assert!(!ui.app.exiting());
    let footer = ui.footer();
    assert!(
        footer.to_lowercase().contains("ctrl-c"),
        "the footer says how to exit: {footer}"
    );
    assert_eq!(ui.ctrl('c'), Request::Exit);
    assert!(ui.app.exiting());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_ctrl_c_presses_far_apart_do_not_exit() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.ctrl('c'), Request::None);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        ui.ctrl('c'),
        Request::None,
        "a second press seconds later is a new first press"
    );
    assert!(!ui.app.exiting());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_ctrl_d_on_an_empty_prompt_exits_and_with_text_deletes() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    ui.type_text("abc");
    ui.key(KeyCode::Home);
    assert_eq!(ui.ctrl('d'), Request::None, "text in the prompt: no exit");
    assert!(!ui.app.exiting());
    assert!(ui.screen().contains("> bc"), "{}", ui.screen());
    ui.ctrl('c');
    assert_eq!(ui.ctrl('d'), Request::Exit);
    assert!(ui.app.exiting());
}

// ---------------------------------------------------------------------------------------
// 3. Ctrl-T: the todo list.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_ctrl_t_shows_the_todo_list_and_hides_it_again() {
    let todos = json!({"todos": [
        {"content": "Read the spec", "status": "completed", "activeForm": "Reading the spec"},
        {"content": "Write the parser", "status": "in_progress", "activeForm": "Writing the parser"},
        {"content": "Test the parser", "status": "pending", "activeForm": "Testing the parser"}
    ]});
    let replies = [tool_reply(1, "TodoWrite", todos), text_reply(2, "Planned.")];
    let mut ui = Launch::new(&replies).open().await;
    ui.send("plan the parser");
    ui.turn_done().await;
    let todo_count = ui
        .engine
        .store()
        .with(|s| s.todos.0.values().map(|v| v.len()).sum::<usize>());
    assert_eq!(todo_count, 3, "the app state has the todos");
    assert!(!ui.screen().contains("Write the parser"), "{}", ui.screen());
    assert_eq!(ui.ctrl('t'), Request::None);
    let lines: Vec<String> = ui.frame().lines.iter().map(ToString::to_string).collect();
    let find = |text: &str| {
        lines
            .iter()
            .position(|l| l.contains(text))
            .unwrap_or_else(|| panic!("{text} is not shown:\n{}", lines.join("\n")))
    };
    let (read, write, test) = (
        find("Read the spec"),
        find("Write the parser"),
        find("Test the parser"),
    );
    assert!(
        read < write && write < test,
        "in order:\n{}",
        lines.join("\n")
    );
    assert!(lines[read].contains('☒'), "done: {}", lines[read]);
    assert!(lines[write].contains('☐'), "not done: {}", lines[write]);
    let prompt = lines.iter().position(|l| l.starts_with("> ")).unwrap();
    assert!(test < prompt, "above the prompt:\n{}", lines.join("\n"));
    assert_eq!(ui.ctrl('t'), Request::None);
    let screen = ui.screen();
    assert!(
        !screen.contains("Read the spec") && !screen.contains("Write the parser"),
        "{screen}"
    );
}

// ---------------------------------------------------------------------------------------
// 4. /cost, /status, /config, /exit, /export, /help.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_cost_shows_what_the_session_cost_so_far() {
    let replies = [response_with_usage(
        1,
        json!([{"type": "text", "text": "An expensive answer."}]),
        100_000,
        20_000,
    )];
    let mut ui = Launch::new(&replies).open().await;
    ui.send("/cost");
    let before = ui.scrollback();
    assert!(
        before.contains("Total cost of this session: $0.0000"),
        "{before}"
    );
    ui.send("answer expensively");
    ui.turn_done().await;
    let footer = ui.footer();
    let shown = footer
        .rsplit('$')
        .next()
        .map(|s| format!("${}", s.trim()))
        .unwrap();
    assert_ne!(shown, "$0.0000", "the footer counts the cost: {footer}");
    ui.send("/cost");
    let said = ui.scrollback();
    assert!(
        said.contains(&format!("Total cost of this session: {shown}")),
        "{said}\n(footer: {footer})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_status_shows_the_session_id_model_and_mode() {
    let mut ui = Launch::new(&[text_reply(1, "x")])
        .mode(PermissionMode::AcceptEdits)
        .open()
        .await;
    assert_eq!(ui.send("/status"), Request::None);
    let said = ui.scrollback();
    let id = ui.engine.session_id();
    let model = ui.engine.model();
    assert!(!model.is_empty());
    assert!(said.contains(id.as_str()), "the session id {id}:\n{said}");
    assert!(said.contains(&model), "the model {model}:\n{said}");
    assert!(said.contains("acceptEdits"), "the mode:\n{said}");
    // The mode it shows is the current one.
    ui.key(KeyCode::BackTab);
    ui.send("/status");
    let said = ui.scrollback();
    assert!(
        said.contains("plan") && !said.contains("acceptEdits"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_status_shows_the_working_directory() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    ui.send("/status");
    let said = ui.scrollback();
    let cwd = ui.cwd.to_string_lossy().into_owned();
    assert!(said.contains(&cwd), "{cwd}:\n{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_config_shows_the_settings_and_changes_one() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.send("/config"), Request::None);
    let screen = ui.screen();
    let model = ui.engine.model();
    for want in [
        "Settings",
        "Verbose output: off",
        &format!("Model: {model}"),
        "Permission mode: default",
        "Todo list shown: off",
        "Status line:",
    ] {
        assert!(screen.contains(want), "{want}:\n{screen}");
    }
    // Enter on the first entry toggles verbose output; the list shows the new value.
    ui.key(KeyCode::Enter);
    ui.app.on_store_change();
    let screen = ui.screen();
    assert!(screen.contains("Verbose output: on"), "{screen}");
    assert!(ui.engine.store().with(|s| s.verbose));
    ui.key(KeyCode::Esc);
    assert!(!ui.screen().contains("Verbose output"), "{}", ui.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_exit_exits() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.send("/exit"), Request::Exit);
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.send("/quit"), Request::Exit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_export_writes_the_conversation_as_markdown() {
    let replies = [text_reply(
        1,
        "The **cache layer** keeps parsed files.\n\nIt is cleared on save.",
    )];
    let mut ui = Launch::new(&replies).open().await;
    ui.send("explain the cache layer");
    ui.turn_done().await;
    let out = ui.cwd.join("conversation.md");
    ui.send(&format!("/export {}", out.display()));
    let said = ui.scrollback();
    assert!(said.contains("exported"), "{said}");
    let md = std::fs::read_to_string(&out).unwrap();
    let prompt = md.find("explain the cache layer").expect(&md);
    let answer = md
        .find("The **cache layer** keeps parsed files.")
        .expect(&md);
    assert!(prompt < answer, "{md}");
    assert!(md.contains("It is cleared on save."), "{md}");
    // Without a file name it says what is missing and writes nothing.
    ui.send("/export");
    assert!(ui.scrollback().contains("needs a file name"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_help_lists_the_commands_and_keys() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.send("/help"), Request::None);
    let said = ui.scrollback();
    for command in [
        "/help",
        "/clear",
        "/resume",
        "/rewind",
        "/model",
        "/permissions",
        "/add-dir",
        "/config",
        "/memory",
        "/cost",
        "/context",
        "/compact",
        "/mcp",
        "/tasks",
        "/agents",
        "/status",
        "/export",
        "/exit",
    ] {
        assert!(
            said.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} is not listed:\n{said}"
        );
    }
    for key in ["Esc", "Ctrl-R", "Ctrl-T", "Ctrl-O", "Shift+Tab"] {
        assert!(said.contains(key), "{key}:\n{said}");
    }
    // An unknown command points to /help.
    ui.send("/frobnicate");
    assert!(ui.scrollback().contains("Unknown command /frobnicate"));
}

// ---------------------------------------------------------------------------------------
// 5. Shift+Tab and bypassPermissions.

/// The modes Shift+Tab goes through from the start, as the store and the footer show
/// them, until it is back at the first.
fn cycle(ui: &mut Ui) -> Vec<(PermissionMode, String)> {
    let first = ui.mode();
    let mut seen = Vec::new();
    for _ in 0..6 {
        ui.key(KeyCode::BackTab);
        let footer = ui.footer();
        seen.push((ui.mode(), footer));
        if ui.mode() == first {
            break;
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_shift_tab_skips_bypass_permissions_when_it_is_not_available() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    let seen = cycle(&mut ui);
    let modes: Vec<PermissionMode> = seen.iter().map(|(m, _)| *m).collect();
    assert_eq!(
        modes,
        [
            PermissionMode::AcceptEdits,
            PermissionMode::Plan,
            PermissionMode::Default
        ],
        "{seen:?}"
    );
    assert!(seen[0].1.contains("accept edits on"), "{seen:?}");
    assert!(seen[1].1.contains("plan mode on"), "{seen:?}");
    assert!(seen.iter().all(|(_, f)| !f.contains("bypass")), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_shift_tab_reaches_bypass_permissions_when_started_with_the_allow_flag() {
    let mut ui = Launch::new(&[text_reply(1, "x")])
        .allow_bypass()
        .open()
        .await;
    let seen = cycle(&mut ui);
    let modes: Vec<PermissionMode> = seen.iter().map(|(m, _)| *m).collect();
    assert_eq!(
        modes,
        [
            PermissionMode::AcceptEdits,
            PermissionMode::Plan,
            PermissionMode::BypassPermissions,
            PermissionMode::Default
        ],
        "{seen:?}"
    );
    assert!(seen[2].1.contains("bypass permissions on"), "{seen:?}");
}

// ---------------------------------------------------------------------------------------
// 6. Rewind: the code only, the conversation only.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_rewind_code_only_restores_the_file_and_keeps_the_conversation() {
    let (mut ui, file) = wrote_a_file().await;
    ui.send("write the notes");
    ui.turn_done().await;
    assert!(file.exists(), "the tool ran:\n{}", ui.said);
    let messages = ui.message_count();
    assert!(messages >= 4, "{messages}");
    ui.key(KeyCode::Esc);
    ui.key(KeyCode::Esc);
    assert!(ui.screen().contains("Rewind to before which prompt?"));
    ui.key(KeyCode::Enter);
    assert!(ui.screen().contains("Restore code"), "{}", ui.screen());
    // Both, conversation, code, never mind: the third.
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Enter);
    let said = ui.scrollback();
    assert!(said.contains("Restored 1 file(s)"), "{said}");
    assert!(!said.contains("Conversation rewound"), "{said}");
    assert!(!file.exists(), "the new file is gone again");
    assert_eq!(ui.message_count(), messages, "the conversation stays");
    let screen = ui.screen();
    assert!(
        !screen.contains("> write the notes"),
        "the prompt is not put back:\n{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_rewind_conversation_only_keeps_the_file_and_drops_the_later_messages() {
    let (mut ui, file) = wrote_a_file().await;
    ui.send("write the notes");
    ui.turn_done().await;
    assert!(file.exists(), "the tool ran:\n{}", ui.said);
    ui.key(KeyCode::Esc);
    ui.key(KeyCode::Esc);
    ui.key(KeyCode::Enter);
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Enter);
    let said = ui.scrollback();
    assert!(said.contains("Conversation rewound"), "{said}");
    assert!(!said.contains("Restored"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "written by the agent\n",
        "the file stays as the agent left it"
    );
    assert_eq!(ui.message_count(), 0, "the later messages are gone");
    assert!(
        ui.screen().contains("> write the notes"),
        "the prompt is back in the editor:\n{}",
        ui.screen()
    );
}

/// A session in acceptEdits whose replay has the agent write a new file in the project
/// and answer; the file's path.
async fn wrote_a_file() -> (Ui, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proj/notes.txt");
    let replies = [
        tool_reply(
            1,
            "Write",
            json!({"file_path": file.to_string_lossy(), "content": "written by the agent\n"}),
        ),
        text_reply(2, "Wrote the notes."),
    ];
    let ui = Launch::new(&replies)
        .mode(PermissionMode::AcceptEdits)
        .dir(dir)
        .open()
        .await;
    (ui, file)
}

// ---------------------------------------------------------------------------------------
// 7. /model: FX-2 persists the pick.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_fx2_the_model_picked_in_slash_model_is_written_to_the_user_settings() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    let settings = ui.cfg.join("settings.json");
    ui.send("/model");
    ui.type_text("haik");
    ui.key(KeyCode::Enter);
    let text = file_until(&settings, "the model is persisted", |t| {
        serde_json::from_str::<Value>(t).is_ok_and(|v| v["model"] == "haiku")
    })
    .await;
    assert!(text.contains("\"haiku\""), "{text}");
    // A typed name goes there too; `default` removes the key.
    ui.send("/model my-local-model");
    file_until(&settings, "the typed model is persisted", |t| {
        serde_json::from_str::<Value>(t).is_ok_and(|v| v["model"] == "my-local-model")
    })
    .await;
    ui.send("/model");
    ui.type_text("default");
    ui.key(KeyCode::Enter);
    file_until(&settings, "the model key is removed", |t| {
        serde_json::from_str::<Value>(t).is_ok_and(|v| v.get("model").is_none())
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// 8. A narrow terminal.

/// Draws `frame` (after `commit`) with the real renderer on a `width` × `height` vt100
/// screen; its rows.
fn draw(
    commit: &[ratatui::text::Line<'static>],
    frame: &Frame,
    width: u16,
    height: u16,
) -> Vec<String> {
    let mut term = InlineTerminal::new(Vec::new(), width, height, true);
    term.draw(commit, frame).expect("drawing into memory");
    let mut parser = vt100::Parser::new(height, width, 0);
    parser.process(term.writer_mut());
    parser.screen().rows(0, width).collect()
}

/// The live area's lines wider than `width`, as text.
fn too_wide(frame: &Frame, width: u16) -> Vec<String> {
    frame
        .lines
        .iter()
        .filter(|l| line_width(l) > usize::from(width))
        .map(ToString::to_string)
        .collect()
}

/// Draws the app's frame (and what is due for the scrollback) on a `width` × `height`
/// screen; the frame and the screen's rows. The footer, cut to the width, must be the
/// last row drawn.
fn draw_app(ui: &mut Ui, state: &str, width: u16, height: u16) -> (Frame, Vec<String>) {
    let frame = ui.frame();
    let commit = ui.app.take_commit();
    let rows = draw(&commit, &frame, width, height);
    let footer = rows
        .iter()
        .rev()
        .find(|r| !r.trim().is_empty())
        .cloned()
        .unwrap_or_default();
    assert!(
        footer.starts_with("⏵⏵ accept edits on"),
        "{state}: the footer, cut, is on the last row:\n{}",
        rows.join("\n")
    );
    (frame, rows)
}

const NARROW: (u16, u16) = (30, 8);

/// A session in acceptEdits on a 30-column terminal whose replay asks to run a long
/// command, then answers with a long line.
async fn narrow_session() -> Ui {
    let answer = "A long answer that wraps over several rows of a narrow terminal, \
                  with a_very_long_identifier_that_cannot_break_anywhere_at_all in it.";
    let replies = [
        tool_reply(
            1,
            "Bash",
            json!({"command": "echo a command long enough to be cut at thirty columns"}),
        ),
        text_reply(2, answer),
    ];
    Launch::new(&replies)
        .mode(PermissionMode::AcceptEdits)
        .width(NARROW.0)
        .open()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_a_30_by_8_terminal_draws_the_prompt_overlays_and_todos_within_its_width() {
    let (w, h) = NARROW;
    let mut ui = narrow_session().await;
    let check = |ui: &mut Ui, state: &str| -> Vec<String> {
        let (frame, rows) = draw_app(ui, state, w, h);
        let wide = too_wide(&frame, w);
        assert!(wide.is_empty(), "{state}: lines wider than {w}: {wide:#?}");
        rows
    };
    // An empty prompt: the footer is cut (it is 40 columns), the prompt is above it.
    let rows = check(&mut ui, "empty");
    assert!(
        rows.iter().any(|r| r.starts_with('>')),
        "the prompt:\n{}",
        rows.join("\n")
    );
    // A long prompt wraps inside the width; its end (where the cursor is) shows.
    ui.type_text("please look at the parser and the cache layer and tell me why it is slow");
    let rows = check(&mut ui, "long prompt");
    assert!(
        rows.iter().any(|r| r.contains("slow")),
        "the prompt's end:\n{}",
        rows.join("\n")
    );
    // The permission dialog: the question and the first choice are on screen.
    ui.key(KeyCode::Enter);
    ui.until("the permission dialog", |u| {
        u.screen().contains("Do you want to proceed?")
    })
    .await;
    let (_, rows) = draw_app(&mut ui, "dialog", w, h);
    let screen = rows.join("\n");
    assert!(
        screen.contains("Do you want to proceed?") && screen.contains("1. Yes"),
        "{screen}"
    );
    ui.key(KeyCode::Char('1'));
    ui.turn_done().await;
    // The answer went to the scrollback, wrapped at the width (the long word broken).
    assert!(
        ui.said.contains("A long answer") && ui.said.contains("here_at_all in it."),
        "{}",
        ui.said
    );
    let widest = ui.said.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(
        widest <= usize::from(w),
        "history wider than {w}:\n{}",
        ui.said
    );
    check(&mut ui, "after the turn");
    // An overlay, then the todo list.
    ui.send("/model");
    let rows = check(&mut ui, "model picker");
    assert!(rows.join("\n").contains("haiku"), "{}", rows.join("\n"));
    ui.key(KeyCode::Esc);
    ui.ctrl('t');
    let rows = check(&mut ui, "todos");
    assert!(
        rows.iter().any(|r| r.starts_with('>')),
        "{}",
        rows.join("\n")
    );
    // Narrower still after a resize, down to one column, with text in the prompt: no
    // panic (and while the prompt fits in the rows, its start is on screen); then back.
    ui.type_text("some text");
    for narrower in (1..=12).rev() {
        ui.app.on_terminal_event(Event::Resize(narrower, h));
        let frame = ui.frame();
        let rows = draw(&[], &frame, narrower, h);
        assert!(
            narrower < 10 || rows.iter().any(|r| r.starts_with('>')),
            "{narrower} columns:\n{}",
            rows.join("\n")
        );
    }
    ui.app.on_terminal_event(Event::Resize(w, h));
    check(&mut ui, "back to 30");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_a_30_column_permission_dialog_wraps_its_lines() {
    let (w, h) = NARROW;
    let mut ui = narrow_session().await;
    ui.send("run it");
    ui.until("the permission dialog", |u| {
        u.screen().contains("Do you want to proceed?")
    })
    .await;
    let (frame, _) = draw_app(&mut ui, "dialog", w, h);
    let wide = too_wide(&frame, w);
    assert!(wide.is_empty(), "lines wider than {w}: {wide:#?}");
}
