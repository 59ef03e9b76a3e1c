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
    assert_eq!(d.on_key(key(KeyCode::Enter)), AskOutcome::Answered);
    let a = answers(&mut rx);
    assert_eq!(a["Which database should the service use?"], "SQLite");
    assert_eq!(a["Which checks should CI run?"], "tests");
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
    for width in [20u16, 40] {
        for line in d.render(width) {
            assert!(
                crate::text::line_width(&line) <= usize::from(width),
                "{width}: {line}"
            );
        }
    }
}
