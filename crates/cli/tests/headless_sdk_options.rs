//! The SDK options of issue 14 that change what a session does, through the real binary
//! against the mock model server: structured output (`--json-schema`), which settings
//! files load (`--setting-sources`), `--no-session-persistence`, `--fallback-model`, and
//! the trust gate in front of a project's own hooks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::{Value, json};
use strata_testkit::{MockResponse, MockServer, Reply};

use headless_support::{Env, run_command};

const SCHEMA: &str = r#"{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer"}},"required":["city","population"]}"#;

fn json_run(extra: &[&str]) -> Vec<String> {
    let mut args = vec!["-p", "Which city?", "--output-format", "json"];
    args.extend_from_slice(extra);
    args.into_iter().map(str::to_owned).collect()
}

fn result_of(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test]
async fn json_schema_the_answer_given_through_the_tool_is_the_results_structured_output() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push_all([
        // A first answer that does not match: the model is told where, and corrects it.
        Reply::new()
            .tool_use("t1", "StructuredOutput", json!({"city": 7}))
            .into(),
        Reply::new()
            .tool_use(
                "t2",
                "StructuredOutput",
                json!({"city": "Lyon", "population": 522_000}),
            )
            .into(),
    ]);
    let args = json_run(&["--json-schema", SCHEMA]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = env.run(Some(&server), &args).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let result = result_of(&run.stdout);
    assert_eq!(result["subtype"], "success");
    assert_eq!(
        result["structured_output"],
        json!({"city": "Lyon", "population": 522_000})
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "a valid answer ends the turn");
    let tool = requests[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "StructuredOutput")
        .cloned()
        .expect("the model is offered the StructuredOutput tool");
    assert_eq!(
        tool["input_schema"]["required"],
        json!(["city", "population"])
    );
    let correction = requests[1].body_text();
    assert!(
        correction.contains("does not match the required schema") && correction.contains("/city"),
        "{correction}"
    );
}

#[tokio::test]
async fn json_schema_answers_that_never_match_end_with_error_max_structured_output_retries() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push_all((0..5).map(|_| MockResponse::text("Lyon, I think.")));
    let args = json_run(&["--json-schema", SCHEMA]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = env.run(Some(&server), &args).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let result = result_of(&run.stdout);
    assert_eq!(result["subtype"], "error_max_structured_output_retries");
    assert_eq!(result["is_error"], true);
    assert!(result.get("structured_output").is_none_or(Value::is_null));
    assert_eq!(
        server.requests().len(),
        5,
        "five attempts, then the turn ends"
    );
    assert!(
        server.requests()[1]
            .body_text()
            .contains("calling the StructuredOutput tool"),
        "a text answer is answered with a reminder"
    );
}

#[tokio::test]
async fn json_schema_a_bare_json_text_answer_that_matches_is_taken() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::text(
        r#"{"city": "Nantes", "population": 320000}"#,
    ));
    let args = json_run(&["--json-schema", SCHEMA]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = env.run(Some(&server), &args).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        result_of(&run.stdout)["structured_output"]["city"],
        "Nantes"
    );
}

#[tokio::test]
async fn a_json_schema_that_is_not_an_object_schema_is_a_usage_error() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    for schema in [r#"{"type":"string"}"#, "{nope"] {
        let run = env
            .run(Some(&server), &["-p", "x", "--json-schema", schema])
            .await;
        assert_eq!(run.code, Some(2), "{schema}: {}", run.stderr);
        assert!(run.stderr.contains("--json-schema"), "{}", run.stderr);
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn fallback_model_an_overloaded_model_is_retried_once_on_the_fallback() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push_all([
        MockResponse::overloaded(),
        MockResponse::text("from the spare"),
    ]);
    let mut cmd = env.command(
        Some(&server),
        &[
            "-p",
            "hi",
            "--model",
            "claude-main",
            "--fallback-model",
            "claude-spare",
        ],
    );
    cmd.env("STRATA_MAX_RETRIES", "0");
    let run = run_command(cmd, "").await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "from the spare");
    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.json()["model"].clone())
        .collect();
    assert_eq!(models, [json!("claude-main"), json!("claude-spare")]);
    assert!(run.stderr.contains("fallback model"), "{}", run.stderr);
}

#[tokio::test]
async fn fallback_model_the_same_as_the_model_is_a_usage_error() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let run = env
        .run(
            Some(&server),
            &["-p", "hi", "--model", "m", "--fallback-model=m"],
        )
        .await;
    assert_eq!(run.code, Some(2), "{}", run.stderr);
}

#[tokio::test]
async fn no_session_persistence_writes_no_transcript() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push_all([MockResponse::text("a"), MockResponse::text("b")]);
    let run = env
        .run(Some(&server), &["-p", "hi", "--no-session-persistence"])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "a");
    assert!(env.transcripts().is_empty(), "no transcript was written");
    // Without the flag the same run leaves one.
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(env.transcripts().len(), 1);
}

#[tokio::test]
async fn setting_sources_loads_only_the_settings_files_listed() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    std::fs::create_dir_all(&env.cfg).unwrap();
    std::fs::create_dir_all(env.proj.join(".strata")).unwrap();
    std::fs::write(env.cfg.join("settings.json"), r#"{"model":"from-user"}"#).unwrap();
    std::fs::write(
        env.proj.join(".strata/settings.json"),
        r#"{"model":"from-project"}"#,
    )
    .unwrap();
    let cases = [
        ("--setting-sources=user", "from-user"),
        ("--setting-sources=user,project,local", "from-project"),
        ("--setting-sources=", "default"),
    ];
    for (flag, _) in cases {
        server.push(MockResponse::text("ok"));
        let run = env.run(Some(&server), &["-p", "hi", flag]).await;
        assert_eq!(run.code, Some(0), "{flag}: {}", run.stderr);
        assert!(
            !run.stderr.contains("not honoured"),
            "{flag}: {}",
            run.stderr
        );
    }
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(models[0], "from-user");
    assert_eq!(models[1], "from-project");
    assert!(
        !models[2].starts_with("from-"),
        "--setting-sources= loads no settings file: {}",
        models[2]
    );
}

#[tokio::test]
async fn project_hooks_run_only_once_the_project_is_trusted() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let marker = env.proj.join("hook-ran");
    std::fs::create_dir_all(env.proj.join(".strata")).unwrap();
    let settings = json!({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": format!("touch '{}'", marker.display())}
    ]}]}});
    std::fs::write(env.proj.join(".strata/settings.json"), settings.to_string()).unwrap();

    server.push(MockResponse::text("untrusted"));
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!marker.exists(), "an untrusted project's hook must not run");
    assert!(
        run.stderr.contains("not trusted") && run.stderr.contains("strata trust"),
        "the user is told why and how to trust: {}",
        run.stderr
    );

    let trust = env.run(None, &["trust"]).await;
    assert_eq!(trust.code, Some(0), "{}", trust.stderr);
    server.push(MockResponse::text("trusted"));
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(marker.exists(), "the trusted project's hook ran");
    assert!(!run.stderr.contains("not trusted"), "{}", run.stderr);

    std::fs::remove_file(&marker).unwrap();
    let revoke = env.run(None, &["trust", "--revoke"]).await;
    assert_eq!(revoke.code, Some(0), "{}", revoke.stderr);
    server.push(MockResponse::text("revoked"));
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!marker.exists(), "revoked trust stops the hook again");
}
