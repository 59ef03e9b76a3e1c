//! The interactive UI end to end: the real `strata` binary in a tmux pane, driven with
//! `send-keys`, checked with `capture-pane` (the screen and its scrollback). Every wait
//! polls the pane for a text with a deadline; nothing sleeps blindly.
//!
//! Skipped (one printed line) when tmux is not installed; `.ci/run` installs it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod headless_support;
mod tmux_support;

use std::process::Command;
use std::time::{Duration, Instant};

use headless_support::Env;
use serde_json::json;
use strata_testkit::{MockServer, Reply};
use tmux_support::{DEADLINE, Pane};

/// The transcripts written under the config directory.
fn transcripts(env: &Env) -> Vec<String> {
    sessions(env).into_iter().map(|(_, text)| text).collect()
}

#[test]
fn the_readme_demo_plays_in_the_ui_and_the_prompt_says_how_to_go_live() {
    let env = Env::new();
    let Some(pane) = Pane::start(&env, None, &["--replay", "demo"], 100, 30) else {
        return;
    };
    let screen = pane.wait_for("Here is the quick tour.");
    pane.wait_for(" · ctx ");
    assert!(screen.contains("ANTHROPIC_API_KEY"), "{screen}");
    // The answer is in the scrollback exactly once, and so is each tool call.
    assert_eq!(
        screen.matches("Here is the quick tour.").count(),
        1,
        "{screen}"
    );
    assert_eq!(
        screen.matches("Bash(head -n 20 README.md)").count(),
        1,
        "{screen}"
    );
    pane.keys(&["C-d"]);
    let screen = pane.wait_for("STRATA-EXITED=");
    assert!(screen.contains("STRATA-EXITED=0"), "{screen}");
}

