//! stream-json through the real binary against a scripted mock model server: the output
//! lines (snapshots), the control protocol on stdin (initialize, interrupt,
//! set_permission_mode with its `system/status` line, set_model, rewind_files, errors),
//! permission prompts as `can_use_tool` requests, and interrupts mid-stream by control
//! request and by Ctrl-C (issue 6 parts 2, 5 and 6).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::time::Duration;

use serde_json::{Value, json};
use strata_testkit::{Gate, MockResponse, MockServer, Reply};

use headless_support::{Driver, Env, Finished, kind};

/// Redacts what changes from run to run (ids, times, paths) so the lines can be
/// snapshotted.
fn redacted(lines: &[Value], env: &Env) -> Vec<Value> {
    let proj = env.proj.to_str().unwrap().to_owned();
    lines
        .iter()
        .map(|line| {
            let mut line = line.clone();
            redact(&mut line, &proj);
            line
        })
        .collect()
}

fn redact(value: &mut Value, proj: &str) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match key.as_str() {
                    "uuid" | "session_id" if v.is_string() => *v = json!(format!("[{key}]")),
                    "duration_ms" | "duration_api_ms" | "durationMs" if v.is_number() => {
                        *v = json!(format!("[{key}]"));
                    }
                    _ => redact(v, proj),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, proj)),
        Value::String(s) if s.contains(proj) => *s = s.replace(proj, "[project]"),
        _ => {}
    }
}

/// A response paused after its first complete block, and the gate that holds it.
fn paused_reply(reply: Reply) -> (MockResponse, Gate) {
    let reply = reply.build();
    let frames = strata_testkit::render::anthropic_frames(&reply);
    // Paused while the second block streams, where a model takes its time (a server
    // sends one block's stop and the next one's start together).
    let second_start = frames
        .iter()
        .enumerate()
        .filter(|(_, f)| f.event.as_deref() == Some("content_block_start"))
        .nth(1)
        .unwrap()
        .0;
    let gate = Gate::new();
    (
        // After the second block's start and its first delta.
        MockResponse::message(reply).pause_after(second_start + 2, &gate),
        gate,
    )
}

#[tokio::test]
async fn stream_json_prints_init_then_every_message_then_the_result() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .id("msg_01")
            .model("claude-sonnet-4-5")
            .usage(120, 30)
            .text("Let me run it.")
            .tool_use("toolu_01", "Bash", json!({"command": "echo hi"})),
    );
    server.push(
        Reply::new()
            .id("msg_02")
            .model("claude-sonnet-4-5")
            .usage(160, 12)
            .text("It printed hi."),
    );
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "say hi",
                "--output-format",
                "stream-json",
                "--verbose",
                "--allowedTools",
                "Bash(echo:*)",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.ends_with('\n'), "every line ends");
    let lines = run.lines();
    let session = lines[0]["session_id"].as_str().unwrap();
    assert!(
        lines.iter().all(|l| l["session_id"] == session),
        "one session id throughout"
    );
    insta::assert_json_snapshot!("stream_json_tool_round_trip", redacted(&lines, &env));
}

#[tokio::test]
async fn a_failed_run_ends_the_stream_with_an_error_result_and_exit_1() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::error(
        401,
        "authentication_error",
        "invalid x-api-key",
    ));
    let run = env
        .run(
            Some(&server),
            &["-p", "hi", "--output-format", "stream-json", "--verbose"],
        )
        .await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.kinds(), ["system/init", "result"]);
    let result = run.result();
    assert_eq!(result["is_error"], true);
    assert_eq!(result["subtype"], "error_during_execution");
    assert!(
        result["errors"].to_string().contains("invalid x-api-key"),
        "{result}"
    );
}

