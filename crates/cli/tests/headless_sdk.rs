//! strata as the CLI behind the official Agent SDKs (issue 14, items 1–3), through the
//! real binary against the mock model server: started as the SDKs start it (no `-p`,
//! every flag they pass, in both `--flag value` and `--flag=value` forms), the stream
//! shapes they read (`stream_event`, results with every field, `session_state_changed`),
//! the system prompt options, and the control requests for capabilities not built yet.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::{Driver, Env, Finished};

/// The stream-json start-up both SDKs use: no `-p`.
const SDK_START: [&str; 6] = [
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
    "--permission-prompt-tool=stdio",
];

fn sdk_driver(env: &Env, server: &MockServer, extra: &[&str]) -> Driver {
    let mut args: Vec<&str> = SDK_START.to_vec();
    args.extend_from_slice(extra);
    Driver::spawn(env.command(Some(server), &args))
}

fn system_of(request: &strata_testkit::RecordedRequest) -> String {
    request.json()["system"].to_string()
}

#[tokio::test]
async fn sdk_start_without_p_accepts_every_sdk_flag_in_both_forms_and_reports_the_unbuilt_once() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    // `{}` answers the `--json-schema` below (an object schema): structured output is on.
    server.push(Reply::new().text("{}"));
    let id = "123e4567-e89b-42d3-a456-426614174000";
    let session_flag = format!("--session-id={id}");
    let mut s = sdk_driver(
        &env,
        &server,
        &[
            // What the Python SDK passes by default …
            "--system-prompt",
            "",
            "--setting-sources=",
            // … and what either SDK passes when its options ask.
            "--tools",
            "default",
            "--max-budget-usd",
            "5",
            "--fallback-model=claude-haiku-4-5",
            "--betas",
            "context-1m",
            "--mcp-config",
            "{\"mcpServers\":{}}",
            "--strict-mcp-config",
            "--include-hook-events",
            "--include-partial-messages",
            "--max-thinking-tokens=1024",
            "--json-schema={\"type\":\"object\"}",
            "--agents",
            "{}",
            "--plugin-dir=plugins",
            "--debug",
            "--debug-file=debug.log",
            "--no-session-persistence",
            "--await-initialize",
            &session_flag,
            "--thinking=adaptive",
            "--effort=high",
            "--task-budget=1000",
        ],
    );
    let init = s
        .until(|l| l["type"] == "system" && l["subtype"] == "init")
        .await;
    assert_eq!(init["session_id"], id, "--session-id names the new session");
    let unsupported: Vec<String> = init["strata_unsupported_flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().split(':').next().unwrap().to_owned())
        .collect();
    for flag in ["--plugin-dir", "--thinking"] {
        assert!(
            unsupported.contains(&flag.to_owned()),
            "{flag}: {unsupported:?}"
        );
    }
    for honoured in [
        "--agents",
        "--fallback-model",
        "--json-schema",
        "--setting-sources",
        "--no-session-persistence",
        "--system-prompt",
        "--include-partial-messages",
        "--session-id",
        "--mcp-config",
        "--strict-mcp-config",
        "--max-thinking-tokens",
    ] {
        assert!(!unsupported.contains(&honoured.to_owned()), "{honoured}");
    }
    s.prompt("hello").await;
    let result = s.result().await;
    assert_eq!(result["subtype"], "success");
    let Finished { code, stderr, .. } = s.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("not honoured yet").count(),
        1,
        "reported once: {stderr}"
    );
    assert!(
        stderr.contains("--plugin-dir: plugins are not built yet"),
        "{stderr}"
    );
}

#[tokio::test]
async fn dash_v_prints_the_version_as_the_python_sdk_checks_it() {
    let env = Env::new();
    let run = env.run(None, &["-v"]).await;
    assert_eq!(run.code, Some(0));
    assert!(run.stdout.starts_with("strata "), "{}", run.stdout);
}

