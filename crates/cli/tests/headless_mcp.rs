//! MCP servers in a headless session, through the real binary: `--mcp-config` servers
//! offered to the model as `mcp__<server>__<tool>`, called under the permission rules
//! (`mcp__server` covers the server), reported by `system/init` and `mcp_status`,
//! reconnected and toggled by control requests, and a server that never starts leaving
//! the session working. Issue 25 item 2: a turn waits for the servers still connecting,
//! whether or not its prompt names them, at most `MCP_TIMEOUT`; a server that connects
//! during a turn offers its tools from the turn's next request.
//!
//! The servers are `crates/mcp/tests/fixtures/crashy.js` (needs `node`; absent, a test
//! prints one line and skips) and `sh` scripts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod headless_support;

use std::path::PathBuf;

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::{Driver, Env};

fn node() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("node").is_file()));
    if !found {
        eprintln!("headless MCP test: skipped, node is not installed");
    }
    found
}

fn crashy() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mcp/tests/fixtures/crashy.js")
        .display()
        .to_string()
}

fn config(servers: Value) -> String {
    json!({ "mcpServers": servers }).to_string()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn mcp_tools_are_offered_and_a_server_rule_allows_the_call() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .text("Calling.")
            .tool_use("toolu_1", "mcp__crashy__ok", json!({})),
    );
    server.push(Reply::new().text("It said fine."));
    let cfg = config(json!({"crashy": {"command": "node", "args": [crashy()]}}));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "call mcp__crashy__ok",
                "--mcp-config",
                &cfg,
                "--allowedTools",
                "mcp__crashy",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = server.requests();
    let first = requests[0].json();
    let names = tool_names(&first);
    assert!(names.contains(&"mcp__crashy__ok".to_owned()), "{names:?}");
    assert!(
        names.contains(&"mcp__crashy__crash".to_owned()),
        "{names:?}"
    );
    let result = &requests[1].json()["messages"][2]["content"][0];
    assert_eq!(result["content"], "fine", "{result}");
    assert_ne!(result["is_error"], true);
}

#[tokio::test]
async fn an_mcp_call_without_an_allow_rule_is_denied_headless() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .text("Calling.")
            .tool_use("toolu_1", "mcp__crashy__ok", json!({})),
    );
    server.push(Reply::new().text("Denied."));
    let cfg = config(json!({"crashy": {"command": "node", "args": [crashy()]}}));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "call mcp__crashy__ok",
                "--mcp-config",
                &cfg,
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let result = &server.requests()[1].json()["messages"][2]["content"][0];
    assert_eq!(result["is_error"], true, "{result}");
    let denials = &run.result()["permission_denials"];
    assert_eq!(denials[0]["tool_name"], "mcp__crashy__ok", "{denials}");
}

#[tokio::test]
async fn a_server_that_never_starts_is_reported_failed_and_the_session_works() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Still here."));
    let cfg = config(
        json!({"broken": {"command": "sh", "args": ["-c", "echo 'boom: missing key' >&2; exit 2"]}}),
    );
    let mut s = Driver::start(&env, &server, &["--mcp-config", &cfg]);
    let init = s.next().await;
    assert_eq!(init["subtype"], "init");
    assert_eq!(init["mcp_servers"][0]["name"], "broken", "{init}");
    s.prompt("hi").await;
    let result = s.result().await;
    assert_eq!(result["result"], "Still here.");
    s.control("s1", json!({"subtype": "mcp_status"})).await;
    let status = s.response("s1").await;
    let entry = &status["response"]["response"]["mcpServers"][0];
    assert_eq!(entry["status"], "failed", "{status}");
    assert!(
        entry["stderr"]
            .as_str()
            .unwrap()
            .contains("boom: missing key"),
        "{status}"
    );
    s.control(
        "s2",
        json!({"subtype": "mcp_reconnect", "serverName": "nope"}),
    )
    .await;
    let unknown = s.response("s2").await;
    assert_eq!(unknown["response"]["subtype"], "error");
    assert!(
        unknown["response"]["error"]
            .as_str()
            .unwrap()
            .contains("\"nope\""),
        "{unknown}"
    );
    s.finish().await;
}