#[tokio::test]
async fn initialize_answers_with_the_session_capabilities_once() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut s = Driver::start(
        &env,
        &server,
        &[
            "--permission-prompt-tool",
            "stdio",
            "--model",
            "claude-test",
        ],
    );
    let init = s.next().await;
    assert_eq!(kind(&init), "system/init");
    assert_eq!(init["model"], "claude-test");
    s.control("init-1", json!({"subtype": "initialize", "hooks": null}))
        .await;
    let response = s.response("init-1").await;
    assert_eq!(response["response"]["subtype"], "success", "{response}");
    insta::assert_json_snapshot!("initialize_response", response);
    let caps = &response["response"]["response"];
    assert!(caps["commands"].is_array(), "{caps}");
    assert_eq!(caps["models"][0]["value"], "claude-test");
    assert_eq!(caps["output_style"], "default");
    assert_eq!(caps["permission_prompts"], "stdio");
    s.control("init-2", json!({"subtype": "initialize"})).await;
    let again = s.response("init-2").await;
    assert_eq!(again["response"]["subtype"], "error");
    assert!(
        again["response"]["error"]
            .as_str()
            .unwrap()
            .contains("already initialized")
    );
    let done = s.finish().await;
    assert_eq!(done.code, Some(0));
    assert!(done.rest.is_empty(), "nothing ran: {done:?}");
}

#[tokio::test]
async fn set_permission_mode_emits_a_status_line_and_refuses_modes_that_are_not_allowed() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut s = Driver::start(&env, &server, &[]);
    s.next().await;
    s.control(
        "m1",
        json!({"subtype": "set_permission_mode", "mode": "plan"}),
    )
    .await;
    let status = s.next().await;
    assert_eq!(
        kind(&status),
        "system/status",
        "the status line comes first: {status}"
    );
    assert_eq!(status["permissionMode"], "plan");
    let ok = s.next().await;
    assert_eq!(
        ok["response"],
        json!({"subtype": "success", "request_id": "m1"})
    );

    s.control(
        "m2",
        json!({"subtype": "set_permission_mode", "mode": "bypassPermissions"}),
    )
    .await;
    let refused = s.response("m2").await;
    assert_eq!(refused["response"]["subtype"], "error");
    assert!(
        refused["response"]["error"]
            .as_str()
            .unwrap()
            .contains("dangerously-skip-permissions"),
        "{refused}"
    );
    s.control(
        "m3",
        json!({"subtype": "set_permission_mode", "mode": "yolo"}),
    )
    .await;
    let unknown = s.response("m3").await;
    assert!(
        unknown["response"]["error"]
            .as_str()
            .unwrap()
            .contains("acceptEdits"),
        "{unknown}"
    );

    // Plan mode is in force for the next prompt: a file write is refused.
    let target = env.proj.join("plan.txt");
    server.push(Reply::new().tool_use(
        "toolu_w",
        "Write",
        json!({"file_path": target, "content": "x"}),
    ));
    server.push(Reply::new().text("Only planning."));
    s.prompt("write plan.txt").await;
    let result = s.result().await;
    assert_eq!(result["permission_denials"][0]["tool_name"], "Write");
    assert!(!target.exists());
    let done = s.finish().await;
    assert_eq!(done.code, Some(0));
    let statuses = done
        .all
        .iter()
        .filter(|l| kind(l) == "system/status")
        .count();
    assert_eq!(statuses, 1, "refused changes emit no status");
}

#[tokio::test]
async fn set_model_changes_the_model_of_the_next_request() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut s = Driver::start(&env, &server, &["--model", "claude-first"]);
    s.next().await;
    s.control(
        "sm",
        json!({"subtype": "set_model", "model": "claude-second"}),
    )
    .await;
    assert_eq!(s.response("sm").await["response"]["subtype"], "success");
    server.push(Reply::new().text("from the second model"));
    s.prompt("hello").await;
    assert_eq!(s.result().await["result"], "from the second model");
    assert_eq!(server.requests()[0].json()["model"], "claude-second");
    s.finish().await;
}

