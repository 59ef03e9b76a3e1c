//! The connection manager: one task per configured server that connects, lists, watches
//! the connection and reconnects with backoff after a crash; tool calls, resource reads
//! and prompt fetches go through it.
//!
//! The manager owns the live SDK handles (runtime state, AS-2); everything a reader may
//! look at — status, tools, prompts, resources — is published through a [`StatusSink`]
//! as a [`ServerView`], which the engine applies to the app state's `mcp` domain. Start
//! never blocks: [`McpManager::start`] returns at once and a turn that needs a server
//! waits for it with [`McpManager::wait_ready`].

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use indexmap::IndexMap;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;
use smol_str::SmolStr;
use strata_state::{
    McpClient, McpCommand, McpConfigScope, McpConnectionStatus, McpResource, McpTool,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::connect::{self, ConnectFailure, Listing};
use crate::content::{self, CallOutput};

/// One server to manage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfiguredServer {
    /// Its name.
    pub name: SmolStr,
    /// Where it was declared.
    pub scope: McpConfigScope,
    /// How to reach it (variables not yet expanded).
    pub config: ServerConfig,
    /// Why it must not be started (a project server not approved yet); shown as its
    /// failure reason.
    pub blocked: Option<String>,
    /// Turned off in the configuration.
    pub disabled: bool,
}

/// Everything readers know about one server, published on every change.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerView {
    /// The server and its status.
    pub client: McpClient,
    /// Its tools (empty unless connected).
    pub tools: Vec<Arc<McpTool>>,
    /// Its prompts.
    pub commands: Vec<Arc<McpCommand>>,
    /// Its resources.
    pub resources: Vec<Arc<McpResource>>,
}

/// Where published views go (the engine applies them to the store).
pub type StatusSink = Arc<dyn Fn(ServerView) + Send + Sync>;

/// Looks up an environment variable for `${VAR}` expansion.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Timeouts and the reconnect policy.
#[derive(Clone)]
pub struct ManagerOptions {
    /// How long a server may take to answer `initialize` (`MCP_TIMEOUT`, ms).
    pub connect_timeout: Duration,
    /// How long one tool call may run (`MCP_TOOL_TIMEOUT`, ms).
    pub call_timeout: Duration,
    /// The first reconnect delay; doubled per attempt, capped at 30 s.
    pub backoff_initial: Duration,
    /// Reconnect attempts after a drop before the server is marked failed.
    pub max_reconnect_attempts: u32,
    /// The working directory of stdio servers.
    pub cwd: std::path::PathBuf,
    /// Variable lookup for `${VAR}` expansion.
    pub env: EnvLookup,
}

impl ManagerOptions {
    /// The defaults, with `MCP_TIMEOUT` / `MCP_TOOL_TIMEOUT` (milliseconds) from the
    /// process environment as the reference agent reads them.
    pub fn from_env(cwd: std::path::PathBuf) -> Self {
        let ms = |key: &str, default: u64| {
            std::env::var(key)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(Duration::from_millis(default), Duration::from_millis)
        };
        Self {
            connect_timeout: ms("MCP_TIMEOUT", 30_000),
            call_timeout: ms("MCP_TOOL_TIMEOUT", 100_000_000),
            backoff_initial: Duration::from_millis(500),
            max_reconnect_attempts: 5,
            cwd,
            env: Arc::new(|k| std::env::var(k).ok()),
        }
    }
}

/// Why a call through the manager did not produce a result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No server of that name is configured.
    #[error("no MCP server named {0:?} is configured")]
    UnknownServer(String),
    /// The server is not connected (with its status).
    #[error("MCP server {server:?} is not connected ({status})")]
    NotConnected {
        /// The server.
        server: String,
        /// Its status, for the message.
        status: String,
    },
    /// The call was cancelled (the server was sent `notifications/cancelled`).
    #[error("the call was cancelled")]
    Cancelled,
    /// The call ran past its timeout (the server was sent `notifications/cancelled`).
    #[error("MCP server {server:?} did not answer within {seconds} s")]
    Timeout {
        /// The server.
        server: String,
        /// The timeout.
        seconds: u64,
    },
    /// The server or the connection failed the call.
    #[error("MCP server {server:?}: {message}")]
    Failed {
        /// The server.
        server: String,
        /// What happened.
        message: String,
    },
}

