#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use strata_agent::engine::PermissionPrompt;
use strata_protocol::sdk::PermissionResult;
use tokio::sync::oneshot;

use super::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn prompt() -> PermissionPrompt {
    PermissionPrompt {
        tool_name: TOOL.into(),
        input: json!({"questions": [
            {"question": "Which database should the service use?", "header": "Database",
             "multiSelect": false,
             "options": [
                {"label": "PostgreSQL (Recommended)", "description": "Relational, already deployed"},
                {"label": "SQLite", "description": "A file next to the binary"}]},
            {"question": "Which checks should CI run?", "header": "CI checks",
             "multiSelect": true,
             "options": [
                {"label": "clippy", "description": "Lints"},
                {"label": "tests", "description": "Unit and integration tests"},
                {"label": "fmt", "description": "Formatting"}]}
        ]}),
        tool_use_id: "toolu_1".into(),
        reason: String::new(),
        suggestions: Vec::new(),
    }
}

fn dialog() -> (AskDialog, oneshot::Receiver<PermissionResult>) {
    let (tx, rx) = oneshot::channel();
    (AskDialog::new(&prompt(), tx).unwrap(), rx)
}

fn answers(rx: &mut oneshot::Receiver<PermissionResult>) -> serde_json::Value {
    match rx.try_recv().unwrap() {
        PermissionResult::Allow {
            updated_input: Some(input),
            ..
        } => {
            assert!(input["questions"].is_array(), "the questions go back too");
            input["answers"].clone()
        }
        other => panic!("not an allow with answers: {other:?}"),
    }
}

#[test]
fn snapshot_ask_dialog_single_choice_first() {
    let (d, _rx) = dialog();
    insta::assert_snapshot!(crate::vt_snapshot::screen(&d.render(70), 70));
}

#[test]
fn snapshot_ask_dialog_multi_select_with_ticks_and_other_text() {
    let (mut d, _rx) = dialog();
    d.on_key(key(KeyCode::Enter));
    d.on_key(key(KeyCode::Char(' ')));
    d.on_key(key(KeyCode::Down));
    d.on_key(key(KeyCode::Down));
    d.on_key(key(KeyCode::Char(' ')));
    d.on_key(key(KeyCode::Down));
    for c in "miri".chars() {
        d.on_key(key(KeyCode::Char(c)));
    }
    insta::assert_snapshot!(crate::vt_snapshot::screen(&d.render(70), 70));
}

#[test]
fn single_and_multi_select_answers_reach_the_tool_keyed_by_question() {
    let (mut d, mut rx) = dialog();
    // 1st question: the second option by arrow and Enter.
    d.on_key(key(KeyCode::Down));
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    // 2nd: tick clippy and fmt (by number), confirm.
    d.on_key(key(KeyCode::Char(' ')));
    d.on_key(key(KeyCode::Char('3')));
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    // Several questions: the review comes before anything is sent.
    assert!(d.reviewing());
    assert!(rx.try_recv().is_err(), "nothing sent before the review");
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Answered);
    assert_eq!(
        answers(&mut rx),
        json!({"Which database should the service use?": "SQLite",
               "Which checks should CI run?": "clippy, fmt"})
    );
}

#[test]
fn other_takes_the_users_own_words_and_empty_other_sends_nothing() {
    let (mut d, mut rx) = dialog();
    d.on_key(key(KeyCode::Char('3')));
    // "Other" is highlighted but empty: Enter waits for text.
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    for c in "DuckDB, 1 file".chars() {
        d.on_key(key(KeyCode::Char(c)));
    }
    d.on_key(key(KeyCode::Backspace));
    d.on_key(key(KeyCode::Char('e')));
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    // The multi-select with nothing ticked: Enter takes the highlighted option.
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Answered);
    assert_eq!(
        answers(&mut rx),
        json!({"Which database should the service use?": "DuckDB, 1 file",
               "Which checks should CI run?": "clippy"})
    );
}

#[test]
fn left_goes_back_to_change_an_answer() {
    let (mut d, mut rx) = dialog();
    d.on_key(key(KeyCode::Enter));
    d.on_key(key(KeyCode::Left));
    d.on_key(key(KeyCode::Down));
    // Re-answered: the second question still waits.
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    d.on_key(key(KeyCode::Char('2')));
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Answered);
    let a = answers(&mut rx);
    assert_eq!(a["Which database should the service use?"], "SQLite");
    assert_eq!(a["Which checks should CI run?"], "tests");
}