#[tokio::test]
async fn can_use_tool_prompts_go_to_the_client_and_its_answers_are_followed() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_yes",
        "Bash",
        json!({"command": "touch allowed.txt"}),
    ));
    server.push(Reply::new().tool_use("toolu_no", "Bash", json!({"command": "touch denied.txt"})));
    server.push(Reply::new().text("One of two."));
    let mut s = Driver::start(&env, &server, &["--permission-prompt-tool", "stdio"]);
    s.next().await;
    s.control("init", json!({"subtype": "initialize"})).await;
    s.response("init").await;
    s.prompt("make two files").await;

    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    insta::assert_json_snapshot!("can_use_tool_request", ask);
    assert_eq!(ask["request"]["tool_name"], "Bash");
    assert_eq!(
        ask["request"]["input"],
        json!({"command": "touch allowed.txt"})
    );
    assert_eq!(ask["request"]["tool_use_id"], "toolu_yes");
    let id = ask["request_id"].as_str().unwrap().to_owned();
    let allow = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "allow", "updatedInput": {"command": "touch allowed.txt"}}}});
    s.send(&allow.to_string()).await;

    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    assert_eq!(ask["request"]["tool_use_id"], "toolu_no");
    let id = ask["request_id"].as_str().unwrap().to_owned();
    let deny = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "deny", "message": "not today"}}});
    s.send(&deny.to_string()).await;

    let result = s.result().await;
    assert_eq!(result["subtype"], "success", "{result}");
    assert!(
        env.proj.join("allowed.txt").exists(),
        "the allowed call ran"
    );
    assert!(
        !env.proj.join("denied.txt").exists(),
        "the denied call did not"
    );
    let told = &server.requests()[2].json()["messages"][4]["content"][0];
    assert_eq!(told["tool_use_id"], "toolu_no");
    assert_eq!(told["is_error"], true);
    assert!(
        told["content"].to_string().contains("not today"),
        "the model reads the client's reason: {told}"
    );
    assert_eq!(
        result["permission_denials"][0]["tool_use_id"], "toolu_no",
        "{result}"
    );
    assert_eq!(s.finish().await.code, Some(0));
}