#[tokio::test]
async fn a_session_id_that_is_not_a_uuid_is_a_usage_error_naming_the_flag() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let run = env
        .run(Some(&server), &["-p", "hi", "--session-id", "nope"])
        .await;
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("--session-id \"nope\" is not a UUID"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn an_empty_system_prompt_is_the_default_a_custom_one_replaces_it_and_append_adds() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push_all([
        Reply::new().text("a").into(),
        Reply::new().text("b").into(),
        Reply::new().text("c").into(),
    ]);
    for args in [
        vec!["-p", "x", "--system-prompt", ""],
        vec!["-p", "x", "--system-prompt=You are a pirate."],
        vec!["-p", "x", "--append-system-prompt", "Always rhyme."],
    ] {
        let run = env.run(Some(&server), &args).await;
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
    }
    let requests = server.requests();
    let (default, custom, appended) = (
        system_of(&requests[0]),
        system_of(&requests[1]),
        system_of(&requests[2]),
    );
    assert!(default.contains("You are strata"), "{default}");
    assert!(custom.contains("You are a pirate.") && !custom.contains("You are strata"));
    assert!(appended.contains("You are strata") && appended.contains("Always rhyme."));
}

#[tokio::test]
async fn a_system_prompt_file_replaces_the_prompt_and_a_missing_one_is_a_usage_error() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    let file = env.proj.join("prompt.txt");
    std::fs::write(&file, "From a file.").unwrap();
    let run = env
        .run(
            Some(&server),
            &["-p", "x", "--system-prompt-file", file.to_str().unwrap()],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(system_of(&server.requests()[0]).contains("From a file."));
    let missing = env
        .run(
            Some(&server),
            &["-p", "x", "--system-prompt-file", "nowhere.txt"],
        )
        .await;
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("--system-prompt-file nowhere.txt"),
        "{}",
        missing.stderr
    );
}

#[tokio::test]
async fn initialize_system_prompt_parts_and_append_replace_the_flags_values() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("arr"));
    let mut s = sdk_driver(&env, &server, &["--system-prompt", "from the flag"]);
    s.control(
        "i1",
        json!({"subtype": "initialize", "systemPrompt": ["Part one.", "Part two."],
               "appendSystemPrompt": "Appended."}),
    )
    .await;
    assert_eq!(s.response("i1").await["response"]["subtype"], "success");
    s.prompt("hi").await;
    s.result().await;
    s.finish().await;
    let system = system_of(&server.requests()[0]);
    assert!(
        system.contains("Part one.\\n\\nPart two.") && system.contains("Appended."),
        "{system}"
    );
    assert!(!system.contains("from the flag"), "{system}");
}

/// Redacts the ids of a line for a snapshot.
fn redact_ids(mut line: Value) -> Value {
    for key in ["uuid", "session_id"] {
        if line.get(key).is_some() {
            line[key] = json!(format!("[{key}]"));
        }
    }
    line
}

#[tokio::test]
async fn include_partial_messages_streams_the_raw_api_events_in_order() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().id("msg_1").text("streamed"));
    let mut s = sdk_driver(&env, &server, &["--include-partial-messages"]);
    s.prompt("go").await;
    s.result().await;
    let Finished { all, .. } = s.finish().await;
    let events: Vec<Value> = all
        .into_iter()
        .filter(|l| l["type"] == "stream_event")
        .map(redact_ids)
        .collect();
    insta::assert_json_snapshot!("stream_events", events);
}

#[tokio::test]
async fn without_the_flag_no_stream_event_is_sent() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("quiet"));
    let mut s = sdk_driver(&env, &server, &[]);
    s.prompt("go").await;
    s.result().await;
    let Finished { all, .. } = s.finish().await;
    assert!(all.iter().all(|l| l["type"] != "stream_event"));
}

