//! User hooks through the real binary (issue 14, item 4): command hooks from the
//! settings' `hooks` key (the event as JSON on stdin, exit code 2 blocks with stderr to
//! the model, JSON decisions, `updatedInput`, `additionalContext`, timeouts), SDK
//! callback hooks over `hook_callback` control requests, `--include-hook-events`, and
//! how hooks sit in the one permission path (PreToolUse before the decision, a rule's
//! deny always standing, PermissionRequest in place of a prompt).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::{Driver, Env, Finished, Run};

/// `--settings` with these hooks.
fn hooks_flag(hooks: Value) -> String {
    json!({ "hooks": hooks }).to_string()
}

/// One command hook for `event` (matcher `matcher`).
fn command_hook(event: &str, matcher: &str, command: &str) -> String {
    hooks_flag(
        json!({ event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}] }),
    )
}

/// The text of the tool result the model got in request `n`.
fn tool_result_text(server: &MockServer, n: usize) -> String {
    let request = &server.requests()[n];
    let last = request.messages().last().cloned().unwrap();
    last["content"].to_string()
}

async fn run_json(env: &Env, server: &MockServer, args: &[&str]) -> (Run, Value) {
    let mut all = vec!["--output-format", "json"];
    all.extend_from_slice(args);
    let run = env.run(Some(server), &all).await;
    let result = serde_json::from_str(run.stdout.trim()).unwrap_or(Value::Null);
    (run, result)
}

#[tokio::test]
async fn pre_tool_use_exit_2_blocks_the_call_and_the_model_reads_stderr() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch ran"})));
    server.push(Reply::new().text("understood"));
    let seen = env.proj.join("seen.json");
    let settings = command_hook(
        "PreToolUse",
        "Bash",
        &format!("cat > '{}'; echo 'no touching' >&2; exit 2", seen.display()),
    );
    // Bash is allowed by rule: only the hook stands in the way.
    let (run, result) = run_json(
        &env,
        &server,
        &[
            "-p",
            "go",
            "--allowedTools",
            "Bash",
            "--settings",
            &settings,
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!env.proj.join("ran").exists(), "the blocked command ran");
    assert!(tool_result_text(&server, 1).contains("no touching"));
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "touch ran");
    assert_eq!(input["tool_use_id"], "toolu_1");
    assert_eq!(input["session_id"], result["session_id"]);
    assert!(
        input["transcript_path"]
            .as_str()
            .unwrap()
            .ends_with(".jsonl")
    );
}