#[tokio::test]
async fn mcp_toggle_disables_and_reenables_a_server_and_reconnect_restarts_it() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("one"));
    server.push(Reply::new().text("two"));
    let cfg = config(json!({"crashy": {"command": "node", "args": [crashy()]}}));
    let mut s = Driver::start(&env, &server, &["--mcp-config", &cfg]);
    s.next().await;
    s.control(
        "t1",
        json!({"subtype": "mcp_toggle", "serverName": "crashy", "enabled": false}),
    )
    .await;
    assert_eq!(s.response("t1").await["response"]["subtype"], "success");
    s.control("t2", json!({"subtype": "mcp_status"})).await;
    let status = s.response("t2").await;
    assert_eq!(
        status["response"]["response"]["mcpServers"][0]["status"], "disabled",
        "{status}"
    );
    s.prompt("first").await;
    s.result().await;
    let names = tool_names(&server.requests()[0].json());
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__crashy")),
        "a disabled server offers no tools: {names:?}"
    );
    s.control(
        "t3",
        json!({"subtype": "mcp_toggle", "serverName": "crashy", "enabled": true}),
    )
    .await;
    assert_eq!(s.response("t3").await["response"]["subtype"], "success");
    s.control(
        "t4",
        json!({"subtype": "mcp_reconnect", "serverName": "crashy"}),
    )
    .await;
    assert_eq!(s.response("t4").await["response"]["subtype"], "success");
    s.prompt("second: mcp__crashy__ok").await;
    s.result().await;
    let names = tool_names(&server.requests()[1].json());
    assert!(
        names.contains(&"mcp__crashy__ok".to_owned()),
        "enabled again: {names:?}"
    );
    s.finish().await;
}

/// Start-up with twenty MCP servers configured against none: for `strata -p hi`, the
/// time until the model request is sent (the turn waits for servers still connecting,
/// issue 25: for those slow to start, `MCP_TIMEOUT` of 2 s here) and until the process
/// exits, median of 5 runs each, printed. A measurement, not a gate:
/// `cargo nextest run -p strata --test headless_mcp twenty --run-ignored only --no-capture`
#[tokio::test]
#[ignore = "measurement; run by hand (see the doc comment)"]
async fn twenty_servers_startup_measurement() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let servers: serde_json::Map<String, Value> = (0..20)
        .map(|i| {
            (
                format!("s{i}"),
                json!({"command": "node", "args": [crashy()]}),
            )
        })
        .collect();
    let cfg = config(Value::Object(servers));
    // Servers that never answer initialize: given up after MCP_TIMEOUT.
    let slow: serde_json::Map<String, Value> = (0..20)
        .map(|i| {
            (
                format!("slow{i}"),
                json!({"command": "sleep", "args": ["30"]}),
            )
        })
        .collect();
    let slow = config(Value::Object(slow));
    let mut figures = Vec::new();
    for (label, extra) in [
        ("without", vec![]),
        ("with 20 node servers", vec!["--mcp-config", cfg.as_str()]),
        (
            "with 20 servers slow to start",
            vec!["--mcp-config", slow.as_str()],
        ),
    ] {
        let (mut first, mut total) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            server.push(Reply::new().text("hi"));
            let before = server.requests().len();
            let mut args = vec!["-p", "hi"];
            args.extend(extra.iter().copied());
            let mut cmd = env.command(Some(&server), &args);
            cmd.env("MCP_TIMEOUT", "2000")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            let start = std::time::Instant::now();
            let mut child = cmd.spawn().unwrap();
            while server.requests().len() == before {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            first.push(start.elapsed());
            assert!(child.wait().await.unwrap().success());
            total.push(start.elapsed());
        }
        first.sort();
        total.sort();
        figures.push(format!(
            "{label}: request sent after {:?} (min {:?}, max {:?}), exit after {:?}",
            first[2], first[0], first[4], total[2]
        ));
    }
    eprintln!("strata -p hi: {}", figures.join("; "));
}

/// The entry script of the installed server-everything (see `crates/mcp/tests/servers.rs`
/// for how `.ci/run` installs it), or `None` with a skip line.
fn everything() -> Option<String> {
    let dir = std::env::var_os("STRATA_MCP_SERVERS_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers"),
        PathBuf::from,
    );
    let script = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if script.exists() && node() {
        Some(script.display().to_string())
    } else {
        eprintln!(
            "headless MCP test: skipped, {} is not installed (.ci/run installs it)",
            script.display()
        );
        None
    }
}

