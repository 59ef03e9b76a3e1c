//! [`Engine`]: one session at work.
//!
//! The engine opens a new session or resumes one (the transcript rebuilt by the rules of
//! `COMPAT.md`), creates the session's root app store with its effects hub, and runs
//! prompts through the query loop. Everything the session produces goes out through an
//! [`EventSink`] as the reference SDK's message shapes (`system/init`, `assistant`,
//! `user`, `system/status`, `result`), so headless output, SDK clients and a future UI
//! consume the same stream. Permission prompts go through a [`PermissionPrompter`] when
//! there is one (an interactive user, an SDK client that answers `can_use_tool`);
//! without one, a call that would need a prompt is denied and reported.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use strata_protocol::message::Message;
use strata_protocol::sdk::{InitMessage, PermissionResult, ResultMessage, SdkMessage};
use tokio_util::sync::CancellationToken;

use crate::permissions::PermissionLaunch;
use crate::provider::Provider;

/// Where the session's messages go (one call per output line).
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
}

/// Which session to continue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResumeTarget {
    /// `--resume <id or path.jsonl>`.
    Session(String),
    /// `--continue`: the newest session of the project.
    Continue,
}

/// How to open a session.
#[derive(Clone)]
pub struct EngineOptions {
    /// The working directory (its project root is found from it).
    pub cwd: PathBuf,
    /// The config directory (`$STRATA_CONFIG_DIR` or `~/.strata`).
    pub config_dir: PathBuf,
    /// The model provider.
    pub provider: Arc<dyn Provider>,
    /// `--model`; else the resumed session's model, else the settings', else the
    /// provider's default.
    pub model: Option<String>,
    /// Permission flags from the command line.
    pub permission: PermissionLaunch,
    /// `--settings <file or JSON>`.
    pub settings_flag: Option<String>,
    /// Resume or continue a session.
    pub resume: Option<ResumeTarget>,
    /// With `resume`: continue in a copy with a new session id.
    pub fork_session: bool,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// A person is at the terminal.
    pub interactive: bool,
    /// `--verbose`.
    pub verbose: bool,
    /// Who answers permission prompts; `None`: calls that need one are denied.
    pub prompter: Option<Arc<dyn PermissionPrompter>>,
    /// Where the session's messages go.
    pub events: Arc<dyn EventSink>,
}

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `--resume` named a session that does not exist.
    #[error("No conversation found with session ID: {0}")]
    NotFound(String),
    /// Another problem, already phrased for the user.
    #[error("{0}")]
    Other(String),
}

/// One session at work. Not built yet: being written.
pub struct Engine {
    _private: (),
}

impl Engine {
    /// Opens (or resumes) a session. Not built yet.
    pub async fn open(_options: EngineOptions) -> Result<Engine, OpenError> {
        Err(OpenError::Other("the engine is not built yet".into()))
    }

    /// The session id.
    pub fn session_id(&self) -> String {
        String::new()
    }

    /// The `system/init` message describing the session.
    pub fn init_message(&self) -> InitMessage {
        unreachable_engine()
    }

    /// Runs one user prompt to the end of the turn (or `--max-turns`, or `cancel`), and
    /// returns the `result` message (also emitted).
    pub async fn run_prompt(&self, _prompt: Message, _cancel: CancellationToken) -> ResultMessage {
        unreachable_engine()
    }

    /// Changes the permission mode through the one gate (control request
    /// `set_permission_mode`).
    pub fn set_permission_mode(&self, _mode: &str) -> Result<(), String> {
        Err("the engine is not built yet".into())
    }

    /// Changes the main-loop model (`None`: back to the default).
    pub fn set_model(&self, _model: Option<String>) -> Result<(), String> {
        Err("the engine is not built yet".into())
    }

    /// Restores the files edited since user message `uuid` (control request
    /// `rewind_files`); the report as JSON.
    pub fn rewind_files(&self, _uuid: &str, _dry_run: bool) -> Result<Value, String> {
        Err("the engine is not built yet".into())
    }

    /// Flushes and closes the transcript and saves the project's cost slot.
    pub async fn close(self) -> Result<(), String> {
        Ok(())
    }
}

fn unreachable_engine() -> ! {
    // An `Engine` cannot be constructed until `open` is built.
    unreachable!("Engine values cannot exist yet")
}