#[tokio::test]
async fn pre_tool_use_updated_input_is_what_runs() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "echo original"})));
    server.push(Reply::new().text("ok"));
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "updatedInput": {"command": "echo rewritten"}}});
    let settings = command_hook("PreToolUse", "Bash", &format!("echo '{answer}'"));
    let (run, _) = run_json(
        &env,
        &server,
        &[
            "-p",
            "go",
            "--allowedTools",
            "Bash",
            "--settings",
            &settings,
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let text = tool_result_text(&server, 1);
    assert!(
        text.contains("rewritten") && !text.contains("original"),
        "{text}"
    );
}

#[tokio::test]
async fn a_hooks_allow_never_overrides_a_deny_rule() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch ran"})));
    server.push(Reply::new().text("ok"));
    let answer = json!({"hookSpecificOutput": {"permissionDecision": "allow"}});
    let settings = command_hook("PreToolUse", "*", &format!("echo '{answer}'"));
    let (run, result) = run_json(
        &env,
        &server,
        &[
            "-p",
            "go",
            "--disallowedTools",
            "Bash(touch:*)",
            "--settings",
            &settings,
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!env.proj.join("ran").exists());
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash");
}

#[tokio::test]
async fn a_hooks_allow_answers_the_prompt_a_rule_would_have_asked() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch ran"})));
    server.push(Reply::new().text("ok"));
    let answer = json!({"hookSpecificOutput": {"permissionDecision": "allow"}});
    let settings = command_hook("PreToolUse", "Bash", &format!("echo '{answer}'"));
    // Headless without a prompt channel: the call would be denied without the hook.
    let (run, result) = run_json(&env, &server, &["-p", "go", "--settings", &settings]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(env.proj.join("ran").exists(), "{result}");
}

#[tokio::test]
async fn post_tool_use_additional_context_joins_the_tool_result() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "echo hi"})));
    server.push(Reply::new().text("ok"));
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "additionalContext": "remember to lint"}});
    let settings = command_hook("PostToolUse", "Bash", &format!("echo '{answer}'"));
    let (run, _) = run_json(
        &env,
        &server,
        &[
            "-p",
            "go",
            "--allowedTools",
            "Bash",
            "--settings",
            &settings,
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let text = tool_result_text(&server, 1);
    assert!(
        text.contains("hi") && text.contains("remember to lint"),
        "{text}"
    );
}

#[tokio::test]
async fn post_tool_use_failure_runs_for_a_failed_call_only() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "exit 3"})));
    server.push(Reply::new().text("ok"));
    let log = env.proj.join("events.log");
    let settings = hooks_flag(json!({
        "PostToolUse": [{"hooks": [{"type": "command", "command": format!("echo post >> '{}'", log.display())}]}],
        "PostToolUseFailure": [{"hooks": [{"type": "command", "command": format!("echo failure >> '{}'", log.display())}]}],
    }));
    let (run, _) = run_json(
        &env,
        &server,
        &[
            "-p",
            "go",
            "--allowedTools",
            "Bash",
            "--settings",
            &settings,
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "failure\n");
}

#[tokio::test]
async fn user_prompt_submit_can_block_the_prompt_before_the_model_sees_it() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let settings = command_hook(
        "UserPromptSubmit",
        "",
        "echo 'no secrets in prompts' >&2; exit 2",
    );
    let (run, result) = run_json(
        &env,
        &server,
        &["-p", "my password is x", "--settings", &settings],
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert!(server.requests().is_empty(), "the model was asked");
    assert!(
        result["errors"][0]
            .as_str()
            .unwrap()
            .contains("no secrets in prompts"),
        "{result}"
    );
}

#[tokio::test]
async fn user_prompt_submit_stdout_is_context_for_the_model() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    let settings = command_hook("UserPromptSubmit", "", "echo 'The sprint ends Friday.'");
    let (run, _) = run_json(&env, &server, &["-p", "plan", "--settings", &settings]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let prompt = server.requests()[0].messages()[0].to_string();
    assert!(
        prompt.contains("plan") && prompt.contains("The sprint ends Friday."),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_stop_hook_that_blocks_sends_the_model_back_with_its_reason_once() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("done?"));
    server.push(Reply::new().text("now really done"));
    // Blocks only while `stop_hook_active` is false, as hooks are meant to.
    let settings = command_hook(
        "Stop",
        "",
        "grep -q '\"stop_hook_active\":false' && { echo 'run the tests first' >&2; exit 2; }; exit 0",
    );
    let (run, result) = run_json(&env, &server, &["-p", "go", "--settings", &settings]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(result["result"], "now really done");
    let second = server.requests()[1].messages().last().unwrap().to_string();
    assert!(second.contains("run the tests first"), "{second}");
}

#[tokio::test]
async fn session_start_context_joins_the_system_prompt() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    let settings = command_hook(
        "SessionStart",
        "startup",
        "echo 'Branch policy: no force pushes.'",
    );
    let (run, _) = run_json(&env, &server, &["-p", "hi", "--settings", &settings]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let system = server.requests()[0].json()["system"].to_string();
    assert!(
        system.contains("Branch policy: no force pushes."),
        "{system}"
    );
}

#[tokio::test]
async fn a_hook_that_hangs_times_out_is_reported_and_the_turn_finishes() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "echo ran"})));
    server.push(Reply::new().text("ok"));
    let settings = hooks_flag(json!({"PreToolUse": [{"hooks": [
        {"type": "command", "command": "sleep 60", "timeout": 0.5}]}]}));
    let started = Instant::now();
    let (run, result) = run_json(
        &env,
        &server,
        &[
            "-p",
            "go",
            "--allowedTools",
            "Bash",
            "--settings",
            &settings,
        ],
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(result["result"], "ok");
    assert!(run.stderr.contains("timed out"), "{}", run.stderr);
    assert!(
        tool_result_text(&server, 1).contains("ran"),
        "a failed hook blocks nothing"
    );
}

