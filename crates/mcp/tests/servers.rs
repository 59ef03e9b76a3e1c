//! The connection manager against real MCP servers over loopback: the reference servers
//! `@modelcontextprotocol/server-everything` (stdio, streamable HTTP and the legacy
//! HTTP+SSE transport) and
//! `@modelcontextprotocol/server-filesystem`, a server that crashes mid-call
//! (`fixtures/crashy.js`) and one that never starts.
//!
//! The npm servers are installed by `.ci/run` into `target/mcp-servers` (or the
//! directory `STRATA_MCP_SERVERS_DIR` names); locally, install them the same way:
//! `npm install --prefix target/mcp-servers @modelcontextprotocol/server-everything@2026.8.31
//! @modelcontextprotocol/server-filesystem@2026.8.31`. A test whose server is absent
//! prints one line and skips (CI makes them present).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::json;
use smol_str::SmolStr;
use strata_mcp::{
    CallError, ConfiguredServer, ManagerOptions, McpManager, ServerConfig, ServerView,
};
use strata_state::{McpConfigScope, McpConnectionStatus};
use tokio_util::sync::CancellationToken;

fn servers_dir() -> PathBuf {
    std::env::var_os("STRATA_MCP_SERVERS_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers"),
        PathBuf::from,
    )
}

