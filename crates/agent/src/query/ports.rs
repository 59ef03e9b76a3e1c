//! The turn's two outward interfaces: where its messages go ([`EventSink`]) and who
//! answers its permission prompts ([`PermissionPrompter`]). The query loop calls them;
//! the engine is handed them when a session opens and re-exports them
//! (`strata_agent::engine::EventSink`, …), which is where hosts name them.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use strata_protocol::sdk::{PermissionResult, SdkMessage};

/// Where the session's messages go (one call per output line).
///
/// A transcript record (an `assistant` line, a `user` tool result) reaches the sink only
/// after its transcript line has been handed to the kernel, so whatever a sink shows
/// survives a kill of the process (issue 16: "acknowledged means written"); the
/// `result` of a turn comes after the turn's fsync.
pub trait EventSink: Send + Sync {
    /// Emits one message. Must not block for long: it is called from the query loop.
    fn emit(&self, message: SdkMessage);
}

/// A boxed future answering a permission prompt.
pub type PromptFuture<'a> = Pin<Box<dyn Future<Output = PermissionResult> + Send + 'a>>;

/// Asks someone whether a tool call may run.
pub trait PermissionPrompter: Send + Sync {
    /// Asks about `prompt`; the answer allows (possibly with a changed input) or denies.
    fn ask(&self, prompt: PermissionPrompt) -> PromptFuture<'_>;
}

/// A tool call that needs approval.
#[derive(Clone, Debug, PartialEq)]
pub struct PermissionPrompt {
    /// The tool's name.
    pub tool_name: String,
    /// The input the model gave.
    pub input: Value,
    /// The `tool_use` block's id.
    pub tool_use_id: String,
    /// Why approval is needed.
    pub reason: String,
    /// Updates the client may offer with the prompt ("always allow …"); an answer that
    /// carries them back applies them.
    pub suggestions: Vec<strata_protocol::sdk::PermissionUpdate>,
}
