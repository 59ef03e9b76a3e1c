//! Issue 25, item 5: every error result carries the reference agent's `errors` text and
//! counts `num_turns` as it does, so the Agent SDKs raise the reference's message
//! ("Claude Code returned an error result: Reached maximum number of turns (1)") rather
//! than "process exited with code 1". Through the real binary against the mock model
//! server; `scripts/sdk-compat` checks the same through the SDKs themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::{Value, json};
use strata_testkit::{MockResponse, MockServer, Reply};

use headless_support::Env;

const SCHEMA: &str =
    r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#;

fn result_of(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test]
async fn i25_5_max_turns_says_the_references_words_and_counts_the_refused_turn() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Glob", json!({"pattern": "*"})));
    let run = env
        .run(
            Some(&server),
            &["-p", "look", "--max-turns", "1", "--output-format", "json"],
        )
        .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let result = result_of(&run.stdout);
    assert_eq!(result["subtype"], "error_max_turns", "{result}");
    assert_eq!(
        result["errors"],
        json!(["Reached maximum number of turns (1)"])
    );
    assert_eq!(result["num_turns"], 2, "the refused turn counts: {result}");
    assert_eq!(server.requests().len(), 1, "one request was made");

    // Text output says the same on stderr.
    server.push(Reply::new().tool_use("toolu_2", "Glob", json!({"pattern": "*"})));
    let run = env
        .run(Some(&server), &["-p", "look", "--max-turns", "1"])
        .await;
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("Reached maximum number of turns (1)"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn i25_5_a_spent_budget_says_the_references_words_even_when_the_answer_was_final() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    // The one answer ends the turn, but it cost more than the budget.
    server.push(
        Reply::new()
            .model("claude-sonnet-4-5")
            .usage(1_000_000, 100_000)
            .text("PONG"),
    );
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "ping",
                "--max-budget-usd",
                "0.5",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let result = result_of(&run.stdout);
    assert_eq!(result["subtype"], "error_max_budget_usd", "{result}");
    assert_eq!(result["errors"], json!(["Reached maximum budget ($0.5)"]));
    assert_eq!(result["num_turns"], 1);
    assert_eq!(result["stop_reason"], "end_turn");
}

#[tokio::test]
async fn i25_5_structured_output_retries_say_the_references_words() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push_all((0..5).map(|_| MockResponse::text("Lyon, I think.")));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "Which city?",
                "--output-format",
                "json",
                "--json-schema",
                SCHEMA,
            ],
        )
        .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let result = result_of(&run.stdout);
    assert_eq!(result["subtype"], "error_max_structured_output_retries");
    assert_eq!(
        result["errors"][0], "Failed to provide valid structured output after 5 attempts",
        "{result}"
    );
}