#[tokio::test]
async fn an_mcp_prompt_is_a_slash_command_and_a_mention_attaches_the_resource() {
    let Some(script) = everything() else {
        return;
    };
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    server.push(Reply::new().text("ok"));
    let cfg = config(json!({"everything": {"command": "node", "args": [script, "stdio"]}}));
    let mut s = Driver::start(&env, &server, &["--mcp-config", &cfg]);
    s.next().await;
    s.prompt("/mcp__everything__simple-prompt").await;
    s.result().await;
    let first = server.requests()[0].json();
    let sent = first["messages"][0].to_string();
    assert!(
        sent.contains("This is a simple prompt without arguments."),
        "{sent}"
    );
    s.prompt("summarise @everything:demo://resource/static/document/features.md")
        .await;
    s.result().await;
    let second = server.requests()[1].json();
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        last.contains("<mcp-resource server=\\\"everything\\\""),
        "{last}"
    );
    s.finish().await;
}

#[tokio::test]
async fn an_mcp_image_result_reaches_the_model_as_an_image_block() {
    let Some(script) = everything() else {
        return;
    };
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Getting it.").tool_use(
        "toolu_img",
        "mcp__everything__get-tiny-image",
        json!({}),
    ));
    server.push(Reply::new().text("A tiny image."));
    let cfg = config(json!({"everything": {"command": "node", "args": [script, "stdio"]}}));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "show mcp__everything__get-tiny-image",
                "--mcp-config",
                &cfg,
                "--allowedTools",
                "mcp__everything",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let result = &server.requests()[1].json()["messages"][2]["content"][0];
    let blocks = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("blocks: {result}"));
    let image = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("{result}"));
    assert_eq!(image["source"]["media_type"], "image/png");
    assert_eq!(image["source"]["type"], "base64");
}

#[tokio::test]
async fn initialize_mcp_servers_are_started_and_sdk_servers_are_refused_with_a_warning() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let mut s = Driver::start(&env, &server, &[]);
    s.next().await;
    let servers = json!({
        "crashy": {"command": "node", "args": [crashy()]},
        "inproc": {"type": "sdk", "name": "inproc"}
    });
    s.control(
        "i1",
        json!({"subtype": "initialize", "mcpServers": servers}),
    )
    .await;
    assert_eq!(s.response("i1").await["response"]["subtype"], "success");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        s.control("st", json!({"subtype": "mcp_status"})).await;
        let status = s.response("st").await;
        let list = status["response"]["response"]["mcpServers"]
            .as_array()
            .unwrap()
            .clone();
        assert!(list.iter().all(|e| e["name"] != "inproc"), "{status}");
        if list
            .iter()
            .any(|e| e["name"] == "crashy" && e["status"] == "connected")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not connected: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let done = s.finish().await;
    assert!(
        done.stderr
            .contains("in-process SDK servers are not supported"),
        "{}",
        done.stderr
    );
}

#[tokio::test]
async fn a_deny_rule_naming_the_server_hides_all_its_tools() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    let cfg = config(json!({"crashy": {"command": "node", "args": [crashy()]}}));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "use mcp__crashy__ok",
                "--mcp-config",
                &cfg,
                "--disallowedTools",
                "mcp__crashy",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let names = tool_names(&server.requests()[0].json());
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__crashy")),
        "{names:?}"
    );
    assert!(names.contains(&"Bash".to_owned()));
}

