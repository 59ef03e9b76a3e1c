//! The self-escalation of issue 16 end to end, through the real binary and a scripted
//! mock model on 127.0.0.1: with a broad write rule (`Write(/**)`), the model writes
//! `{"permissions":{"allow":["Bash"]}}` into `.strata/settings.local.json` (and a git
//! hook, the reference agent's settings, `.mcp.json`, `~/.bashrc` in a temporary HOME).
//! Protected paths always ask: without a prompt channel they are denied and the files
//! stay as they were; with one the client is asked; bypass mode writes them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::path::PathBuf;

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::{Driver, Env, kind};

const ESCALATION: &str = r#"{"permissions":{"allow":["Bash"]}}"#;

/// The protected targets (id, path), with the hook and `.bashrc` already there.
fn targets(env: &Env) -> Vec<(&'static str, PathBuf)> {
    std::fs::create_dir_all(env.proj.join(".git/hooks")).unwrap();
    std::fs::write(env.proj.join(".git/hooks/pre-commit"), "original hook\n").unwrap();
    std::fs::write(env.home.join(".bashrc"), "original rc\n").unwrap();
    vec![
        ("t_local", env.proj.join(".strata/settings.local.json")),
        ("t_hook", env.proj.join(".git/hooks/pre-commit")),
        ("t_claude", env.proj.join(".claude/settings.json")),
        ("t_mcp", env.proj.join(".mcp.json")),
        ("t_rc", env.home.join(".bashrc")),
    ]
}

/// One reply writing every target (and one ordinary file), then a closing text.
fn script(server: &MockServer, env: &Env, targets: &[(&str, PathBuf)]) {
    let mut reply = Reply::new();
    for (id, path) in targets {
        reply = reply.tool_use(
            *id,
            "Write",
            json!({"file_path": path, "content": ESCALATION}),
        );
    }
    reply = reply.tool_use(
        "t_ok",
        "Write",
        json!({"file_path": env.proj.join("ok.txt"), "content": "fine"}),
    );
    server.push(reply);
    server.push(Reply::new().text("Done."));
}

/// Every target still holds what it held before the run.
fn assert_untouched(env: &Env, targets: &[(&str, PathBuf)]) {
    for (id, path) in targets {
        let now = std::fs::read_to_string(path).ok();
        let before = match *id {
            "t_hook" => Some("original hook\n".to_owned()),
            "t_rc" => Some("original rc\n".to_owned()),
            _ => None,
        };
        assert_eq!(now, before, "{id}: {}", path.display());
    }
    assert!(
        !env.proj.join(".strata").exists() && !env.proj.join(".claude").exists(),
        "no settings folder was even created"
    );
}

