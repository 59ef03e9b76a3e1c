//! The session's MCP servers: loaded from every configuration source at open, started
//! in parallel without waiting, their status and offerings applied to the app state's
//! `mcp` domain as the manager publishes them (the store is what `system/init`,
//! `mcp_status` and a UI read), and their tools added to each turn's tool set.
//!
//! A turn — headless, SDK or UI alike — that starts while some server is still
//! connecting waits for it before its first request, at most the servers' start-up
//! timeout (`MCP_TIMEOUT`, milliseconds; 30 s by default, the reference agent's
//! variable and default), while the store's `mcp.turn_waits_for` names the server
//! waited for (a UI's spinner shows it). A server not up by then has failed with its
//! reason as its status, and the turn goes on without it. The tools are read again
//! before every request of a turn, so a server that connects during a turn (a
//! reconnect, `mcp_reconnect`, `initialize`'s servers) offers its tools from the next
//! request on.

use std::sync::Arc;

use serde_json::{Value, json};
use smol_str::SmolStr;
use strata_config::GlobalConfigFile;
use strata_mcp::{ManagerOptions, McpManager, ServerView, sources};
use strata_protocol::message::{ContentBlock, Message, MessageContent};
use strata_state::{AppState, McpConnectionStatus};
use strata_store::Store;
use tokio_util::sync::CancellationToken;

use super::Inner;
use crate::tools::ToolRegistry;

/// Applies one server's view to the store: its client entry, and its tools, prompts
/// and resources replacing the ones it had.
fn apply(store: &Store<AppState>, view: ServerView) {
    let _ = store.update(|s| {
        let name = view.client.name.clone();
        if s.mcp.clients.get(&name).map(|c| &**c) != Some(&view.client) {
            s.mcp
                .clients
                .insert(name.clone(), Arc::new(view.client.clone()));
        }
        let same_tools = s.mcp.tools_of(&name).count() == view.tools.len()
            && s.mcp.tools_of(&name).zip(&view.tools).all(|(a, b)| a == b);
        if !same_tools {
            s.mcp.tools.retain(|t| t.server != name);
            s.mcp.tools.extend(view.tools.iter().cloned());
        }
        let commands_now: Vec<_> = s
            .mcp
            .commands
            .iter()
            .filter(|c| c.server == name)
            .cloned()
            .collect();
        if commands_now != view.commands {
            s.mcp.commands.retain(|c| c.server != name);
            s.mcp.commands.extend(view.commands.iter().cloned());
        }
        let resources: imbl::Vector<_> = view.resources.iter().cloned().collect();
        if s.mcp.resources.get(&name) != Some(&resources) {
            if resources.is_empty() {
                s.mcp.resources.remove(&name);
            } else {
                s.mcp.resources.insert(name, resources);
            }
        }
    });
}

/// Loads the servers of every source, starts them (in the background) and returns the
/// manager. Configuration errors become warnings.
pub(super) fn start(
    store: &Store<AppState>,
    global: &GlobalConfigFile,
    project_root: &std::path::Path,
    cwd: &std::path::Path,
    flags: &[String],
    strict: bool,
    warnings: &mut Vec<String>,
) -> McpManager {
    let loaded = sources::load(sources::Inputs {
        project_root,
        global,
        flags,
        strict,
        sdk: None,
    });
    warnings.extend(
        loaded
            .errors
            .iter()
            .map(|e| format!("MCP configuration: {e}")),
    );
    let sink_store = store.clone();
    let manager = McpManager::new(
        loaded.servers,
        ManagerOptions::from_env(cwd.to_path_buf()),
        Arc::new(move |view| apply(&sink_store, view)),
    );
    if tokio::runtime::Handle::try_current().is_ok() {
        manager.start();
    }
    manager
}

/// A server's status as the SDK stream reports it.
pub(super) fn status_json(name: &SmolStr, client: &strata_state::McpClient, tools: usize) -> Value {
    let mut v = json!({"name": name.as_str(), "status": strata_mcp::status_name(&client.status)});
    if let Some(info) = &client.server_info {
        v["serverInfo"] = json!({"name": info.name.as_str(), "version": info.version.as_str()});
    }
    if let McpConnectionStatus::Failed { error, stderr_tail } = &client.status {
        v["error"] = json!(&**error);
        if let Some(tail) = stderr_tail {
            v["stderr"] = json!(&**tail);
        }
    }
    v["scope"] = json!(sources::scope_name(client.scope));
    v["tools"] = json!(tools);
    v
}