/// Item 5: a sub-agent gets the parent's MCP tools only when its definition's `tools`
/// list admits them (`mcp__server` admits the server's tools).
#[tokio::test]
async fn a_subagent_gets_mcp_tools_only_when_its_definition_allows_them() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let agents = json!({
        "narrow": {"description": "reads only", "prompt": "You are NARROW.", "tools": ["Read"]},
        "wide": {"description": "reads and uses crashy", "prompt": "You are WIDE.",
                 "tools": ["Read", "mcp__crashy"]},
    })
    .to_string();
    server.push_for_system("You are NARROW.", Reply::new().text("narrow done"));
    server.push_for_system("You are WIDE.", Reply::new().text("wide done"));
    server.push(Reply::new().tool_use(
        "toolu_1",
        "Agent",
        json!({"description": "narrow look", "prompt": "look", "subagent_type": "narrow"}),
    ));
    server.push(Reply::new().tool_use(
        "toolu_2",
        "Agent",
        json!({"description": "wide look", "prompt": "look", "subagent_type": "wide"}),
    ));
    server.push(Reply::new().text("both answered"));
    let cfg = config(json!({"crashy": {"command": "node", "args": [crashy()]}}));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                // Naming the server makes the turn wait for its tools.
                "ask both; mcp__crashy may help",
                "--mcp-config",
                &cfg,
                "--agents",
                &agents,
                "--allowedTools",
                "Agent",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.result()["result"], "both answered");
    let requests = server.requests();
    let tools_of = |needle: &str| {
        let request = requests
            .iter()
            .find(|r| r.system_text().contains(needle))
            .unwrap_or_else(|| panic!("no request of the {needle} agent"));
        tool_names(&request.json())
    };
    // The main agent has the server's tools (so the sub-agents could have been given them).
    assert!(tool_names(&requests[0].json()).contains(&"mcp__crashy__ok".to_owned()));
    let narrow = tools_of("You are NARROW.");
    assert_eq!(narrow, ["Read"], "{narrow:?}");
    let wide = tools_of("You are WIDE.");
    assert!(
        wide.contains(&"Read".to_owned()) && wide.contains(&"mcp__crashy__ok".to_owned()),
        "{wide:?}"
    );
}

/// Regression: a custom command's prompt is recorded as its tag alone, so a turn decided
/// whether to wait for a server that was still starting from the tag's text and never saw
/// the server the command's body names. The body is consulted too: the slow server's
/// tools are offered on the command's first request.
#[tokio::test]
async fn regression_a_custom_command_naming_a_slow_mcp_server_waits_for_its_tools() {
    if !node() {
        return;
    }
    let env = Env::new();
    let commands = env.proj.join(".strata/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("ping.md"),
        "---\ndescription: ping the server\n---\nCall mcp__crashy__ok and say what it answers.\n",
    )
    .unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("It is there."));
    // The server takes a second to start: a turn that does not wait is sent without it.
    let start = format!("sleep 1; exec node '{}'", crashy());
    let cfg = config(json!({"crashy": {"command": "sh", "args": ["-c", start]}}));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "/ping",
                "--mcp-config",
                &cfg,
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let names = tool_names(&server.requests()[0].json());
    assert!(names.contains(&"mcp__crashy__ok".to_owned()), "{names:?}");
}

/// Issue 25 item 2, the bug: with server-everything configured, a prompt that does not
/// name it was sent without its tools (`system/init` said `pending`) and the model's call
/// of its `echo` got "No such tool". The run now waits for the server: `system/init` says
/// it is connected, the first request offers `echo` and the call answers.
#[tokio::test]
async fn i25_2_a_headless_run_whose_prompt_does_not_name_the_server_calls_its_echo() {
    let Some(script) = everything() else {
        return;
    };
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Echoing.").tool_use(
        "toolu_echo",
        "mcp__everything__echo",
        json!({"message": "hello there"}),
    ));
    server.push(Reply::new().text("It echoed."));
    let cfg = config(json!({"everything": {"command": "node", "args": [script, "stdio"]}}));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "Say hello back to me through the echo tool.",
                "--mcp-config",
                &cfg,
                "--allowedTools",
                "mcp__everything",
                "--output-format",
                "stream-json",
                "--verbose",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = run.lines();
    let init = &lines[0];
    assert_eq!(init["subtype"], "init", "{init}");
    assert_eq!(init["mcp_servers"][0]["name"], "everything", "{init}");
    assert_eq!(init["mcp_servers"][0]["status"], "connected", "{init}");
    assert!(
        init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__everything__echo"),
        "{init}"
    );
    let requests = server.requests();
    let names = tool_names(&requests[0].json());
    assert!(
        names.contains(&"mcp__everything__echo".to_owned()),
        "{names:?}"
    );
    let result = &requests[1].json()["messages"][2]["content"][0];
    assert_ne!(result["is_error"], true, "{result}");
    assert!(result.to_string().contains("Echo: hello there"), "{result}");
    assert_eq!(run.result()["result"], "It echoed.");
}