/// The entry script of an installed npm server, or `None` (and a skip line).
fn npm_server(package: &str, test: &str) -> Option<PathBuf> {
    let path = servers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if path.exists() && which("node") {
        Some(path)
    } else {
        eprintln!(
            "{test}: skipped, {} is not installed (.ci/run installs it)",
            path.display()
        );
        None
    }
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

fn stdio(command: &str, args: &[&str]) -> ServerConfig {
    ServerConfig::Stdio {
        command: command.into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: IndexMap::new(),
    }
}

fn server(name: &str, config: ServerConfig) -> ConfiguredServer {
    ConfiguredServer {
        name: SmolStr::from(name),
        scope: McpConfigScope::Dynamic,
        config,
        blocked: None,
        disabled: false,
    }
}

type Views = Arc<Mutex<Vec<ServerView>>>;

fn manager(servers: Vec<ConfiguredServer>) -> (McpManager, Views) {
    let views: Views = Arc::default();
    let sink = Arc::clone(&views);
    let mut options = ManagerOptions::from_env(std::env::temp_dir());
    options.connect_timeout = Duration::from_secs(30);
    options.backoff_initial = Duration::from_millis(50);
    let m = McpManager::new(
        servers,
        options,
        Arc::new(move |v| sink.lock().unwrap().push(v)),
    );
    m.start();
    (m, views)
}

async fn connected(m: &McpManager, name: &str) -> ServerView {
    let status = m.wait_ready(name, Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        status,
        McpConnectionStatus::Connected,
        "{}",
        strata_mcp::describe(&status)
    );
    m.views()
        .into_iter()
        .find(|v| v.client.name == name)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_lists_and_calls_tools_resources_and_prompts() {
    let Some(script) = npm_server("server-everything", "everything_over_stdio") else {
        return;
    };
    let (m, _views) = manager(vec![server(
        "everything",
        stdio("node", &[script.to_str().unwrap(), "stdio"]),
    )]);
    let view = connected(&m, "everything").await;
    let names: Vec<&str> = view
        .tools
        .iter()
        .map(|t| t.qualified_name.as_str())
        .collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
    let none = CancellationToken::new();

    let echo = m
        .call_tool("everything", "echo", json!({"message": "hi there"}), &none)
        .await
        .unwrap();
    assert!(echo.text.contains("hi there"), "{}", echo.text);
    let sum = m
        .call_tool("everything", "get-sum", json!({"a": 2, "b": 40}), &none)
        .await
        .unwrap();
    assert!(sum.text.contains("42"), "{}", sum.text);
    let image = m
        .call_tool("everything", "get-tiny-image", json!({}), &none)
        .await
        .unwrap();
    assert_eq!(image.images.len(), 1, "{image:?}");
    assert_eq!(image.images[0].mime_type, "image/png");

    let resource = view
        .resources
        .first()
        .expect("server-everything lists resources");
    let read = m
        .read_resource("everything", &resource.uri, &none)
        .await
        .unwrap();
    assert!(!read.text.is_empty() || !read.images.is_empty(), "{read:?}");

    let prompt = view
        .commands
        .iter()
        .find(|c| c.arguments.is_empty())
        .expect("a prompt without arguments");
    let text = m
        .get_prompt("everything", &prompt.name, serde_json::Map::new(), &none)
        .await
        .unwrap();
    assert!(!text.trim().is_empty());

    // A long call is cancelled promptly, and the connection stays usable.
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c.cancel();
    });
    let started = std::time::Instant::now();
    let long = m
        .call_tool(
            "everything",
            "trigger-long-running-operation",
            json!({"duration": 20, "steps": 20}),
            &cancel,
        )
        .await;
    assert_eq!(long.unwrap_err(), CallError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    let again = m
        .call_tool("everything", "echo", json!({"message": "after"}), &none)
        .await
        .unwrap();
    assert!(again.text.contains("after"));
    m.shutdown();
}

/// Starts server-everything in `mode` (`streamableHttp`, `sse`) on a free loopback port
/// and waits until it listens.
async fn everything_on_loopback(
    script: &std::path::Path,
    mode: &str,
) -> (tokio::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new("node")
        .arg(script)
        .arg(mode)
        .env("PORT", port.to_string())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (child, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http_is_called_on_loopback() {
    let Some(script) = npm_server("server-everything", "everything_over_streamable_http") else {
        return;
    };
    let (mut child, port) = everything_on_loopback(&script, "streamableHttp").await;
    let config = ServerConfig::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: IndexMap::new(),
    };
    let (m, _views) = manager(vec![server("web", config)]);
    let view = connected(&m, "web").await;
    assert!(
        view.tools
            .iter()
            .any(|t| t.qualified_name == "mcp__web__echo")
    );
    let none = CancellationToken::new();
    let echo = m
        .call_tool("web", "echo", json!({"message": "over http"}), &none)
        .await
        .unwrap();
    assert!(echo.text.contains("over http"), "{}", echo.text);
    m.shutdown();
    let _ = child.kill().await;
}

/// Issue 15: a `"type": "sse"` server (the legacy HTTP+SSE transport) is connected,
/// listed and called: tools, a resource read and a prompt, and a long call cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_legacy_sse_lists_calls_reads_and_cancels() {
    let Some(script) = npm_server("server-everything", "everything_over_legacy_sse") else {
        return;
    };
    let (mut child, port) = everything_on_loopback(&script, "sse").await;
    let mut headers = IndexMap::new();
    headers.insert("X-Strata-Test".to_owned(), "sse".to_owned());
    let config = ServerConfig::Sse {
        url: format!("http://127.0.0.1:{port}/sse"),
        headers,
    };
    let (m, _views) = manager(vec![server("legacy", config)]);
    let view = connected(&m, "legacy").await;
    assert_eq!(view.client.transport, strata_state::McpTransport::Sse);
    let names: Vec<&str> = view
        .tools
        .iter()
        .map(|t| t.qualified_name.as_str())
        .collect();
    assert!(names.contains(&"mcp__legacy__echo"), "{names:?}");
    assert!(names.contains(&"mcp__legacy__get-sum"), "{names:?}");
    assert!(!view.resources.is_empty(), "resources listed over SSE");
    assert!(!view.commands.is_empty(), "prompts listed over SSE");

    let none = CancellationToken::new();
    let echo = m
        .call_tool("legacy", "echo", json!({"message": "over sse"}), &none)
        .await
        .unwrap();
    assert!(echo.text.contains("over sse"), "{}", echo.text);
    let sum = m
        .call_tool("legacy", "get-sum", json!({"a": 2, "b": 40}), &none)
        .await
        .unwrap();
    assert!(sum.text.contains("42"), "{}", sum.text);
    let uri = view.resources[0].uri.to_string();
    let read = m.read_resource("legacy", &uri, &none).await.unwrap();
    assert!(!read.text.is_empty() || !read.images.is_empty(), "{read:?}");

    // A long call is cancelled: the call returns at once and the connection still works.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = std::time::Instant::now();
    let long = m
        .call_tool(
            "legacy",
            "trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
            &cancel,
        )
        .await;
    assert_eq!(long.unwrap_err(), CallError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    let again = m
        .call_tool("legacy", "echo", json!({"message": "after cancel"}), &none)
        .await
        .unwrap();
    assert!(again.text.contains("after cancel"));
    m.shutdown();
    let _ = child.kill().await;
}

/// A server whose SSE stream names a message endpoint on another origin is refused: the
/// configured headers (credentials) are never sent elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_endpoint_on_another_origin_is_refused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = [0u8; 2048];
            let _ = socket.read(&mut buf).await;
            let body = "event: endpoint\ndata: http://127.0.0.2:9/steal\n\n";
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
    let config = ServerConfig::Sse {
        url: format!("http://127.0.0.1:{port}/sse"),
        headers: IndexMap::new(),
    };
    let (m, _views) = manager(vec![server("sly", config)]);
    let status = m.wait_ready("sly", Duration::from_secs(20)).await.unwrap();
    let text = strata_mcp::describe(&status);
    assert!(
        matches!(status, McpConnectionStatus::Failed { .. }),
        "{text}"
    );
    assert!(text.contains("another origin"), "{text}");
    m.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_server_reads_a_file_of_its_temporary_root() {
    let Some(script) = npm_server("server-filesystem", "filesystem_server") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("note.txt"), "strata was here\n").unwrap();
    let (m, _views) = manager(vec![server(
        "fs",
        stdio(
            "node",
            &[script.to_str().unwrap(), root_path.to_str().unwrap()],
        ),
    )]);
    let view = connected(&m, "fs").await;
    let tool = ["read_text_file", "read_file"]
        .into_iter()
        .find(|n| view.tools.iter().any(|t| t.name == *n))
        .expect("a read tool");
    let none = CancellationToken::new();
    let out = m
        .call_tool(
            "fs",
            tool,
            json!({"path": root_path.join("note.txt")}),
            &none,
        )
        .await
        .unwrap();
    assert!(out.text.contains("strata was here"), "{}", out.text);
    let outside = m
        .call_tool("fs", tool, json!({"path": "/etc/hostname"}), &none)
        .await
        .unwrap();
    assert!(
        outside.is_error,
        "a path outside the root is refused: {}",
        outside.text
    );
    m.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_crashing_mid_call_errors_then_reconnects_and_the_next_call_works() {
    if !which("node") {
        eprintln!("crashing server: skipped, node is not installed");
        return;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crashy.js");
    let starts = tempfile::NamedTempFile::new().unwrap();
    let mut config = stdio("node", &[script.to_str().unwrap()]);
    if let ServerConfig::Stdio { env, .. } = &mut config {
        env.insert("CRASHY_STARTS".into(), starts.path().display().to_string());
    }
    let (m, views) = manager(vec![server("crashy", config)]);
    connected(&m, "crashy").await;
    let none = CancellationToken::new();
    let err = m
        .call_tool("crashy", "crash", json!({}), &none)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Failed { .. }), "{err:?}");
    // Reconnected with backoff: a second start, connected again, and the call works.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let started = std::fs::read_to_string(starts.path())
            .unwrap()
            .lines()
            .count();
        if started >= 2
            && m.wait_ready("crashy", Duration::from_secs(1)).await
                == Some(McpConnectionStatus::Connected)
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not reconnected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ok = m.call_tool("crashy", "ok", json!({}), &none).await.unwrap();
    assert_eq!(ok.text, "fine");
    let seen = views
        .lock()
        .unwrap()
        .iter()
        .any(|v| v.client.reconnect_attempts >= 1);
    assert!(
        seen,
        "the reconnection attempt was visible in the published status"
    );
    m.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_starts_is_failed_with_its_stderr_tail() {
    let (m, _views) = manager(vec![
        server(
            "broken",
            stdio("sh", &["-c", "echo 'fatal: no licence key' >&2; exit 3"]),
        ),
        server("absent", stdio("strata-no-such-program-xyz", &[])),
        server("unset", stdio("${STRATA_TEST_UNSET_VAR_Q}", &[])),
    ]);
    let status = m
        .wait_ready("broken", Duration::from_secs(10))
        .await
        .unwrap();
    let McpConnectionStatus::Failed { stderr_tail, .. } = &status else {
        panic!("{status:?}");
    };
    assert!(
        stderr_tail
            .as_deref()
            .unwrap_or_default()
            .contains("fatal: no licence key"),
        "{status:?}"
    );
    let absent = m
        .wait_ready("absent", Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        strata_mcp::describe(&absent).contains("could not be started"),
        "{absent:?}"
    );
    let unset = m
        .wait_ready("unset", Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        strata_mcp::describe(&unset).contains("STRATA_TEST_UNSET_VAR_Q"),
        "{unset:?}"
    );
    let err = m
        .call_tool("broken", "x", json!({}), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::NotConnected { .. }), "{err:?}");
}

/// Issue 25 item 2: start-up is bounded as a whole by the start-up timeout
/// (`MCP_TIMEOUT`): a server that answers `initialize` but never lists its tools is not
/// left pending (a turn would wait for it) but failed, the status naming the limit;
/// `pending` lists the servers still starting meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i25_2_a_server_that_never_lists_its_tools_fails_after_the_startup_timeout() {
    if !which("node") {
        eprintln!("mute listing: skipped, node is not installed");
        return;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crashy.js");
    let mut config = stdio("node", &[script.to_str().unwrap()]);
    if let ServerConfig::Stdio { env, .. } = &mut config {
        env.insert("CRASHY_MUTE_LIST".into(), "1".into());
    }
    let mut options = ManagerOptions::from_env(std::env::temp_dir());
    options.connect_timeout = Duration::from_millis(1500);
    let m = McpManager::new(vec![server("mute", config)], options, Arc::new(|_| {}));
    assert_eq!(m.startup_timeout(), Duration::from_millis(1500));
    m.start();
    assert_eq!(m.pending(), vec![SmolStr::new("mute")]);
    let status = m.wait_ready("mute", Duration::from_secs(20)).await.unwrap();
    let described = strata_mcp::describe(&status);
    assert!(
        described.contains("did not list its tools within 1500 ms")
            && described.contains("MCP_TIMEOUT"),
        "{described}"
    );
    assert!(m.pending().is_empty());
    m.shutdown();
}
