//! `strata -p` through the real binary against a scripted mock model server on
//! 127.0.0.1: what is printed, what is sent to the model, exit codes, resume and
//! continue, and the errors a user meets first (issue 6 parts 1, 2 and 5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::{Value, json};
use strata_testkit::{MockResponse, MockServer, Reply};

use headless_support::Env;

/// `(role, text of each text block / type of each other block)` of a request's messages.
fn shape(request: &Value) -> Vec<(String, Vec<String>)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let blocks = match &m["content"] {
                Value::String(s) => vec![s.clone()],
                Value::Array(blocks) => blocks
                    .iter()
                    .map(|b| match b["type"].as_str().unwrap() {
                        "text" => b["text"].as_str().unwrap().to_owned(),
                        other => other.to_owned(),
                    })
                    .collect(),
                other => panic!("content {other}"),
            };
            (m["role"].as_str().unwrap().to_owned(), blocks)
        })
        .collect()
}

fn msgs(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    list.iter()
        .map(|(r, b)| ((*r).to_owned(), b.iter().map(|s| (*s).to_owned()).collect()))
        .collect()
}

#[tokio::test]
async fn a_plain_answer_prints_the_result_text_and_exits_0() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hello there."));
    let run = env
        .run(Some(&server), &["-p", "hi", "--model", "claude-test-model"])
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Hello there.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-api-key"), Some("test-key"));
    let body = requests[0].json();
    assert_eq!(body["model"], "claude-test-model", "--model is used");
    assert_eq!(body["stream"], true);
    assert_eq!(shape(&body), msgs(&[("user", &["hi"])]));
    assert_eq!(env.transcripts().len(), 1, "the session is recorded");
}

#[tokio::test]
async fn an_openai_compatible_server_is_used_when_only_openai_base_url_is_set() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hello from a local server."));
    let mut cmd = env.command(None, &["-p", "hi", "--model", "local-model"]);
    cmd.env("OPENAI_BASE_URL", server.openai_url());
    let run = headless_support::run_command(cmd, "").await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Hello from a local server.\n");
    let request = &server.requests()[0];
    assert!(request.is_openai(), "{}", request.path);
    assert_eq!(request.json()["model"], "local-model");
}

#[tokio::test]
async fn json_output_prints_the_one_result_object() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Forty-two.").usage(20, 7));
    let run = env
        .run(Some(&server), &["-p", "answer?", "--output-format", "json"])
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = run.lines();
    assert_eq!(lines.len(), 1, "one object: {}", run.stdout);
    let result = &lines[0];
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Forty-two.");
    assert_eq!(result["num_turns"], 1);
    assert_eq!(result["usage"]["input_tokens"], 20);
    assert_eq!(result["usage"]["output_tokens"], 7);
    assert!(
        result["modelUsage"].as_object().unwrap().len() == 1,
        "{result}"
    );
    let (path, _) = &env.transcripts()[0];
    assert_eq!(
        path.file_stem().unwrap().to_str().unwrap(),
        result["session_id"].as_str().unwrap(),
        "the result names the recorded session"
    );
}

#[tokio::test]
async fn the_prompt_is_read_from_stdin_when_no_argument_is_given() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Read it."));
    let run = env
        .run_with(Some(&server), &["-p"], "summarise this\nplease\n")
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Read it.\n");
    assert_eq!(
        shape(&server.requests()[0].json()),
        msgs(&[("user", &["summarise this\nplease"])]),
        "the pipe's final line end is not part of the prompt"
    );
}

#[tokio::test]
async fn a_tool_round_trip_runs_bash_echo_and_sends_the_result_back() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Running it.").tool_use(
        "toolu_echo",
        "Bash",
        json!({"command": "echo hi"}),
    ));
    server.push(Reply::new().text("It printed hi."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "say hi",
                "--allowedTools",
                "Bash(echo:*)",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.result()["result"], "It printed hi.");
    assert_eq!(run.result()["num_turns"], 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].json();
    assert_eq!(
        shape(&second),
        msgs(&[
            ("user", &["say hi"]),
            ("assistant", &["Running it.", "tool_use"]),
            ("user", &["tool_result"])
        ])
    );
    let tool_use = &second["messages"][1]["content"][1];
    assert_eq!(tool_use["id"], "toolu_echo");
    assert_eq!(tool_use["input"], json!({"command": "echo hi"}));
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_echo");
    assert_ne!(result["is_error"], true, "{result}");
    assert_eq!(
        result["content"].as_str().map(str::trim),
        Some("hi"),
        "{result}"
    );
}