/// Issue 25 item 2: a server slow to start (two seconds before it answers `initialize`)
/// is waited for by a turn whose prompt does not name it; its tool is called in the
/// first turn.
#[tokio::test]
async fn i25_2_a_server_slow_to_start_is_waited_for() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .text("Calling.")
            .tool_use("toolu_1", "mcp__slow__ok", json!({})),
    );
    server.push(Reply::new().text("It said fine."));
    let start = format!("sleep 2; exec node '{}'", crashy());
    let cfg = config(json!({"slow": {"command": "sh", "args": ["-c", start]}}));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "hi",
                "--mcp-config",
                &cfg,
                "--allowedTools",
                "mcp__slow",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = server.requests();
    let names = tool_names(&requests[0].json());
    assert!(names.contains(&"mcp__slow__ok".to_owned()), "{names:?}");
    let result = &requests[1].json()["messages"][2]["content"][0];
    assert_eq!(result["content"], "fine", "{result}");
    assert_eq!(run.result()["result"], "It said fine.");
}

/// Issue 25 item 2: a server that never answers `initialize` is given up after
/// `MCP_TIMEOUT` (half a second here; the server would sleep a minute): the turn goes on
/// without its tools, and its status is failed, saying which limit it missed.
#[tokio::test]
async fn i25_2_a_server_that_never_starts_is_given_up_after_mcp_timeout() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Without it."));
    let cfg = config(json!({"mute": {"command": "sh", "args": ["-c", "exec sleep 60"]}}));
    let mut cmd = env.command(
        Some(&server),
        &[
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
            &cfg,
        ],
    );
    cmd.env("MCP_TIMEOUT", "500");
    let started = std::time::Instant::now();
    let mut s = Driver::spawn(cmd);
    s.next().await;
    s.prompt("hi").await;
    let result = s.result().await;
    // Generous: the point is that the turn did not wait for the server's minute.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(result["result"], "Without it.", "{result}");
    let names = tool_names(&server.requests()[0].json());
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__mute")),
        "{names:?}"
    );
    s.control("st", json!({"subtype": "mcp_status"})).await;
    let status = s.response("st").await;
    let entry = &status["response"]["response"]["mcpServers"][0];
    assert_eq!(entry["name"], "mute", "{status}");
    assert_eq!(entry["status"], "failed", "{status}");
    let error = entry["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("did not answer initialize within 500 ms") && error.contains("MCP_TIMEOUT"),
        "{status}"
    );
    s.finish().await;
}

/// Issue 25 item 2: the tools are read again for every request of a turn. A server added
/// while the turn runs (the SDK's `initialize` `mcpServers`, sent during a tool call)
/// is not in the turn's first request and is in its next one.
#[tokio::test]
async fn i25_2_a_server_that_connects_during_a_turn_offers_its_tools_from_the_next_request() {
    if !node() {
        return;
    }
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    // The call waits for a file the test writes once the new server is connected.
    server.push(Reply::new().text("Waiting.").tool_use(
        "toolu_wait",
        "Bash",
        json!({"command": "while [ ! -f ready ]; do sleep 0.1; done; echo go"}),
    ));
    server.push(Reply::new().text("Done."));
    let mut s = Driver::start(&env, &server, &["--allowedTools", "Bash"]);
    s.next().await;
    s.prompt("wait for the file").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no request");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let servers = json!({"crashy": {"command": "node", "args": [crashy()]}});
    s.control(
        "i1",
        json!({"subtype": "initialize", "mcpServers": servers}),
    )
    .await;
    assert_eq!(s.response("i1").await["response"]["subtype"], "success");
    loop {
        s.control("st", json!({"subtype": "mcp_status"})).await;
        let status = s.response("st").await;
        if status["response"]["response"]["mcpServers"][0]["status"] == "connected" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not connected: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    std::fs::write(env.proj.join("ready"), "").unwrap();
    let result = s.result().await;
    assert_eq!(result["result"], "Done.", "{result}");
    let requests = server.requests();
    let first = tool_names(&requests[0].json());
    assert!(
        !first.iter().any(|n| n.starts_with("mcp__crashy")),
        "{first:?}"
    );
    let next = tool_names(&requests[1].json());
    assert!(next.contains(&"mcp__crashy__ok".to_owned()), "{next:?}");
    s.finish().await;
}
