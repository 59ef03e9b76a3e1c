//! Plan mode in headless runs (issue 25 item 7): a command strata's analysis classes
//! read-only runs without a prompt in every output mode — `ls` in plan mode was refused
//! with "requires approval" in `-p` runs, where nobody can answer — while a read-only
//! command that reads outside the project is still refused, and a command that writes
//! is refused by plan mode itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::Env;

/// The text of the `n`th tool result the model was sent in request `request`.
fn tool_result(server: &MockServer, request: usize, n: usize) -> String {
    let body = server.requests()[request].json();
    let results: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    results[n]["content"].to_string()
}

#[tokio::test]
async fn i25_7_plan_mode_runs_read_only_commands_in_every_output_mode() {
    let env = Env::new();
    std::fs::write(env.proj.join("marker-file.txt"), "x").unwrap();
    std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
    std::fs::write(env.home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    let server = MockServer::start().await.unwrap();
    let mut request = 0;
    for format in ["text", "json", "stream-json"] {
        server.push(
            Reply::new()
                .tool_use("t_ls", "Bash", json!({"command": "ls -la"}))
                .tool_use("t_key", "Bash", json!({"command": "cat ~/.ssh/id_ed25519"}))
                .tool_use("t_rm", "Bash", json!({"command": "rm marker-file.txt"})),
        );
        server.push(Reply::new().text("Planned."));
        let mut args = vec![
            "-p",
            "look around",
            "--permission-mode",
            "plan",
            "--output-format",
            format,
        ];
        if format == "stream-json" {
            args.push("--verbose");
        }
        let run = env.run(Some(&server), &args).await;
        assert_eq!(run.code, Some(0), "{format}: {run:?}");
        request += 2;
        let listed = tool_result(&server, request - 1, 0);
        assert!(listed.contains("marker-file.txt"), "{format}: {listed}");
        let key = tool_result(&server, request - 1, 1);
        assert!(!key.contains("PRIVATE KEY"), "{format}: {key}");
        assert!(key.contains("requires approval"), "{format}: {key}");
        let rm = tool_result(&server, request - 1, 2);
        assert!(rm.contains("plan mode"), "{format}: {rm}");
        assert!(env.proj.join("marker-file.txt").exists(), "{format}");
    }
}