#[tokio::test]
async fn a_bad_hooks_entry_is_reported_with_where_it_is_and_the_rest_run() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    let settings = hooks_flag(json!({"OnLunch": [], "Stop": [{"matcher": "(", "hooks": []}]}));
    let run = env
        .run(Some(&server), &["-p", "hi", "--settings", &settings])
        .await;
    assert_eq!(run.code, Some(0));
    assert!(
        run.stderr.contains("unknown hook event \"OnLunch\""),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("Stop[0]") && run.stderr.contains("not a valid pattern"));
}

#[tokio::test]
async fn sdk_callback_hooks_are_called_with_hook_callback_requests() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch ran"})));
    server.push(Reply::new().text("blocked, fine"));
    let mut s = Driver::start(
        &env,
        &server,
        &["--allowedTools", "Bash", "--include-hook-events"],
    );
    s.control(
        "i1",
        json!({"subtype": "initialize",
               "hooks": {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}]}}),
    )
    .await;
    assert_eq!(s.response("i1").await["response"]["subtype"], "success");
    s.prompt("go").await;
    let call = s
        .until(|l| l["type"] == "control_request" && l["request"]["subtype"] == "hook_callback")
        .await;
    assert_eq!(call["request"]["callback_id"], "hook_0");
    assert_eq!(call["request"]["tool_use_id"], "toolu_1");
    assert_eq!(
        call["request"]["input"]["tool_input"]["command"],
        "touch ran"
    );
    let id = call["request_id"].as_str().unwrap();
    s.send(
        &json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
            "response": {"decision": "block", "reason": "not in CI"}}})
        .to_string(),
    )
    .await;
    let result = s.result().await;
    assert_eq!(result["subtype"], "success");
    let Finished { all, code, .. } = s.finish().await;
    assert_eq!(code, Some(0));
    assert!(!env.proj.join("ran").exists());
    assert!(tool_result_text(&server, 1).contains("not in CI"));
    // --include-hook-events: the run announced and its answer reported.
    let lifecycle: Vec<Value> = all
        .iter()
        .filter(|l| l["subtype"] == "hook_started" || l["subtype"] == "hook_response")
        .map(|l| {
            let mut l = l.clone();
            for key in ["uuid", "session_id", "hook_id"] {
                l[key] = json!(format!("[{key}]"));
            }
            l
        })
        .collect();
    insta::assert_json_snapshot!("hook_lifecycle", lifecycle);
}

/// Fail closed: a guard that cannot answer (the host's callback threw) keeps the call from
/// running when its matcher says `onFailure: "block"`; with the default it is reported and
/// the call runs.
#[tokio::test]
async fn a_callback_that_fails_blocks_the_call_only_when_set_to_block() {
    for (on_failure, runs) in [("block", false), ("continue", true)] {
        let env = Env::new();
        let server = MockServer::start().await.unwrap();
        server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch ran"})));
        server.push(Reply::new().text("done"));
        let mut s = Driver::start(&env, &server, &["--allowedTools", "Bash"]);
        s.control(
            "i1",
            json!({"subtype": "initialize",
                   "hooks": {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"],
                             "onFailure": on_failure}]}}),
        )
        .await;
        let reply = s.response("i1").await;
        assert_eq!(reply["response"]["response"]["hooks_applied"], true);
        s.prompt("go").await;
        let call = s
            .until(|l| l["type"] == "control_request" && l["request"]["subtype"] == "hook_callback")
            .await;
        let id = call["request_id"].as_str().unwrap();
        s.send(
            &json!({"type": "control_response", "response": {"subtype": "error",
                "request_id": id, "error": "TypeError: hook threw"}})
            .to_string(),
        )
        .await;
        assert_eq!(s.result().await["subtype"], "success");
        s.finish().await;
        assert_eq!(
            env.proj.join("ran").exists(),
            runs,
            "onFailure {on_failure}"
        );
        if !runs {
            let told = tool_result_text(&server, 1);
            assert!(
                told.contains("hook threw") && told.contains("onFailure"),
                "{told}"
            );
        }
    }
}