struct Slot {
    def: ConfiguredServer,
    peer: Option<Peer<RoleClient>>,
    listing: Arc<Listing>,
    status: watch::Sender<McpConnectionStatus>,
    reconnect_attempts: u32,
    stop: CancellationToken,
}

struct Inner {
    slots: Mutex<IndexMap<SmolStr, Slot>>,
    sink: StatusSink,
    options: ManagerOptions,
    /// Goes up with every view published: what readers build from the views (the
    /// tool list of a request) is rebuilt only when it moved.
    generation: std::sync::atomic::AtomicU64,
}

/// The MCP connections of one session. Cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.names())
            .finish()
    }
}

fn status_word(status: &McpConnectionStatus) -> &'static str {
    match status {
        McpConnectionStatus::Pending => "pending",
        McpConnectionStatus::Connected => "connected",
        McpConnectionStatus::NeedsAuth => "needs-auth",
        McpConnectionStatus::Failed { .. } => "failed",
        McpConnectionStatus::Disabled => "disabled",
    }
}

/// The status name the SDK stream uses (`system/init`'s `mcp_servers`, `mcp_status`).
pub fn status_name(status: &McpConnectionStatus) -> &'static str {
    status_word(status)
}

impl McpManager {
    /// A manager for `servers` (nothing started yet); views go to `sink`.
    pub fn new(servers: Vec<ConfiguredServer>, options: ManagerOptions, sink: StatusSink) -> Self {
        let slots = servers
            .into_iter()
            .map(|def| {
                let initial = if def.disabled {
                    McpConnectionStatus::Disabled
                } else if let Some(reason) = &def.blocked {
                    McpConnectionStatus::Failed {
                        error: Arc::from(reason.as_str()),
                        stderr_tail: None,
                    }
                } else {
                    McpConnectionStatus::Pending
                };
                let slot = Slot {
                    def: def.clone(),
                    peer: None,
                    listing: Arc::default(),
                    status: watch::channel(initial).0,
                    reconnect_attempts: 0,
                    stop: CancellationToken::new(),
                };
                (def.name, slot)
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                slots: Mutex::new(slots),
                sink,
                options,
                generation: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    fn slots(&self) -> MutexGuard<'_, IndexMap<SmolStr, Slot>> {
        self.inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The configured server names, in order.
    pub fn names(&self) -> Vec<SmolStr> {
        self.slots().keys().cloned().collect()
    }

    /// Publishes every server's view and starts every enabled, unblocked server, in
    /// parallel, without waiting for any. Needs a Tokio runtime.
    pub fn start(&self) {
        let names = self.names();
        for name in &names {
            self.publish(name);
        }
        for name in names {
            let startable = self
                .slots()
                .get(&name)
                .is_some_and(|s| matches!(*s.status.borrow(), McpConnectionStatus::Pending));
            if startable {
                self.spawn(&name);
            }
        }
    }

    /// The current view of every server.
    pub fn views(&self) -> Vec<ServerView> {
        self.names().iter().filter_map(|n| self.view(n)).collect()
    }

    fn view(&self, name: &str) -> Option<ServerView> {
        let slots = self.slots();
        let slot = slots.get(name)?;
        let status = slot.status.borrow().clone();
        let connected = status == McpConnectionStatus::Connected;
        let listing = &slot.listing;
        Some(ServerView {
            client: McpClient {
                name: slot.def.name.clone(),
                transport: slot.def.config.transport(),
                scope: slot.def.scope,
                status,
                server_info: listing.info.clone(),
                capabilities: listing.capabilities,
                reconnect_attempts: slot.reconnect_attempts,
            },
            tools: if connected {
                listing.tools.clone()
            } else {
                Vec::new()
            },
            commands: if connected {
                listing.commands.clone()
            } else {
                Vec::new()
            },
            resources: if connected {
                listing.resources.clone()
            } else {
                Vec::new()
            },
        })
    }

    /// What readers see of the servers changed since [`generation`](Self::generation)
    /// last returned this value, if it returns another: status, tools, prompts or
    /// resources of any server.
    pub fn generation(&self) -> u64 {
        self.inner
            .generation
            .load(std::sync::atomic::Ordering::Acquire)
    }

    fn publish(&self, name: &str) {
        // Callers change the slot first: a reader that read the number before this
        // and the views after may cache new views under the old number, which costs
        // one rebuild, never a stale list.
        self.inner
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if let Some(view) = self.view(name) {
            (self.inner.sink)(view);
        }
    }

    fn set_status(&self, name: &str, status: McpConnectionStatus, attempts: u32) {
        // The readers' view is published before the waiters wake: a turn or a one-prompt
        // run's `system/init` that waited for the server reads its status from the
        // store, which said `pending` still when the waiter ran first (a flaky
        // `system/init` under load).
        if let Some(slot) = self.slots().get_mut(name) {
            slot.reconnect_attempts = attempts;
            if status != McpConnectionStatus::Connected {
                slot.peer = None;
            }
            slot.status.send_if_modified(|current| {
                *current = status;
                false
            });
        }
        self.publish(name);
        if let Some(slot) = self.slots().get(name) {
            slot.status.send_modify(|_| {});
        }
    }

    fn spawn(&self, name: &str) {
        let stop = CancellationToken::new();
        if let Some(slot) = self.slots().get_mut(name) {
            slot.stop.cancel();
            slot.stop = stop.clone();
        } else {
            return;
        }
        let this = self.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = this.run(&name, stop.clone()) => {}
            }
        });
    }

