//! Plain mode (`TERM=dumb`, issue 12 item 6) on a real engine over a replay: lines in,
//! plain lines out — no escape sequence is ever written, each history line is printed
//! once, and a permission dialog is answered by typing its number (an empty line
//! answers nothing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::time::Duration;

use serde_json::json;
use strata_tui::plain::{PlainEnd, plain_loop};

mod ui_kit;

use ui_kit::{Launch, Shared, response};

async fn wait_for(out: &Shared, what: &str, done: impl Fn(&str) -> bool) {
    for _ in 0..1000 {
        if done(&out.text()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never saw {what}; the output:\n{}", out.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_6_a_dumb_terminal_gets_plain_lines_and_answers_the_dialog_by_number() {
    // The session's project is `proj` in this directory (`Launch::open`).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proj").join("notes.txt");
    let replies = [
        response(
            1,
            json!([{"type": "tool_use", "id": "toolu_1", "name": "Write",
                "input": {"file_path": file.to_string_lossy(), "content": "written\n"}}]),
        ),
        response(
            2,
            json!([{"type": "text", "text": "# Done\n\nThe notes are **written**."}]),
        ),
    ];
    // `_dir` is kept: the project and config folders live as long as it.
    let ui_kit::Ui {
        mut app,
        mut rx,
        _dir: _project,
        ..
    } = Launch::new(&replies).dir(dir).open().await;
    let out = Shared::default();
    let (lines, mut input) = futures::channel::mpsc::unbounded::<io::Result<String>>();
    let driver = {
        let out = out.clone();
        let file = file.clone();
        async move {
            wait_for(&out, "the prompt", |t| t.ends_with("> ")).await;
            lines.unbounded_send(Ok("write the notes".into())).unwrap();
            wait_for(&out, "the dialog", |t| {
                t.contains("Write wants to run") && t.contains("1. Yes") && t.ends_with("? ")
            })
            .await;
            // An empty line answers nothing: the question is asked again.
            lines.unbounded_send(Ok(String::new())).unwrap();
            wait_for(&out, "the dialog again", |t| {
                t.matches("Write wants to run").count() == 2 && t.ends_with("? ")
            })
            .await;
            assert!(!file.exists(), "nothing was approved by the empty line");
            lines.unbounded_send(Ok("1".into())).unwrap();
            wait_for(&out, "the answer and the prompt back", |t| {
                t.contains("The notes are written.") && t.ends_with("> ")
            })
            .await;
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "written\n");
            lines.unbounded_send(Ok("/exit".into())).unwrap();
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
    };
    let mut writer = out.clone();
    let end = tokio::select! {
        r = plain_loop(&mut app, &mut writer, &mut input, &mut rx, 80) => r.unwrap(),
        () = driver => panic!("/exit did not end plain mode"),
    };
    assert_eq!(end, PlainEnd::Exit);
    let text = out.text();
    assert!(!text.contains('\x1b'), "no escape sequence: {text:?}");
    // Each history line once: the prompt and the answer.
    assert_eq!(text.matches("> write the notes").count(), 1, "{text}");
    assert_eq!(text.matches("The notes are written.").count(), 1, "{text}");
    assert!(text.contains("… working"), "{text}");
}