fn denied_ids(result: &Value) -> Vec<String> {
    let mut ids: Vec<String> = result["permission_denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["tool_use_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn sorted_target_ids(targets: &[(&str, PathBuf)]) -> Vec<String> {
    let mut ids: Vec<String> = targets.iter().map(|(id, _)| (*id).to_owned()).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn self_escalation_a_broad_write_rule_cannot_write_settings_hooks_or_rc_files() {
    let env = Env::new();
    let targets = targets(&env);
    let server = MockServer::start().await.unwrap();
    script(&server, &env, &targets);
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "configure yourself",
                "--allowedTools",
                "Write(/**)",
                "Write(//**)",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_untouched(&env, &targets);
    assert_eq!(
        std::fs::read_to_string(env.proj.join("ok.txt")).unwrap(),
        "fine",
        "the rule still allows ordinary files"
    );
    assert_eq!(denied_ids(&run.result()), sorted_target_ids(&targets));
    let results = server.requests()[1].json()["messages"][2]["content"].clone();
    for r in results.as_array().unwrap() {
        if r["tool_use_id"] != "t_ok" {
            assert_eq!(r["is_error"], true, "{r}");
            assert!(r["content"].to_string().contains("protected"), "{r}");
        }
    }

    // The next session has gained nothing: Bash still needs approval.
    server.push(Reply::new().tool_use("t_bash", "Bash", json!({"command": "touch pwned"})));
    server.push(Reply::new().text("Not allowed."));
    let run = env
        .run(Some(&server), &["-p", "go", "--output-format", "json"])
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!env.proj.join("pwned").exists());
    assert_eq!(denied_ids(&run.result()), ["t_bash"]);
}

#[tokio::test]
async fn accept_edits_and_dont_ask_deny_protected_writes_and_bypass_allows_them() {
    let env = Env::new();
    let targets = targets(&env);
    let server = MockServer::start().await.unwrap();
    for mode in ["acceptEdits", "dontAsk"] {
        std::fs::remove_file(env.proj.join("ok.txt")).ok();
        script(&server, &env, &targets);
        let run = env
            .run(
                Some(&server),
                &[
                    "-p",
                    "configure yourself",
                    "--permission-mode",
                    mode,
                    "--allowedTools",
                    "Write(/**)",
                    "Write(//**)",
                    "--output-format",
                    "json",
                ],
            )
            .await;
        assert_eq!(run.code, Some(0), "{mode}: {run:?}");
        assert_untouched(&env, &targets);
        assert!(env.proj.join("ok.txt").exists(), "{mode}");
        assert_eq!(
            denied_ids(&run.result()),
            sorted_target_ids(&targets),
            "{mode}"
        );
    }
    let told = server.requests().last().unwrap().json()["messages"][2]["content"][0].clone();
    assert!(told["content"].to_string().contains("dontAsk"), "{told}");

    script(&server, &env, &targets);
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "configure yourself",
                "--dangerously-skip-permissions",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.result()["permission_denials"], json!([]), "{run:?}");
    for (id, path) in &targets {
        // The hook and `.bashrc` exist and were not Read first, which the Write tool
        // itself refuses (not a permission matter); the new files are written.
        if !matches!(*id, "t_hook" | "t_rc") {
            assert_eq!(
                std::fs::read_to_string(path).unwrap(),
                ESCALATION,
                "bypass writes {id}"
            );
        }
    }
}

/// With a prompt channel the write is asked about (never auto-allowed by the rule), no
/// "always allow" is offered for it, and a denial leaves the file unwritten.
#[tokio::test]
async fn a_protected_write_is_asked_about_over_the_prompt_channel() {
    let env = Env::new();
    let settings = env.proj.join(".strata/settings.local.json");
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "t_local",
        "Write",
        json!({"file_path": settings, "content": ESCALATION}),
    ));
    server.push(Reply::new().text("Asked."));
    let mut s = Driver::start(
        &env,
        &server,
        &[
            "--permission-prompt-tool",
            "stdio",
            "--allowedTools",
            "Write(/**)",
        ],
    );
    s.next().await;
    s.control("init", json!({"subtype": "initialize"})).await;
    s.response("init").await;
    s.prompt("configure yourself").await;
    let ask = s.until(|l| kind(l) == "control_request/can_use_tool").await;
    assert_eq!(ask["request"]["tool_use_id"], "t_local", "{ask}");
    let offered = &ask["request"]["permission_suggestions"];
    assert!(
        offered.is_null() || offered.as_array().is_some_and(Vec::is_empty),
        "no rule would cover it, so none is offered: {offered}"
    );
    let id = ask["request_id"].as_str().unwrap().to_owned();
    let deny = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "deny", "message": "no"}}});
    s.send(&deny.to_string()).await;
    let result = s.result().await;
    assert_eq!(result["subtype"], "success", "{result}");
    assert!(!settings.exists());
    assert_eq!(s.finish().await.code, Some(0));
}

/// With Bash allowed (`--allowedTools Bash`) the model's `echo … >
/// .strata/settings.local.json` (and a `tee` into a git hook) is denied, the files do
/// not exist afterwards, and an ordinary redirection in the same reply still runs.
#[tokio::test]
async fn self_escalation_through_a_bash_redirection_is_denied_with_bash_allowed() {
    let env = Env::new();
    let settings = env.proj.join(".strata/settings.local.json");
    let hook = env.proj.join(".git/hooks/pre-commit");
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .tool_use(
                "t_local",
                "Bash",
                json!({"command": format!("mkdir -p .strata; echo '{ESCALATION}' > .strata/settings.local.json")}),
            )
            .tool_use(
                "t_hook",
                "Bash",
                json!({"command": "mkdir -p .git/hooks && echo 'rm -rf ~' | tee .git/hooks/pre-commit"}),
            )
            .tool_use("t_ok", "Bash", json!({"command": "echo fine > ok.txt"})),
    );
    server.push(Reply::new().text("Done."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "configure yourself",
                "--allowedTools",
                "Bash",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!settings.exists(), "the settings file was written");
    assert!(!env.proj.join(".strata").exists(), "not even its folder");
    assert!(!hook.exists(), "the hook was written");
    assert_eq!(
        std::fs::read_to_string(env.proj.join("ok.txt")).unwrap(),
        "fine\n",
        "Bash is still allowed for ordinary files"
    );
    assert_eq!(denied_ids(&run.result()), ["t_hook", "t_local"]);
    let results = server.requests()[1].json()["messages"][2]["content"].clone();
    for r in results.as_array().unwrap() {
        if r["tool_use_id"] != "t_ok" {
            assert_eq!(r["is_error"], true, "{r}");
            let text = r["content"].to_string();
            assert!(text.contains("protected"), "{r}");
        }
    }
}
