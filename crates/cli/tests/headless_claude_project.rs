//! Issue 25 item 3 through the real binary: a project set up only for the reference
//! agent (`.claude/settings.json`, `.claude/settings.local.json`) works unchanged in a
//! headless run — its deny rules deny, its allow rules allow without asking, its hooks
//! run once the project is trusted, its `env` reaches the tools — a syntax slip in it
//! fails closed, strata's own file wins a value both set, `strata config list` says which
//! file each value came from, and strata never writes a `.claude` file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::path::Path;

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::{Env, Run, run_command};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `strata <args>` in the project, with the reference agent's user directory under the
/// test's home (never the machine's `$CLAUDE_CONFIG_DIR`).
async fn run(env: &Env, server: Option<&MockServer>, args: &[&str]) -> Run {
    let mut cmd = env.command(server, args);
    cmd.env_remove("CLAUDE_CONFIG_DIR");
    run_command(cmd, "").await
}

/// The text of the tool result the model got in request `n`.
fn tool_result(server: &MockServer, n: usize) -> Value {
    let messages = server.requests()[n].messages();
    messages.last().unwrap()["content"][0].clone()
}

#[tokio::test]
async fn i25_3_a_claude_only_project_denies_allows_runs_its_hook_and_sets_env_headless() {
    let env = Env::new();
    std::fs::create_dir_all(env.proj.join("build")).unwrap();
    let log = env.proj.join("hook-log.jsonl");
    let settings = json!({
        "permissions": {
            "allow": ["Bash(touch:*)", "Bash(printenv:*)"],
            "deny": ["Bash(rm:*)"]
        },
        "env": {"TEAM_VAR": "from-claude-settings"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": format!("cat >> '{}'; echo >> '{}'", log.display(), log.display())}]}]}
    });
    write(
        &env.proj.join(".claude/settings.json"),
        &serde_json::to_string_pretty(&settings).unwrap(),
    );
    let trust = run(&env, None, &["trust"]).await;
    assert_eq!(trust.code, Some(0), "{}", trust.stderr);

    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_touch", "Bash", json!({"command": "touch made.txt"})));
    server.push(Reply::new().tool_use(
        "toolu_env",
        "Bash",
        json!({"command": "printenv TEAM_VAR"}),
    ));
    server.push(Reply::new().tool_use("toolu_rm", "Bash", json!({"command": "rm -rf build"})));
    server.push(Reply::new().text("Done."));
    // The command line allows `rm`: the .claude deny rule must still win.
    let run = run(
        &env,
        Some(&server),
        &[
            "-p",
            "go",
            "--output-format",
            "json",
            "--allowedTools",
            "Bash(rm:*)",
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let result = run.result();
    assert_eq!(result["subtype"], "success", "{result}");

    // Allowed by the .claude rule, without a prompt (headless would deny one).
    assert!(env.proj.join("made.txt").exists(), "{result}");
    // The .claude env reached the tool's process.
    let printed = tool_result(&server, 2);
    assert_eq!(printed["tool_use_id"], "toolu_env");
    assert!(
        printed["content"]
            .to_string()
            .contains("from-claude-settings"),
        "{printed}"
    );
    // Denied by the .claude rule although the command line allows it.
    assert!(env.proj.join("build").is_dir(), "rm ran");
    assert_eq!(
        result["permission_denials"],
        json!([{"tool_name": "Bash", "tool_use_id": "toolu_rm",
            "tool_input": {"command": "rm -rf build"}}])
    );
    // The trusted project's hook ran, for each Bash call it saw.
    let seen = std::fs::read_to_string(&log).expect("the PreToolUse hook ran");
    assert!(seen.contains("touch made.txt"), "{seen}");
    assert!(seen.contains("printenv TEAM_VAR"), "{seen}");
}

#[tokio::test]
async fn i25_3_an_untrusted_projects_claude_hooks_do_not_run_and_the_user_is_told() {
    let env = Env::new();
    let marker = env.proj.join("hook-ran");
    let settings = json!({
        "permissions": {"allow": ["Bash(touch:*)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": format!("touch '{}'", marker.display())}]}]}
    });
    write(
        &env.proj.join(".claude/settings.json"),
        &settings.to_string(),
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "touch a.txt"})));
    server.push(Reply::new().text("Done."));
    let run = run(&env, Some(&server), &["-p", "go"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        env.proj.join("a.txt").exists(),
        "the allow rule applies without trust"
    );
    assert!(!marker.exists(), "an untrusted project's hook ran");
    assert!(
        run.stderr.contains("not trusted") && run.stderr.contains(".claude/settings.json"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn i25_3_a_deny_rule_in_claude_settings_with_a_syntax_slip_still_denies() {
    let env = Env::new();
    std::fs::create_dir_all(env.proj.join("build")).unwrap();
    // A trailing comma after the deny rule: the file is not JSON.
    write(
        &env.proj.join(".claude/settings.json"),
        "{\n  \"permissions\": {\"deny\": [\"Bash(rm:*)\"]},\n  \"env\": {\"A\": \"1\"},\n}\n",
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_rm", "Bash", json!({"command": "rm -rf build"})));
    server.push(Reply::new().text("Could not."));
    let run = run(
        &env,
        Some(&server),
        &[
            "-p",
            "clean",
            "--output-format",
            "json",
            "--allowedTools",
            "Bash",
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(env.proj.join("build").is_dir(), "rm ran");
    assert_eq!(
        run.result()["permission_denials"][0]["tool_use_id"],
        "toolu_rm"
    );
    assert!(
        run.stderr.contains(".claude/settings.json") && run.stderr.contains("line 4"),
        "the file and the place of the slip are named: {}",
        run.stderr
    );
}

#[tokio::test]
async fn i25_3_strata_wins_a_conflicting_value_lists_unite_and_config_list_names_the_files() {
    let env = Env::new();
    write(
        &env.proj.join(".claude/settings.json"),
        r#"{"model": "claude-file-model", "permissions": {"allow": ["Read", "Glob"]}}"#,
    );
    write(
        &env.proj.join(".strata/settings.json"),
        r#"{"model": "strata-file-model", "permissions": {"allow": ["Glob", "Grep"]}}"#,
    );
    write(
        &env.home.join(".claude/settings.json"),
        r#"{"env": {"FROM_HOME_CLAUDE": "yes"}}"#,
    );
    let list = run(&env, None, &["config", "list"]).await;
    assert_eq!(list.code, Some(0), "{list:?}");
    let out = &list.stdout;
    assert!(
        out.contains("model = \"strata-file-model\"  [project]\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "permissions.allow = [\"Read\",\"Glob\",\"Grep\"]  [claude project, project]\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("env.FROM_HOME_CLAUDE = \"yes\"  [claude user]\n"),
        "{out}"
    );
    let json_list = run(&env, None, &["config", "list", "--json"]).await;
    let rows: Value = serde_json::from_str(&json_list.stdout).unwrap();
    let allow = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "permissions.allow")
        .unwrap();
    let claude_file = env.proj.join(".claude/settings.json");
    let strata_file = env.proj.join(".strata/settings.json");
    assert_eq!(
        allow["files"],
        json!([
            claude_file.display().to_string(),
            claude_file.display().to_string(),
            strata_file.display().to_string()
        ])
    );

    // The session uses strata's value.
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("hi"));
    let run = run(&env, Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(server.requests()[0].json()["model"], "strata-file-model");
}

/// "Allow, and don't ask again" for the local settings goes to strata's own local file;
/// the `.claude` file whose rule also allowed a call is left byte for byte.
#[tokio::test]
async fn i25_3_always_allow_answers_go_to_strata_local_settings_never_to_claude_files() {
    use headless_support::{Driver, kind};
    let env = Env::new();
    let claude_local = env.proj.join(".claude/settings.local.json");
    // Laid out as a person would write it, so any rewrite would show.
    let claude_text = "{\n    \"permissions\": { \"allow\": [ \"Bash(mkdir:*)\" ] }\n}\n";
    write(&claude_local, claude_text);
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("t1", "Bash", json!({"command": "mkdir d"})));
    server.push(Reply::new().tool_use("t2", "Bash", json!({"command": "touch a.txt"})));
    server.push(Reply::new().tool_use("t3", "Bash", json!({"command": "touch b.txt"})));
    server.push(Reply::new().text("Done."));
    let mut cmd = env.command(
        Some(&server),
        &[
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-prompt-tool",
            "stdio",
        ],
    );
    cmd.env_remove("CLAUDE_CONFIG_DIR");
    let mut s = Driver::spawn(cmd);
    s.next().await;
    s.control("init", json!({"subtype": "initialize"})).await;
    s.response("init").await;
    s.prompt("go").await;
    // t1 is allowed by the .claude rule; t2 asks, and the answer keeps a local rule.
    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    assert_eq!(ask["request"]["tool_use_id"], "t2");
    let id = ask["request_id"].as_str().unwrap().to_owned();
    let keep = json!([{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch:*"}],
        "behavior": "allow", "destination": "localSettings"}]);
    let allow = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "allow", "updatedPermissions": keep}}});
    s.send(&allow.to_string()).await;
    assert_eq!(s.result().await["subtype"], "success");
    let asked = s
        .seen
        .iter()
        .filter(|l| kind(l) == "control_request/can_use_tool")
        .count();
    assert_eq!(asked, 1, "t1 and t3 ran without asking");
    assert!(env.proj.join("d").is_dir());
    assert!(env.proj.join("b.txt").exists());
    assert_eq!(s.finish().await.code, Some(0));
    assert_eq!(std::fs::read_to_string(&claude_local).unwrap(), claude_text);
    assert!(!env.proj.join(".claude/settings.json").exists());
    let local: Value = serde_json::from_str(
        &std::fs::read_to_string(env.proj.join(".strata/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(local["permissions"]["allow"], json!(["Bash(touch:*)"]));
}

#[tokio::test]
async fn i25_3_the_output_style_setting_shapes_the_prompt_and_system_init() {
    let env = Env::new();
    write(
        &env.proj.join(".claude/output-styles/terse-pirate.md"),
        "---\nname: Pirate\ndescription: Talks like a pirate\n---\nAnswer as a pirate would.\n",
    );
    write(
        &env.proj.join(".claude/settings.local.json"),
        r#"{"outputStyle": "pirate"}"#,
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Arr."));
    let run = run(
        &env,
        Some(&server),
        &["-p", "hi", "--output-format", "stream-json", "--verbose"],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let init = run
        .lines()
        .into_iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init")
        .unwrap();
    assert_eq!(init["output_style"], "Pirate");
    let system = server.requests()[0].system_text();
    assert!(
        system.contains("# Output style: Pirate\nAnswer as a pirate would."),
        "{system}"
    );
    assert!(!system.contains("Understand before changing"), "{system}");
}
