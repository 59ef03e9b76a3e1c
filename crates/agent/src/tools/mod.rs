//! The tools the model can call, behind one trait.
//!
//! A tool declares its input schema (what the model sees), whether a call is read-only
//! (allowed in plan mode, safe to run in parallel), and what the permission rules match a
//! call against. Running a call never panics and never fails the turn: invalid input or
//! a failed operation becomes a tool result with `is_error: true` that the model can read
//! and act on.
//!
//! What a tool may touch comes in a [`ToolContext`]: the working directory (kept between
//! Bash calls), cancellation, what files were read, the file-history hook that backs a
//! file up before its first edit in a turn, where large outputs go, and the todo list.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A boxed future returned by [`Tool::call`].
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// A tool the model can call.
pub trait Tool: Send + Sync + fmt::Debug {
    /// The name the model uses (`Bash`, `Read`, …).
    fn name(&self) -> &'static str;

    /// What the tool does and how to use it (sent to the model).
    fn description(&self) -> &'static str;

    /// The JSON schema of the input object.
    fn input_schema(&self) -> Value;

    /// True when this call only reads (allowed in plan mode).
    fn is_read_only(&self, input: &Value) -> bool;

    /// True when this call may run at the same time as other concurrency-safe calls.
    fn is_concurrency_safe(&self, input: &Value) -> bool {
        self.is_read_only(input)
    }

    /// What permission rules `Tool(pattern)` match this call against, if anything.
    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject>;

    /// Runs the call. Errors are reported in the output (`is_error`), never raised.
    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a>;
}

/// One call of a tool by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The `tool_use` block's id.
    pub id: String,
    /// The input object the model gave.
    pub input: Value,
}

/// What a permission rule's pattern is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionSubject {
    /// A shell command line (`Bash(npm test:*)`).
    Command(String),
    /// A file or directory path, absolute (`Edit(src/**)`).
    Path(PathBuf),
}

/// The result of a tool call, as sent back to the model and recorded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// True when the call failed (the model sees the text as an error).
    pub is_error: bool,
    /// Structured detail for the transcript's `toolUseResult` and for UIs.
    pub detail: Option<Value>,
    /// Lines added by this call (file edits), for the session counters.
    pub lines_added: u64,
    /// Lines removed by this call (file edits), for the session counters.
    pub lines_removed: u64,
}

impl ToolOutput {
    /// A successful result with `content`.
    pub fn ok(content: impl Into<String>) -> Self {
        Self { content: content.into(), ..Self::default() }
    }

    /// A failed result the model can read.
    pub fn error(content: impl Into<String>) -> Self {
        Self { content: content.into(), is_error: true, ..Self::default() }
    }
}

/// What tools may touch. Cheap to clone (shared parts are behind `Arc`s).
#[derive(Clone)]
pub struct ToolContext {
    /// The working directory, shared by every Bash call of a session (a `cd` persists).
    pub cwd: Arc<Mutex<PathBuf>>,
    /// The project root (for "inside the project" checks and relative paths).
    pub project_root: PathBuf,
    /// Cancelled when the turn is interrupted: long calls must stop promptly.
    pub cancel: CancellationToken,
    /// Environment variables applied to spawned processes on top of strata's own
    /// (settings `env`, additive only: FX-5).
    pub env: Arc<Mutex<Vec<(String, String)>>>,
    /// Hooks into the session: file history, large output storage, todos.
    pub hooks: Arc<dyn ToolHooks>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext").field("project_root", &self.project_root).finish_non_exhaustive()
    }
}

/// The session services tools call into. The query loop provides the real ones (file
/// history, transcript side files, the app store's todos); tests provide recorders.
pub trait ToolHooks: Send + Sync {
    /// Called before a tool first modifies `path` in the current turn, so the file can be
    /// backed up for rewind. An error aborts the edit (nothing is lost unrecorded).
    fn before_edit(&self, path: &std::path::Path) -> Result<(), String>;

    /// Stores a tool output too large for the transcript; returns where it went, for the
    /// reference left in its place.
    fn store_large_output(&self, tool_use_id: &str, content: &str) -> Result<PathBuf, String>;

    /// Replaces the session's todo list (TodoWrite).
    fn set_todos(&self, todos: Value);
}
