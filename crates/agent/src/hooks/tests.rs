#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use std::time::Instant;

fn session(dir: &std::path::Path) -> HookSession {
    HookSession {
        session_id: "s1".into(),
        transcript_path: dir.join("t.jsonl"),
        cwd: dir.to_path_buf(),
        permission_mode: "default".into(),
    }
}

fn hooks(value: Value) -> Hooks {
    let (hooks, problems) = Hooks::from_settings(Some(&value), "settings.json");
    assert!(problems.is_empty(), "{problems:?}");
    hooks
}

#[tokio::test]
async fn a_command_hook_gets_the_event_on_stdin_and_exit_2_blocks_with_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.json");
    let hooks = hooks(
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
        "command": format!("cat > '{}'; echo 'no shell today' >&2; exit 2", seen.display())}]}]}),
    );
    let out = hooks
        .run(
            HookEvent::PreToolUse,
            Some("Bash"),
            &session(dir.path()),
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
            Some("toolu_1"),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(out.blocked.as_deref(), Some("no shell today"));
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["session_id"], "s1");
    assert_eq!(input["tool_input"]["command"], "ls");
    // Another tool does not match.
    let other = hooks
        .run(
            HookEvent::PreToolUse,
            Some("Read"),
            &session(dir.path()),
            json!({}),
            None,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(other, HookOutcome::default());
}

#[tokio::test]
async fn a_hook_that_hangs_times_out_is_reported_and_blocks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = hooks(json!({"Stop": [{"hooks": [{"type": "command",
        "command": "sleep 30 & sleep 30", "timeout": 0.3}]}]}));
    let started = Instant::now();
    let out = hooks
        .run(
            HookEvent::Stop,
            None,
            &session(dir.path()),
            json!({}),
            None,
            &CancellationToken::new(),
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(5), "did not hang");
    assert!(out.blocked.is_none());
    assert!(out.errors[0].contains("timed out"), "{:?}", out.errors);
}

#[tokio::test]
async fn a_hook_that_cannot_run_is_an_error_not_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = hooks(json!({"PostToolUse": [{"hooks": [{"type": "command",
        "command": "exit 3"}]}]}));
    let out = hooks
        .run(
            HookEvent::PostToolUse,
            Some("Bash"),
            &session(dir.path()),
            json!({}),
            None,
            &CancellationToken::new(),
        )
        .await;
    assert!(out.blocked.is_none());
    assert!(out.errors[0].contains("exit code 3"));
}

struct Recording(Mutex<Vec<(String, Value)>>, Value);

impl HookCallbacks for Recording {
    fn call(&self, id: &str, input: Value, _tool_use_id: Option<String>) -> CallbackFuture<'_> {
        lock(&self.0).push((id.to_owned(), input));
        let answer = self.1.clone();
        Box::pin(async move { Ok(answer) })
    }
}

#[tokio::test]
async fn subagent_start_and_stop_run_their_hooks_when_called() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let port = Arc::new(Recording(
        Mutex::new(Vec::new()),
        json!({"hookSpecificOutput": {"additionalContext": "be brief"}}),
    ));
    let problems = hooks.register_callbacks(
        &json!({"SubagentStart": [{"matcher": "Explore", "hookCallbackIds": ["cb0"]}],
                "SubagentStop": [{"hookCallbackIds": ["cb1"]}]}),
        port.clone(),
    );
    assert!(problems.is_empty());
    let s = session(dir.path());
    let cancel = CancellationToken::new();
    let out = hooks.subagent_start(&s, "a1", "Explore", &cancel).await;
    assert_eq!(out.context_text().as_deref(), Some("be brief"));
    // The matcher is the agent type: another type runs nothing.
    let none = hooks.subagent_start(&s, "a2", "Plan", &cancel).await;
    assert!(none.additional_context.is_empty());
    hooks
        .subagent_stop(
            &s,
            "a1",
            "Explore",
            &dir.path().join("a1.jsonl"),
            false,
            &cancel,
        )
        .await;
    let calls = lock(&port.0).clone();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "cb0");
    assert_eq!(calls[0].1["hook_event_name"], "SubagentStart");
    assert_eq!(calls[0].1["agent_type"], "Explore");
    assert_eq!(calls[1].1["hook_event_name"], "SubagentStop");
    assert_eq!(calls[1].1["stop_hook_active"], false);
}

