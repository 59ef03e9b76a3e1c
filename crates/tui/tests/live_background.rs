//! Background work while the UI waits, through the real event loop on a vt100 backend
//! (issue 12's open points 2 and 3), with a real engine over scripted models:
//!
//! - a background task that ends while no turn runs is told to the model in a turn of
//!   its own, whose answer shows without a keystroke;
//! - a running background agent opened from the tasks panel is followed live: what it
//!   writes after the view opened appears in the view, no key pressed, its transcript
//!   not read again.
//!
//! Bash runs under the process supervisor, `strata-supervise` beside the test binaries
//! (`cargo build -p strata-agent --bins`; a workspace test run builds it).
//!
//! The models are replays behind a router: the main agent's requests and a sub-agent's
//! (its first message names it) get their own scripts, and the sub-agent's later replies
//! wait for a gate the test opens, so what exists when the view opens is known.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures::StreamExt as _;
use serde_json::{Value, json};
use strata_agent::engine::{Engine, EngineHandles, EngineOptions};
use strata_agent::provider::{EventStream, ModelRequest, Provider, ReplayProvider};
use strata_tui::app::App;
use strata_tui::bridge::{UiEvents, UiPrompter};
use strata_tui::run::{Backend, event_loop};
use strata_tui::term::InlineTerminal;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

const COLS: u16 = 100;
const ROWS: u16 = 30;
/// What a sub-agent's prompt starts with, so the router knows its requests.
const AGENT_MARK: &str = "AGENT-PROMPT";

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

fn tool_reply(n: usize, name: &str, input: Value) -> String {
    response(
        n,
        json!([{"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": input}]),
    )
}

fn replay(replies: &[String]) -> ReplayProvider {
    ReplayProvider::from_bytes("test", replies.join("\n").as_bytes()).unwrap()
}

/// The main agent's script and a sub-agent's, each request recorded (as JSON text).
/// The sub-agent's first reply comes at once; each later one takes a permit of `gate`.
#[derive(Debug)]
struct Router {
    main: ReplayProvider,
    agent: ReplayProvider,
    gate: Arc<Semaphore>,
    agent_requests: std::sync::atomic::AtomicUsize,
    main_requests: Mutex<Vec<String>>,
}

impl Provider for Router {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let first = request
            .messages
            .first()
            .map(|m| serde_json::to_string(&**m).unwrap())
            .unwrap_or_default();
        if !first.contains(AGENT_MARK) {
            let all: Vec<String> = request
                .messages
                .iter()
                .map(|m| serde_json::to_string(&**m).unwrap())
                .collect();
            self.main_requests.lock().unwrap().push(all.join("\n"));
            return self.main.stream(request, cancel);
        }
        let n = self
            .agent_requests
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let inner = self.agent.stream(request, cancel);
        if n == 0 {
            return inner;
        }
        let gate = Arc::clone(&self.gate);
        Box::pin(
            futures::stream::once(async move {
                gate.acquire().await.unwrap().forget();
                inner
            })
            .flatten(),
        )
    }

    fn default_model(&self) -> Option<&str> {
        self.main.default_model()
    }
}

