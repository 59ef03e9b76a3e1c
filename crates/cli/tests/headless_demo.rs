//! The replay demo (issue 6 "Done when": `strata -p "…" --replay demo` works offline on a
//! fresh clone): it plays without any provider configured and without a network, and
//! its tool calls run for real in the directory strata runs in.
//!
//! `record_demo` (ignored) is how `crates/cli/demo/demo.jsonl` was made: strata itself,
//! run in this repository against the scripted mock model server. Regenerate with
//! `cargo nextest run -p strata --run-ignored only -E 'test(record_demo)'`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::{Env, kind};

/// The prompt the README runs the demo with (any prompt plays the same recording).
const PROMPT: &str = "Give me a quick tour of this project.";

fn demo_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.jsonl")
}

/// The recorded final answer.
fn recorded_answer() -> String {
    let text = std::fs::read_to_string(demo_file()).unwrap();
    let last = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .rfind(|l| l["type"] == "assistant")
        .unwrap();
    last["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_replay_demo_runs_offline_with_no_provider_configured() {
    let env = Env::new();
    std::fs::write(
        env.proj.join("README.md"),
        "# my project\n\nA project of mine.\n",
    )
    .unwrap();
    std::fs::write(env.proj.join("only-here.txt"), "x\n").unwrap();
    let run = env.run(None, &["-p", PROMPT, "--replay", "demo"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout.trim_end(), recorded_answer().trim_end());
    assert!(
        run.stderr.contains("replay"),
        "labelled as a replay: {}",
        run.stderr
    );

    let run = env
        .run(
            None,
            &[
                "-p",
                PROMPT,
                "--replay",
                "demo",
                "--output-format",
                "stream-json",
                "--verbose",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = run.lines();
    assert_eq!(kind(&lines[0]), "system/init");
    assert_eq!(
        lines[0]["provider"], "replay",
        "the init line says it is a replay"
    );
    let result = run.result();
    assert_eq!(result["subtype"], "success");
    assert_eq!(
        result["permission_denials"],
        json!([]),
        "every demo tool call is allowed by default"
    );
    // The tool calls ran here, for real: `ls` lists this project's files, `head` read its
    // README.
    let tool_output: String = lines
        .iter()
        .filter(|l| l["type"] == "user")
        .map(|l| l["message"]["content"].to_string())
        .collect();
    assert!(tool_output.contains("only-here.txt"), "{tool_output}");
    assert!(tool_output.contains("A project of mine."), "{tool_output}");
    assert!(!tool_output.contains("\"is_error\":true"), "{tool_output}");
}

#[tokio::test]
async fn the_shipped_demo_holds_no_path_of_the_machine_it_was_recorded_on() {
    let text = std::fs::read_to_string(demo_file()).unwrap();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        if let Some(cwd) = value["cwd"].as_str() {
            assert_eq!(cwd, DEMO_ROOT);
        }
    }
    assert!(
        !text.contains("/tmp/"),
        "a temporary path leaked into the demo"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    assert!(
        !text.contains(root.to_str().unwrap()),
        "the recording checkout's path leaked"
    );
}

/// What the recording's paths are rewritten to.
const DEMO_ROOT: &str = "/home/you/strata";

/// The scripted model of the demo: it looks around (Glob and `ls` in parallel), reads the
/// README's start, runs an `echo`, and answers.
fn script(server: &MockServer) {
    server.push(
        Reply::new()
            .id("msg_demo_01")
            .model("claude-sonnet-4-5")
            .usage(2_310, 96)
            .text("I'll start by looking at what is in the project.")
            .tool_use("toolu_demo_glob", "Glob", json!({"pattern": "*.md"}))
            .tool_use(
                "toolu_demo_ls",
                "Bash",
                json!({"command": "ls", "description": "List the top-level files"}),
            ),
    );
    server.push(
        Reply::new()
            .id("msg_demo_02")
            .model("claude-sonnet-4-5")
            .usage(2_655, 71)
            .text("There is a README; let me read its beginning.")
            .tool_use(
                "toolu_demo_head",
                "Bash",
                json!({"command": "head -n 20 README.md", "description": "Read the start of the README"}),
            ),
    );
    server.push(
        Reply::new()
            .id("msg_demo_03")
            .model("claude-sonnet-4-5")
            .usage(3_120, 64)
            .tool_use(
                "toolu_demo_echo",
                "Bash",
                json!({"command": "echo \"Hello from the strata demo, running in:\" && pwd", "description": "Show where the tools run"}),
            ),
    );
    server.push(
        Reply::new()
            .id("msg_demo_04")
            .model("claude-sonnet-4-5")
            .usage(3_290, 241)
            .text(
                "Here is the quick tour.\n\n\
                 **strata** is a terminal coding agent written in Rust. Its core is a \
                 two-layer state system: a process-wide bootstrap state, and one reactive \
                 application store with ordered change delivery, selector subscriptions and a \
                 single side-effect hub. Sessions are JSONL transcripts in the same format as \
                 the most widely used terminal agent's, so either can resume the other's.\n\n\
                 The workspace is split into crates by layer: `store`, `bootstrap`, `protocol`, \
                 `config`, `state`, `session`, `agent`, `tui` and `cli` (the `strata` binary); \
                 `ARCHITECTURE.md` maps them.\n\n\
                 About this answer: it is a replay. `--replay demo` plays back a session \
                 recorded with strata's scripted mock model, so no model was called, but the Glob \
                 and Bash calls it made ran for real, in your directory, with the usual permission \
                 checks (the demo allows its own `ls`, `head`, `echo` and `pwd`). To talk to a live model, set `ANTHROPIC_API_KEY` (or `OPENAI_API_KEY`, \
                 or `OPENAI_BASE_URL` for a local server) and drop `--replay demo`.",
            ),
    );
}

#[tokio::test]
#[ignore = "regenerates crates/cli/demo/demo.jsonl; run on purpose"]
async fn record_demo() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    script(&server);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .canonicalize()
        .unwrap();
    // The rules `--replay demo` brings (src/headless/demo.rs); the replay test proves they
    // cover every recorded call.
    let mut cmd = env.command(
        Some(&server),
        &[
            "-p",
            PROMPT,
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "Bash(ls:*)",
            "Bash(head:*)",
            "Bash(echo:*)",
            "Bash(pwd:*)",
        ],
    );
    cmd.current_dir(&root).stdin(std::process::Stdio::null());
    let output = cmd.output().await.unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        result["permission_denials"],
        json!([]),
        "the demo needs no approval: {result}"
    );
    assert_eq!(server.pending(), 0, "every scripted response was used");

    let projects = env.cfg.join("projects");
    let folder = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let session = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(session).unwrap();
    let text = text.replace(root.to_str().unwrap(), DEMO_ROOT);
    std::fs::write(demo_file(), text).unwrap();
}