/// The text of a prompt message (its text blocks joined).
fn prompt_text(prompt: &Message) -> String {
    match &prompt.content {
        MessageContent::Text(t) => t.clone(),
        MessageContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The `@server:uri` mentions of `text` whose server is configured.
fn mentions<'a>(text: &'a str, servers: &[SmolStr]) -> Vec<(SmolStr, &'a str)> {
    text.split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .filter_map(|rest| {
            let (server, uri) = rest.split_once(':')?;
            let server = servers.iter().find(|s| s.as_str() == server)?;
            (!uri.is_empty()).then(|| (server.clone(), uri))
        })
        .collect()
}

/// The MCP tools of the connected servers, shared between the requests that use them.
pub(super) type McpTools = Arc<Vec<Arc<dyn crate::tools::Tool>>>;

/// Whether `tool` is one of an MCP server's (`mcp__<server>__<tool>`; no built-in tool
/// is named so).
fn is_mcp_tool(tool: &dyn crate::tools::Tool) -> bool {
    strata_mcp::naming::is_mcp_tool_name(tool.name())
}

/// Clears the store's `mcp.turn_waits_for` when a turn's wait ends, however it ends.
struct WaitShown<'a>(&'a Store<AppState>);

impl WaitShown<'_> {
    fn show(&self, server: &SmolStr) {
        let _ = self.0.update(|s| {
            if s.mcp.turn_waits_for.as_ref() != Some(server) {
                s.mcp.turn_waits_for = Some(server.clone());
            }
        });
    }
}

impl Drop for WaitShown<'_> {
    fn drop(&mut self) {
        let _ = self.0.update(|s| {
            if s.mcp.turn_waits_for.is_some() {
                s.mcp.turn_waits_for = None;
            }
        });
    }
}

/// The user's answer about a project server of `.mcp.json` (the UI's approval dialog,
/// the reference agent's three choices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectServerAnswer {
    /// Use this server (remembered for the project).
    Approve,
    /// Use this and every other server of the project's `.mcp.json`, later ones too.
    ApproveAll,
    /// Do not use it (remembered: not asked again).
    Reject,
}

impl super::Engine {
    /// Waits until no MCP server is still connecting, at most the servers' start-up
    /// timeout (`MCP_TIMEOUT`), or until `cancel` fires: what a turn does before its
    /// first request, for a host that reports the servers' status first (a one-prompt
    /// headless run's `system/init`).
    pub async fn wait_for_mcp_servers(&self, cancel: &CancellationToken) {
        self.inner.wait_for_servers(cancel).await;
    }

    /// The project's `.mcp.json` servers that are not started because the user has not
    /// answered for them yet (neither approved nor rejected), in configuration order.
    pub fn project_servers_awaiting_approval(&self) -> Vec<String> {
        let inner = &self.inner;
        let state = inner.store.get();
        inner
            .mcp
            .names()
            .into_iter()
            .filter(|name| {
                state.mcp.clients.get(name).is_some_and(|c| {
                    c.scope == strata_state::McpConfigScope::Project
                        && matches!(c.status, McpConnectionStatus::Failed { .. })
                })
            })
            .filter(|name| sources::approval_pending(&inner.global, &inner.project_root, name))
            .map(|name| name.to_string())
            .collect()
    }

