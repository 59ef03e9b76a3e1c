//! The MCP and plugins domain (AS-1): what is known about connected MCP servers and
//! loaded plugins, as data.
//!
//! Filled by the MCP client and plugin loader (the agent crate): this crate only defines
//! the shapes. The live connections and plugin instances themselves are runtime handles
//! and live in [`Runtime`](crate::Runtime) (AS-2); what is here can be compared, rendered
//! and dropped at will. None of it is persisted (SP-4): MCP servers reconnect and plugins
//! reload when a session resumes.
//!
//! Collections are persistent maps and vectors of `Arc`s, so a server reporting its tools
//! copies a few tree nodes, not every other server's tools (AS-4).

use std::path::Path;
use std::sync::Arc;

use smol_str::SmolStr;

/// The MCP domain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpState {
    /// Every configured server, by name.
    pub clients: imbl::OrdMap<SmolStr, Arc<McpClient>>,
    /// The tools of every connected server.
    pub tools: imbl::Vector<Arc<McpTool>>,
    /// The prompts of every connected server, offered as slash commands.
    pub commands: imbl::Vector<Arc<McpCommand>>,
    /// The resources of each connected server, by server name.
    pub resources: imbl::OrdMap<SmolStr, imbl::Vector<Arc<McpResource>>>,
    /// Bumped to ask the MCP runtime to reconnect every server (after `/mcp` edits or a
    /// plugin reload); the runtime watches it through a selection.
    pub reconnect_generation: u64,
    /// The server a turn is waiting for before its first request (it is still
    /// connecting); a UI's spinner names it. `None` while no turn waits.
    pub turn_waits_for: Option<SmolStr>,
}

impl McpState {
    /// The tools of one server.
    pub fn tools_of<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a Arc<McpTool>> {
        self.tools.iter().filter(move |t| t.server == server)
    }
}

/// One configured MCP server and its connection status.
#[derive(Clone, Debug, PartialEq)]
pub struct McpClient {
    /// The server's name in the configuration.
    pub name: SmolStr,
    /// How strata talks to it.
    pub transport: McpTransport,
    /// Which configuration declared it.
    pub scope: McpConfigScope,
    /// Where the connection stands.
    pub status: McpConnectionStatus,
    /// What the server said about itself on connecting.
    pub server_info: Option<McpServerInfo>,
    /// What the server offers.
    pub capabilities: McpCapabilities,
    /// Failed reconnection attempts since the last success.
    pub reconnect_attempts: u32,
}

/// How strata talks to an MCP server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum McpTransport {
    /// A child process over stdin/stdout.
    Stdio,
    /// HTTP with server-sent events.
    Sse,
    /// Streamable HTTP.
    Http,
    /// WebSocket.
    WebSocket,
    /// In the same process (an SDK-provided server).
    InProcess,
}

/// Which configuration declared an MCP server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum McpConfigScope {
    /// The user's configuration.
    User,
    /// The project's `.mcp.json`.
    Project,
    /// The user's per-project configuration.
    Local,
    /// A plugin.
    Plugin,
    /// The `--mcp-config` flag or the SDK.
    Dynamic,
    /// The administrator's managed configuration.
    Managed,
}

/// Where an MCP connection stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpConnectionStatus {
    /// Connecting (or waiting to).
    Pending,
    /// Connected and listed.
    Connected,
    /// The server needs the user to sign in first.
    NeedsAuth,
    /// The connection failed.
    Failed {
        /// What went wrong, for the `/mcp` view.
        error: Arc<str>,
        /// The last lines the server wrote to stderr (stdio servers), when any.
        stderr_tail: Option<Arc<str>>,
    },
    /// Turned off by the user.
    Disabled,
}

/// What an MCP server reported about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerInfo {
    /// Its name.
    pub name: SmolStr,
    /// Its version.
    pub version: SmolStr,
    /// Instructions it asks to be added to the system prompt.
    pub instructions: Option<Arc<str>>,
}

/// What an MCP server offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct McpCapabilities {
    /// It has tools.
    pub tools: bool,
    /// It has prompts.
    pub prompts: bool,
    /// It has resources.
    pub resources: bool,
}

/// One MCP tool as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct McpTool {
    /// The server that provides it.
    pub server: SmolStr,
    /// The tool's own name.
    pub name: SmolStr,
    /// The name the model calls (`mcp__<server>__<tool>`).
    pub qualified_name: SmolStr,
    /// What it does.
    pub description: Arc<str>,
    /// Its input JSON schema, as the server sent it (a schema is JSON by nature).
    pub input_schema: Arc<serde_json::Value>,
    /// The server marks it read-only (it may run without a permission prompt in plan
    /// mode).
    pub read_only: bool,
}

/// One MCP prompt, offered as a slash command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpCommand {
    /// The server that provides it.
    pub server: SmolStr,
    /// The prompt's name.
    pub name: SmolStr,
    /// What it does.
    pub description: Arc<str>,
    /// Its argument names, in order.
    pub arguments: Arc<[SmolStr]>,
}

/// One MCP resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpResource {
    /// The server that provides it.
    pub server: SmolStr,
    /// Its URI.
    pub uri: Arc<str>,
    /// Its display name.
    pub name: Arc<str>,
    /// Its MIME type.
    pub mime_type: Option<SmolStr>,
    /// What it is.
    pub description: Option<Arc<str>>,
}

/// The plugins domain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PluginsState {
    /// Loaded, enabled plugins, by name.
    pub enabled: imbl::OrdMap<SmolStr, Arc<LoadedPlugin>>,
    /// Installed but disabled plugins, by name.
    pub disabled: imbl::OrdMap<SmolStr, Arc<LoadedPlugin>>,
    /// The slash commands the enabled plugins provide.
    pub commands: imbl::Vector<Arc<PluginCommand>>,
    /// Problems met while loading plugins, for `/plugin` and the doctor view.
    pub errors: imbl::Vector<Arc<PluginError>>,
    /// Plugins changed on disk; a reload is due.
    pub needs_refresh: bool,
}

/// An installed plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedPlugin {
    /// Its name.
    pub name: SmolStr,
    /// The marketplace it was installed from, if any.
    pub marketplace: Option<SmolStr>,
    /// Its version.
    pub version: Option<SmolStr>,
    /// What it does.
    pub description: Option<Arc<str>>,
    /// Where it is installed.
    pub path: Arc<Path>,
}

/// A slash command provided by a plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginCommand {
    /// The plugin providing it.
    pub plugin: SmolStr,
    /// The command's name (without the slash).
    pub name: SmolStr,
    /// What it does.
    pub description: Arc<str>,
    /// The file defining it.
    pub path: Arc<Path>,
}

/// A problem met while loading a plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginError {
    /// The plugin, when known.
    pub plugin: Option<SmolStr>,
    /// The file at fault, when known.
    pub file: Option<Arc<Path>>,
    /// What is wrong and what to do.
    pub message: Arc<str>,
}
