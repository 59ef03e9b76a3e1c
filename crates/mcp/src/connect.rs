//! Starting one connection over the SDK: a child process (stdout/stdin, its stderr kept
//! as a short tail for the status line), streamable HTTP, or the legacy HTTP+SSE
//! transport ([`crate::sse`]); then listing what the server offers, converted to the app
//! state's shapes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use smol_str::SmolStr;
use strata_state::{McpCapabilities, McpCommand, McpResource, McpServerInfo, McpTool};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::config::ServerConfig;
use crate::naming;
use crate::sse::SseTransport;

/// How many lines of a server's stderr are kept for its status.
const STDERR_TAIL_LINES: usize = 20;

/// The last lines a child process wrote to stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    done: Arc<tokio::sync::Notify>,
    finished: Arc<std::sync::atomic::AtomicBool>,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self
            .lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The tail, one string; `None` when nothing was written.
    pub(crate) fn text(&self) -> Option<Arc<str>> {
        let lines = self
            .lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (!lines.is_empty()).then(|| Arc::from(lines.iter().cloned().collect::<Vec<_>>().join("\n")))
    }

    /// Waits (at most `limit`) for the process's stderr to close, so a server that died
    /// at start has its last words in the tail before the status is published.
    pub(crate) async fn settle(&self, limit: Duration) {
        if self.finished.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let _ = tokio::time::timeout(limit, self.done.notified()).await;
    }
}

/// A connection being made failed.
#[derive(Debug)]
pub(crate) enum ConnectFailure {
    /// The server asks for authorization first.
    NeedsAuth(String),
    /// Anything else, with the reason.
    Failed(String),
}

/// A live connection.
pub(crate) struct Connection {
    pub(crate) running: RunningService<RoleClient, ()>,
    pub(crate) stderr: StderrTail,
}

/// Installs the ring crypto provider for the SDK's TLS (rmcp's reqwest is built without
/// one; ours already links ring). A provider installed earlier wins, which is fine.
fn ensure_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Connects to a server whose configuration is already expanded.
pub(crate) async fn connect(
    config: &ServerConfig,
    cwd: &std::path::Path,
    timeout: Duration,
) -> Result<Connection, (ConnectFailure, StderrTail)> {
    let stderr = StderrTail::default();
    let attempt = async {
        match config {
            ServerConfig::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env).current_dir(cwd).kill_on_drop(true);
                let (proc, err) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| {
                        ConnectFailure::Failed(format!("{command} could not be started: {e}"))
                    })?;
                if let Some(err) = err {
                    let tail = stderr.clone();
                    tokio::spawn(async move {
                        let mut lines = BufReader::new(err).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tail.push(line);
                        }
                        tail.finished
                            .store(true, std::sync::atomic::Ordering::Release);
                        tail.done.notify_waiters();
                    });
                } else {
                    stderr
                        .finished
                        .store(true, std::sync::atomic::Ordering::Release);
                }
                ().serve(proc)
                    .await
                    .map_err(|e| ConnectFailure::Failed(e.to_string()))
            }
            ServerConfig::Http { url, headers } => {
                ensure_crypto_provider();
                let mut custom = std::collections::HashMap::new();
                let mut auth = None;
                for (k, v) in headers {
                    if k.eq_ignore_ascii_case("authorization") {
                        // The SDK adds the bearer prefix itself.
                        auth = Some(v.strip_prefix("Bearer ").unwrap_or(v).to_owned());
                        continue;
                    }
                    let name = http::HeaderName::try_from(k.as_str())
                        .map_err(|e| ConnectFailure::Failed(format!("header {k:?}: {e}")))?;
                    let value = http::HeaderValue::try_from(v.as_str())
                        .map_err(|e| ConnectFailure::Failed(format!("header {k:?}: {e}")))?;
                    custom.insert(name, value);
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                if let Some(auth) = auth {
                    config = config.auth_header(auth);
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                ().serve(transport)
                    .await
                    .map_err(|e| match e.auth_challenge() {
                        Some(challenge) => ConnectFailure::NeedsAuth(format!(
                            "the server asks for authorization ({challenge})"
                        )),
                        None => ConnectFailure::Failed(e.to_string()),
                    })
            }
            ServerConfig::Sse { url, headers } => {
                ensure_crypto_provider();
                let mut map = http::HeaderMap::new();
                for (k, v) in headers {
                    let name = http::HeaderName::try_from(k.as_str())
                        .map_err(|e| ConnectFailure::Failed(format!("header {k:?}: {e}")))?;
                    let value = http::HeaderValue::try_from(v.as_str())
                        .map_err(|e| ConnectFailure::Failed(format!("header {k:?}: {e}")))?;
                    map.insert(name, value);
                }
                let transport = SseTransport::connect(url, map, timeout)
                    .await
                    .map_err(|e| {
                        if e.needs_auth() {
                            ConnectFailure::NeedsAuth(format!(
                                "the server asks for authorization ({e})"
                            ))
                        } else {
                            ConnectFailure::Failed(format!("{url}: {e}"))
                        }
                    })?;
                ().serve(transport)
                    .await
                    .map_err(|e| ConnectFailure::Failed(e.to_string()))
            }
        }
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(running)) => Ok(Connection { running, stderr }),
        Ok(Err(failure)) => {
            stderr.settle(Duration::from_millis(300)).await;
            Err((failure, stderr))
        }
        Err(_) => Err((
            ConnectFailure::Failed(format!(
                "did not answer initialize within {}",
                startup_limit(timeout)
            )),
            stderr,
        )),
    }
}