#[tokio::test]
async fn parallel_tool_calls_all_run_and_their_results_go_back_together_in_order() {
    let env = Env::new();
    std::fs::write(env.proj.join("notes.md"), "# notes\n").unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .tool_use("toolu_a", "Bash", json!({"command": "echo first"}))
            .tool_use("toolu_b", "Glob", json!({"pattern": "*.md"}))
            .tool_use("toolu_c", "Bash", json!({"command": "echo third"})),
    );
    server.push(Reply::new().text("All three ran."));
    let run = env
        .run(
            Some(&server),
            &["-p", "look", "--allowedTools", "Bash(echo:*)"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "All three ran.\n");
    let second = server.requests()[1].json();
    let results = second["messages"][2]["content"].as_array().unwrap();
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["toolu_a", "toolu_b", "toolu_c"],
        "one user message, in call order"
    );
    let text = |i: usize| results[i]["content"].to_string();
    assert!(text(0).contains("first"), "{}", text(0));
    assert!(text(1).contains("notes.md"), "{}", text(1));
    assert!(text(2).contains("third"), "{}", text(2));
}

#[tokio::test]
async fn a_call_needing_approval_is_denied_without_a_prompt_channel_the_model_is_told_and_it_is_listed()
 {
    let env = Env::new();
    std::fs::create_dir_all(env.proj.join("build")).unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_rm", "Bash", json!({"command": "rm -rf build"})));
    server.push(Reply::new().text("I was not allowed to delete it."));
    let run = env
        .run(
            Some(&server),
            &["-p", "clean up", "--output-format", "json"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(env.proj.join("build").is_dir(), "the command did not run");
    let result = run.result();
    assert_eq!(
        result["permission_denials"],
        json!([{"tool_name": "Bash", "tool_use_id": "toolu_rm", "tool_input": {"command": "rm -rf build"}}])
    );
    let told = &server.requests()[1].json()["messages"][2]["content"][0];
    assert_eq!(told["tool_use_id"], "toolu_rm");
    assert_eq!(told["is_error"], true, "{told}");
    assert!(
        told["content"]
            .to_string()
            .to_lowercase()
            .contains("permission"),
        "{told}"
    );
}

#[tokio::test]
async fn an_overloaded_529_is_retried_and_the_run_succeeds() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::overloaded());
    server.push(Reply::new().text("Made it."));
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Made it.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one retry");
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
    // Regression: retries were silent, so a wrong base URL looked like a hang for
    // minutes. Each one is announced on stderr (plain text, no colour codes in a pipe).
    assert!(
        run.stderr.contains("HTTP 529") && run.stderr.contains("retrying (retry 1 of"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
}

#[tokio::test]
async fn an_api_error_ends_the_run_with_exit_1_and_says_why() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::error(
        400,
        "invalid_request_error",
        "prompt is too long",
    ));
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("prompt is too long"), "{}", run.stderr);
    let run = env
        .run(Some(&server), &["-p", "hi", "--output-format", "json"])
        .await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.result()["is_error"], true);
    assert_eq!(run.result()["subtype"], "error_during_execution");
}

#[tokio::test]
async fn max_turns_stops_the_run_with_error_max_turns_and_exit_1() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Glob", json!({"pattern": "*"})));
    let run = env
        .run(
            Some(&server),
            &["-p", "look", "--max-turns", "1", "--output-format", "json"],
        )
        .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert_eq!(run.result()["subtype"], "error_max_turns");
    assert_eq!(server.requests().len(), 1);
    server.push(Reply::new().tool_use("toolu_2", "Glob", json!({"pattern": "*"})));
    let run = env
        .run(Some(&server), &["-p", "look", "--max-turns", "1"])
        .await;
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("maximum number of turns"),
        "{}",
        run.stderr
    );
}

