//! [`AppState`]: the one application state value of a session (AS-1), and its domains.
//!
//! # Shape
//!
//! One struct, one field or sub-struct per domain of AS-1: core configuration at the top
//! level (the fields the effects hub watches most), then permissions, tasks and agents,
//! MCP and plugins, UI, bridge and remote, speculation, and the rest. Domains that later
//! features fill are real types already, documented with the feature that fills them.
//!
//! # Immutability and sharing (AS-2, AS-4)
//!
//! A committed state is never changed: an update builds the next state from the previous
//! one (the store's `update` clones it on first write). Cloning is cheap by construction:
//! every field is a scalar, a short inline string (`SmolStr`), an `Arc`, or a persistent
//! `imbl` collection whose clone is one reference count. An update therefore costs the
//! fields it touches plus a fixed number of pointer copies, however many messages, tasks
//! or MCP tools the untouched domains hold (pinned by the `as4_*` tests).
//!
//! Runtime handles (task cancellation, MCP connections, plugin instances, the speculation
//! abort, the environment overlay) sit apart in [`AppState::runtime`], which compares
//! equal to every other runtime and is never serialized (AS-2).

mod context;
mod file_history;
mod mcp;
mod other;
mod permission_rules;
mod permission_updates;
mod permissions;
mod remote;
mod runtime;
mod settings_edit;
mod speculation;
mod ui;

use std::sync::Arc;

use smol_str::SmolStr;
use strata_protocol::message::Message;
use strata_protocol::settings::Settings;

pub use context::{ContextUsage, context_percent};
pub use file_history::{
    BackupNamer, FileHistory, FileHistoryChange, FileHistoryUpdateError, InspectedFile,
    MAX_FILE_HISTORY_SNAPSHOTS, PendingBackup, update_file_history,
};
pub use mcp::{
    LoadedPlugin, McpCapabilities, McpClient, McpCommand, McpConfigScope, McpConnectionStatus,
    McpResource, McpServerInfo, McpState, McpTool, McpTransport, PluginCommand, PluginError,
    PluginsState,
};
pub use other::{
    Attribution, FileAttribution, FileBaseline, Inbox, InboxMessage, InboxStatus, StandaloneAgent,
    TeamContext, Teammate, TodoItem, TodoStatus, Todos,
};
pub use permission_rules::{PermissionRule, RuleBehavior, RuleError, split_rule_list};
pub use permission_updates::{
    PermissionUpdateError, apply_permission_update, default_mode_edit, destination_file,
    destination_source,
};
pub use permissions::{
    DenialTracking, MAX_CONSECUTIVE_DENIALS, MAX_TOTAL_DENIALS, RuleSource, RulesBySource,
    SettingsPermissions, ToolPermissionContext,
};
pub use remote::{BridgeState, RemoteConnectionStatus, RemoteState};
pub use runtime::{
    ClearCachesError, CredentialCache, CredentialCacheError, CredentialCaches, EnvOverlay,
    McpConnection, McpConnections, PluginInstance, PluginInstances, Runtime, SpeculationControl,
};
pub use settings_edit::{SettingsEdit, SettingsEditOp, permissions_key};
pub use speculation::{ActiveSpeculation, PromptSuggestion, Speculation, SpeculationBoundary};
pub use ui::{
    ElicitationRequest, ExpandedView, FooterItem, Notification, NotificationPriority,
    Notifications, UiState,
};

use crate::tasks::TasksDomain;

/// A conversation held in memory: shared messages, cheap to clone and to append to.
pub type Messages = imbl::Vector<Arc<Message>>;

/// Conversations this long or shorter are compared message by message in
/// [`same_conversation`] (`imbl` keeps a short vector inline, where `ptr_eq` is always
/// false).
const SHORT_CONVERSATION: usize = 64;

/// Whether `a` and `b` are the same conversation: the same shared vector, or — for a
/// short one, which `ptr_eq` cannot tell — the same messages (by pointer) in the same
/// order. Never compares message contents; O(1) for a long conversation, where two
/// vectors with different roots count as different (a change, at worst one redraw too
/// many).
///
/// ```
/// use std::sync::Arc;
/// use strata_protocol::message::Message;
/// use strata_state::{Messages, same_conversation};
/// let short: Messages = [Arc::new(Message::user_text("hi"))].into_iter().collect();
/// assert!(same_conversation(&short, &short.clone()));
/// let mut longer = short.clone();
/// longer.push_back(Arc::new(Message::user_text("again")));
/// assert!(!same_conversation(&short, &longer));
/// ```
pub fn same_conversation(a: &Messages, b: &Messages) -> bool {
    a.ptr_eq(b)
        || (a.len() == b.len()
            && a.len() <= SHORT_CONVERSATION
            && a.iter().zip(b.iter()).all(|(x, y)| Arc::ptr_eq(x, y)))
}