/// Regression: "allow, and don't ask again" (`updatedPermissions` with the answer) was
/// ignored, so the same command prompted every time. A session rule stops the prompts;
/// a `localSettings` rule is also written to the project's personal settings.
#[tokio::test]
async fn updated_permissions_in_an_answer_are_applied_and_kept_where_asked() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    for (id, file) in [("t1", "a"), ("t2", "b"), ("t3", "c")] {
        server.push(Reply::new().tool_use(
            id,
            "Bash",
            json!({"command": format!("touch {file}.txt")}),
        ));
    }
    server.push(Reply::new().text("Three files."));
    let mut s = Driver::start(&env, &server, &["--permission-prompt-tool", "stdio"]);
    s.next().await;
    s.control("init", json!({"subtype": "initialize"})).await;
    s.response("init").await;
    s.prompt("make three files").await;

    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    assert_eq!(ask["request"]["tool_use_id"], "t1");
    let suggested = ask["request"]["permission_suggestions"].clone();
    assert_eq!(
        suggested[0]["rules"][0]["ruleContent"], "touch:*",
        "{suggested}"
    );
    let id = ask["request_id"].as_str().unwrap().to_owned();
    // The client offers the suggestion and the user takes it.
    let allow = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "allow", "updatedPermissions": suggested}}});
    s.send(&allow.to_string()).await;

    let result = s.result().await;
    assert_eq!(result["subtype"], "success", "{result}");
    let asked = s
        .seen
        .iter()
        .filter(|l| kind(l) == "control_request/can_use_tool")
        .count();
    assert_eq!(asked, 1, "t2 and t3 ran without asking");
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(env.proj.join(f).exists(), "{f}");
    }
    let local: Value = serde_json::from_str(
        &std::fs::read_to_string(env.proj.join(".strata/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(local["permissions"]["allow"], json!(["Bash(touch:*)"]));
    assert_eq!(s.finish().await.code, Some(0));
}

/// A removal takes effect at once, also for a rule the session started with (from the
/// settings file it is removed from).
#[tokio::test]
async fn removing_a_rule_in_an_answer_stops_it_allowing_for_the_rest_of_the_session() {
    let env = Env::new();
    std::fs::create_dir_all(env.proj.join(".strata")).unwrap();
    std::fs::write(
        env.proj.join(".strata/settings.local.json"),
        r#"{"permissions":{"allow":["Bash(touch:*)"]}}"#,
    )
    .unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("t1", "Bash", json!({"command": "touch a.txt"})));
    server.push(Reply::new().tool_use("t2", "Bash", json!({"command": "mkdir d"})));
    server.push(Reply::new().tool_use("t3", "Bash", json!({"command": "touch b.txt"})));
    server.push(Reply::new().text("Done."));
    let mut s = Driver::start(&env, &server, &["--permission-prompt-tool", "stdio"]);
    s.next().await;
    s.control("init", json!({"subtype": "initialize"})).await;
    s.response("init").await;
    s.prompt("go").await;

    // t1 is allowed by the settings; t2 asks, and the answer removes the rule.
    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    assert_eq!(ask["request"]["tool_use_id"], "t2");
    let id = ask["request_id"].as_str().unwrap().to_owned();
    let remove = json!([{"type": "removeRules", "rules": [{"toolName": "Bash", "ruleContent": "touch:*"}],
        "behavior": "allow", "destination": "localSettings"}]);
    let allow = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "allow", "updatedPermissions": remove}}});
    s.send(&allow.to_string()).await;
    // t3 now asks.
    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    assert_eq!(ask["request"]["tool_use_id"], "t3");
    let id = ask["request_id"].as_str().unwrap().to_owned();
    let deny = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "deny", "message": "no"}}});
    s.send(&deny.to_string()).await;
    assert_eq!(s.result().await["subtype"], "success");
    assert!(env.proj.join("a.txt").exists() && env.proj.join("d").is_dir());
    assert!(!env.proj.join("b.txt").exists());
    let local: Value = serde_json::from_str(
        &std::fs::read_to_string(env.proj.join(".strata/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(local["permissions"]["allow"], json!([]));
    assert_eq!(s.finish().await.code, Some(0));
}

#[tokio::test]
async fn a_permission_prompt_open_when_stdin_ends_is_denied_and_the_session_ends() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch never.txt"})));
    server.push(Reply::new().text("Nobody answered."));
    let mut s = Driver::start(&env, &server, &["--permission-prompt-tool", "stdio"]);
    s.next().await;
    s.prompt("make a file").await;
    s.until(|l| kind(l) == "control_request/can_use_tool").await;
    let Finished { code, rest, .. } = s.finish().await;
    assert_eq!(code, Some(0), "{rest:?}");
    let result = rest
        .iter()
        .find(|l| l["type"] == "result")
        .expect("the turn finished");
    assert_eq!(result["permission_denials"][0]["tool_use_id"], "toolu_1");
    assert!(!env.proj.join("never.txt").exists());
}

#[tokio::test]
async fn an_interrupt_while_a_permission_prompt_is_open_withdraws_it_and_ends_the_turn() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch late.txt"})));
    server.push(Reply::new().text("next turn"));
    let mut s = Driver::start(&env, &server, &["--permission-prompt-tool", "stdio"]);
    s.next().await;
    s.prompt("make a file").await;
    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    let id = ask["request_id"].as_str().unwrap().to_owned();
    s.control("stop", json!({"subtype": "interrupt"})).await;
    let cancel = s.until(|l| l["type"] == "control_cancel_request").await;
    assert_eq!(
        cancel["request_id"],
        id.as_str(),
        "the open prompt is withdrawn"
    );
    let result = s.result().await;
    assert_eq!(result["is_error"], true, "{result}");
    // An answer that arrives after the withdrawal changes nothing.
    let late = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "allow"}}});
    s.send(&late.to_string()).await;
    s.prompt("go on").await;
    assert_eq!(s.result().await["result"], "next turn");
    let done = s.finish().await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(!env.proj.join("late.txt").exists());
    assert!(
        done.stderr.contains("answers no open request"),
        "{}",
        done.stderr
    );
}

