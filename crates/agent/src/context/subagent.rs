//! [`create_subagent_context`]: a sub-agent's context, isolated by default (SA-1).

use std::sync::{Arc, Mutex};

use crate::tools::{TaskOwner, ToolContext};

use smol_str::SmolStr;
use strata_state::{AppState, DenialTracking, ToolPermissionContext};

use super::{
    AgentIdentity, DenialCounters, NoopCallbacks, SharedSet, StateReader, StateWriter,
    ToolUseContext,
};

/// What a sub-agent shares with its parent. Everything not opted into is isolated.
#[derive(Clone, Debug, Default)]
pub struct SubagentOptions {
    /// The sub-agent's id.
    pub agent_id: SmolStr,
    /// It runs in the background: it reads state with `should_avoid_permission_prompts`
    /// set, so it never shows a permission prompt (SA-4).
    pub is_async: bool,
    /// Its state setter reaches the parent's store (only sensible for synchronous
    /// sub-agents, SA-2); otherwise its writes are dropped.
    pub share_set_app_state: bool,
    /// It shares the parent's cancellation (cancelling it cancels the parent too);
    /// otherwise it gets a child token (SA-5).
    pub share_abort_controller: bool,
    /// It outlives the parent's turn (a background agent): its token is a child of the
    /// parent's *owner* lifetime (the session for the main agent, the parent agent's own
    /// token for a sub-agent) rather than of the turn, so an interrupted turn leaves it
    /// running while stopping its parent still stops it (SA-5).
    pub outlives_turn: bool,
    /// Its type, for hooks and task messages.
    pub agent_type: Option<SmolStr>,
}

/// The context of a sub-agent of `parent` (SA-1 … SA-7; the table in the
/// [module docs](super) lists what is shared).
///
/// ```
/// use std::sync::Arc;
/// use strata_agent::context::{create_subagent_context, NoopCallbacks, SubagentOptions, ToolUseContext};
/// use strata_agent::tools::{NoHooks, ToolContext};
/// use strata_state::{default_app_state, RuntimeFacts};
/// use strata_store::Store;
///
/// let store = Store::new(default_app_state(RuntimeFacts::default()));
/// let tools = ToolContext::new("/tmp/project", Arc::new(NoHooks));
/// let root = ToolUseContext::root(&store, tools, Arc::new(NoopCallbacks));
/// let child = create_subagent_context(&root, SubagentOptions {
///     agent_id: "a1".into(), is_async: true, ..Default::default()
/// });
/// assert!(child.app_state().tool_permission_context.should_avoid_permission_prompts);
/// assert!(child.set_app_state.is_noop());
/// child.cancel.cancel();
/// assert!(!root.cancel.is_cancelled());
/// ```
pub fn create_subagent_context(
    parent: &ToolUseContext,
    options: SubagentOptions,
) -> ToolUseContext {
    let get_app_state = if options.is_async {
        avoid_prompts(Arc::clone(&parent.get_app_state))
    } else {
        Arc::clone(&parent.get_app_state)
    };
    let set_app_state = if options.share_set_app_state {
        parent.set_app_state.clone()
    } else {
        StateWriter::Ignore
    };
    let denials = if set_app_state.is_noop() {
        DenialCounters::Local(Arc::new(Mutex::new(DenialTracking::default())))
    } else {
        parent.denials.clone()
    };
    let cancel = if options.share_abort_controller {
        parent.cancel.clone()
    } else if options.outlives_turn {
        parent.tools.owner.lifetime.child_token()
    } else {
        parent.cancel.child_token()
    };
    // The tools see a copy of what the parent read, and their own working directory
    // starting where the parent's is: neither can move the other's.
    // Background work its tools start belongs to it: stopping it stops that work.
    let tools = ToolContext {
        cwd: Arc::new(Mutex::new(parent.tools.cwd())),
        cancel: cancel.clone(),
        read_files: Arc::new(Mutex::new(parent.tools.read_files())),
        owner: TaskOwner {
            lifetime: cancel.clone(),
            agent_task_id: Some(options.agent_id.to_string()),
            depth: parent.identity.depth + 1,
        },
        ..parent.tools.clone()
    };
    ToolUseContext {
        get_app_state,
        set_app_state,
        set_app_state_for_tasks: parent.set_app_state_for_tasks.clone(),
        cancel,
        tools,
        content_replacements: parent.content_replacements.deep_copy(),
        loaded_nested_memory: SharedSet::default(),
        discovered_skills: SharedSet::default(),
        denials,
        callbacks: Arc::new(NoopCallbacks),
        identity: AgentIdentity {
            agent_id: Some(options.agent_id),
            depth: parent.identity.depth + 1,
            is_async: options.is_async,
            agent_type: options.agent_type,
        },
    }
}

/// A reader that sees the parent's state with `should_avoid_permission_prompts` set,
/// returning the very same state when it already is (SA-4).
fn avoid_prompts(parent: StateReader) -> StateReader {
    Arc::new(move || {
        let state = parent();
        if state
            .tool_permission_context
            .should_avoid_permission_prompts
        {
            return state;
        }
        Arc::new(AppState {
            tool_permission_context: ToolPermissionContext {
                should_avoid_permission_prompts: true,
                ..state.tool_permission_context.clone()
            },
            ..AppState::clone(&state)
        })
    })
}
