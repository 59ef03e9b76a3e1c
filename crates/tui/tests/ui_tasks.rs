//! Background work and the dialogs that answer for a tool in the UI (issue 12 item 4,
//! issue 18 item 4), on a real engine over a replay provider, driven key by key through
//! the app as the event loop would: the tasks panel lists a real background shell,
//! stops it through the engine (its process is gone), dismisses it; the footer counts
//! running tasks; a task's end is one history line; a background agent is opened (its
//! task retained with its conversation from its transcript, SL-3) and released; an
//! AskUserQuestion call is answered in its dialog and the answers reach the tool's
//! result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use strata_agent::engine::{Engine, EngineHandles, EngineOptions};
use strata_agent::provider::ReplayProvider;
use strata_state::tasks::TaskKind;
use strata_tui::app::{App, Request};
use strata_tui::bridge::{UiEvent, UiEvents, UiPrompter};
use tokio::sync::mpsc::UnboundedReceiver;

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

struct Ui {
    app: App,
    rx: UnboundedReceiver<UiEvent>,
    engine: Arc<Engine>,
    _dir: tempfile::TempDir,
    cfg: PathBuf,
}

async fn open(replies: &[String], allowed: &[&str]) -> Ui {
    open_with(replies, allowed, |_| {}).await
}