/// Runs one prompt and returns the session id.
async fn first_session(env: &Env, server: &MockServer, prompt: &str, answer: &str) -> String {
    server.push(Reply::new().text(answer));
    let run = env
        .run(Some(server), &["-p", prompt, "--output-format", "json"])
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    run.result()["session_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn resume_sends_the_restored_conversation_and_continues_the_same_session() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let id = first_session(&env, &server, "remember 42", "Noted: 42.").await;
    server.push(Reply::new().text("It was 42."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "which number?",
                "--resume",
                &id,
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.result()["session_id"], id.as_str(), "the same session");
    assert_eq!(
        shape(&server.requests()[1].json()),
        msgs(&[
            ("user", &["remember 42"]),
            ("assistant", &["Noted: 42."]),
            ("user", &["which number?"])
        ])
    );
    // A path works as well as an id.
    let (path, lines) = env.transcripts().remove(0);
    assert!(lines.len() >= 4, "both turns are in one transcript");
    server.push(Reply::new().text("Still 42."));
    let run = env
        .run(
            Some(&server),
            &["-p", "and now?", "--resume", path.to_str().unwrap()],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(shape(&server.requests()[2].json()).len(), 5);
}

#[tokio::test]
async fn continue_resumes_the_newest_session_of_the_project() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    first_session(&env, &server, "old one", "old").await;
    std::thread::sleep(std::time::Duration::from_millis(20)); // distinct modification times
    let newest = first_session(&env, &server, "new one", "new").await;
    server.push(Reply::new().text("continued"));
    let run = env
        .run(
            Some(&server),
            &["-p", "go on", "-c", "--output-format", "json"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.result()["session_id"], newest.as_str());
    assert_eq!(
        shape(&server.requests()[2].json()),
        msgs(&[
            ("user", &["new one"]),
            ("assistant", &["new"]),
            ("user", &["go on"])
        ])
    );
}

#[tokio::test]
async fn fork_session_continues_the_conversation_under_a_new_id() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let id = first_session(&env, &server, "base", "based").await;
    server.push(Reply::new().text("forked"));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "branch",
                "--resume",
                &id,
                "--fork-session",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let forked = run.result()["session_id"].as_str().unwrap().to_owned();
    assert_ne!(forked, id);
    assert_eq!(
        shape(&server.requests()[1].json()),
        msgs(&[
            ("user", &["base"]),
            ("assistant", &["based"]),
            ("user", &["branch"])
        ])
    );
    assert_eq!(env.transcripts().len(), 2, "the original is left as it was");
}

#[tokio::test]
async fn resume_of_an_unknown_id_prints_the_exact_message_and_exits_1() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let id = "0b5e9d2c-0000-4000-8000-000000000000";
    let run = env.run(Some(&server), &["-p", "hi", "--resume", id]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(
        run.stderr,
        format!("No conversation found with session ID: {id}\n")
    );
    assert_eq!(run.stdout, "");
    assert!(server.requests().is_empty(), "no model call");
}

#[tokio::test]
async fn no_provider_configured_exits_2_saying_how_to_configure_one() {
    let env = Env::new();
    let run = env.run(None, &["-p", "hi"]).await;
    assert_eq!(run.code, Some(2), "{run:?}");
    for needle in [
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "--replay demo",
        "--provider",
    ] {
        assert!(
            run.stderr.contains(needle),
            "lacks {needle}: {}",
            run.stderr
        );
    }
    let run = env
        .run(None, &["-p", "hi", "--provider", "anthropic"])
        .await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("ANTHROPIC_API_KEY"), "{}", run.stderr);
}

#[tokio::test]
async fn without_a_terminal_the_interactive_ui_points_to_p_and_exits_2() {
    let env = Env::new();
    for args in [&[][..], &["hello"][..]] {
        let run = env.run(None, args).await;
        assert_eq!(run.code, Some(2), "{run:?}");
        assert!(
            run.stderr
                .contains("interactive UI needs a terminal on stdin and stdout"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("strata -p"), "{}", run.stderr);
        assert_eq!(run.stdout, "");
    }
}

#[tokio::test]
async fn flag_combinations_that_cannot_work_are_usage_errors() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["-p", "hi", "--output-format", "stream-json"],
            "needs --verbose",
        ),
        (
            &["-p", "--input-format", "stream-json"],
            "needs --output-format stream-json",
        ),
        (
            &[
                "-p",
                "hi",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
            ],
            "drop the prompt argument",
        ),
        (
            &["-p", "hi", "--resume", "x", "--continue"],
            "cannot be combined",
        ),
        (&["-p", "hi", "--fork-session"], "--fork-session needs"),
        (
            &["-p", "hi", "--permission-prompt-tool", "stdio"],
            "needs --input-format stream-json",
        ),
        (
            &["-p", "hi", "--permission-prompt-tool", "mcp__x__y"],
            "not supported",
        ),
        (&["-p", "hi", "--permission-mode", "bubble"], "internal"),
        (
            &["-p", "hi", "--permission-mode", "yolo"],
            "unknown permission mode",
        ),
        (&["-p", "hi", "--output-format", "xml"], "possible values"),
        (
            &["-p", "hi", "--provider", "gemini"],
            "anthropic, openai, replay",
        ),
        (&["-p", "hi", "--max-turns", "0"], "--max-turns"),
        (&["-p", "   "], "the prompt is empty"),
        (
            &[
                "-p",
                "hi",
                "--settings",
                "{\"permissions\": {\"deny\": [\"Bash\"]",
            ],
            "--settings (inline JSON): line 1",
        ),
        (
            &["-p", "hi", "--settings", "no-such-settings.json"],
            "no-such-settings.json",
        ),
    ];
    for (args, needle) in cases {
        let run = env.run(Some(&server), args).await;
        assert_eq!(run.code, Some(2), "{args:?}: {run:?}");
        assert!(
            run.stderr.contains(needle),
            "{args:?}: lacks {needle:?}: {}",
            run.stderr
        );
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn bypass_mode_needs_its_flag_and_plan_mode_refuses_edits() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let run = env
        .run(
            Some(&server),
            &["-p", "hi", "--permission-mode", "bypassPermissions"],
        )
        .await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("dangerously-skip-permissions"),
        "{}",
        run.stderr
    );

    server.push(Reply::new().tool_use(
        "toolu_w",
        "Write",
        json!({"file_path": env.proj.join("x.txt"), "content": "x"}),
    ));
    server.push(Reply::new().text("Planned only."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "write x",
                "--permission-mode",
                "plan",
                "--allowedTools",
                "Write",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!env.proj.join("x.txt").exists(), "plan mode wrote nothing");
    assert_eq!(run.result()["permission_denials"][0]["tool_name"], "Write");

    server.push(Reply::new().tool_use(
        "toolu_w2",
        "Write",
        json!({"file_path": env.proj.join("y.txt"), "content": "y"}),
    ));
    server.push(Reply::new().text("Written."));
    let run = env
        .run(
            Some(&server),
            &["-p", "write y", "--dangerously-skip-permissions"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(env.proj.join("y.txt")).unwrap(),
        "y"
    );
}

#[tokio::test]
async fn disallowed_tools_are_not_offered_and_settings_deny_rules_win_over_allowed_tools() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    let run = env
        .run(
            Some(&server),
            &["-p", "look", "--disallowed-tools", "Glob", "Grep"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let tools: Vec<String> = server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.contains(&"Bash".to_owned()), "{tools:?}");
    assert!(
        !tools.contains(&"Glob".to_owned()) && !tools.contains(&"Grep".to_owned()),
        "{tools:?}"
    );

    server.push(Reply::new().tool_use("toolu_e", "Bash", json!({"command": "echo hi"})));
    server.push(Reply::new().text("denied too"));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "say",
                "--allowedTools",
                "Bash",
                "--settings",
                r#"{"permissions":{"deny":["Bash(echo:*)"]}}"#,
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.result()["permission_denials"][0]["tool_use_id"],
        "toolu_e",
        "{run:#?}"
    );
}