    /// One server's life: connect, list, watch, reconnect with backoff after a drop.
    async fn run(&self, name: &str, stop: CancellationToken) {
        let Some(def) = self.slots().get(name).map(|s| s.def.clone()) else {
            return;
        };
        let options = self.inner.options.clone();
        let mut attempts: u32 = 0;
        let mut was_connected = false;
        loop {
            self.set_status(name, McpConnectionStatus::Pending, attempts);
            let failure = match def.config.expanded(&*options.env) {
                Err(missing) => Some((ConnectFailure::Failed(missing.to_string()), None)),
                Ok(config) => {
                    // Start-up — connecting, `initialize` and the first listing — is
                    // bounded as a whole, so a server is pending at most this long.
                    let deadline = tokio::time::Instant::now() + options.connect_timeout;
                    match connect::connect(&config, &options.cwd, options.connect_timeout).await {
                        Err((failure, tail)) => Some((failure, tail.text())),
                        Ok(connection) => {
                            let peer = connection.running.peer().clone();
                            let listed =
                                tokio::time::timeout_at(deadline, connect::list(name, &peer))
                                    .await
                                    .unwrap_or_else(|_| {
                                        Err(format!(
                                            "did not list its tools within {}",
                                            connect::startup_limit(options.connect_timeout)
                                        ))
                                    });
                            match listed {
                                Err(e) => {
                                    Some((ConnectFailure::Failed(e), connection.stderr.text()))
                                }
                                Ok(listing) => {
                                    if let Some(slot) = self.slots().get_mut(name) {
                                        slot.listing = Arc::new(listing);
                                        slot.peer = Some(peer);
                                    }
                                    attempts = 0;
                                    was_connected = true;
                                    self.set_status(name, McpConnectionStatus::Connected, 0);
                                    tracing::debug!(server = name, "MCP server connected");
                                    let token = connection.running.cancellation_token();
                                    tokio::select! {
                                        () = stop.cancelled() => {
                                            token.cancel();
                                            return;
                                        }
                                        _ = connection.running.waiting() => {}
                                    }
                                    connection.stderr.settle(Duration::from_millis(200)).await;
                                    tracing::warn!(
                                        server = name,
                                        "MCP server disconnected; reconnecting"
                                    );
                                    Some((
                                        ConnectFailure::Failed("the server disconnected".into()),
                                        connection.stderr.text(),
                                    ))
                                }
                            }
                        }
                    }
                }
            };
            let Some((failure, stderr_tail)) = failure else {
                continue;
            };
            let (status, retry) = match failure {
                ConnectFailure::NeedsAuth(reason) => {
                    tracing::warn!(server = name, "{reason}");
                    (McpConnectionStatus::NeedsAuth, false)
                }
                ConnectFailure::Failed(reason) => {
                    // A server that never came up is not retried (its status says why
                    // and `mcp_reconnect` tries again); one that dropped is.
                    let retry = was_connected && attempts < options.max_reconnect_attempts;
                    let error = if was_connected && !retry {
                        format!("{reason}; gave up after {attempts} reconnection attempts")
                    } else {
                        reason
                    };
                    (
                        McpConnectionStatus::Failed {
                            error: Arc::from(error),
                            stderr_tail,
                        },
                        retry,
                    )
                }
            };
            if !retry {
                self.set_status(name, status, attempts);
                return;
            }
            attempts += 1;
            self.set_status(name, McpConnectionStatus::Pending, attempts);
            let delay = options
                .backoff_initial
                .saturating_mul(1 << (attempts - 1).min(6))
                .min(Duration::from_secs(30));
            tokio::time::sleep(delay).await;
        }
    }

