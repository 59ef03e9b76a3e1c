//! `apiKeyHelper` through the real binary: with no key in the environment, the settings'
//! helper command supplies it; a key in the environment comes first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use strata_testkit::{MockServer, Reply};

use headless_support::{Env, run_command};

fn settings(env: &Env, helper: &str) {
    std::fs::create_dir_all(&env.cfg).unwrap();
    std::fs::write(
        env.cfg.join("settings.json"),
        serde_json::json!({ "apiKeyHelper": helper }).to_string(),
    )
    .unwrap();
}

#[tokio::test]
async fn api_key_helper_from_settings_supplies_the_key() {
    let env = Env::new();
    settings(&env, "printf key-from-helper");
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hello."));
    let mut cmd = env.command(None, &["-p", "hi"]);
    cmd.env("ANTHROPIC_BASE_URL", server.url());
    let run = run_command(cmd, "").await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Hello.\n");
    let requests = server.requests();
    assert_eq!(requests[0].header("x-api-key"), Some("key-from-helper"));
}

#[tokio::test]
async fn a_key_in_the_environment_comes_before_the_api_key_helper() {
    let env = Env::new();
    settings(&env, "echo helper-ran > helper-ran; printf key-from-helper");
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hello."));
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(server.requests()[0].header("x-api-key"), Some("test-key"));
    assert!(
        !env.proj.join("helper-ran").exists(),
        "the helper never ran"
    );
}

#[tokio::test]
async fn a_failing_api_key_helper_fails_the_run_naming_it() {
    let env = Env::new();
    settings(&env, "echo 'no vault' >&2; exit 1");
    let server = MockServer::start().await.unwrap();
    let mut cmd = env.command(None, &["-p", "hi"]);
    cmd.env("ANTHROPIC_BASE_URL", server.url());
    let run = run_command(cmd, "").await;
    assert_eq!(run.code, Some(1), "{run:?}");
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains("apiKeyHelper") && all.contains("no vault"),
        "{all}"
    );
    assert!(server.requests().is_empty());
}

/// Issue 16 "no secrets in transcripts": a key from `apiKeyHelper` is a known secret like
/// one from the environment. A model that prints it (here by reading the vault file the
/// helper reads) sees it redacted, and neither stdout nor the transcript holds it.
#[tokio::test]
async fn a_key_from_the_api_key_helper_is_redacted_from_tool_results() {
    const KEY: &str = "sk-helper-3f9c1a77e2";
    let env = Env::new();
    std::fs::write(env.proj.join("vault.txt"), KEY).unwrap();
    settings(&env, "cat vault.txt");
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_1",
        "Bash",
        serde_json::json!({"command": "cat vault.txt"}),
    ));
    server.push(Reply::new().text("Done."));
    let mut cmd = env.command(
        None,
        &[
            "-p",
            "show the vault",
            "--allowedTools",
            "Bash",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    );
    cmd.env("ANTHROPIC_BASE_URL", server.url());
    let run = run_command(cmd, "").await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = server.requests();
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    let sent = requests[1].json().to_string();
    assert!(!sent.contains(KEY), "the model was sent the key: {sent}");
    assert!(sent.contains("[redacted apiKeyHelper key]"), "{sent}");
    assert!(!run.stdout.contains(KEY), "stdout holds the key");
    for (path, lines) in env.transcripts() {
        for line in lines {
            assert!(
                !line.to_string().contains(KEY),
                "{} holds the key",
                path.display()
            );
        }
    }
}

/// The `init` line says where the key came from: `apiKeyHelper` when the settings' helper
/// supplies it (it said `none`).
#[tokio::test]
async fn regression_the_init_line_names_the_api_key_helper_as_the_key_source() {
    let env = Env::new();
    settings(&env, "printf key-from-helper");
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hello."));
    let mut cmd = env.command(
        None,
        &["-p", "hi", "--output-format", "stream-json", "--verbose"],
    );
    cmd.env("ANTHROPIC_BASE_URL", server.url());
    let run = run_command(cmd, "").await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let init = run
        .lines()
        .into_iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init")
        .unwrap();
    assert_eq!(init["apiKeySource"], "apiKeyHelper", "{init}");
}