#[tokio::test]
async fn regression_a_prompt_that_names_a_subcommand_is_still_the_prompt_after_p() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("About sessions."));
    let run = env.run(Some(&server), &["-p", "sessions"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        shape(&server.requests()[0].json()),
        msgs(&[("user", &["sessions"])])
    );
}

/// Regression: a `config.json` the user broke made every successful run exit 1 ("could
/// not close the session cleanly"), failing scripts and CI. The cost slot that could not
/// be saved is a warning; the broken file is left exactly as it was.
#[tokio::test]
async fn regression_a_broken_config_json_is_a_warning_not_a_failed_run() {
    let env = Env::new();
    std::fs::create_dir_all(&env.cfg).unwrap();
    let broken = "{\n \"projects\": {,}\n}\n";
    std::fs::write(env.cfg.join("config.json"), broken).unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hello there."));
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Hello there.\n");
    assert!(
        run.stderr.contains("config.json") && run.stderr.contains("line 2"),
        "the warning names the file and where it is broken: {}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(env.cfg.join("config.json")).unwrap(),
        broken
    );
}

/// Regression: resuming a transcript from outside the config directory wrote the
/// continued session next to that file, under a new id that `--resume <id>` and
/// `--continue` could then not find. It now joins this project's sessions.
#[tokio::test]
async fn regression_a_transcript_resumed_from_elsewhere_joins_the_project_and_resumes_by_id() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    // A session recorded by another config directory (say, another machine), copied in.
    let other = Env::new();
    let id = first_session(&other, &server, "remember 7", "Noted: 7.").await;
    let (recorded, _) = other.transcripts().remove(0);
    std::fs::create_dir_all(env.proj.join("exports")).unwrap();
    let outside = env.proj.join(format!("exports/{id}.jsonl"));
    std::fs::copy(&recorded, &outside).unwrap();

    server.push(Reply::new().text("It was 7."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "which?",
                "--resume",
                outside.to_str().unwrap(),
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.result()["session_id"],
        id.as_str(),
        "its own id is kept"
    );
    assert_eq!(
        env.transcripts().len(),
        1,
        "recorded under the config directory"
    );

    server.push(Reply::new().text("Still 7."));
    let run = env
        .run(Some(&server), &["-p", "and now?", "--resume", &id])
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        shape(&server.requests()[2].json()).len(),
        5,
        "the whole conversation"
    );
    server.push(Reply::new().text("Yes, 7."));
    let run = env.run(Some(&server), &["-p", "sure?", "--continue"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(shape(&server.requests()[3].json()).len(), 7);
}