/// The start-up limit in words for a failure status, saying how to change it.
pub(crate) fn startup_limit(timeout: Duration) -> String {
    format!(
        "{} ms (MCP_TIMEOUT; set it higher for a server slow to start)",
        timeout.as_millis()
    )
}

/// What a connected server offers, in the app state's shapes.
#[derive(Default)]
pub(crate) struct Listing {
    pub(crate) info: Option<McpServerInfo>,
    pub(crate) capabilities: McpCapabilities,
    pub(crate) tools: Vec<Arc<McpTool>>,
    pub(crate) commands: Vec<Arc<McpCommand>>,
    pub(crate) resources: Vec<Arc<McpResource>>,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Lists tools, prompts and resources of the kinds the server declared.
pub(crate) async fn list(server: &str, peer: &Peer<RoleClient>) -> Result<Listing, String> {
    let info = peer
        .peer_info()
        .and_then(|i| serde_json::to_value(&*i).ok())
        .unwrap_or(Value::Null);
    let caps = info.get("capabilities").cloned().unwrap_or(Value::Null);
    let capabilities = McpCapabilities {
        tools: caps.get("tools").is_some(),
        prompts: caps.get("prompts").is_some(),
        resources: caps.get("resources").is_some(),
    };
    let server_info = info.get("serverInfo").map(|s| McpServerInfo {
        name: SmolStr::from(text(s, "name")),
        version: SmolStr::from(text(s, "version")),
        instructions: info
            .get("instructions")
            .and_then(Value::as_str)
            .map(Arc::from),
    });
    let mut listing = Listing {
        info: server_info,
        capabilities,
        ..Listing::default()
    };
    let name = SmolStr::from(server);
    if capabilities.tools {
        let tools = peer
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        for tool in tools {
            let v = serde_json::to_value(&tool).unwrap_or(Value::Null);
            let tool_name = text(&v, "name");
            listing.tools.push(Arc::new(McpTool {
                server: name.clone(),
                qualified_name: naming::tool_name(server, &tool_name).into(),
                name: tool_name.into(),
                description: text(&v, "description").into(),
                input_schema: Arc::new(
                    v.get("inputSchema")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                ),
                read_only: v
                    .pointer("/annotations/readOnlyHint")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }));
        }
    }
    if capabilities.prompts {
        let prompts = peer
            .list_all_prompts()
            .await
            .map_err(|e| format!("prompts/list: {e}"))?;
        for prompt in prompts {
            let v = serde_json::to_value(&prompt).unwrap_or(Value::Null);
            let arguments: Vec<SmolStr> = v
                .get("arguments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| SmolStr::from(text(a, "name")))
                .collect();
            listing.commands.push(Arc::new(McpCommand {
                server: name.clone(),
                name: text(&v, "name").into(),
                description: text(&v, "description").into(),
                arguments: arguments.into(),
            }));
        }
    }
    if capabilities.resources {
        let resources = peer
            .list_all_resources()
            .await
            .map_err(|e| format!("resources/list: {e}"))?;
        for resource in resources {
            let v = serde_json::to_value(&resource).unwrap_or(Value::Null);
            listing.resources.push(Arc::new(McpResource {
                server: name.clone(),
                uri: text(&v, "uri").into(),
                name: text(&v, "name").into(),
                mime_type: v.get("mimeType").and_then(Value::as_str).map(SmolStr::from),
                description: v.get("description").and_then(Value::as_str).map(Arc::from),
            }));
        }
    }
    Ok(listing)
}