#[tokio::test]
async fn pre_compact_and_notification_pass_their_matcher_values() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let port = Arc::new(Recording(Mutex::new(Vec::new()), json!({})));
    hooks.register_callbacks(
        &json!({"PreCompact": [{"matcher": "auto", "hookCallbackIds": ["c"]}],
                "Notification": [{"matcher": "permission_prompt", "hookCallbackIds": ["n"]}]}),
        port.clone(),
    );
    let s = session(dir.path());
    let cancel = CancellationToken::new();
    hooks.pre_compact(&s, "manual", None, &cancel).await;
    hooks.pre_compact(&s, "auto", None, &cancel).await;
    hooks
        .notification(&s, "Bash needs approval", "permission_prompt", &cancel)
        .await;
    let calls = lock(&port.0).clone();
    assert_eq!(calls.len(), 2, "manual compaction does not match `auto`");
    assert_eq!(calls[0].1["trigger"], "auto");
    assert_eq!(calls[1].1["message"], "Bash needs approval");
}

/// A callback the client answers with an error.
struct Failing;

impl HookCallbacks for Failing {
    fn call(&self, _id: &str, _input: Value, _tool_use_id: Option<String>) -> CallbackFuture<'_> {
        Box::pin(async { Err("the host's callback threw".to_owned()) })
    }
}

async fn pre_tool_use(hooks: &Hooks, dir: &std::path::Path) -> HookOutcome {
    hooks
        .run(
            HookEvent::PreToolUse,
            Some("Bash"),
            &session(dir),
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
            Some("toolu_1"),
            &CancellationToken::new(),
        )
        .await
}

#[tokio::test]
async fn a_failing_command_hook_set_to_block_blocks_and_one_set_to_continue_does_not() {
    let dir = tempfile::tempdir().unwrap();
    for (command, on_failure, blocks) in [
        ("echo broken >&2; exit 1", "block", true),
        ("echo broken >&2; exit 1", "continue", false),
        ("echo '{not json'", "block", true),
        ("sleep 5", "block", true),
        ("exit 0", "block", false),
    ] {
        let hooks = hooks(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{
            "type": "command", "command": command, "timeout": 0.3, "onFailure": on_failure}]}]}));
        let out = pre_tool_use(&hooks, dir.path()).await;
        assert_eq!(
            out.blocked.is_some(),
            blocks,
            "{command} {on_failure}: {out:?}"
        );
        if blocks {
            assert!(
                out.blocked.as_deref().unwrap().contains("onFailure"),
                "the reason says why: {out:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_failing_callback_blocks_only_where_its_matcher_says_block() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let problems = hooks.register_callbacks(
        &json!({"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["cb0"], "onFailure": "block"}],
                "Stop": [{"hookCallbackIds": ["cb1"], "onFailure": "block"}]}),
        Arc::new(Failing),
    );
    assert!(problems.is_empty(), "{problems:?}");
    let out = pre_tool_use(&hooks, dir.path()).await;
    assert!(
        out.blocked
            .as_deref()
            .is_some_and(|b| b.contains("the host's callback threw")),
        "{out:?}"
    );
    // Stop ends the turn anyway: a failure there is reported, nothing is refused.
    let stop = hooks
        .run(
            HookEvent::Stop,
            None,
            &session(dir.path()),
            json!({}),
            None,
            &CancellationToken::new(),
        )
        .await;
    assert!(
        stop.blocked.is_none() && !stop.errors.is_empty(),
        "{stop:?}"
    );
}

#[test]
fn an_on_failure_value_that_is_not_known_is_reported_and_read_as_block() {
    let (regs, problems) = config::from_settings(
        &json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "true",
            "onFailure": "ignore"}]}]}),
        "settings.json",
    );
    assert_eq!(regs[0].on_failure, config::OnFailure::Block);
    assert!(
        problems[0].contains("settings.json.PreToolUse[0].hooks[0]")
            && problems[0].contains("\"onFailure\""),
        "{problems:?}"
    );
}