/// The two questions answered (SQLite; clippy and fmt): the review is open.
fn reviewed() -> (AskDialog, oneshot::Receiver<PermissionResult>) {
    let (mut d, rx) = dialog();
    d.on_key(key(KeyCode::Char('2')));
    d.on_key(key(KeyCode::Char('1')));
    d.on_key(key(KeyCode::Char('3')));
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    assert!(d.reviewing(), "the last answer opens the review");
    (d, rx)
}

#[test]
fn snapshot_ask_review_lists_each_question_with_its_answer() {
    let (d, _rx) = reviewed();
    insta::assert_snapshot!(crate::vt_snapshot::screen(&d.render(70), 70));
}

#[test]
fn snapshot_ask_review_with_a_question_highlighted_to_change() {
    let (mut d, _rx) = reviewed();
    d.on_key(key(KeyCode::Up));
    insta::assert_snapshot!(crate::vt_snapshot::screen(&d.render(70), 70));
}

#[test]
fn ask_review_goes_back_to_change_one_answer_and_returns_to_the_review() {
    let (mut d, mut rx) = reviewed();
    // ↑ from "Submit answers": the second question's row; Enter goes back to it.
    d.on_key(key(KeyCode::Up));
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    assert!(!d.reviewing());
    let screen = crate::vt_snapshot::screen(&d.render(70), 70);
    assert!(screen.contains("Which checks should CI run?"), "{screen}");
    // Untick fmt, tick tests: the new answer returns to the review, not to the tool.
    d.on_key(key(KeyCode::Char('3')));
    d.on_key(key(KeyCode::Char('2')));
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    assert!(d.reviewing());
    let screen = crate::vt_snapshot::screen(&d.render(70), 70);
    assert!(screen.contains("→ clippy, tests"), "{screen}");
    assert!(rx.try_recv().is_err(), "nothing sent before Submit");
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Answered);
    assert_eq!(
        answers(&mut rx),
        json!({"Which database should the service use?": "SQLite",
               "Which checks should CI run?": "clippy, tests"})
    );
}

#[test]
fn ask_review_cancel_declines_and_left_goes_back_to_the_last_question() {
    let (mut d, mut rx) = reviewed();
    d.on_key(key(KeyCode::Left));
    assert!(!d.reviewing());
    // → from the last question opens the review again.
    d.on_key(key(KeyCode::Right));
    assert!(d.reviewing());
    d.on_key(key(KeyCode::Down));
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Declined);
    assert!(matches!(
        rx.try_recv().unwrap(),
        PermissionResult::Deny {
            interrupt: true,
            ..
        }
    ));
}

#[test]
fn ask_review_submit_with_an_unanswered_question_goes_to_it() {
    let (mut d, mut rx) = dialog();
    // → past the first question and on to the review with nothing answered.
    d.on_key(key(KeyCode::Right));
    d.on_key(key(KeyCode::Right));
    assert!(d.reviewing());
    let screen = crate::vt_snapshot::screen(&d.render(70), 70);
    assert!(screen.contains("(not answered yet)"), "{screen}");
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Open);
    assert!(!d.reviewing());
    assert!(rx.try_recv().is_err());
    let screen = crate::vt_snapshot::screen(&d.render(70), 70);
    assert!(
        screen.contains("Which database should the service use?"),
        "{screen}"
    );
}

#[test]
fn a_single_question_is_sent_without_a_review() {
    let (tx, mut rx) = oneshot::channel();
    let mut p = prompt();
    p.input["questions"].as_array_mut().unwrap().truncate(1);
    let mut d = AskDialog::new(&p, tx).unwrap();
    assert_eq!(d.on_key(key(KeyCode::Char('1'))), AskOutcome::Answered);
    assert_eq!(
        answers(&mut rx),
        json!({"Which database should the service use?": "PostgreSQL (Recommended)"})
    );
}

#[test]
fn esc_declines_and_stops_the_turn() {
    let (mut d, mut rx) = dialog();
    assert_eq!(d.on_key(key(KeyCode::Esc)), AskOutcome::Declined);
    assert!(matches!(
        rx.try_recv().unwrap(),
        PermissionResult::Deny {
            interrupt: true,
            ..
        }
    ));
}

#[test]
fn an_input_without_questions_is_not_a_question_dialog() {
    let (tx, _rx) = oneshot::channel();
    let mut p = prompt();
    p.input = json!({"questions": "not a list"});
    assert!(AskDialog::new(&p, tx).is_err());
}

#[test]
fn the_dialog_fits_narrow_terminals() {
    let (d, _rx) = dialog();
    let (review, _rx2) = reviewed();
    for width in [20u16, 40] {
        for line in d.render(width).into_iter().chain(review.render(width)) {
            assert!(
                crate::text::line_width(&line) <= usize::from(width),
                "{width}: {line}"
            );
        }
    }
}
