use std::sync::Arc;

use super::*;
use crate::tools::NoHooks;

fn one_question() -> Value {
    json!({"questions": [{
        "question": "Which database?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "The server we run"},
            {"label": "SQLite", "description": "A file beside the app"}
        ],
        "multiSelect": false
    }]})
}

async fn run(input: Value) -> ToolOutput {
    let ctx = ToolContext::new(std::env::temp_dir(), Arc::new(NoHooks));
    AskUserQuestion
        .call(
            ToolCall {
                id: "t".into(),
                input,
            },
            &ctx,
        )
        .await
}

#[test]
fn ask_user_question_is_a_read_only_question_to_the_user() {
    assert!(AskUserQuestion.asks_the_user());
    assert!(AskUserQuestion.is_read_only(&one_question()));
    assert!(!AskUserQuestion.is_concurrency_safe(&one_question()));
    assert!(AskUserQuestion.validate(&one_question()).is_ok());
}

#[test]
fn ask_user_question_refuses_counts_outside_the_limits_naming_the_field() {
    let mut none = one_question();
    none["questions"] = json!([]);
    let err = AskUserQuestion.validate(&none).unwrap_err();
    assert!(err.content.contains("`questions`"), "{}", err.content);

    let mut five = one_question();
    let q = five["questions"][0].clone();
    five["questions"] = json!(
        (0..5)
            .map(|i| {
                let mut q = q.clone();
                q["question"] = json!(format!("Q{i}?"));
                q
            })
            .collect::<Vec<_>>()
    );
    let err = AskUserQuestion.validate(&five).unwrap_err();
    assert!(err.content.contains("not 5"), "{}", err.content);

    let mut one_option = one_question();
    one_option["questions"][0]["options"] = json!([{"label": "A", "description": "a"}]);
    let err = AskUserQuestion.validate(&one_option).unwrap_err();
    assert!(
        err.content.contains("`questions[0].options`"),
        "{}",
        err.content
    );
}

#[test]
fn ask_user_question_refuses_long_headers_duplicate_labels_and_duplicate_questions() {
    let mut long = one_question();
    long["questions"][0]["header"] = json!("A header far too long");
    let err = AskUserQuestion.validate(&long).unwrap_err();
    assert!(
        err.content.contains("`questions[0].header`"),
        "{}",
        err.content
    );

    let mut dup = one_question();
    dup["questions"][0]["options"][1]["label"] = json!("Postgres");
    let err = AskUserQuestion.validate(&dup).unwrap_err();
    assert!(
        err.content.contains("`questions[0].options[1].label`"),
        "{}",
        err.content
    );

    let mut twice = one_question();
    let q = twice["questions"][0].clone();
    twice["questions"] = json!([q.clone(), q]);
    let err = AskUserQuestion.validate(&twice).unwrap_err();
    assert!(
        err.content.contains("`questions[1].question`"),
        "{}",
        err.content
    );
}

#[tokio::test]
async fn answers_read_like_the_reference_agents_result() {
    let mut input = one_question();
    input["answers"] = json!({"Which database?": "SQLite"});
    let out = run(input).await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        out.content,
        "User has answered your questions: \"Which database?\"=\"SQLite\". You can now \
         continue with the user's answers in mind."
    );
    let detail = out.detail.unwrap();
    assert_eq!(detail["answers"], json!({"Which database?": "SQLite"}));
    assert_eq!(detail["questions"], one_question()["questions"]);
}

#[tokio::test]
async fn a_multi_select_answer_given_as_a_list_is_joined_with_commas() {
    let mut input = one_question();
    input["questions"][0]["multiSelect"] = json!(true);
    input["answers"] = json!({"Which database?": ["Postgres", "SQLite"]});
    let out = run(input).await;
    assert!(
        out.content.contains("=\"Postgres, SQLite\""),
        "{}",
        out.content
    );
    assert_eq!(
        out.detail.unwrap()["answers"]["Which database?"],
        "Postgres, SQLite"
    );
}

#[tokio::test]
async fn an_approval_without_answers_is_a_clear_error() {
    let out = run(one_question()).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("answers did not come back"),
        "{}",
        out.content
    );
}
