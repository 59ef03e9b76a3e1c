//! Issue 25 item 2 in the UI: the prompt never waits for MCP servers, but a submitted
//! turn waits for those still connecting, and its spinner names the server it waits for.
//!
//! The server is `crates/mcp/tests/fixtures/crashy.js` started after a pause (needs
//! `node`; absent, the test prints one line and skips).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod ui_kit;

use ui_kit::*;

fn node() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("node").is_file()));
    if !found {
        eprintln!("UI MCP test: skipped, node is not installed");
    }
    found
}

#[tokio::test]
async fn i25_2_a_submitted_turn_waits_for_a_slow_server_and_the_spinner_names_it() {
    if !node() {
        return;
    }
    let crashy = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mcp/tests/fixtures/crashy.js")
        .display()
        .to_string();
    // The server answers only after two seconds: the turn submitted at once waits.
    let start = format!("sleep 2; exec node '{crashy}'");
    let config = json!({"mcpServers": {"slow": {"command": "sh", "args": ["-c", start]}}});
    let mut ui = Launch::new(&[text_reply(1, "Answered.")])
        .mcp_config(config.to_string())
        .open()
        .await;
    // The prompt does not wait: the app takes keys while the server is still starting.
    ui.send("hi");
    assert!(ui.app.turn_running());
    ui.until("the spinner to name the server", |u| {
        u.screen().contains("Waiting for MCP server slow…")
    })
    .await;
    ui.turn_done().await;
    assert!(ui.said.contains("Answered."), "{}", ui.said);
    let state = ui.engine.store().get();
    let client = state.mcp.clients.get("slow").expect("the server is listed");
    assert_eq!(
        client.status,
        strata_state::McpConnectionStatus::Connected,
        "the turn waited until it was up"
    );
    assert!(
        state
            .mcp
            .tools
            .iter()
            .any(|t| t.qualified_name == "mcp__slow__ok")
    );
    assert_eq!(state.mcp.turn_waits_for, None, "the wait is over");
}
