//! The UI on odd terminals, end to end in tmux (issue 12 item 6): Ctrl-Z suspends
//! strata and `fg` brings it back with its screen and prompt intact; `TERM=dumb` gets
//! plain mode, which writes no escape sequence at all.
//!
//! Skipped (one printed line) when tmux is not installed; `.ci/run` installs it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod headless_support;
mod tmux_support;

use std::time::{Duration, Instant};

use headless_support::Env;
use tmux_support::{DEADLINE, Pane};

/// The command line that starts the demo in the pane's shell.
fn demo_command() -> String {
    format!("'{}' --replay demo", env!("CARGO_BIN_EXE_strata"))
}

/// Asks the shell how strata exited (typed once strata has given the terminal back; the
/// typed line itself never contains the marker the answer does).
fn exit_status(pane: &Pane) -> String {
    // The shell's prompt is the last line: strata has exited (typing earlier would
    // give the line to strata's prompt).
    let start = Instant::now();
    loop {
        let text = pane.capture();
        if text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(str::trim_end)
            == Some("$")
        {
            break;
        }
        assert!(start.elapsed() < DEADLINE, "strata did not exit:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    pane.type_text("echo \"STRATA\"\"-EXITED=$?\"");
    pane.keys(&["Enter"]);
    pane.wait_for("STRATA-EXITED=")
}

#[test]
fn i12_ctrl_z_suspends_and_fg_resumes_with_the_prompt_intact() {
    let env = Env::new();
    let Some(pane) = Pane::shell(&env, (100, 30), "xterm-256color", None) else {
        return;
    };
    pane.type_text(&demo_command());
    pane.keys(&["Enter"]);
    pane.wait_for("Here is the quick tour.");
    pane.wait_for(" · ctx ");
    pane.type_text("typed before the suspend");
    pane.wait_for("> typed before the suspend");
    pane.keys(&["C-z"]);
    // The shell has the terminal: its job line and its prompt.
    pane.wait_for("Stopped");
    pane.type_text("fg");
    pane.keys(&["Enter"]);
    // The live area comes back below the shell's lines, with the text typed before.
    let start = Instant::now();
    loop {
        let pane_text = pane.capture();
        let after = pane_text.rsplit("Stopped").next().unwrap_or("");
        if after.contains("> typed before the suspend") && after.contains(" · ctx ") {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "fg did not bring strata back:\n{pane_text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // And it takes keys again: raw mode is back (a cooked terminal would echo and wait).
    pane.type_text(" and after");
    pane.wait_for("> typed before the suspend and after");
    pane.keys(&["C-c"]);
    pane.keys(&["C-d"]);
    let screen = exit_status(&pane);
    assert!(screen.contains("STRATA-EXITED=0"), "{screen}");
}

#[test]
fn i12_term_dumb_gets_plain_lines_without_escape_sequences() {
    let env = Env::new();
    let raw = env.home.join("pane.raw");
    let Some(pane) = Pane::shell(&env, (100, 30), "dumb", Some(&raw)) else {
        return;
    };
    pane.type_text(&demo_command());
    pane.keys(&["Enter"]);
    pane.wait_for("Here is the quick tour.");
    // The demo over, the prompt is `> ` and a command is a typed line.
    pane.wait_for("drop --replay demo.");
    pane.type_text("/status");
    pane.keys(&["Enter"]);
    pane.wait_for("Working directory");
    pane.type_text("/exit");
    pane.keys(&["Enter"]);
    let screen = exit_status(&pane);
    assert!(screen.contains("STRATA-EXITED=0"), "{screen}");
    // What strata wrote, between its first line and the shell's: plain text only.
    let bytes = std::fs::read(&raw).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let from = text.find("strata demo:").expect("strata's first line");
    let to = text.rfind("> /exit").expect("the /exit line");
    let written = &text[from..to];
    assert!(
        !written.contains('\u{1b}'),
        "an escape sequence in plain mode: {:?}",
        written
            .split('\u{1b}')
            .nth(1)
            .map(|s| &s[..s.len().min(40)])
    );
    // Each history line once: the demo's answer is not redrawn.
    assert_eq!(
        written.matches("Here is the quick tour.").count(),
        1,
        "{written}"
    );
}
