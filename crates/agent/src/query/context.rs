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
use crate::permissions::PermissionEnv;
use crate::provider::Provider;
use crate::record::Recorder;
use crate::tools::{ToolContext, ToolRegistry};

/// What the session computes live for a turn.
pub(crate) trait TurnHost: Send + Sync {
    /// Applies the permission updates a prompt answer carried back.
    fn apply_permission_updates(&self, updates: &[Value]);
    /// The model of the next request.
    fn model(&self) -> String;
}

/// What one turn needs: the store (the conversation and everything a UI reads), the
/// provider, the tools and their context, the permission gate and who answers prompts,
/// the transcript recorder and file history, the bootstrap counters, and the event sink.
pub(crate) struct TurnContext<'a> {
    pub(crate) session_id: &'a String,
    pub(crate) store: &'a Store<AppState>,
    pub(crate) provider: &'a dyn Provider,
    pub(crate) tools: &'a ToolRegistry,
    /// The tools' context; each turn clones it with the turn's cancellation.
    pub(crate) tool_context: &'a ToolContext,
    /// Permission updates and the model.
    pub(crate) host: &'a dyn TurnHost,
    /// The fixed facts a permission decision reads beside the store.
    pub(crate) permission_env: &'a PermissionEnv,
    /// Who answers permission prompts; `None`: calls that need one are denied.
    pub(crate) prompter: Option<&'a dyn PermissionPrompter>,
    pub(crate) recorder: &'a Recorder,
    pub(crate) file_history: &'a crate::file_history::SessionFileHistory,
    /// The uuid of the prompt being answered (file-history snapshots are per prompt).
    pub(crate) prompt_uuid: &'a Mutex<String>,
    pub(crate) events: &'a dyn EventSink,
    pub(crate) bootstrap: &'a Bootstrap,
    pub(crate) max_turns: Option<u32>,
    pub(crate) cwd: &'a PathBuf,
    pub(crate) project_root: &'a PathBuf,
}

impl TurnContext<'_> {
    /// See [`TurnHost::apply_permission_updates`].
    pub(crate) fn apply_permission_updates(&self, updates: &[Value]) {
        self.host.apply_permission_updates(updates);
    }

    /// See [`TurnHost::model`].
    pub(crate) fn model(&self) -> String {
        self.host.model()
    }
}