#[tokio::test]
async fn malformed_lines_and_unknown_requests_get_clear_errors_and_the_session_goes_on() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut s = Driver::start(&env, &server, &[]);
    s.next().await;
    s.send("{this is not json").await; // line 1
    s.send(r#"{"type":"assistant","message":{}}"#).await; // line 2
    s.control("u1", json!({"subtype": "no_such_request"})).await; // line 3
    let unknown = s.response("u1").await;
    assert_eq!(unknown["response"]["subtype"], "error");
    assert!(
        unknown["response"]["error"]
            .as_str()
            .unwrap()
            .contains("\"no_such_request\""),
        "{unknown}"
    );
    s.control("u2", json!({"subtype": "set_permission_mode"}))
        .await; // line 4
    let invalid = s.response("u2").await;
    assert!(
        invalid["response"]["error"]
            .as_str()
            .unwrap()
            .contains("\"mode\""),
        "{invalid}"
    );
    server.push(Reply::new().text("still here"));
    s.prompt("are you there?").await;
    assert_eq!(s.result().await["result"], "still here");
    let Finished { code, stderr, .. } = s.finish().await;
    assert_eq!(code, Some(0));
    assert!(stderr.contains("stdin line 1: not valid JSON"), "{stderr}");
    assert!(
        stderr.contains("stdin line 2: unexpected message type \"assistant\""),
        "{stderr}"
    );
}

/// Regression: plain text on stdin (not JSON lines) skipped every line and exited 0
/// without a `result`, which a client could not tell from an answered prompt.
#[tokio::test]
async fn stdin_without_one_usable_user_message_exits_1_saying_so() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut s = Driver::start(&env, &server, &[]);
    s.next().await;
    s.send("what does this project do?").await;
    let Finished { code, stderr, .. } = s.finish().await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no usable user message"), "{stderr}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn prompts_run_in_order_and_end_of_input_ends_the_session_after_them() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("first answer"));
    server.push(Reply::new().text("second answer"));
    let mut s = Driver::start(&env, &server, &[]);
    s.prompt("first").await;
    s.prompt("second").await;
    let done = s.finish().await;
    assert_eq!(done.code, Some(0), "{done:?}");
    let results: Vec<&Value> = done.all.iter().filter(|l| l["type"] == "result").collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["result"], "first answer");
    assert_eq!(results[1]["result"], "second answer");
    let last = server.requests()[1].json();
    let texts: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(texts.len(), 3, "one conversation: {texts:?}");
    assert!(
        texts[0].contains("first") && texts[2].contains("second"),
        "{texts:?}"
    );
}

#[tokio::test]
async fn an_interrupt_request_stops_the_turn_mid_stream_and_the_session_continues() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let (paused, gate) = paused_reply(Reply::new().text("first part").text("second part"));
    server.push(paused);
    server.push(Reply::new().text("after the interrupt"));
    let mut s = Driver::start(&env, &server, &[]);
    s.next().await;
    s.prompt("go").await;
    tokio::time::timeout(Duration::from_secs(30), gate.reached())
        .await
        .unwrap();
    let partial = s.until(|l| l["type"] == "assistant").await;
    assert_eq!(
        partial["message"]["content"][0]["text"], "first part",
        "the block done before the pause is out"
    );
    s.control("stop", json!({"subtype": "interrupt"})).await;
    let result = s.result().await;
    assert_eq!(result["subtype"], "error_during_execution", "{result}");
    assert_eq!(result["is_error"], true);
    let answered = s.seen.iter().any(|l| {
        l["type"] == "control_response"
            && l["response"] == json!({"subtype": "success", "request_id": "stop"})
    });
    assert!(answered, "the interrupt is acknowledged: {:#?}", s.seen);
    tokio::time::timeout(Duration::from_secs(30), gate.client_gone())
        .await
        .expect("the request was dropped");

    s.prompt("and now?").await;
    assert_eq!(s.result().await["result"], "after the interrupt");
    let request = server.requests()[1].json().to_string();
    assert!(
        request.contains("first part"),
        "the kept block is sent: {request}"
    );
    assert!(
        request.contains("[Request interrupted by user"),
        "the interruption is recorded: {request}"
    );
    assert_eq!(s.finish().await.code, Some(0), "the last turn succeeded");
}