/// Opens a session in a new project that `prepare` may fill first.
async fn open_with(
    replies: &[String],
    allowed: &[&str],
    prepare: impl FnOnce(&std::path::Path),
) -> Ui {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    prepare(&cwd);
    let cfg = dir.path().join("cfg");
    std::fs::create_dir_all(&cfg).unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let replay = replies.join("\n");
    let options = EngineOptions {
        cwd: cwd.clone(),
        config_dir: cfg.clone(),
        handles: EngineHandles::private(),
        provider: Arc::new(ReplayProvider::from_bytes("test", replay.as_bytes()).unwrap()),
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
    let project = cwd.to_string_lossy().into_owned();
    let mut app = App::new(engine.clone(), tx, Vec::new(), None, project, 100);
    app.set_config_dir(cfg.clone());
    Ui {
        app,
        rx,
        engine,
        _dir: dir,
        cfg,
    }
}

impl Ui {
    fn key(&mut self, code: KeyCode) -> Request {
        let r = self
            .app
            .on_terminal_event(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)));
        self.app.on_store_change();
        r
    }

    fn send(&mut self, line: &str) -> Request {
        for c in line.chars() {
            self.key(KeyCode::Char(c));
        }
        self.key(KeyCode::Enter)
    }

    fn screen(&mut self) -> String {
        let frame = self.app.frame(Instant::now());
        frame
            .lines
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn scrollback(&mut self) -> String {
        self.app
            .take_commit()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_panel_lists_a_background_shell_stops_it_through_the_engine_and_dismisses_it() {
    let marker = format!("9{}.5", std::process::id());
    let command = format!("echo started-{marker}; sleep {marker}");
    let mut ui = open(
        &[
            tool_reply(
                1,
                "Bash",
                json!({"command": command, "run_in_background": true, "description": "the sleeper"}),
            ),
            text_reply(2, "It runs in the background."),
        ],
        &["Bash"],
    )
    .await;
    ui.send("start the sleeper");
    ui.turn_done().await;
    ui.until("the process", |_| !pids_with_arg(&marker).is_empty())
        .await;
    // The footer counts it and says how to see it.
    let screen = ui.screen();
    assert!(screen.contains("1 background task · ↓ to view"), "{screen}");
    // ↓ on the empty prompt opens the panel: kind, description, status, last line.
    assert_eq!(ui.key(KeyCode::Down), Request::None);
    assert!(ui.app.tasks_panel_open());
    ui.until("the last output line", |u| {
        u.screen().contains(&format!("started-{marker}"))
    })
    .await;
    let screen = ui.screen();
    assert!(
        screen.contains("Background tasks · 1 running · 0 finished"),
        "{screen}"
    );
    assert!(screen.contains("shell"), "{screen}");
    assert!(screen.contains("the sleeper"), "{screen}");
    assert!(screen.contains("running · "), "{screen}");
    ui.scrollback();
    // x stops it through the engine's stop path: the process is gone.
    ui.key(KeyCode::Char('x'));
    ui.until("the task to be stopped", |u| {
        u.screen().contains("stopped · ")
    })
    .await;
    ui.until("the process to be gone", |_| {
        pids_with_arg(&marker).is_empty()
    })
    .await;
    // Its end is one line in the history.
    let mut history = String::new();
    ui.until("the end's history line", |u| {
        history.push_str(&u.scrollback());
        history.contains("the sleeper")
    })
    .await;
    assert_eq!(history.matches("the sleeper").count(), 1, "{history}");
    assert!(
        !ui.screen().contains("background task ·"),
        "no count once none runs"
    );
    // d dismisses it.
    ui.key(KeyCode::Char('d'));
    ui.until("the task to go", |u| {
        u.screen().contains("No background tasks")
    })
    .await;
    assert!(ui.engine.store().get().tasks.tasks.is_empty());
    ui.key(KeyCode::Esc);
    assert!(!ui.app.tasks_panel_open());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sl3_a_background_agent_opened_from_the_panel_is_retained_then_released() {
    let mut ui = open(
        &[
            tool_reply(
                1,
                "Agent",
                json!({"description": "look around", "prompt": "List the folders of the project.",
                       "subagent_type": "general-purpose", "run_in_background": true}),
            ),
            text_reply(2, "Done looking."),
            text_reply(3, "Launched it."),
        ],
        &[],
    )
    .await;
    ui.send("send an agent");
    ui.turn_done().await;
    ui.send("/tasks");
    ui.until("the agent row", |u| u.screen().contains("look around"))
        .await;
    assert!(ui.screen().contains("agent"));
    // Wait for it to finish, so its transcript holds its whole conversation.
    ui.until("the agent to end", |u| u.screen().contains("completed · "))
        .await;
    assert_eq!(ui.key(KeyCode::Enter), Request::Viewer);
    let state = ui.engine.store().get();
    let viewed = state.tasks.viewing_agent_task_id.clone().unwrap();
    let TaskKind::LocalAgent(agent) = &state.tasks.tasks.get(&viewed).unwrap().kind else {
        panic!("not an agent");
    };
    assert!(agent.retain && agent.disk_loaded, "viewing retains it");
    let (title, lines) = ui.app.viewer_lines(100);
    assert!(title.contains("look around"), "{title}");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert!(text.contains("List the folders of the project."), "{text}");
    ui.app.viewer_closed();
    let state = ui.engine.store().get();
    assert_eq!(state.tasks.viewing_agent_task_id, None);
    let TaskKind::LocalAgent(agent) = &state.tasks.tasks.get(&viewed).unwrap().kind else {
        panic!("not an agent");
    };
    assert!(
        !agent.retain && agent.messages.is_empty(),
        "leaving releases it"
    );
    assert!(
        agent.evict_after_ms.is_some(),
        "a finished agent is due for eviction"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_question_is_answered_in_the_dialog_and_the_answer_reaches_the_tool() {
    let mut ui = open(
        &[
            tool_reply(
                1,
                "AskUserQuestion",
                json!({"questions": [{"question": "Which database should we use?",
                    "header": "Database", "multiSelect": false,
                    "options": [{"label": "PostgreSQL", "description": "Relational"},
                                {"label": "SQLite", "description": "A file"}]}]}),
            ),
            text_reply(2, "SQLite it is."),
        ],
        &[],
    )
    .await;
    ui.send("set up storage");
    ui.until("the question", |u| {
        u.screen().contains("Which database should we use?")
    })
    .await;
    let screen = ui.screen();
    assert!(
        screen.contains("1. PostgreSQL") && screen.contains("3. Other"),
        "{screen}"
    );
    ui.key(KeyCode::Char('2'));
    ui.turn_done().await;
    let transcript = std::fs::read_to_string(ui.engine.transcript_path()).unwrap();
    assert!(
        transcript.contains(
            r#"User has answered your questions: \"Which database should we use?\"=\"SQLite\""#
        ),
        "{transcript}"
    );
    let _ = &ui.cfg;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_agents_lists_built_in_and_project_agent_types() {
    let mut ui = open_with(&[text_reply(1, "x")], &[], |proj| {
        let agents = proj.join(".strata/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews a diff for bugs\ntools: Read, Grep\n---\nYou review diffs.\n",
        )
        .unwrap();
    })
    .await;
    ui.send("/agents");
    let listed = ui.scrollback();
    assert!(listed.contains("general-purpose"), "{listed}");
    assert!(listed.contains("Explore"), "{listed}");
    assert!(
        listed.contains("reviewer") && listed.contains("Reviews a diff for bugs"),
        "{listed}"
    );
    assert!(
        listed.contains("reviewer.md") && listed.contains("tools Read, Grep"),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_mcp_servers_are_asked_about_at_start_and_the_answers_are_remembered() {
    let mut ui = open_with(&[text_reply(1, "x")], &[], |proj| {
        std::fs::write(
            proj.join(".mcp.json"),
            r#"{"mcpServers":{"p":{"command":"strata-no-such-server-p"},"q":{"command":"strata-no-such-server-q"}}}"#,
        )
        .unwrap();
    })
    .await;
    assert_eq!(ui.engine.project_servers_awaiting_approval(), ["p", "q"]);
    ui.app.ask_mcp_approvals();
    let screen = ui.screen();
    assert!(
        screen.contains("New MCP server found in .mcp.json: p"),
        "{screen}"
    );
    assert!(
        screen.contains("Use this and all future MCP servers in this project"),
        "{screen}"
    );
    // "Use this MCP server": remembered for the project, and started now.
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Enter);
    let config = std::fs::read_to_string(ui.cfg.join("config.json")).unwrap();
    assert!(
        config.contains("enabledMcpjsonServers") && config.contains("\"p\""),
        "{config}"
    );
    ui.until("p to leave the not-approved status", |u| {
        !u.engine
            .mcp_status()
            .to_string()
            .contains("\"p\" from .mcp.json is not approved")
    })
    .await;
    // q is asked next; Esc leaves it for next time (not started, not remembered).
    let screen = ui.screen();
    assert!(
        screen.contains("New MCP server found in .mcp.json: q"),
        "{screen}"
    );
    ui.key(KeyCode::Esc);
    assert_eq!(ui.engine.project_servers_awaiting_approval(), ["q"]);
    ui.app.ask_mcp_approvals();
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Enter);
    let config = std::fs::read_to_string(ui.cfg.join("config.json")).unwrap();
    assert!(config.contains("disabledMcpjsonServers"), "{config}");
    assert!(ui.engine.project_servers_awaiting_approval().is_empty());
    let status = ui.engine.mcp_status().to_string();
    assert!(status.contains("was rejected"), "{status}");
    assert!(ui.scrollback().contains("MCP server q rejected"));
}