/// Everything the loop wrote, for a vt100 parser.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Shared {
    /// The screen as the terminal shows it now (the alternate screen while a viewer is
    /// open).
    fn screen(&self) -> String {
        let mut p = vt100::Parser::new(ROWS, COLS, 0);
        p.process(&self.0.lock().unwrap());
        p.screen().contents()
    }

    /// Everything written, as text (the scrollback's lines included).
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    async fn wait_for(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "waited for {what}; the screen:\n{}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

struct Session {
    engine: Arc<Engine>,
    router: Arc<Router>,
    app: App,
    rx: tokio::sync::mpsc::UnboundedReceiver<strata_tui::bridge::UiEvent>,
    _dir: tempfile::TempDir,
}

async fn open(main: &[String], agent: &[String], allowed: &[&str]) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let router = Arc::new(Router {
        main: replay(main),
        agent: replay(if agent.is_empty() { &main[..1] } else { agent }),
        gate: Arc::new(Semaphore::new(0)),
        agent_requests: Default::default(),
        main_requests: Mutex::new(Vec::new()),
    });
    let options = EngineOptions {
        cwd,
        config_dir: dir.path().join("cfg"),
        handles: EngineHandles::private(),
        provider: Arc::clone(&router) as Arc<dyn Provider>,
        model: None,
        permission: strata_agent::permissions::PermissionLaunch {
            allowed_tools: allowed.iter().map(|s| (*s).to_owned()).collect(),
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
        strict_mcp_config: false,
        max_thinking_tokens: None,
        sdk: Default::default(),
    };
    let engine = Arc::new(Engine::open(options).await.unwrap());
    let app = App::new(engine.clone(), tx, Vec::new(), None, String::new(), COLS);
    Session {
        engine,
        router,
        app,
        rx,
        _dir: dir,
    }
}

type Keys = futures::channel::mpsc::UnboundedSender<io::Result<Event>>;

fn press(keys: &Keys, code: KeyCode, modifiers: KeyModifiers) {
    keys.unbounded_send(Ok(Event::Key(KeyEvent::new(code, modifiers))))
        .unwrap();
}

fn type_line(keys: &Keys, line: &str) {
    for c in line.chars() {
        press(keys, KeyCode::Char(c), KeyModifiers::NONE);
    }
    press(keys, KeyCode::Enter, KeyModifiers::NONE);
}

/// Runs the event loop until `driver` is done, then Ctrl-D; fails if the loop ends
/// first.
async fn drive<F: std::future::Future<Output = ()>>(
    s: &mut Session,
    driver: impl FnOnce(Keys, Shared) -> F,
) {
    let out = Shared::default();
    let mut term = InlineTerminal::new(out.clone(), COLS, ROWS, false);
    let (keys, input) = futures::channel::mpsc::unbounded::<io::Result<Event>>();
    let script = {
        let keys = keys.clone();
        let driven = driver(keys.clone(), out.clone());
        async move {
            driven.await;
            press(&keys, KeyCode::Char('d'), KeyModifiers::CONTROL);
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
    };
    tokio::select! {
        r = event_loop(&mut s.app, &mut term, input, &mut s.rx, Backend::Headless) => { r.unwrap(); }
        () = script => panic!("Ctrl-D did not end the loop"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue12_a_background_shell_that_ends_while_idle_starts_a_turn_whose_answer_shows() {
    let marker = format!("built-{}", std::process::id());
    let mut s = open(
        &[
            tool_reply(
                1,
                "Bash",
                json!({"command": format!("sleep 0.3; echo {marker}"), "run_in_background": true,
                       "description": "the build"}),
            ),
            text_reply(2, "It builds in the background."),
            text_reply(3, "The build finished fine."),
        ],
        &[],
        &["Bash"],
    )
    .await;
    let engine = s.engine.clone();
    drive(&mut s, |keys, out| async move {
        type_line(&keys, "start the build");
        out.wait_for("the first turn's answer", |o| {
            o.text().contains("It builds in the background.")
        })
        .await;
        // No key from here on: the task ends, a turn runs, its answer shows.
        out.wait_for("the notification turn's answer", |o| {
            o.text().contains("The build finished fine.")
        })
        .await;
        out.wait_for("the turn to end", |o| {
            !o.screen().contains("esc to interrupt")
        })
        .await;
        let screen = out.screen();
        assert!(screen.contains("The build finished fine."), "{screen}");
        assert!(screen.contains("the build\" completed"), "{screen}");
        let _ = engine;
    })
    .await;
    let requests = s.router.main_requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3, "the notification turn asked the model");
    assert!(
        requests[2].contains("<task-notification>") && requests[2].contains("the build"),
        "{}",
        requests[2]
    );
    assert!(
        !requests[1].contains("<task-notification>"),
        "the task ended after the first turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sl3_a_running_background_agent_opened_from_the_panel_is_followed_live() {
    let mut s = open(
        &[
            tool_reply(
                1,
                "Agent",
                json!({"description": "count the files",
                       "prompt": format!("{AGENT_MARK}: count the files of the project."),
                       "subagent_type": "general-purpose", "run_in_background": true}),
            ),
            text_reply(2, "It is counting."),
            text_reply(3, "The agent reported back."),
        ],
        &[
            // Its output, not its command line, says "step-one-done".
            tool_reply(
                11,
                "Bash",
                json!({"command": "printf 'step-%s-done\\n' one"}),
            ),
            text_reply(12, "AGENT-FINAL: three files."),
        ],
        &["Bash"],
    )
    .await;
    let gate = Arc::clone(&s.router.gate);
    let engine = s.engine.clone();
    drive(&mut s, |keys, out| async move {
        type_line(&keys, "send an agent");
        out.wait_for("the launch's answer", |o| {
            o.text().contains("It is counting.")
        })
        .await;
        out.wait_for("the agent's first tool call", |_| {
            engine.store().get().tasks.tasks.iter().any(|t| {
                matches!(&t.kind, strata_state::tasks::TaskKind::LocalAgent(a) if a.progress.tool_uses >= 1)
            })
        })
        .await;
        type_line(&keys, "/tasks");
        out.wait_for("the panel", |o| o.screen().contains("count the files"))
            .await;
        press(&keys, KeyCode::Enter, KeyModifiers::NONE);
        out.wait_for("the viewer with what the agent did so far", |o| {
            o.screen().contains("step-one-done")
        })
        .await;
        let screen = out.screen();
        assert!(screen.contains("agent ") && screen.contains("running"), "{screen}");
        assert!(!screen.contains("AGENT-FINAL"), "{screen}");
        // The agent writes its answer now; the view shows it without a key.
        gate.add_permits(1);
        out.wait_for("the agent's answer in the open view", |o| {
            o.screen().contains("AGENT-FINAL: three files.")
        })
        .await;
        out.wait_for("its status in the title", |o| {
            o.screen().contains("completed")
        })
        .await;
        // Esc leaves the view (the panel is shown again), Esc closes the panel; the
        // agent's end was told to the model meanwhile.
        press(&keys, KeyCode::Esc, KeyModifiers::NONE);
        press(&keys, KeyCode::Esc, KeyModifiers::NONE);
        out.wait_for("the inline view again", |o| {
            o.text().contains("The agent reported back.")
        })
        .await;
    })
    .await;
}