    /// Records the user's answer about project server `name` in the config file's entry
    /// for the project (the reference agent's keys, what `strata mcp approve` writes) and
    /// applies it now: an approved server starts, a rejected one stays stopped with a
    /// status saying how to approve it later. `Err` says what could not be written; then
    /// nothing was started (fail closed).
    pub fn answer_project_server(
        &self,
        name: &str,
        answer: ProjectServerAnswer,
    ) -> Result<(), String> {
        let inner = &self.inner;
        let (global, root) = (&inner.global, &inner.project_root);
        let written = match answer {
            ProjectServerAnswer::Approve => sources::set_project_approval(global, root, name, true),
            ProjectServerAnswer::ApproveAll => sources::approve_all_project_servers(global, root),
            ProjectServerAnswer::Reject => sources::set_project_approval(global, root, name, false),
        };
        written.map_err(|e| format!("the answer for MCP server {name:?} was not saved: {e}"))?;
        let started: Vec<String> = match answer {
            ProjectServerAnswer::Approve => vec![name.to_owned()],
            ProjectServerAnswer::ApproveAll => {
                // Every project server still held back, this one included.
                let state = inner.store.get();
                state
                    .mcp
                    .clients
                    .iter()
                    .filter(|(_, c)| {
                        c.scope == strata_state::McpConfigScope::Project
                            && matches!(c.status, McpConnectionStatus::Failed { .. })
                    })
                    .map(|(n, _)| n.to_string())
                    .collect()
            }
            ProjectServerAnswer::Reject => {
                return inner
                    .mcp
                    .set_blocked(name, Some(sources::rejected_reason(name)))
                    .map_err(|e| e.to_string());
            }
        };
        for server in started {
            inner
                .mcp
                .set_blocked(&server, None)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

impl Inner {
    /// Waits until no server is still connecting, at most the servers' start-up timeout
    /// (`MCP_TIMEOUT`) in all, or until `cancel` fires. While it waits, the store's
    /// `mcp.turn_waits_for` names the server waited for.
    pub(super) async fn wait_for_servers(&self, cancel: &CancellationToken) {
        if !self.mcp.any_pending() {
            return;
        }
        let deadline = tokio::time::Instant::now() + self.mcp.startup_timeout();
        let shown = WaitShown(&self.store);
        // One server at a time, the first still pending: a server that comes up (or
        // fails) while another is waited for is not waited for again.
        while let Some(server) = self.mcp.pending().into_iter().next() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                tracing::warn!(
                    servers = ?self.mcp.pending(),
                    "MCP servers still connecting after the start-up timeout; the turn goes on without them"
                );
                break;
            }
            shown.show(&server);
            tokio::select! {
                () = cancel.cancelled() => break,
                _ = self.mcp.wait_ready(&server, left) => {}
            }
        }
    }

    /// The session's tools (those of `base` that are not an MCP server's) and the MCP
    /// tools of the servers connected now. A tool a whole-tool deny rule names is left
    /// out, as for the built-in tools.
    fn with_mcp_tools_now(&self, base: &ToolRegistry) -> ToolRegistry {
        let state = self.store.get();
        let ctx = &state.tool_permission_context;
        let mut tools: Vec<_> = base
            .tools()
            .iter()
            .filter(|t| !is_mcp_tool(t.as_ref()))
            .cloned()
            .collect();
        let session: std::collections::HashSet<&str> = tools.iter().map(|t| t.name()).collect();
        let mcp: Vec<_> = self
            .mcp_tools()
            .iter()
            .filter(|t| !ctx.denies_tool_entirely(t.name()) && !session.contains(t.name()))
            .cloned()
            .collect();
        tools.extend(mcp);
        ToolRegistry::new(tools)
    }

    /// The MCP tools of the servers connected now, built once per change of what the
    /// manager publishes ([`McpManager::generation`]): a request reads them, and
    /// building them clones every server's listing.
    ///
    /// [`McpManager::generation`]: strata_mcp::McpManager::generation
    fn mcp_tools(&self) -> McpTools {
        let generation = self.mcp.generation();
        let mut cache = crate::sync::lock(&self.mcp_tools);
        match &*cache {
            Some((built, tools)) if *built == generation => Arc::clone(tools),
            _ => {
                let tools = Arc::new(crate::tools::mcp::tools_of(&self.mcp));
                *cache = Some((generation, Arc::clone(&tools)));
                tools
            }
        }
    }

    /// The tools of this turn: the session's, and the MCP tools of the servers connected
    /// once those still connecting have been waited for ([`Self::wait_for_servers`]). A
    /// call of a tool of a server that is reconnecting waits for it in the manager.
    pub(super) async fn turn_tools(&self, cancel: &CancellationToken) -> ToolRegistry {
        if self.mcp.names().is_empty() {
            return self.tools.clone();
        }
        self.wait_for_servers(cancel).await;
        self.with_mcp_tools_now(&self.tools)
    }

    /// The tools for a turn's next request when its MCP tools changed since `turn` was
    /// made (a server connected, dropped or was toggled); `None` keeps `turn`. The
    /// session's own tools are `turn`'s, never widened.
    pub(super) fn tools_now(&self, turn: &ToolRegistry) -> Option<ToolRegistry> {
        if self.mcp.names().is_empty() {
            return None;
        }
        let now = self.with_mcp_tools_now(turn);
        let mcp_names = |r: &ToolRegistry| -> Vec<&'static str> {
            r.tools()
                .iter()
                .filter(|t| is_mcp_tool(t.as_ref()))
                .map(|t| t.name())
                .collect()
        };
        (mcp_names(&now) != mcp_names(turn)).then_some(now)
    }

