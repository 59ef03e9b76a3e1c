//! AskUserQuestion through the real binary in headless stream-json mode (issue 18, item
//! 4): the questions go to the SDK client as a `can_use_tool` request, the client's
//! answers come back in `updatedInput.answers` as the reference agent's clients send them,
//! and the model reads them in the reference's words; with nobody to ask the call is a
//! clear tool error; an allow rule does not answer a question meant for the user.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::{Driver, Env, kind};

fn questions() -> Value {
    json!([{
        "question": "Which database should the app use?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "The server we already run"},
            {"label": "SQLite", "description": "A file beside the app"}
        ],
        "multiSelect": false
    }, {
        "question": "Which checks should CI run?",
        "header": "CI",
        "options": [
            {"label": "Tests", "description": "The test suite"},
            {"label": "Lints", "description": "Clippy and fmt"}
        ],
        "multiSelect": true
    }])
}

/// The tool result the model was sent for `id`.
fn tool_result(server: &MockServer, id: &str) -> Value {
    for request in server.requests() {
        for message in request.json()["messages"].as_array().unwrap() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" && block["tool_use_id"] == id {
                    return block.clone();
                }
            }
        }
    }
    panic!("no tool result for {id}");
}

fn text_of(result: &Value) -> String {
    match &result["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn ask_user_question_goes_to_the_client_and_the_model_reads_its_answers() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_ask",
        "AskUserQuestion",
        json!({"questions": questions()}),
    ));
    server.push(Reply::new().text("SQLite it is."));
    let mut s = Driver::start(&env, &server, &["--permission-prompt-tool", "stdio"]);
    let init = s.next().await;
    assert!(
        init["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("AskUserQuestion")),
        "{init}"
    );
    s.control("init", json!({"subtype": "initialize"})).await;
    s.response("init").await;
    s.prompt("set the project up").await;

    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    assert_eq!(ask["request"]["tool_name"], "AskUserQuestion");
    assert_eq!(ask["request"]["input"]["questions"], questions());
    let id = ask["request_id"].as_str().unwrap().to_owned();
    let answers = json!({
        "Which database should the app use?": "SQLite",
        "Which checks should CI run?": "Tests, Lints"
    });
    let allow = json!({"type": "control_response", "response": {"subtype": "success",
        "request_id": id, "response": {"behavior": "allow",
        "updatedInput": {"questions": questions(), "answers": answers}}}});
    s.send(&allow.to_string()).await;

    let result = s.result().await;
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], "SQLite it is.");
    let told = tool_result(&server, "toolu_ask");
    assert_ne!(told["is_error"], true, "{told}");
    assert_eq!(
        text_of(&told),
        "User has answered your questions: \"Which database should the app use?\"=\"SQLite\", \
         \"Which checks should CI run?\"=\"Tests, Lints\". You can now continue with the \
         user's answers in mind."
    );
    let done = s.finish().await;
    assert_eq!(done.code, Some(0), "{}", done.stderr);

    // The transcript keeps the reference's `toolUseResult`: the questions and answers.
    let (_, lines) = env.transcripts().pop().unwrap();
    let recorded = lines
        .iter()
        .find(|l| l["toolUseResult"]["answers"].is_object())
        .expect("a toolUseResult with the answers");
    assert_eq!(recorded["toolUseResult"]["answers"], answers);
    assert_eq!(recorded["toolUseResult"]["questions"], questions());
}

#[tokio::test]
async fn ask_user_question_without_a_client_to_answer_is_a_clear_tool_error() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_ask",
        "AskUserQuestion",
        json!({"questions": questions()}),
    ));
    server.push(Reply::new().text("I will assume Postgres."));
    // An allow rule does not answer a question meant for the user.
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "set up",
                "--output-format",
                "json",
                "--allowedTools",
                "AskUserQuestion",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let told = tool_result(&server, "toolu_ask");
    assert_eq!(told["is_error"], true, "{told}");
    assert!(text_of(&told).contains("nobody can answer"), "{told}");
    assert_eq!(
        run.result()["permission_denials"][0]["tool_name"],
        "AskUserQuestion"
    );
}

#[tokio::test]
async fn ask_user_question_with_bad_input_is_refused_before_the_client_is_asked() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut bad = questions();
    bad[0]["options"] = json!([{"label": "Only", "description": "one option"}]);
    server.push(Reply::new().tool_use("toolu_bad", "AskUserQuestion", json!({"questions": bad})));
    server.push(Reply::new().text("ok"));
    let mut s = Driver::start(&env, &server, &["--permission-prompt-tool", "stdio"]);
    s.next().await;
    s.control("init", json!({"subtype": "initialize"})).await;
    s.response("init").await;
    s.prompt("ask me").await;
    s.result().await;
    assert!(
        s.seen
            .iter()
            .all(|l| kind(l) != "control_request/can_use_tool"),
        "no prompt for a malformed question"
    );
    let told = tool_result(&server, "toolu_bad");
    assert_eq!(told["is_error"], true);
    assert!(text_of(&told).contains("`questions[0].options`"), "{told}");
    s.finish().await;
}

#[tokio::test]
async fn a_deny_rule_stops_ask_user_question_without_asking() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_ask",
        "AskUserQuestion",
        json!({"questions": questions()}),
    ));
    server.push(Reply::new().text("ok"));
    let mut s = Driver::start(
        &env,
        &server,
        &[
            "--permission-prompt-tool",
            "stdio",
            "--disallowedTools",
            "AskUserQuestion",
        ],
    );
    let init = s.next().await;
    assert!(
        !init["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("AskUserQuestion")),
        "a denied tool is not offered: {init}"
    );
    s.control("init", json!({"subtype": "initialize"})).await;
    s.response("init").await;
    s.prompt("ask me").await;
    s.result().await;
    assert!(
        s.seen
            .iter()
            .all(|l| kind(l) != "control_request/can_use_tool")
    );
    let told = tool_result(&server, "toolu_ask");
    assert_eq!(told["is_error"], true, "{told}");
    s.finish().await;
}
