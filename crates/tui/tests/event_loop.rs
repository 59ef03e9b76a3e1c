//! The event loop on a vt100-style backend (a shared buffer) with a real engine over the
//! demo replay: frames are drawn only when a selected slice changes, never while idle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use strata_tui::run::{Backend, event_loop};
use strata_tui::term::InlineTerminal;

mod ui_kit;

use ui_kit::{Launch, Shared, Ui};

const DEMO: &str = include_str!("../../cli/demo/demo.jsonl");

/// A session over the demo replay, its app 80 columns wide.
async fn demo() -> Ui {
    Launch::new(&[DEMO.to_owned()]).open().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui2_idle_draws_nothing_unselected_updates_draw_nothing_a_mode_change_draws_one_frame() {
    let Ui {
        mut app,
        mut rx,
        engine,
        _dir: _project,
        ..
    } = demo().await;
    let store = engine.store().clone();
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
    let Ui {
        mut app,
        mut rx,
        engine,
        _dir: _project,
        ..
    } = demo().await;
    // Forty prompts: more than a 24-row screen holds. Committed after the app was made
    // and before its loop starts: the loop must take them in (it once waited only for
    // commits after its start, and the transcript view was empty).
    engine.store().update(|s| {
        for i in 1..=40 {
            s.messages
                .push_back(Arc::new(Message::user_text(format!("prompt number {i}"))));
        }
    });
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
    let Ui {
        mut app,
        _dir: _project,
        ..
    } = demo().await;
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
