//! The UI's commands, keys and overlays on a real engine (a replay provider: responses
//! recorded in a transcript written here), driven key by key through the app as the
//! event loop would, and checked on what a user sees: the live area's lines, the
//! scrollback lines, files on disk and the transcript.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use strata_agent::engine::{Engine, EngineHandles, EngineOptions};
use strata_agent::provider::ReplayProvider;
use strata_protocol::permission::PermissionMode;
use strata_tui::app::{App, Request, Switch};
use strata_tui::bridge::{UiEvent, UiEvents, UiPrompter};
use tokio::sync::mpsc::UnboundedReceiver;

/// One assistant response of a replay: its content blocks.
fn response(n: usize, blocks: Value) -> String {
    json!({
        "type": "assistant", "uuid": format!("00000000-0000-4000-8000-{n:012}"),
        "parentUuid": null, "sessionId": "replay", "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"model": "claude-sonnet-4-5", "id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "content": blocks, "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}}
    })
    .to_string()
}

fn text_reply(n: usize, text: &str) -> String {
    response(n, json!([{"type": "text", "text": text}]))
}

struct Ui {
    app: App,
    rx: UnboundedReceiver<UiEvent>,
    engine: Arc<Engine>,
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    cfg: PathBuf,
}

struct Setup {
    dir: tempfile::TempDir,
    cwd: PathBuf,
    cfg: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("proj");
        std::fs::create_dir_all(cwd.join(".git")).unwrap();
        let cfg = dir.path().join("cfg");
        std::fs::create_dir_all(&cfg).unwrap();
        Self { dir, cwd, cfg }
    }

    async fn open(self, replies: &[String], mode: Option<PermissionMode>, mcp: Vec<String>) -> Ui {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let replay = replies.join("\n");
        let options = EngineOptions {
            cwd: self.cwd.clone(),
            config_dir: self.cfg.clone(),
            handles: EngineHandles::private(),
            provider: Arc::new(ReplayProvider::from_bytes("test", replay.as_bytes()).unwrap()),
            model: None,
            permission: strata_agent::permissions::PermissionLaunch {
                mode,
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
            mcp_config: mcp,
            strict_mcp_config: true,
            max_thinking_tokens: None,
            sdk: Default::default(),
        };
        let engine = Arc::new(Engine::open(options).await.unwrap());
        let history = vec![
            "run the linter".to_owned(),
            "explain the cache layer".to_owned(),
        ];
        let project = self.cwd.to_string_lossy().into_owned();
        let mut app = App::new(engine.clone(), tx, history, None, project, 80);
        app.set_config_dir(self.cfg.clone());
        Ui {
            app,
            rx,
            engine,
            cwd: self.cwd,
            cfg: self.cfg,
            _dir: self.dir,
        }
    }
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

    /// The live area as text.
    fn screen(&mut self) -> String {
        let frame = self.app.frame(Instant::now());
        frame
            .lines
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What went to the scrollback since the last call.
    fn scrollback(&mut self) -> String {
        self.app
            .take_commit()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Feeds engine and background events to the app until `done` holds.
    async fn until(&mut self, what: &str, mut done: impl FnMut(&mut Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "waited for {what}:\n{}",
                self.screen()
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
    }

    fn transcript(&self) -> String {
        std::fs::read_to_string(self.engine.transcript_path()).unwrap_or_default()
    }
}

fn ctrl(c: char) -> (KeyCode, KeyModifiers) {
    (KeyCode::Char(c), KeyModifiers::CONTROL)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_resume_lists_earlier_sessions_newest_first_and_switches_to_the_pick() {
    let setup = Setup::new();
    let (cwd, cfg) = (setup.cwd.clone(), setup.cfg.clone());
    // An earlier session of the project, with its prompt.
    let mut ui = setup
        .open(&[text_reply(1, "Earlier answer.")], None, Vec::new())
        .await;
    ui.send("fix the flaky login test");
    ui.turn_done().await;
    let earlier = ui.engine.session_id();
    let Ui {
        app, engine, _dir, ..
    } = ui;
    drop(app);
    Arc::try_unwrap(engine).ok().unwrap().close().await.unwrap();
    let mut ui = Setup {
        dir: _dir,
        cwd,
        cfg,
    }
    .open(&[text_reply(1, "x")], None, Vec::new())
    .await;
    assert_eq!(ui.send("/resume"), Request::None);
    ui.until("the sessions", |u| {
        u.screen().contains("fix the flaky login test")
    })
    .await;
    let screen = ui.screen();
    assert!(screen.contains("Resume a session"), "{screen}");
    ui.type_text("flaky");
    assert_eq!(ui.key(KeyCode::Enter), Request::Switch);
    assert_eq!(ui.app.take_switch(), Some(Switch::Resume(earlier)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_clear_starts_a_new_session() {
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, Vec::new())
        .await;
    assert_eq!(ui.send("/clear"), Request::Switch);
    assert_eq!(ui.app.take_switch(), Some(Switch::New));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fx2_model_picker_sets_the_model_and_takes_any_typed_name() {
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, Vec::new())
        .await;
    ui.send("/model");
    let screen = ui.screen();
    assert!(
        screen.contains("Select a model") && screen.contains("haiku"),
        "{screen}"
    );
    ui.type_text("haik");
    ui.key(KeyCode::Enter);
    assert_eq!(ui.engine.model(), "haiku");
    assert!(ui.screen().contains("haiku"), "the footer shows the model");
    ui.send("/model");
    ui.type_text("my-local-model");
    ui.key(KeyCode::Enter);
    assert_eq!(ui.engine.model(), "my-local-model");
    ui.send("/model");
    ui.key(KeyCode::Esc);
    assert!(!ui.screen().contains("Select a model"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_permissions_adds_to_local_settings_lists_by_source_and_removes() {
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, Vec::new())
        .await;
    ui.send("/permissions add allow Bash(npm test:*)");
    assert!(
        ui.scrollback()
            .contains("Added allow rule Bash(npm test:*)")
    );
    let local = ui.cwd.join(".strata/settings.local.json");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(&local)
        .unwrap_or_default()
        .contains("npm test:*")
    {
        assert!(
            Instant::now() < deadline,
            "the rule was not written to {}",
            local.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ui.send("/permissions");
    let screen = ui.screen();
    assert!(
        screen.contains("allow Bash(npm test:*)") && screen.contains("local settings"),
        "{screen}"
    );
    ui.key(KeyCode::Enter);
    assert!(
        ui.scrollback()
            .contains("Removed allow rule Bash(npm test:*)")
    );
    let rules = ui
        .engine
        .store()
        .with(|s| s.tool_permission_context.always_allow_rules.iter().count());
    assert_eq!(rules, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_add_dir_lets_the_tools_use_another_directory() {
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, Vec::new())
        .await;
    let other = ui.cfg.parent().unwrap().join("other");
    std::fs::create_dir_all(&other).unwrap();
    ui.send(&format!("/add-dir {}", other.display()));
    assert!(ui.scrollback().contains("as a working directory"));
    let dirs = ui.engine.store().with(|s| {
        s.tool_permission_context
            .additional_working_directories
            .len()
    });
    assert_eq!(dirs, 1);
    ui.send("/add-dir no/such/dir");
    assert!(ui.scrollback().contains("is not a directory"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_r_searches_the_prompt_history_and_puts_the_pick_in_the_editor() {
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, Vec::new())
        .await;
    let (c, m) = ctrl('r');
    ui.key_with(c, m);
    assert!(ui.screen().contains("Search the prompt history"));
    ui.type_text("cache");
    ui.key(KeyCode::Enter);
    assert!(
        ui.screen().contains("> explain the cache layer"),
        "{}",
        ui.screen()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_completes_project_paths_respecting_gitignore() {
    let setup = Setup::new();
    std::fs::create_dir_all(setup.cwd.join("src")).unwrap();
    std::fs::write(setup.cwd.join("src/parser.rs"), "").unwrap();
    std::fs::write(setup.cwd.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(setup.cwd.join("parser.log"), "").unwrap();
    let mut ui = setup.open(&[text_reply(1, "x")], None, Vec::new()).await;
    ui.type_text("look at @pars");
    ui.until("the completions", |u| u.screen().contains("@src/parser.rs"))
        .await;
    assert!(!ui.screen().contains("parser.log"));
    ui.key(KeyCode::Tab);
    assert!(
        ui.screen().contains("> look at @src/parser.rs "),
        "{}",
        ui.screen()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_esc_rewinds_code_and_conversation_to_before_a_prompt() {
    let setup = Setup::new();
    let file = setup.cwd.join("notes.txt");
    let write = response(
        1,
        json!([{"type": "tool_use", "id": "toolu_1", "name": "Write",
            "input": {"file_path": file.to_string_lossy(), "content": "written by the agent\n"}}]),
    );
    let replies = [
        write,
        text_reply(2, "Wrote it."),
        text_reply(3, "After the rewind."),
    ];
    let mut ui = setup
        .open(&replies, Some(PermissionMode::AcceptEdits), Vec::new())
        .await;
    ui.send("write the notes");
    ui.turn_done().await;
    assert!(file.exists(), "the tool ran:\n{}", ui.scrollback());
    ui.key(KeyCode::Esc);
    ui.key(KeyCode::Esc);
    let screen = ui.screen();
    assert!(
        screen.contains("Rewind to before which prompt?") && screen.contains("write the notes"),
        "{screen}"
    );
    ui.key(KeyCode::Enter);
    assert!(ui.screen().contains("Restore code and conversation"));
    ui.key(KeyCode::Enter);
    let said = ui.scrollback();
    assert!(said.contains("Restored 1 file(s)"), "{said}");
    assert!(!file.exists(), "the new file is gone again");
    assert_eq!(ui.engine.store().with(|s| s.messages.len()), 0);
    assert!(
        ui.screen().contains("> write the notes"),
        "the prompt is back"
    );
    // The next prompt continues from before the rewound one: a new root.
    ui.app.on_terminal_event(Event::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )));
    ui.send("something else");
    ui.turn_done().await;
    let line = ui
        .transcript()
        .lines()
        .find(|l| l.contains("something else"))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("{}\n---\n{}", ui.transcript(), ui.scrollback()));
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["parentUuid"], Value::Null, "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fx1_shift_tab_writes_a_permission_mode_entry_to_the_transcript() {
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, Vec::new())
        .await;
    ui.send("hello");
    ui.turn_done().await;
    ui.key(KeyCode::BackTab);
    assert!(ui.screen().contains("accept edits on"));
    // Metadata lines are appended without waiting for the write: poll for it.
    let find = |t: &str| {
        t.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "permission-mode")
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let entry = loop {
        let t = ui.transcript();
        if let Some(e) = find(&t) {
            break e;
        }
        assert!(Instant::now() < deadline, "no permission-mode entry:\n{t}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(entry["permissionMode"], "acceptEdits");
    assert_eq!(entry["sessionId"], ui.engine.session_id().as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bang_runs_a_shell_command_and_shows_its_output() {
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, Vec::new())
        .await;
    ui.send("!echo shell-said-$((40+2)); exit 3");
    let mut seen = String::new();
    ui.until("the output", |u| {
        seen.push_str(&u.scrollback());
        seen.contains("shell-said-42")
    })
    .await;
    assert!(seen.contains("(exit status 3)"), "{seen}");
    assert_eq!(
        ui.engine.store().with(|s| s.messages.len()),
        0,
        "not sent to the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_g_hands_the_prompt_to_the_editor_and_takes_its_text_back() {
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, Vec::new())
        .await;
    ui.type_text("draft");
    let (c, m) = ctrl('g');
    let Request::Editor(job) = ui.key_with(c, m) else {
        panic!("Ctrl-G did not ask for the editor");
    };
    assert!(job.into_prompt);
    assert_eq!(std::fs::read_to_string(&job.path).unwrap(), "draft");
    std::fs::write(&job.path, "edited\nin the editor\n").unwrap();
    ui.app.editor_done(&job, Ok(()));
    assert!(
        ui.screen().contains("> edited\n  in the editor"),
        "{}",
        ui.screen()
    );
    assert!(!job.path.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_command_gets_the_session_json_and_shows_under_the_footer() {
    let setup = Setup::new();
    std::fs::create_dir_all(setup.cwd.join(".strata")).unwrap();
    let settings = json!({"statusLine": {"type": "command",
        "command": "printf 'SL '; tr -d '\\n' | sed 's/.*\"session_id\":\"\\([^\"]*\\)\".*/\\1/'"}});
    std::fs::write(
        setup.cwd.join(".strata/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut ui = setup.open(&[text_reply(1, "x")], None, Vec::new()).await;
    ui.app.start_status_line();
    let id = ui.engine.session_id();
    ui.until("the status line", |u| {
        u.screen().contains(&format!("SL {id}"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_memory_lists_memory_files_and_opens_one_in_the_editor() {
    let setup = Setup::new();
    std::fs::write(setup.cwd.join("CLAUDE.md"), "Use tabs.\n").unwrap();
    let mut ui = setup.open(&[text_reply(1, "x")], None, Vec::new()).await;
    ui.send("/memory");
    let screen = ui.screen();
    assert!(
        screen.contains("Memory files") && screen.contains("CLAUDE.md"),
        "{screen}"
    );
    assert!(screen.contains("user memory (new)"), "{screen}");
    let Request::Editor(job) = ui.key(KeyCode::Enter) else {
        panic!("no editor for the memory file");
    };
    assert!(!job.into_prompt);
    assert_eq!(job.path, ui.cwd.join("CLAUDE.md"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_mcp_lists_servers_and_disables_one() {
    let mcp = json!({"mcpServers": {"broken": {"command": "/no/such/mcp-server"}}}).to_string();
    let mut ui = Setup::new()
        .open(&[text_reply(1, "x")], None, vec![mcp])
        .await;
    ui.until("the server to fail", |u| {
        u.engine.mcp_status()["mcpServers"][0]["status"] == "failed"
    })
    .await;
    ui.send("/mcp");
    let screen = ui.screen();
    assert!(
        screen.contains("reconnect broken") && screen.contains("failed"),
        "{screen}"
    );
    ui.type_text("disable");
    ui.key(KeyCode::Enter);
    assert!(
        ui.scrollback()
            .contains("MCP server broken: disable requested")
    );
    ui.until("the server to be disabled", |u| {
        u.engine.mcp_status()["mcpServers"][0]["status"] == "disabled"
    })
    .await;
    let _ = Path::new("");
}