#[tokio::test]
async fn an_error_result_carries_every_field_the_sdk_types_declare_errors_included() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "true"})));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "loop",
                "--max-turns",
                "1",
                "--allowedTools",
                "Bash",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(1));
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_turns");
    for field in [
        "type",
        "subtype",
        "is_error",
        "duration_ms",
        "duration_api_ms",
        "num_turns",
        "session_id",
        "total_cost_usd",
        "usage",
        "modelUsage",
        "permission_denials",
        "errors",
        "stop_reason",
        "uuid",
    ] {
        assert!(result.get(field).is_some(), "{field} missing: {result}");
    }
    assert!(
        result["errors"].is_array(),
        "errors is an array even when empty"
    );
    assert_eq!(result["stop_reason"], "tool_use");
}

#[tokio::test]
async fn max_budget_usd_stops_the_turn_with_error_max_budget_usd_once_spent() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .model("claude-sonnet-4-5")
            .usage(1_000_000, 100_000)
            .tool_use("toolu_1", "Bash", json!({"command": "true"})),
    );
    server.push(Reply::new().text("never asked"));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "spend",
                "--max-budget-usd",
                "0.01",
                "--allowedTools",
                "Bash",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_budget_usd", "{result}");
    assert_eq!(
        server.requests().len(),
        1,
        "no request after the budget was spent"
    );
    let bad = env
        .run(Some(&server), &["-p", "x", "--max-budget-usd", "-1"])
        .await;
    assert_eq!(bad.code, Some(2));
}

#[tokio::test]
async fn session_state_changed_messages_come_when_the_client_reads_them() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    // A command that writes a file: a read-only one runs without asking, and the
    // question (`requires_action`) is what this test watches for.
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch asked.txt"})));
    server.push(Reply::new().text("one"));
    let mut cmd = env.command(Some(&server), &SDK_START);
    cmd.env("CLAUDE_CODE_SDK_READS_SESSION_STATE", "1");
    let mut s = Driver::spawn(cmd);
    s.prompt("go").await;
    let ask = s
        .until(|l| l["type"] == "control_request" && l["request"]["subtype"] == "can_use_tool")
        .await;
    let id = ask["request_id"].as_str().unwrap();
    s.send(
        &json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
            "response": {"behavior": "allow"}}})
        .to_string(),
    )
    .await;
    s.result().await;
    let Finished { all, .. } = s.finish().await;
    let states: Vec<&str> = all
        .iter()
        .filter(|l| l["subtype"] == "session_state_changed")
        .map(|l| l["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["running", "requires_action", "running", "idle"]);
    // Not asked for: none.
    server.push(Reply::new().text("two"));
    let mut s = sdk_driver(&env, &server, &[]);
    s.prompt("go").await;
    s.result().await;
    let Finished { all, .. } = s.finish().await;
    assert!(all.iter().all(|l| l["subtype"] != "session_state_changed"));
}

#[tokio::test]
async fn requests_for_capabilities_not_built_are_errors_naming_the_capability() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut s = sdk_driver(&env, &server, &[]);
    // What is built answers; what is not names what is missing (never a silent success).
    s.control("ok", json!({"subtype": "get_context_usage"}))
        .await;
    assert_eq!(s.response("ok").await["response"]["subtype"], "success");
    for (id, subtype, names) in [
        ("c1", "stop_task", "task_id"),
        ("c5", "mcp_reconnect", "serverName"),
        ("c6", "mcp_toggle", "enabled"),
    ] {
        s.control(id, json!({"subtype": subtype})).await;
        let response = s.response(id).await;
        assert_eq!(response["response"]["subtype"], "error", "{subtype}");
        let error = response["response"]["error"].as_str().unwrap();
        assert!(error.contains(names), "{subtype}: {error}");
    }
    let Finished { code, .. } = s.finish().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn initialize_answers_with_the_fields_the_sdks_read() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut s = sdk_driver(&env, &server, &[]);
    s.control("i", json!({"subtype": "initialize", "hooks": null}))
        .await;
    let response = s.response("i").await;
    let body = &response["response"]["response"];
    for field in ["commands", "models", "agents", "account", "output_style"] {
        assert!(body.get(field).is_some(), "{field}: {body}");
    }
    assert_eq!(body["account"]["apiKeySource"], "ANTHROPIC_API_KEY");
    assert_eq!(body["hook_on_failure_supported"], true);
    // Nothing came: nothing is said of hooks or servers.
    assert!(body.get("hooks_applied").is_none() && body.get("mcp_servers_applied").is_none());
    s.finish().await;
}

