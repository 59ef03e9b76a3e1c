//! Issue 16, "no secrets in transcripts": the real binary with a provider key in its
//! environment, against a scripted mock model that tries to read the key back through
//! tools (`env`, `echo $ANTHROPIC_API_KEY`, `cat` of a file holding it, the Read tool, a
//! long output stored aside, a variable named by `credentialEnvVars`). Neither the
//! transcript (nor any file strata writes), nor stdout, nor what is sent back to the model
//! contains a secret.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::path::Path;

use serde_json::json;
use strata_testkit::{MockServer, Reply};

use headless_support::Env;

const KEY: &str = "sk-ant-test-7f3c9a1e5b2d4c6e8a0b";
const TOKEN: &str = "svc-token-0d9e8f7a6b5c";

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_containing(&path, needle));
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            found.push(path.display().to_string());
        }
    }
    found
}

#[tokio::test]
async fn provider_keys_never_reach_the_transcript_stdout_or_the_model() {
    let env = Env::new();
    let key_file = format!("ANTHROPIC_API_KEY={KEY}\nTOKEN={TOKEN}\n");
    std::fs::write(env.proj.join("key.txt"), key_file).unwrap();
    // Long enough to be stored aside whole (the secrets are past the inline part).
    let long = format!("{}\n{KEY}\n{TOKEN}\n", "x".repeat(60_000));
    std::fs::write(env.proj.join("long.txt"), long).unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .tool_use("toolu_env", "Bash", json!({"command": "env"}))
            .tool_use(
                "toolu_echo",
                "Bash",
                json!({"command": "echo \"key=[$ANTHROPIC_API_KEY] token=[$MY_SERVICE_TOKEN]\""}),
            )
            .tool_use("toolu_cat", "Bash", json!({"command": "cat key.txt"}))
            .tool_use("toolu_long", "Bash", json!({"command": "cat long.txt"}))
            .tool_use(
                "toolu_read",
                "Read",
                json!({"file_path": env.proj.join("key.txt")}),
            ),
    );
    server.push(Reply::new().text("done"));
    let mut cmd = env.command(
        Some(&server),
        &[
            "-p",
            "show me the key",
            "--allowedTools",
            "Bash,Read",
            "--output-format",
            "stream-json",
            "--verbose",
            "--settings",
            r#"{"credentialEnvVars":["MY_SERVICE_TOKEN"]}"#,
        ],
    );
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("MY_SERVICE_TOKEN", TOKEN);
    let run = headless_support::run_command(cmd, "").await;
    assert_eq!(run.code, Some(0), "{run:?}");

    // The key was really used (the model server got it) but only as the credential.
    let requests = server.requests();
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    for secret in [KEY, TOKEN] {
        assert!(!run.stdout.contains(secret), "stdout has {secret}");
        assert!(!run.stderr.contains(secret), "stderr has {secret}");
        let leaked = files_containing(&env.cfg, secret);
        assert!(leaked.is_empty(), "{secret} written to {leaked:?}");
        for r in &requests {
            assert!(
                !r.body_text().contains(secret),
                "{secret} sent to the model"
            );
        }
    }
    // The tools ran and the secret was read back: redacted, not absent by accident.
    let body = requests.last().unwrap().body_text();
    assert!(
        body.contains("key=[] token=[]"),
        "the variables are unset: {body}"
    );
    assert_eq!(
        body.matches("ANTHROPIC_API_KEY=[redacted ANTHROPIC_API_KEY]")
            .count(),
        2,
        "cat and Read show the file with the key redacted: {body}"
    );
    assert!(body.contains("TOKEN=[redacted MY_SERVICE_TOKEN]"), "{body}");
    let stored = files_containing(&env.cfg, "[redacted MY_SERVICE_TOKEN]");
    assert!(
        stored.iter().any(|p| p.contains("tool-results")),
        "the long output's side file is redacted too: {stored:?}"
    );
    let transcripts = env.transcripts();
    let (path, lines) = &transcripts[0];
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains("[redacted ANTHROPIC_API_KEY]"),
        "recorded redacted"
    );
    assert!(lines.len() > 4);
}
