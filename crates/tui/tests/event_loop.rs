//! The event loop on a vt100-style backend (a shared buffer) with a real engine over the
//! demo replay: frames are drawn only when a selected slice changes, never while idle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use strata_agent::engine::{Engine, EngineHandles, EngineOptions};
use strata_agent::provider::ReplayProvider;
use strata_tui::app::App;
use strata_tui::bridge::{UiEvents, UiPrompter};
use strata_tui::run::{Backend, event_loop};
use strata_tui::term::InlineTerminal;

mod ui_kit;

use ui_kit::Shared;

const DEMO: &[u8] = include_bytes!("../../cli/demo/demo.jsonl");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui2_idle_draws_nothing_unselected_updates_draw_nothing_a_mode_change_draws_one_frame() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = EngineOptions {
        cwd: cwd.clone(),
        config_dir: dir.path().join("cfg"),
        handles: EngineHandles::private(),
        provider: Arc::new(ReplayProvider::from_bytes("demo", DEMO).unwrap()),
        model: None,
        permission: Default::default(),
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
    let store = engine.store().clone();
    let mut app = App::new(engine.clone(), tx, Vec::new(), None, String::new(), 80);
    let out = Shared::default();
    let mut term = InlineTerminal::new(out.clone(), 80, 24, false);
    let (keys, input) = futures::channel::mpsc::unbounded::<io::Result<Event>>();
    let driver = {
        let out = out.clone();
        let engine = engine.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            assert_eq!(out.frames(), 1, "the first frame");
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(out.frames(), 1, "idle: no frame");
            for _ in 0..1000 {
                let _ = store.update(|s| s.speculation_time_saved_ms += 1);
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
            assert_eq!(out.frames(), 1, "updates no component selects draw nothing");
            engine.set_permission_mode("acceptEdits").unwrap();
            tokio::time::sleep(Duration::from_millis(150)).await;
            assert_eq!(out.frames(), 2, "a mode change is one frame");
            assert!(out.screen().contains("accept edits on"), "{}", out.screen());
            keys.unbounded_send(Ok(Event::Key(KeyEvent::new(
                KeyCode::Char('d'),
                KeyModifiers::CONTROL,
            ))))
            .unwrap();
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    };
    tokio::select! {
        r = event_loop(&mut app, &mut term, input, &mut rx, Backend::Headless) => { r.unwrap(); }
        () = driver => panic!("Ctrl-D did not end the loop"),
    }
}

/// A key press.
fn key(code: KeyCode, modifiers: KeyModifiers) -> io::Result<Event> {
    Ok(Event::Key(KeyEvent::new(code, modifiers)))
}

/// Whether the screen has a row that is exactly `> prompt number {n}`.
fn shows_prompt(screen: &str, n: u32) -> bool {
    let want = format!("> prompt number {n}");
    screen.lines().any(|l| l.trim_end() == want)
}

/// Polls `done` on the screen for up to 5 s (the loop runs on the other tasks).
async fn wait_for(out: &Shared, what: &str, done: impl Fn(&str) -> bool) {
    for _ in 0..500 {
        if done(&out.screen()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never saw {what}; the screen:\n{}", out.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_ctrl_o_shows_the_whole_transcript_scrolls_and_returns_to_the_inline_view() {
    use strata_protocol::message::Message;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = EngineOptions {
        interactive: true,
        prompter: Some(Arc::new(UiPrompter::new(tx.clone()))),
        ..EngineOptions::new(
            cwd.clone(),
            dir.path().join("cfg"),
            EngineHandles::private(),
            Arc::new(ReplayProvider::from_bytes("demo", DEMO).unwrap()),
            Arc::new(UiEvents::new(tx.clone())),
        )
    };
    let engine = Arc::new(Engine::open(options).await.unwrap());
    // Forty prompts: more than a 24-row screen holds.
    engine.store().update(|s| {
        for i in 1..=40 {
            s.messages
                .push_back(Arc::new(Message::user_text(format!("prompt number {i}"))));
        }
    });
    let mut app = App::new(engine.clone(), tx, Vec::new(), None, String::new(), 80);
    let out = Shared::default();
    let mut term = InlineTerminal::new(out.clone(), 80, 24, false);
    let (keys, input) = futures::channel::mpsc::unbounded::<io::Result<Event>>();
    let driver = {
        let out = out.clone();
        async move {
            wait_for(&out, "the prompt", |s| s.contains("/help for commands")).await;
            keys.unbounded_send(key(KeyCode::Char('o'), KeyModifiers::CONTROL))
                .unwrap();
            wait_for(&out, "the transcript's end", |s| {
                shows_prompt(s, 40) && s.contains(" of 80") && !shows_prompt(s, 1)
            })
            .await;
            // Home goes to the start; a collapsed view would have nothing there to show.
            keys.unbounded_send(key(KeyCode::Home, KeyModifiers::NONE))
                .unwrap();
            wait_for(&out, "the transcript's start", |s| {
                shows_prompt(s, 1) && !shows_prompt(s, 40)
            })
            .await;
            keys.unbounded_send(key(KeyCode::PageDown, KeyModifiers::NONE))
                .unwrap();
            wait_for(&out, "the next page", |s| {
                !shows_prompt(s, 1) && shows_prompt(s, 12)
            })
            .await;
            // Any other key goes back to the inline view, which is drawn again.
            keys.unbounded_send(key(KeyCode::Esc, KeyModifiers::NONE))
                .unwrap();
            wait_for(&out, "the inline view", |s| {
                s.contains("/help for commands") && !s.contains("transcript ·")
            })
            .await;
            keys.unbounded_send(key(KeyCode::Char('d'), KeyModifiers::CONTROL))
                .unwrap();
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    };
    tokio::select! {
        r = event_loop(&mut app, &mut term, input, &mut rx, Backend::Headless) => { r.unwrap(); }
        () = driver => panic!("Ctrl-D did not end the loop"),
    }
}

/// Regression: a key the prompt ignores (F5) used to clear the redraw a streamed delta
/// had made due, so the last text of an answer could stay off screen until something
/// else changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignored_key_does_not_cancel_a_redraw_that_was_due() {
    use strata_tui::bridge::UiEvent;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let options = EngineOptions {
        interactive: true,
        ..EngineOptions::new(
            cwd.clone(),
            dir.path().join("cfg"),
            EngineHandles::private(),
            Arc::new(ReplayProvider::from_bytes("demo", DEMO).unwrap()),
            Arc::new(UiEvents::new(tx.clone())),
        )
    };
    let engine = Arc::new(Engine::open(options).await.unwrap());
    let mut app = App::new(engine, tx, Vec::new(), None, String::new(), 80);
    let _ = app.frame(std::time::Instant::now());
    assert!(!app.is_dirty());
    app.on_ui_event(UiEvent::BlockStart);
    app.on_ui_event(UiEvent::Delta {
        text: "the last words".into(),
        thinking: false,
    });
    assert!(app.is_dirty());
    app.on_terminal_event(Event::Key(KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE)));
    assert!(app.is_dirty(), "the delta's redraw is still due");
}
