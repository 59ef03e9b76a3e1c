//! The UI callbacks of a tool-use context (SA-7).
//!
//! The main agent drives the UI through these: which tool calls are in progress, file
//! history updates, notifications, a tool's own UI, the spinner's mode, the length of the
//! streamed response. A sub-agent's work is not the screen's business, so its context
//! gets [`NoopCallbacks`].

use serde_json::Value;
use strata_state::Notification;

/// What the spinner shows the model is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamMode {
    /// Waiting for the first token.
    Requesting,
    /// Receiving thinking.
    Thinking,
    /// Receiving text.
    Responding,
    /// Receiving a tool call's input.
    ToolInput,
    /// Running tools.
    ToolUse,
}

/// Callbacks from a running agent to the UI. Every method has a no-op default.
pub trait ContextCallbacks: Send + Sync {
    /// The set of tool-use ids in progress changed.
    fn set_in_progress_tool_use_ids(&self, _ids: &[String]) {}

    /// A file-history snapshot was taken or updated (its JSON entry).
    fn update_file_history(&self, _snapshot: &Value) {}

    /// Something worth telling the user.
    fn add_notification(&self, _notification: Notification) {}

    /// A tool's own progress display changed (`None` clears it).
    fn set_tool_ui(&self, _tool_use_id: &str, _ui: Option<&Value>) {}

    /// The spinner's mode.
    fn set_stream_mode(&self, _mode: StreamMode) {}

    /// How many characters of the response have streamed.
    fn set_response_length(&self, _chars: usize) {}
}

/// Callbacks that do nothing: a sub-agent's (SA-7), or a run with no UI.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopCallbacks;

impl ContextCallbacks for NoopCallbacks {}
