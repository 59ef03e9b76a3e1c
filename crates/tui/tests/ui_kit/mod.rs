//! The setup the UI key and command tests share (`ui_keys.rs`, `ui_reports.rs`): a real
//! engine over a replay provider (responses recorded in a transcript written here), an
//! app driven key by key as the event loop would, and what a user notices — the live
//! area's lines, the scrollback, frames drawn onto a small vt100 screen.
#![allow(
    dead_code,
    unused_imports,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

pub use std::path::PathBuf;
pub use std::sync::Arc;
pub use std::time::{Duration, Instant};

pub use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
pub use serde_json::{Value, json};
pub use strata_agent::engine::{Engine, EngineHandles, EngineOptions};
pub use strata_agent::permissions::{LaunchFlags, PermissionLaunch};
pub use strata_agent::provider::ReplayProvider;
pub use strata_protocol::permission::PermissionMode;
pub use strata_tui::app::{App, Request};
pub use strata_tui::bridge::{UiEvent, UiEvents, UiPrompter};
pub use strata_tui::term::{Frame, InlineTerminal};
pub use strata_tui::text::line_width;
pub use tokio::sync::mpsc::UnboundedReceiver;

/// A writer whose bytes a test reads back: what the UI wrote to its terminal.
#[derive(Clone, Default)]
pub struct Shared(pub Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    /// Everything written, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Frames written (each opens a synchronized update).
    pub fn frames(&self) -> usize {
        self.text().matches("\x1b[?2026h").count()
    }

    /// What an 80 × 24 terminal shows after all that was written.
    pub fn screen(&self) -> String {
        let mut p = vt100::Parser::new(24, 80, 0);
        p.process(&self.0.lock().unwrap());
        p.screen().contents()
    }
}

/// The model every recorded response names.
pub const MODEL: &str = "claude-sonnet-4-5";

/// One assistant response of a replay: its content blocks and usage.
pub fn response_with_usage(n: usize, blocks: Value, input: u64, output: u64) -> String {
    json!({
        "type": "assistant", "uuid": format!("00000000-0000-4000-8000-{n:012}"),
        "parentUuid": null, "sessionId": "replay", "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"model": MODEL, "id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "content": blocks, "stop_reason": null,
            "usage": {"input_tokens": input, "output_tokens": output}}
    })
    .to_string()
}

pub fn response(n: usize, blocks: Value) -> String {
    response_with_usage(n, blocks, 10, 5)
}

pub fn text_reply(n: usize, text: &str) -> String {
    response(n, json!([{"type": "text", "text": text}]))
}

pub fn tool_reply(n: usize, name: &str, input: Value) -> String {
    response(
        n,
        json!([{"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": input}]),
    )
}

/// How a session is opened: the replay, the launch's permission flags and the width.
pub struct Launch {
    pub replies: Vec<String>,
    pub mode: Option<PermissionMode>,
    pub allowed: Vec<String>,
    pub allow_bypass: bool,
    pub width: u16,
    /// The directory the project (`proj`) and config (`cfg`) are made in.
    pub dir: Option<tempfile::TempDir>,
    /// `--mcp-config` values (JSON or files).
    pub mcp_config: Vec<String>,
}

impl Launch {
    pub fn new(replies: &[String]) -> Self {
        Self {
            replies: replies.to_vec(),
            mode: None,
            allowed: Vec::new(),
            allow_bypass: false,
            width: 80,
            dir: None,
            mcp_config: Vec::new(),
        }
    }

    /// Adds an `--mcp-config` value.
    pub fn mcp_config(mut self, config: String) -> Self {
        self.mcp_config.push(config);
        self
    }

    pub fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = Some(mode);
        self
    }

    pub fn allow(mut self, tool: &str) -> Self {
        self.allowed.push(tool.to_owned());
        self
    }

    /// `--allow-dangerously-skip-permissions`.
    pub fn allow_bypass(mut self) -> Self {
        self.allow_bypass = true;
        self
    }

    pub fn width(mut self, width: u16) -> Self {
        self.width = width;
        self
    }

    pub fn dir(mut self, dir: tempfile::TempDir) -> Self {
        self.dir = Some(dir);
        self
    }

    pub async fn open(self) -> Ui {
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
            mcp_config: self.mcp_config,
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

pub struct Ui {
    pub app: App,
    pub rx: UnboundedReceiver<UiEvent>,
    pub engine: Arc<Engine>,
    pub _dir: tempfile::TempDir,
    pub cwd: PathBuf,
    pub cfg: PathBuf,
    /// Everything written to the scrollback so far.
    pub said: String,
}

impl Ui {
    pub fn key_with(&mut self, code: KeyCode, mods: KeyModifiers) -> Request {
        let r = self
            .app
            .on_terminal_event(Event::Key(KeyEvent::new(code, mods)));
        self.app.on_store_change();
        r
    }

    pub fn key(&mut self, code: KeyCode) -> Request {
        self.key_with(code, KeyModifiers::NONE)
    }

    pub fn ctrl(&mut self, c: char) -> Request {
        self.key_with(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
    }

    /// Types `line` and Enter.
    pub fn send(&mut self, line: &str) -> Request {
        self.type_text(line);
        self.key(KeyCode::Enter)
    }

    pub fn frame(&mut self) -> Frame {
        self.app.frame(Instant::now())
    }

    /// The live area as text.
    pub fn screen(&mut self) -> String {
        self.frame()
            .lines
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The footer: the live area's last line (no status line is configured).
    pub fn footer(&mut self) -> String {
        self.frame()
            .lines
            .last()
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    /// What went to the scrollback since the last call (also kept in `said`).
    pub fn scrollback(&mut self) -> String {
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
    pub async fn until(&mut self, what: &str, mut done: impl FnMut(&mut Self) -> bool) {
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

    pub async fn turn_done(&mut self) {
        self.until("the turn to end", |u| !u.app.turn_running())
            .await;
        self.scrollback();
    }

    pub fn mode(&self) -> PermissionMode {
        self.engine.store().with(|s| s.tool_permission_context.mode)
    }

    pub fn message_count(&self) -> usize {
        self.engine.store().with(|s| s.messages.len())
    }
}

/// Polls `path` until its text satisfies `ok` (effects are written off the key's path).
pub async fn file_until(path: &std::path::Path, what: &str, ok: impl Fn(&str) -> bool) -> String {
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
pub fn pids_with_arg(arg: &str) -> Vec<i32> {
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