#[tokio::test]
async fn a_permission_request_hook_answers_in_place_of_the_prompt() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch ran"})));
    server.push(Reply::new().text("ok"));
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow"}}});
    let settings = command_hook("PermissionRequest", "Bash", &format!("echo '{answer}'"));
    let mut s = Driver::start(
        &env,
        &server,
        &["--permission-prompt-tool", "stdio", "--settings", &settings],
    );
    s.prompt("go").await;
    let result = s.result().await;
    assert_eq!(result["subtype"], "success");
    let Finished { all, .. } = s.finish().await;
    assert!(
        all.iter()
            .all(|l| l["request"]["subtype"] != "can_use_tool"),
        "the hook answered: no prompt went to the client"
    );
    assert!(env.proj.join("ran").exists());
}

#[tokio::test]
async fn a_notification_hook_runs_when_a_permission_prompt_goes_to_the_client() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch ran"})));
    server.push(Reply::new().text("ok"));
    let log = env.proj.join("notified.json");
    let settings = command_hook(
        "Notification",
        "permission_prompt",
        &format!("cat > '{}'", log.display()),
    );
    let mut s = Driver::start(
        &env,
        &server,
        &["--permission-prompt-tool", "stdio", "--settings", &settings],
    );
    s.prompt("go").await;
    let ask = s
        .until(|l| l["type"] == "control_request" && l["request"]["subtype"] == "can_use_tool")
        .await;
    let id = ask["request_id"].as_str().unwrap();
    s.send(
        &json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
            "response": {"behavior": "deny", "message": "no"}}})
        .to_string(),
    )
    .await;
    s.result().await;
    s.finish().await;
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(input["notification_type"], "permission_prompt");
    assert!(input["message"].as_str().unwrap().contains("Bash"));
}

#[tokio::test]
async fn session_end_hooks_run_when_the_session_closes() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("bye"));
    let log = env.proj.join("ended.json");
    let settings = command_hook("SessionEnd", "", &format!("cat > '{}'", log.display()));
    let (run, result) = run_json(&env, &server, &["-p", "hi", "--settings", &settings]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "SessionEnd");
    assert_eq!(input["reason"], "other");
    assert_eq!(input["session_id"], result["session_id"]);
}

/// PreCompact runs before the summary request: a hook that blocks (exit 2) stops the
/// compaction, nothing is sent to the model, and the conversation stays as it was.
#[tokio::test]
async fn a_pre_compact_hook_that_blocks_stops_the_compaction_before_the_model_is_asked() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("hello back"));
    let (run, first) = run_json(&env, &server, &["-p", "hello"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(first["result"], "hello back");
    let seen = env.proj.join("pre-compact.json");
    let settings = command_hook(
        "PreCompact",
        "manual",
        &format!("cat > '{}'; echo 'not now' >&2; exit 2", seen.display()),
    );
    let (_, result) = run_json(
        &env,
        &server,
        &["-c", "-p", "/compact", "--settings", &settings],
    )
    .await;
    assert_eq!(result["is_error"], true, "{result}");
    let errors = result["errors"].to_string();
    assert!(
        errors.contains("PreCompact") && errors.contains("not now"),
        "{errors}"
    );
    assert_eq!(server.requests().len(), 1, "no summary request was sent");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreCompact");
    assert_eq!(input["trigger"], "manual");
}
