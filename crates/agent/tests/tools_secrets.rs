//! Issue 16, "no secrets in transcripts", at the tool level: credential variables do not
//! reach a tool process even through the settings `env` overlay, and their values are
//! redacted from every tool's result (text, detail, stored side file) by the registry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use serde_json::json;
use strata_agent::secrets::Secrets;
use strata_agent::tools::{ToolCall, ToolRegistry};
use tools_support::Project;

const KEY: &str = "sk-overlay-4b1d8e0c2a";
const TOKEN: &str = "custom-token-99aa77";

fn project() -> Project {
    let mut p = Project::new();
    p.ctx.set_env("ANTHROPIC_API_KEY", KEY);
    p.ctx.set_env("MY_TOKEN", TOKEN);
    p.ctx.set_env("PLAIN", "visible");
    let (secrets, warnings) = Secrets::new(["MY_TOKEN"]);
    assert!(warnings.is_empty());
    p.ctx.secrets = secrets;
    p.write("creds.txt", &format!("key {KEY}\ntoken {TOKEN}\n"));
    p
}

async fn run(p: &Project, tool: &str, input: serde_json::Value) -> strata_agent::tools::ToolOutput {
    let call = ToolCall {
        id: format!("toolu_{tool}"),
        input,
    };
    ToolRegistry::default().call(tool, call, &p.ctx).await
}

#[tokio::test]
async fn credential_variables_are_not_in_the_tool_environment() {
    let p = project();
    let out = run(
        &p,
        "Bash",
        json!({"command": "echo \"[$ANTHROPIC_API_KEY][$MY_TOKEN][$PLAIN]\"; env | grep -c -e ANTHROPIC_API_KEY -e MY_TOKEN || true"}),
    )
    .await;
    assert!(out.content == "[][][visible]\n0", "{}", out.content);
}

#[tokio::test]
async fn secret_values_read_back_from_a_file_are_redacted_in_text_and_detail() {
    let p = project();
    for (tool, input) in [
        ("Bash", json!({"command": "cat creds.txt"})),
        ("Read", json!({"file_path": p.path("creds.txt")})),
        (
            "Grep",
            json!({"pattern": "token", "output_mode": "content"}),
        ),
    ] {
        let out = run(&p, tool, input).await;
        let all = format!("{} {}", out.content, out.detail.clone().unwrap_or_default());
        assert!(!all.contains(KEY) && !all.contains(TOKEN), "{tool}: {all}");
        assert!(
            out.content.contains("[redacted MY_TOKEN]"),
            "{tool}: {}",
            out.content
        );
    }
}

#[tokio::test]
async fn a_long_output_is_stored_redacted() {
    let p = project();
    let out = run(
        &p,
        "Bash",
        json!({"command": "head -c 40000 /dev/zero | tr '\\0' x; echo; cat creds.txt"}),
    )
    .await;
    assert!(
        out.content.contains("Output truncated"),
        "{}",
        &out.content[..200]
    );
    let stored = p.hooks.stored.lock().unwrap().clone();
    assert_eq!(stored.len(), 1);
    assert!(!stored[0].1.contains(KEY) && !stored[0].1.contains(TOKEN));
    assert!(stored[0].1.contains("key [redacted ANTHROPIC_API_KEY]"));
}

/// A secret straddling the inline cut would survive as a recognisable half if output
/// were redacted after cutting.
#[tokio::test]
async fn a_secret_across_the_inline_cut_leaves_no_half_behind() {
    let p = project();
    p.write(
        "straddle.txt",
        &format!("{}{KEY}{}", "x".repeat(29_990), "y".repeat(100)),
    );
    let out = run(&p, "Bash", json!({"command": "cat straddle.txt"})).await;
    assert!(out.content.contains("Output truncated"));
    let half = &KEY[..10];
    assert!(!out.content.contains(half), "inline text keeps {half}");
    let detail = out.detail.unwrap().to_string();
    assert!(!detail.contains(half), "the detail keeps {half}");
}

/// Regression: Read cut each line at 2,000 characters before the result was redacted,
/// so a key straddling column 2,000 left its first half in the result.
#[tokio::test]
async fn regression_read_redacts_a_secret_across_its_line_cut() {
    let p = project();
    p.write(
        "long_line.txt",
        &format!("{}{KEY}{}\n", "x".repeat(1_995), "y".repeat(100)),
    );
    let out = run(&p, "Read", json!({"file_path": p.path("long_line.txt")})).await;
    assert!(out.content.contains("line truncated"), "{}", out.content);
    let half = &KEY[..5];
    assert!(!out.content.contains(half), "Read keeps {half}");
}