/// The TypeScript SDK sends MCP servers in `initialize` by default and reads an absent
/// `mcp_servers_applied` as "not applied" (it warns and may run without them).
#[tokio::test]
async fn initialize_says_whether_its_hooks_and_mcp_servers_were_taken() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    for (servers, applied) in [
        (
            json!({"never": {"command": "/nonexistent/mcp-server"}}),
            true,
        ),
        (json!(["not", "an", "object"]), false),
    ] {
        let mut s = sdk_driver(&env, &server, &[]);
        s.control(
            "i",
            json!({"subtype": "initialize",
                   "hooks": {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["h0"],
                             "onFailure": "block"}]},
                   "mcpServers": servers}),
        )
        .await;
        let response = s.response("i").await;
        let body = &response["response"]["response"];
        assert_eq!(body["hooks_applied"], true, "{body}");
        assert_eq!(body["mcp_servers_applied"], applied, "{servers}: {body}");
        s.finish().await;
    }
}

#[tokio::test]
async fn stream_json_output_with_piped_stdin_is_headless_without_p() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("piped"));
    let run = env
        .run_with(
            Some(&server),
            &["--output-format", "stream-json", "--verbose"],
            "hello from a pipe\n",
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.result()["result"], "piped");
    assert!(
        server.requests()[0]
            .body_text()
            .contains("hello from a pipe")
    );
}

#[tokio::test]
async fn tools_names_the_only_tools_offered_empty_none_and_default_all() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let tools_of = |run: &headless_support::Run| -> Vec<String> {
        let init = run
            .lines()
            .into_iter()
            .find(|l| l["subtype"] == "init")
            .unwrap();
        init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };
    let mut seen = Vec::new();
    for value in ["Read,Grep", "", "default"] {
        server.push(Reply::new().text("ok"));
        let flag = format!("--tools={value}");
        let run = env
            .run(
                Some(&server),
                &[
                    "-p",
                    "x",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    &flag,
                ],
            )
            .await;
        assert_eq!(run.code, Some(0), "{value}: {}", run.stderr);
        seen.push(tools_of(&run));
    }
    let mut first = seen[0].clone();
    first.sort();
    assert_eq!(first, ["Grep", "Read"]);
    assert!(seen[1].is_empty(), "{:?}", seen[1]);
    assert!(seen[2].contains(&"Bash".to_owned()) && seen[2].len() > 2);
    // The model is offered only those.
    let offered: Vec<String> = server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(offered.len(), 2, "{offered:?}");
}

/// `--debug-file` appends strata's debug events (requests, responses, tool calls) to the
/// file and keeps them off stderr; `--debug-to-stderr` puts them on stderr.
#[tokio::test]
async fn debug_file_gets_the_debug_events_and_debug_to_stderr_prints_them() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "true"})));
    server.push(Reply::new().text("done"));
    let log = env.proj.join("strata-debug.log");
    let log_flag = format!("--debug-file={}", log.display());
    let run = env
        .run(
            Some(&server),
            &["-p", "go", "--allowedTools", "Bash", &log_flag],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let text = std::fs::read_to_string(&log).unwrap();
    for event in [
        "model request",
        "model response",
        "tool call",
        "permission decision",
    ] {
        assert!(text.contains(event), "{event}: {text}");
    }
    assert!(text.contains("Bash"), "{text}");
    assert!(!run.stderr.contains("model request"), "{}", run.stderr);

    server.push(Reply::new().text("again"));
    let run = env
        .run(Some(&server), &["-p", "hi", "--debug-to-stderr"])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("model request"), "{}", run.stderr);
    assert!(
        !run.stdout.contains("model request"),
        "stdout stays the answer"
    );
}