    /// Waits until `server` is no longer pending, at most `timeout`; its status then.
    pub async fn wait_ready(&self, server: &str, timeout: Duration) -> Option<McpConnectionStatus> {
        let mut rx = self.slots().get(server)?.status.subscribe();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|s| *s != McpConnectionStatus::Pending))
            .await;
        let status = rx.borrow().clone();
        Some(status)
    }

    /// Waits until no server is pending, at most `timeout` in all (a turn's first
    /// request, which needs the tool list).
    pub async fn wait_all_ready(&self, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        for name in self.names() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let _ = self.wait_ready(&name, left).await;
        }
    }

    /// The servers still pending (connecting, or waiting to reconnect), in order.
    pub fn pending(&self) -> Vec<SmolStr> {
        self.slots()
            .iter()
            .filter(|(_, s)| *s.status.borrow() == McpConnectionStatus::Pending)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// How long a server may take to start (`MCP_TIMEOUT`): connecting, `initialize`
    /// and the first listing. A turn waits at most this long for servers still
    /// connecting.
    pub fn startup_timeout(&self) -> Duration {
        self.inner.options.connect_timeout
    }

    /// True when some server is still pending.
    pub fn any_pending(&self) -> bool {
        self.slots()
            .values()
            .any(|s| *s.status.borrow() == McpConnectionStatus::Pending)
    }

    /// The peer of a connected server, waiting for a pending one (connect timeout).
    async fn peer(&self, server: &str) -> Result<Peer<RoleClient>, CallError> {
        let status = self
            .wait_ready(server, self.inner.options.connect_timeout)
            .await
            .ok_or_else(|| CallError::UnknownServer(server.to_owned()))?;
        let peer = self.slots().get(server).and_then(|s| s.peer.clone());
        peer.ok_or_else(|| CallError::NotConnected {
            server: server.to_owned(),
            status: describe(&status),
        })
    }

    /// Runs `fut` until it finishes, `cancel` fires or the call timeout passes.
    /// Dropping the SDK's request future sends `notifications/cancelled` to the server.
    async fn bounded<T>(
        &self,
        server: &str,
        cancel: &CancellationToken,
        fut: impl std::future::Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, CallError> {
        let timeout = self.inner.options.call_timeout;
        tokio::select! {
            () = cancel.cancelled() => Err(CallError::Cancelled),
            r = tokio::time::timeout(timeout, fut) => match r {
                Err(_) => Err(CallError::Timeout { server: server.to_owned(), seconds: timeout.as_secs() }),
                Ok(Err(e)) => Err(CallError::Failed { server: server.to_owned(), message: e.to_string() }),
                Ok(Ok(v)) => Ok(v),
            }
        }
    }

    /// Calls `tool` of `server` with `arguments` (a JSON object).
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, CallError> {
        let peer = self.peer(server).await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let result = self.bounded(server, cancel, peer.call_tool(params)).await?;
        Ok(content::convert_call_result(
            serde_json::to_value(&result).unwrap_or(Value::Null),
        ))
    }

    /// Reads resource `uri` of `server`; the contents as text and images.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, CallError> {
        let peer = self.peer(server).await?;
        let result = self
            .bounded(
                server,
                cancel,
                peer.read_resource(ReadResourceRequestParams::new(uri)),
            )
            .await?;
        let raw = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut out = CallOutput::default();
        let mut parts = Vec::new();
        for item in raw
            .get("contents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            content::resource_contents(item, &mut parts, &mut out.images);
        }
        out.text = parts.join("\n");
        out.raw = raw;
        Ok(out)
    }

    /// Fetches prompt `name` of `server` with `arguments`; its messages' text, in order
    /// (what a `/mcp__server__prompt` command sends as the user's prompt).
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: serde_json::Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<String, CallError> {
        let peer = self.peer(server).await?;
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params = params.with_arguments(arguments);
        }
        let result = self
            .bounded(server, cancel, peer.get_prompt(params))
            .await?;
        let raw = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut parts = Vec::new();
        for message in raw
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let item = message.get("content").unwrap_or(&Value::Null);
            match item.get("type").and_then(Value::as_str) {
                Some("text") => parts.push(
                    item.get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                ),
                Some("resource") => {
                    let mut images = Vec::new();
                    content::resource_contents(
                        item.get("resource").unwrap_or(&Value::Null),
                        &mut parts,
                        &mut images,
                    );
                }
                _ => {}
            }
        }
        Ok(parts.join("\n\n"))
    }

    /// Stops and starts `server` again (control request `mcp_reconnect`, `/mcp`). A
    /// disabled server stays disabled.
    pub fn reconnect(&self, server: &str) -> Result<(), CallError> {
        {
            let mut slots = self.slots();
            let slot = slots
                .get_mut(server)
                .ok_or_else(|| CallError::UnknownServer(server.to_owned()))?;
            if slot.def.disabled {
                return Err(CallError::NotConnected {
                    server: server.to_owned(),
                    status: "disabled; enable it first".into(),
                });
            }
            if let Some(reason) = &slot.def.blocked {
                return Err(CallError::NotConnected {
                    server: server.to_owned(),
                    status: reason.clone(),
                });
            }
            slot.stop.cancel();
            slot.peer = None;
            slot.status.send_replace(McpConnectionStatus::Pending);
        }
        self.publish(server);
        self.spawn(server);
        Ok(())
    }

    /// Changes why `server` must not be started (a project server's approval): `None`
    /// lifts the block and starts it now (unless it is disabled); `Some(reason)` keeps
    /// it stopped with that reason as its failure status. `Err` for an unknown server.
    pub fn set_blocked(&self, server: &str, reason: Option<String>) -> Result<(), CallError> {
        let start = {
            let mut slots = self.slots();
            let slot = slots
                .get_mut(server)
                .ok_or_else(|| CallError::UnknownServer(server.to_owned()))?;
            slot.def.blocked.clone_from(&reason);
            match &reason {
                Some(why) => {
                    slot.stop.cancel();
                    slot.peer = None;
                    slot.status.send_replace(McpConnectionStatus::Failed {
                        error: Arc::from(why.as_str()),
                        stderr_tail: None,
                    });
                    false
                }
                None => !slot.def.disabled,
            }
        };
        if start {
            self.reconnect(server)
        } else {
            self.publish(server);
            Ok(())
        }
    }

    /// Enables or disables `server` for this session (control request `mcp_toggle`).
    pub fn set_enabled(&self, server: &str, enabled: bool) -> Result<(), CallError> {
        {
            let mut slots = self.slots();
            let slot = slots
                .get_mut(server)
                .ok_or_else(|| CallError::UnknownServer(server.to_owned()))?;
            slot.def.disabled = !enabled;
            if !enabled {
                slot.stop.cancel();
                slot.peer = None;
                slot.status.send_replace(McpConnectionStatus::Disabled);
            }
        }
        if enabled {
            self.reconnect(server)
        } else {
            self.publish(server);
            Ok(())
        }
    }

    /// Adds servers to a running session (the SDK's `initialize` `mcpServers`): a name
    /// already configured is replaced (its connection stopped); each is started at once.
    pub fn add_servers(&self, servers: Vec<ConfiguredServer>) {
        let mut started = Vec::new();
        {
            let mut slots = self.slots();
            for def in servers {
                if let Some(old) = slots.get(&def.name) {
                    old.stop.cancel();
                }
                let name = def.name.clone();
                slots.insert(
                    name.clone(),
                    Slot {
                        def,
                        peer: None,
                        listing: Arc::default(),
                        status: watch::channel(McpConnectionStatus::Pending).0,
                        reconnect_attempts: 0,
                        stop: CancellationToken::new(),
                    },
                );
                started.push(name);
            }
        }
        for name in started {
            self.publish(&name);
            self.spawn(&name);
        }
    }

    /// Stops every connection (session end).
    pub fn shutdown(&self) {
        for slot in self.slots().values_mut() {
            slot.stop.cancel();
            slot.peer = None;
        }
    }
}

/// A status in words, for messages.
pub fn describe(status: &McpConnectionStatus) -> String {
    match status {
        McpConnectionStatus::Failed { error, stderr_tail } => match stderr_tail {
            Some(tail) => format!("failed: {error}; stderr: {tail}"),
            None => format!("failed: {error}"),
        },
        other => status_word(other).to_owned(),
    }
}