#[test]
fn fx1_shift_tab_cycles_the_mode_in_the_footer_and_the_prompt_records_it() {
    let env = Env::new();
    let Some(pane) = Pane::start(&env, None, &["--replay", "demo"], 100, 30) else {
        return;
    };
    pane.wait_for("Here is the quick tour.");
    pane.wait_for(" · ctx ");
    pane.keys(&["BTab"]);
    pane.wait_for("accept edits on");
    pane.keys(&["BTab"]);
    pane.wait_for("plan mode on");
    pane.keys(&["BTab"]);
    let start = Instant::now();
    while pane.capture().contains("plan mode on") {
        assert!(
            start.elapsed() < DEADLINE,
            "the mode did not go back to default"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The mode a prompt is sent in is recorded with it: back to acceptEdits and send.
    pane.keys(&["BTab"]);
    pane.wait_for("accept edits on");
    pane.type_text("hello in accept edits");
    pane.keys(&["Enter"]);
    pane.wait_for("> hello in accept edits");
    pane.keys(&["C-d"]);
    pane.wait_for("STRATA-EXITED=");
    let all = transcripts(&env).concat();
    let prompt = all
        .lines()
        .find(|l| l.contains("hello in accept edits"))
        .unwrap_or_else(|| panic!("the prompt is not in the transcript:\n{all}"));
    assert!(
        prompt.contains(r#""permissionMode":"acceptEdits""#),
        "{prompt}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_prompt_is_answered_yes_dont_ask_again_and_no() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("t1", "Bash", json!({"command": "touch first.txt"})));
    server.push(Reply::new().text("Made the first file."));
    server.push(Reply::new().tool_use("t2", "Bash", json!({"command": "touch second.txt"})));
    let env2 = &env;
    let server2 = &server;
    let pane = tokio::task::block_in_place(|| Pane::start(env2, Some(server2), &[], 100, 30));
    let Some(pane) = pane else { return };
    tokio::task::block_in_place(|| {
        pane.wait_for("/help");
        pane.type_text("make the first file");
        pane.keys(&["Enter"]);
        pane.wait_for("Do you want to proceed?");
        let screen = pane.wait_for("don't ask again for Bash(touch:*)");
        assert!(screen.contains("touch first.txt"), "{screen}");
        pane.keys(&["2"]);
        pane.wait_for("Made the first file.");
    });
    assert!(env.proj.join("first.txt").exists());
    let local = std::fs::read_to_string(env.proj.join(".strata/settings.local.json")).unwrap();
    assert!(local.contains("Bash(touch:*)"), "{local}");
    // Now the rule covers touch: no prompt. A different program asks, and No denies.
    server.push(Reply::new().tool_use("t3", "Bash", json!({"command": "mkdir third"})));
    server.push(Reply::new().text("unused"));
    tokio::task::block_in_place(|| {
        pane.type_text("make the second file");
        pane.keys(&["Enter"]);
        let start = Instant::now();
        while !env.proj.join("second.txt").exists() {
            assert!(
                start.elapsed() < DEADLINE,
                "the allowed command did not run:\n{}",
                pane.capture()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        pane.wait_for("mkdir third");
        pane.keys(&["3"]);
        pane.wait_for("Tell strata what to do differently");
    });
    assert!(!env.proj.join("third").exists(), "a denied command ran");
}

#[test]
fn a_ten_thousand_line_paste_arrives_intact() {
    let env = Env::new();
    let Some(pane) = Pane::start(&env, None, &["--replay", "demo"], 100, 30) else {
        return;
    };
    pane.wait_for("Here is the quick tour.");
    pane.wait_for(" · ctx ");
    let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
    let file = env.proj.join("paste.txt");
    std::fs::write(&file, &text).unwrap();
    pane.tmux(&["load-buffer", file.to_str().unwrap()]);
    pane.tmux(&["paste-buffer", "-p"]);
    pane.wait_for("[Pasted text #1 +10000 lines]");
    pane.keys(&["Enter"]);
    pane.keys(&["C-d"]);
    pane.wait_for("STRATA-EXITED=");
    // The prompt as sent is in the transcript whole: every line, in order.
    let all = transcripts(&env).concat();
    let sent = all
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["message"]["content"].as_str().map(str::to_owned))
        .find(|c| c.contains("line 9999"))
        .expect("the pasted prompt is in the transcript");
    assert_eq!(sent.trim_end(), text.trim_end());
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_without_an_id_opens_the_picker_and_continues_the_earlier_session() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("First session answer."));
    server.push(Reply::new().text("Second visit answer."));
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed: skipping the tmux end-to-end test");
        return;
    }
    let (env2, server2) = (&env, &server);
    tokio::task::block_in_place(|| {
        let pane = Pane::start(env2, Some(server2), &[], 100, 30).unwrap();
        pane.wait_for("/help");
        pane.type_text("remember the blue door");
        pane.keys(&["Enter"]);
        pane.wait_for("First session answer.");
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    });
    tokio::task::block_in_place(|| {
        let pane = Pane::start(env2, Some(server2), &["-r"], 100, 30).unwrap();
        pane.wait_for("Resume a session");
        pane.wait_for("remember the blue door");
        pane.type_text("blue");
        pane.keys(&["Enter"]);
        // The earlier conversation is shown again, then the session goes on.
        pane.wait_for("First session answer.");
        pane.type_text("and now?");
        pane.keys(&["Enter"]);
        pane.wait_for("Second visit answer.");
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    });
    // Both prompts are in one transcript: the earlier session was continued.
    let all = transcripts(&env);
    let both = all
        .iter()
        .filter(|t| t.contains("remember the blue door") && t.contains("and now?"))
        .count();
    assert_eq!(both, 1, "{all:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_esc_rewinds_an_edit_and_the_file_is_restored() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let file = env.proj.join("notes.md");
    std::fs::write(&file, "original text\n").unwrap();
    server.push(Reply::new().tool_use("t1", "Read", json!({"file_path": file.to_string_lossy()})));
    server.push(Reply::new().tool_use(
        "t2",
        "Edit",
        json!({"file_path": file.to_string_lossy(), "old_string": "original", "new_string": "edited"}),
    ));
    server.push(Reply::new().text("Edited the notes."));
    let (env2, server2) = (&env, &server);
    let pane = tokio::task::block_in_place(|| {
        Pane::start(
            env2,
            Some(server2),
            &["--permission-mode", "acceptEdits"],
            100,
            30,
        )
    });
    let Some(pane) = pane else { return };
    tokio::task::block_in_place(|| {
        pane.wait_for("accept edits on");
        pane.type_text("edit the notes");
        pane.keys(&["Enter"]);
        pane.wait_for("Edited the notes.");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "edited text\n");
        pane.keys(&["Escape"]);
        std::thread::sleep(Duration::from_millis(100));
        pane.keys(&["Escape"]);
        pane.wait_for("Rewind to before which prompt?");
        pane.keys(&["Enter"]);
        pane.wait_for("Restore code and conversation");
        pane.keys(&["Enter"]);
        pane.wait_for("Restored 1 file(s)");
        pane.keys(&["C-c"]);
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=");
    });
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original text\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resize_in_the_middle_of_a_streaming_answer_keeps_every_line_exactly_once() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let answer: String = (1..=24)
        .map(|i| {
            format!(
                "answer-line-{i:02} {}\n\n",
                "words to wrap at a narrower width ".repeat(2)
            )
        })
        .collect();
    let gate = strata_testkit::Gate::new();
    // message_start, content_block_start, the first third of the text, then a pause.
    server.push(
        strata_testkit::MockResponse::message(Reply::new().text(answer.trim_end()).build())
            .pause_after(4, &gate),
    );
    let (env2, server2) = (&env, &server);
    let pane = tokio::task::block_in_place(|| Pane::start(env2, Some(server2), &[], 100, 40));
    let Some(pane) = pane else { return };
    tokio::task::block_in_place(|| {
        pane.wait_for("/help");
        pane.type_text("stream something long");
        pane.keys(&["Enter"]);
    });
    gate.reached().await;
    tokio::task::block_in_place(|| {
        // The live area shows the answer's last rows while it streams.
        pane.wait_for("answer-line-0");
        // Narrower (each answer line wraps into two rows), then wider again; the pause
        // between is not a wait for anything: it lets frames be drawn at 60 columns.
        pane.tmux(&["resize-window", "-x", "60", "-y", "40"]);
        std::thread::sleep(Duration::from_millis(300));
        pane.tmux(&["resize-window", "-x", "90", "-y", "40"]);
    });
    gate.release();
    tokio::task::block_in_place(|| {
        pane.wait_for("answer-line-24");
        pane.wait_for(" · $");
        pane.keys(&["C-d"]);
        let screen = pane.wait_for("STRATA-EXITED=");
        for i in 1..=24 {
            let line = format!("answer-line-{i:02}");
            assert_eq!(screen.matches(&line).count(), 1, "{line} in:\n{screen}");
        }
        assert_eq!(
            screen.matches("> stream something long").count(),
            1,
            "{screen}"
        );
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_task_is_listed_in_the_tasks_panel_and_stopped_from_it() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    // A marker no other process has, so the test can see the task's processes.
    let marker = format!("8{}.25", std::process::id() % 100_000);
    server.push(Reply::new().tool_use(
        "toolu_bg",
        "Bash",
        json!({"command": format!("echo tick; sleep {marker}"), "run_in_background": true,
               "description": "the long sleeper"}),
    ));
    server.push(Reply::new().text("The sleeper runs in the background."));
    let (env2, server2) = (&env, &server);
    let pane = tokio::task::block_in_place(|| {
        Pane::start(env2, Some(server2), &["--allowedTools", "Bash"], 100, 30)
    });
    let Some(pane) = pane else { return };
    tokio::task::block_in_place(|| {
        pane.wait_for("/help");
        pane.type_text("start the sleeper");
        pane.keys(&["Enter"]);
        pane.wait_for("The sleeper runs in the background.");
        pane.wait_for("1 background task");
        let start = Instant::now();
        while headless_support::pids_with_arg(&marker).is_empty() {
            assert!(start.elapsed() < DEADLINE, "the task did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        pane.type_text("/tasks");
        pane.keys(&["Enter"]);
        pane.wait_for("Background tasks · 1 running");
        let screen = pane.wait_for("the long sleeper");
        assert!(screen.contains(&format!("sleep {marker}")), "{screen}");
        pane.keys(&["x"]);
        pane.wait_for("stopped · ");
        // Its end is one line in the history.
        pane.wait_for("the long sleeper\" was stopped");
        let start = Instant::now();
        while !headless_support::pids_with_arg(&marker).is_empty() {
            assert!(
                start.elapsed() < DEADLINE,
                "the stopped task's process is still running:\n{}",
                pane.capture()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        pane.keys(&["Escape"]);
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_user_question_answered_in_the_ui_reaches_the_model() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_ask",
        "AskUserQuestion",
        json!({"questions": [{"question": "Which database should we use?", "header": "Database",
            "multiSelect": false,
            "options": [{"label": "PostgreSQL", "description": "Relational, already deployed"},
                        {"label": "SQLite", "description": "A file next to the binary"}]}]}),
    ));
    server.push(Reply::new().text("SQLite it is, then."));
    let (env2, server2) = (&env, &server);
    let pane = tokio::task::block_in_place(|| Pane::start(env2, Some(server2), &[], 100, 30));
    let Some(pane) = pane else { return };
    tokio::task::block_in_place(|| {
        pane.wait_for("/help");
        pane.type_text("set up the storage");
        pane.keys(&["Enter"]);
        let screen = pane.wait_for("Which database should we use?");
        assert!(screen.contains("3. Other"), "{screen}");
        pane.keys(&["Down"]);
        pane.keys(&["Enter"]);
        pane.wait_for("SQLite it is, then.");
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    });
    let requests = server.requests();
    let last = String::from_utf8_lossy(&requests.last().unwrap().body).into_owned();
    assert!(
        last.contains(
            r#"User has answered your questions: \"Which database should we use?\"=\"SQLite\""#
        ),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_user_question_review_changes_an_answer_then_submits_both() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_ask2",
        "AskUserQuestion",
        json!({"questions": [
            {"question": "Which database should we use?", "header": "Database",
             "multiSelect": false,
             "options": [{"label": "PostgreSQL", "description": "Relational"},
                         {"label": "SQLite", "description": "A file"}]},
            {"question": "Which port should it listen on?", "header": "Port",
             "multiSelect": false,
             "options": [{"label": "8080", "description": "The usual"},
                         {"label": "9090", "description": "Free here"}]}]}),
    ));
    server.push(Reply::new().text("SQLite on 9090, then."));
    let (env2, server2) = (&env, &server);
    let pane = tokio::task::block_in_place(|| Pane::start(env2, Some(server2), &[], 100, 40));
    let Some(pane) = pane else { return };
    tokio::task::block_in_place(|| {
        pane.wait_for("/help");
        pane.type_text("set up the service");
        pane.keys(&["Enter"]);
        pane.wait_for("Which database should we use?");
        pane.keys(&["2"]);
        pane.wait_for("Which port should it listen on?");
        pane.keys(&["1"]);
        // The review: both questions with their answers, nothing sent yet.
        let screen = pane.wait_for("Review your answers");
        assert!(
            screen.contains("→ SQLite") && screen.contains("→ 8080"),
            "{screen}"
        );
        assert!(screen.contains("1. Submit answers"), "{screen}");
        // Back to the port (↑ from Submit), a new answer, and the review again.
        pane.keys(&["Up"]);
        pane.keys(&["Enter"]);
        pane.wait_for("Free here");
        pane.keys(&["2"]);
        pane.wait_for("→ 9090");
        pane.keys(&["Enter"]);
        pane.wait_for("SQLite on 9090, then.");
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    });
    let requests = server.requests();
    let last = String::from_utf8_lossy(&requests.last().unwrap().body).into_owned();
    assert!(
        last.contains(r#"\"Which database should we use?\"=\"SQLite\""#)
            && last.contains(r#"\"Which port should it listen on?\"=\"9090\""#),
        "{last}"
    );
}

/// Each transcript under the config directory: its session id (the file's name) and text.
fn sessions(env: &Env) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![env.cfg.join("projects")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                let id = p.file_stem().unwrap().to_string_lossy().into_owned();
                out.push((id, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out
}

/// The id of the one session whose transcript holds `text`.
fn session_with(env: &Env, text: &str) -> String {
    let all = sessions(env);
    let found: Vec<&String> = all
        .iter()
        .filter(|(_, t)| t.contains(text))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(found.len(), 1, "{text:?} in {all:?}");
    found[0].clone()
}

/// Two sessions of the project, one after the other: "first visit alpha" (answered
/// "Alpha answer."), then "second visit beta" ("Beta answer."); their ids.
fn two_sessions(env: &Env, server: &MockServer) -> (String, String) {
    for (prompt, answer) in [
        ("first visit alpha", "Alpha answer."),
        ("second visit beta", "Beta answer."),
    ] {
        let pane = Pane::start(env, Some(server), &[], 100, 30).unwrap();
        pane.wait_for("/help");
        pane.type_text(prompt);
        pane.keys(&["Enter"]);
        pane.wait_for(answer);
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    }
    (
        session_with(env, "first visit alpha"),
        session_with(env, "second visit beta"),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn i12_continue_opens_the_ui_on_the_newest_session() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Alpha answer."));
    server.push(Reply::new().text("Beta answer."));
    server.push(Reply::new().text("Gamma answer."));
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed: skipping the tmux end-to-end test");
        return;
    }
    let (env2, server2) = (&env, &server);
    let (alpha, beta) = tokio::task::block_in_place(|| two_sessions(env2, server2));
    tokio::task::block_in_place(|| {
        let pane = Pane::start(env2, Some(server2), &["-c"], 100, 30).unwrap();
        // The newest session's conversation is shown again, the older one's is not.
        pane.wait_for("second visit beta");
        let screen = pane.wait_for("Beta answer.");
        assert!(!screen.contains("first visit alpha"), "{screen}");
        assert!(!screen.contains("Resume a session"), "no picker: {screen}");
        pane.type_text("third visit gamma");
        pane.keys(&["Enter"]);
        pane.wait_for("Gamma answer.");
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    });
    // The new prompt went on in the newest session's transcript.
    assert_eq!(session_with(&env, "third visit gamma"), beta);
    assert_ne!(alpha, beta);
}

#[tokio::test(flavor = "multi_thread")]
async fn i12_resume_with_an_id_opens_the_ui_on_that_session() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Alpha answer."));
    server.push(Reply::new().text("Beta answer."));
    server.push(Reply::new().text("Back in alpha."));
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed: skipping the tmux end-to-end test");
        return;
    }
    let (env2, server2) = (&env, &server);
    let (alpha, _beta) = tokio::task::block_in_place(|| two_sessions(env2, server2));
    tokio::task::block_in_place(|| {
        // The older session, by its id: not the newest one.
        let pane = Pane::start(env2, Some(server2), &["-r", &alpha], 100, 30).unwrap();
        pane.wait_for("first visit alpha");
        let screen = pane.wait_for("Alpha answer.");
        assert!(!screen.contains("second visit beta"), "{screen}");
        assert!(!screen.contains("Resume a session"), "no picker: {screen}");
        pane.type_text("once more in alpha");
        pane.keys(&["Enter"]);
        pane.wait_for("Back in alpha.");
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    });
    assert_eq!(session_with(&env, "once more in alpha"), alpha);
}

#[test]
fn i12_ctrl_c_clears_the_prompt_and_twice_on_an_empty_prompt_exits() {
    let env = Env::new();
    let Some(pane) = Pane::start(&env, None, &["--replay", "demo"], 100, 30) else {
        return;
    };
    pane.wait_for("Here is the quick tour.");
    pane.wait_for(" · ctx ");
    // With text: Ctrl-C clears it, and strata goes on.
    pane.type_text("a draft to throw away");
    pane.wait_for("> a draft to throw away");
    pane.keys(&["C-c"]);
    let start = Instant::now();
    while pane.capture().contains("a draft to throw away") {
        assert!(
            start.elapsed() < DEADLINE,
            "Ctrl-C did not clear the prompt:\n{}",
            pane.capture()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    pane.type_text("still here");
    let screen = pane.wait_for("> still here");
    assert!(!screen.contains("STRATA-EXITED"), "{screen}");
    drop(pane);
    // On an empty prompt: the first press says how to exit, the second exits.
    let pane = Pane::start(&env, None, &["--replay", "demo"], 100, 30).unwrap();
    pane.wait_for("Here is the quick tour.");
    pane.wait_for(" · ctx ");
    pane.keys(&["C-c"]);
    let screen = pane.wait_for("again to exit");
    assert!(!screen.contains("STRATA-EXITED"), "{screen}");
    pane.keys(&["C-c"]);
    let screen = pane.wait_for("STRATA-EXITED=");
    assert!(screen.contains("STRATA-EXITED=0"), "{screen}");
}