#[tokio::test]
async fn ctrl_c_interrupts_the_turn_records_it_and_the_session_resumes() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let (paused, gate) = paused_reply(Reply::new().text("half an answer").text("the rest"));
    server.push(paused);
    let mut cmd = env.command(
        Some(&server),
        &[
            "-p",
            "long task",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    );
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    tokio::time::timeout(Duration::from_secs(30), gate.reached())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await; // let strata read what was sent
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let run = headless_support::Run::from(output);
    assert_eq!(run.code, Some(130), "{run:?}");
    let result = run.result();
    assert_eq!(result["subtype"], "error_during_execution");
    let id = result["session_id"].as_str().unwrap().to_owned();
    let (_, lines) = env.transcripts().remove(0);
    assert!(
        lines.last().unwrap()["message"]["content"]
            .to_string()
            .contains("[Request interrupted by user"),
        "the interruption is recorded: {lines:?}"
    );

    server.push(Reply::new().text("resumed"));
    let run = env
        .run(Some(&server), &["-p", "go on", "--resume", &id])
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let request = server.requests()[1].json().to_string();
    assert!(
        request.contains("long task") && request.contains("half an answer"),
        "{request}"
    );
}

#[tokio::test]
async fn rewind_files_restores_the_files_a_turn_changed() {
    let env = Env::new();
    let file = env.proj.join("notes.txt");
    std::fs::write(&file, "original\n").unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_r", "Read", json!({"file_path": file})));
    server.push(Reply::new().tool_use(
        "toolu_w",
        "Write",
        json!({"file_path": file, "content": "changed\n"}),
    ));
    server.push(Reply::new().text("Changed it."));
    let mut s = Driver::start(&env, &server, &["--permission-mode", "acceptEdits"]);
    s.next().await;
    // Regression: the uuid a client gives its prompt was dropped, so a client could not
    // name the prompt to rewind to. It is the uuid the prompt is recorded under.
    let prompt_uuid = "4a5e1f0c-3b8d-4c2a-9e7f-1d2c3b4a5f60".to_owned();
    let line = json!({"type": "user", "uuid": prompt_uuid, "session_id": "",
        "parent_tool_use_id": null, "message": {"role": "user", "content": "change notes.txt"}});
    s.send(&line.to_string()).await;
    assert_eq!(s.result().await["subtype"], "success");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed\n");
    let (_, lines) = env.transcripts().remove(0);
    assert_eq!(
        lines.iter().find(|l| l["type"] == "user").unwrap()["uuid"],
        prompt_uuid.as_str()
    );

    s.control(
        "dry",
        json!({"subtype": "rewind_files", "user_message_id": prompt_uuid, "dry_run": true}),
    )
    .await;
    let dry = s.response("dry").await;
    assert_eq!(dry["response"]["response"]["filesChanged"], 1, "{dry}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "changed\n",
        "a dry run changes nothing"
    );
    s.control(
        "real",
        json!({"subtype": "rewind_files", "user_message_id": prompt_uuid}),
    )
    .await;
    assert_eq!(s.response("real").await["response"]["subtype"], "success");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original\n");
    s.control(
        "bad",
        json!({"subtype": "rewind_files", "user_message_id": "no-such-message"}),
    )
    .await;
    assert_eq!(s.response("bad").await["response"]["subtype"], "error");
    s.finish().await;
}