/// The application state of one session (AS-1).
///
/// Made by [`default_app_state`](crate::default_app_state) (AS-5), held by the root
/// [`AppStore`](crate::AppStore), changed only through the store so every change reaches
/// the effects hub (FX-6).
///
/// ```
/// use std::sync::Arc;
/// use strata_protocol::message::Message;
/// use strata_state::{default_app_state, RuntimeFacts};
///
/// let mut state = default_app_state(RuntimeFacts::default());
/// state.messages.extend((0..100).map(|i| Arc::new(Message::user_text(format!("hi {i}")))));
/// let mut next = state.clone(); // copies pointers, not collections
/// next.verbose = true;
/// assert!(next.messages.ptr_eq(&state.messages));
/// assert!(Arc::ptr_eq(&next.settings, &state.settings));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct AppState {
    // ---- core configuration ----
    /// The merged settings of every source. Replaced (a new `Arc`) when a settings file
    /// changes (UI-7); FX-5 reacts to a new value.
    pub settings: Arc<Settings>,
    /// Show full tool output (persisted to the global config, FX-4).
    pub verbose: bool,
    /// The model of the main conversation chosen in this session (`None`: the configured
    /// default). The authority for the model (BS-7); persisted to user settings and
    /// mirrored into bootstrap by FX-2. A `SmolStr` so a clone never allocates.
    pub main_loop_model: Option<SmolStr>,
    /// Extended thinking on for the main conversation.
    pub thinking_enabled: bool,
    /// The fast output mode.
    pub fast_mode: bool,

    // ---- permissions ----
    /// Mode, rules and flags every permission decision reads. A mode change is FX-1's
    /// trigger.
    pub tool_permission_context: ToolPermissionContext,
    /// Denials counted for falling back to prompting.
    pub denial_tracking: DenialTracking,

    // ---- tasks and agents ----
    /// Background tasks, agents and which one is viewed (the tasks module).
    pub tasks: TasksDomain,

    // ---- MCP and plugins ----
    /// MCP servers, their tools, prompts and resources.
    pub mcp: McpState,
    /// Enabled and disabled plugins, their commands and errors.
    pub plugins: PluginsState,

    // ---- UI ----
    /// View state of the terminal front end.
    pub ui: UiState,

    // ---- bridge and remote ----
    /// The remote-control bridge.
    pub bridge: BridgeState,
    /// This process as part of a remote session.
    pub remote: RemoteState,

    // ---- speculation ----
    /// The speculation state machine.
    pub speculation: Speculation,
    /// Time saved by accepted speculations in this session, in milliseconds.
    pub speculation_time_saved_ms: u64,
    /// The suggested next prompt.
    pub prompt_suggestion: PromptSuggestion,

    // ---- others ----
    /// Pre-edit file backups for rewind: the only copy of the session's file history;
    /// its changes are persisted by the effects hub.
    pub file_history: FileHistory,
    /// What the agent contributed to each file.
    pub attribution: Attribution,
    /// The model's task lists, per agent.
    pub todos: Todos,
    /// Messages from teammates waiting for delivery.
    pub inbox: Inbox,
    /// This process's place in an agent team, if it is in one.
    pub team_context: Option<Arc<TeamContext>>,
    /// This process's identity as a standalone named agent, if it is one.
    pub standalone_agent: Option<Arc<StandaloneAgent>>,
    /// The session is in ultraplan mode (planning handed to a remote session). Sent to the
    /// remote metadata on the first entry (FX-1) and restored from it (FX-7).
    pub is_ultraplan_mode: bool,

    /// The main conversation.
    pub messages: Messages,
    /// The tool calls (by `tool_use` id) running right now, for the spinner and tool
    /// views; filled by the query loop.
    pub in_progress_tool_use_ids: imbl::OrdSet<SmolStr>,
    /// How full the context window is (set after every response).
    pub context_usage: ContextUsage,

    // ---- runtime handles (AS-2) ----
    /// Handles that are not data: never compared, never serialized.
    pub runtime: Runtime,
}