    /// The prompt as sent to the model: a `/mcp__server__prompt args…` command replaced
    /// by the server's prompt (arguments given in order), and each `@server:uri` mention's
    /// resource attached as a text block after the prompt. What cannot be fetched is said
    /// in a block of its own, so the model and the user see why.
    pub(super) async fn expand_mcp_prompt(
        &self,
        prompt: Message,
        cancel: &CancellationToken,
    ) -> Message {
        let servers = self.mcp.names();
        if servers.is_empty() {
            return prompt;
        }
        let text = prompt_text(&prompt);
        // A `/mcp__server__prompt` command or an `@server:uri` mention needs its server:
        // the turn's wait comes first.
        self.wait_for_servers(cancel).await;
        let mut blocks: Vec<ContentBlock> = match &prompt.content {
            MessageContent::Text(t) => vec![ContentBlock::text(t.clone())],
            MessageContent::Blocks(b) => b.clone(),
        };
        let mut changed = false;
        if let Some(command) = text.trim_start().strip_prefix('/') {
            let (name, rest) = command
                .split_once(char::is_whitespace)
                .unwrap_or((command, ""));
            let state = self.store.get();
            let found = state
                .mcp
                .commands
                .iter()
                .find(|c| strata_mcp::naming::tool_name(&c.server, &c.name) == name)
                .cloned();
            if let Some(found) = found {
                let values: Vec<&str> = rest.split_whitespace().collect();
                let mut arguments = serde_json::Map::new();
                for (i, arg) in found.arguments.iter().enumerate() {
                    if let Some(v) = values.get(i) {
                        arguments.insert(arg.to_string(), Value::String((*v).to_owned()));
                    }
                }
                if let (Some(last), true) =
                    (found.arguments.last(), values.len() > found.arguments.len())
                {
                    let tail = values[found.arguments.len() - 1..].join(" ");
                    arguments.insert(last.to_string(), Value::String(tail));
                }
                let expanded = match self
                    .mcp
                    .get_prompt(&found.server, &found.name, arguments, cancel)
                    .await
                {
                    Ok(body) => body,
                    Err(e) => format!("[the MCP prompt /{name} could not be fetched: {e}]"),
                };
                blocks = vec![ContentBlock::text(expanded)];
                changed = true;
            }
        }
        for (server, uri) in mentions(&text, &servers) {
            let block = match self.mcp.read_resource(&server, uri, cancel).await {
                Ok(out) => format!(
                    "<mcp-resource server=\"{server}\" uri=\"{uri}\">\n{}\n</mcp-resource>",
                    out.text
                ),
                Err(e) => format!("[@{server}:{uri} could not be read: {e}]"),
            };
            blocks.push(ContentBlock::text(block));
            changed = true;
        }
        if !changed {
            return prompt;
        }
        Message {
            content: MessageContent::Blocks(blocks),
            ..prompt
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_of_configured_servers_are_found_in_a_prompt() {
        let servers = [SmolStr::new("everything"), SmolStr::new("fs")];
        let text = "look at @everything:demo://resource/1 and @other:x then mcp__fs__read";
        assert_eq!(
            mentions(text, &servers),
            vec![(SmolStr::new("everything"), "demo://resource/1")]
        );
        assert!(mentions("just say hi", &servers).is_empty());
    }
}
