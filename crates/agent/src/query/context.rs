//! [`TurnContext`]: everything one turn reads and writes, and nothing of how a session is
//! opened, closed or interrupted (the engine's part).
//!
//! The engine builds one per prompt from the session it holds and passes it to
//! [`run_turn`](super::run_turn); the loop never sees the engine, so the two do not
//! import each other. Permission decisions read the store's permission context and the
//! session's [`PermissionEnv`]; what the engine does for a turn (applying a prompt
//! answer's permission updates, choosing the model after `set_model` or a settings
//! change) it asks through [`TurnHost`].

use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::Value;
use strata_bootstrap::Bootstrap;
use strata_state::AppState;
use strata_store::Store;

use super::ports::{EventSink, PermissionPrompter};
use crate::agents::{AgentRuntime, TaskReport};
use crate::context::ToolUseContext;
use crate::permissions::PermissionEnv;
use crate::provider::Provider;
use crate::record::Recorder;
use crate::tools::ToolRegistry;

/// What the session computes live for a turn.
pub(crate) trait TurnHost: Send + Sync {
    /// Applies the permission updates a prompt answer carried back.
    fn apply_permission_updates(&self, updates: &[Value]);
    /// The model of the next request.
    fn model(&self) -> String;
    /// The tools of the next request when they changed since the turn's `turn` set was
    /// made (an MCP server connected or went away); `None` keeps `turn`.
    fn tools_now(&self, _turn: &ToolRegistry) -> Option<ToolRegistry> {
        None
    }
}

/// What one turn needs: the store (the conversation and everything a UI reads), the
/// provider, the tools and their context, the permission gate and who answers prompts,
/// the transcript recorder and file history, the bootstrap counters, and the event sink.
///
/// The main agent and every sub-agent run turns through the same loop; what differs is
/// here. `store` holds the conversation: the session's root store for the main agent, a
/// private one for a sub-agent (its conversation is its own). `agent` is the running
/// agent's [`ToolUseContext`]: its permission decisions read the app state through it
/// (SA-4: a background agent's reader says prompts are to be avoided), its denials are
/// counted through it (SA-6) and its tools run in its tool context (SA-6: its own copy of
/// the working directory and the files read).
pub(crate) struct TurnContext<'a> {
    pub(crate) session_id: &'a String,
    pub(crate) store: &'a Store<AppState>,
    pub(crate) provider: &'a dyn Provider,
    pub(crate) tools: &'a ToolRegistry,
    /// The running agent's context: permission state, denial counters, identity, tools.
    pub(crate) agent: &'a ToolUseContext,
    /// Runs the Agent tool's sub-agents.
    pub(crate) agents: &'a std::sync::Arc<AgentRuntime>,
    /// A background agent's task, told of its progress; `None` otherwise.
    pub(crate) task: Option<&'a TaskReport>,
    /// Permission updates and the model.
    pub(crate) host: &'a dyn TurnHost,
    /// The fixed facts a permission decision reads beside the store.
    pub(crate) permission_env: &'a PermissionEnv,
    /// Who answers permission prompts; `None`: calls that need one are denied. Shared
    /// handles, so a sub-agent's turn, which runs on a task of its own, can hold them.
    pub(crate) prompter: Option<&'a std::sync::Arc<dyn PermissionPrompter>>,
    pub(crate) recorder: &'a Recorder,
    pub(crate) file_history: &'a crate::file_history::SessionFileHistory,
    /// The uuid of the prompt being answered (file-history snapshots are per prompt).
    pub(crate) prompt_uuid: &'a Mutex<String>,
    pub(crate) events: &'a std::sync::Arc<dyn EventSink>,
    pub(crate) bootstrap: &'a Bootstrap,
    pub(crate) max_turns: Option<u32>,
    pub(crate) cwd: &'a PathBuf,
    /// Partial messages, budget, hooks.
    pub(crate) sdk: &'a crate::engine::SdkOptions,
    /// The system prompt, thinking budget and context count kept across turns.
    pub(crate) long: &'a super::LongSession,
}

impl TurnContext<'_> {
    /// See [`TurnHost::apply_permission_updates`].
    pub(crate) fn apply_permission_updates(&self, updates: &[Value]) {
        self.host.apply_permission_updates(updates);
    }

    /// What a hook's input says about the session now.
    pub(crate) fn hook_session(&self) -> crate::hooks::HookSession {
        crate::hooks::HookSession {
            session_id: self.session_id.clone(),
            transcript_path: self.recorder.path(),
            cwd: self.agent.tools.cwd(),
            permission_mode: self.permission_mode().to_string(),
        }
    }

    /// The permission mode as the running agent sees it.
    pub(crate) fn permission_mode(&self) -> strata_protocol::permission::PermissionMode {
        self.agent.app_state().tool_permission_context.mode
    }

    /// True for a sub-agent's turn.
    pub(crate) fn is_subagent(&self) -> bool {
        self.agent.identity.depth > 0
    }

    /// The session's hooks, when any are registered.
    pub(crate) fn hooks(&self) -> Option<&crate::hooks::Hooks> {
        self.sdk.hooks.as_deref()
    }

    /// See [`TurnHost::model`].
    pub(crate) fn model(&self) -> String {
        self.host.model()
    }
}
