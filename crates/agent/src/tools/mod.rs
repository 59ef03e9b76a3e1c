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
//!
//! The tool set ([`default_tools`], [`ToolRegistry`]): [`Bash`], [`Read`], [`Write`],
//! [`Edit`], [`NotebookEdit`], [`Glob`], [`Grep`], [`TodoWrite`], [`TaskOutput`], [`TaskStop`], [`EnterPlanMode`], [`ExitPlanMode`],
//! [`AskUserQuestion`], [`Skill`], [`WebFetch`], [`WebSearch`]. Names, input fields and their meaning
//! follow the reference agent's public tool documentation, so models trained on it use
//! them correctly; descriptions and messages are strata's own.

mod ask;
pub mod bash;
mod diff;
mod edit;
mod files;
mod glob;
mod grep;
mod input;
pub mod mcp;
mod notebook;
mod notebook_edit;
mod output;
mod plan;
mod read;
mod read_media;
mod skill;
mod tasks;
mod todo;
mod web_fetch;
mod web_search;
mod write;

pub(crate) use crate::sync::lock;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use strata_protocol::permission::PermissionMode;
use strata_state::EnvOverlay;
use tokio_util::sync::CancellationToken;

pub use self::ask::{AskUserQuestion, Question, QuestionOption};
pub use self::bash::Bash;
pub use self::edit::Edit;
pub(crate) use self::files::normalize as files_normalize;
pub use self::files::{FileReadState, ReadStamp};
pub use self::glob::Glob;
pub use self::grep::Grep;
pub(crate) use self::input::parse as input_parse;
pub use self::notebook_edit::NotebookEdit;
pub use self::output::MAX_INLINE_OUTPUT_CHARS;
pub(crate) use self::plan::plan_slug;
pub use self::plan::{EnterPlanMode, ExitPlanMode};
pub use self::read::Read;
pub use self::skill::Skill;
pub use self::tasks::{TaskOutput, TaskStop};
pub use self::todo::{TodoItem, TodoStatus, TodoWrite};
pub use self::web_fetch::{CACHE_TTL as WEB_FETCH_CACHE_TTL, WebFetch, WebFetchLimits};
pub use self::web_search::{WebSearch, WebSearchAnswer, WebSearchQuery};
pub use self::write::Write;
use crate::provider::ToolDefinition;
use crate::secrets::{Redactor, Secrets};

/// A boxed future returned by [`Tool::call`].
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// A boxed future returned by [`ToolHooks::ask_small_model`]: the answer's text, or why
/// there is none.
pub type SmallModelFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// A boxed future returned by [`ToolHooks::web_search`].
pub type WebSearchFuture<'a> =
    Pin<Box<dyn Future<Output = Result<WebSearchAnswer, String>> + Send + 'a>>;

/// A tool the model can call.
pub trait Tool: Send + Sync + fmt::Debug {
    /// The name the model uses (`Bash`, `Read`, …).
    fn name(&self) -> &'static str;

    /// What the tool does and how to use it (sent to the model).
    fn description(&self) -> &'static str;

    /// The description as sent to the model, when it depends on the session (the Agent
    /// tool lists the session's agent types). The default is [`Tool::description`].
    fn describe(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(self.description())
    }

    /// Other names calls may use (a name older transcripts have: `Task` for `Agent`).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// The JSON schema of the input object.
    fn input_schema(&self) -> Value;

    /// True when this call only reads (allowed in plan mode).
    fn is_read_only(&self, input: &Value) -> bool;

    /// False when the call needs no permission of its own: it reaches only what this
    /// session itself created (its background tasks, its sub-agents), so no allow rule,
    /// prompt or mode check applies. A deny rule naming the tool still denies it. The
    /// default is true: every call is decided by the rules.
    fn needs_permission(&self, input: &Value) -> bool {
        let _ = input;
        true
    }

    /// True when this call may run at the same time as other concurrency-safe calls.
    fn is_concurrency_safe(&self, input: &Value) -> bool {
        self.is_read_only(input)
    }

    /// What permission rules `Tool(pattern)` match this call against, if anything.
    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject>;

    /// Checks the input without running anything. The query loop calls this before the
    /// permission check, so a malformed call is answered with an error instead of a
    /// prompt. [`Tool::call`] validates again, so skipping this is safe.
    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        let _ = input;
        Ok(())
    }

    /// True when the call is a question to the user (ExitPlanMode's plan approval,
    /// AskUserQuestion): it always asks after the deny rules, whatever allow rule or mode,
    /// and with nobody to ask it is denied with a clear reason. Such a tool is read-only.
    fn asks_the_user(&self) -> bool {
        false
    }

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
    /// A file or directory path (`Edit(src/**)`). Absolute, or relative to the working
    /// directory (Glob and Grep take relative paths; an empty path is the working
    /// directory itself). The permission check resolves it.
    Path(PathBuf),
    /// The host a URL names (`WebFetch(domain:example.com)`), lower case.
    Domain(String),
}

/// The result of a tool call, as sent back to the model and recorded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// True when the call failed (the model sees the text as an error).
    pub is_error: bool,
    /// Structured detail for the transcript's `toolUseResult` and for UIs. Shaped like
    /// the reference agent's `toolUseResult` for the same tool.
    pub detail: Option<Value>,
    /// Lines added by this call (file edits), for the session counters.
    pub lines_added: u64,
    /// Lines removed by this call (file edits), for the session counters.
    pub lines_removed: u64,
    /// Blocks sent to the model after the text, as blocks of the tool result: images
    /// (Read of an image, MCP tools' image results) and documents (Read of a PDF).
    /// Boxed: almost every output has none, and a tool output stays small enough to be
    /// returned as an error by value.
    pub attachments: Option<Box<Vec<strata_protocol::message::ContentBlock>>>,
}

impl ToolOutput {
    /// A successful result with `content`.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// A failed result the model can read.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            ..Self::default()
        }
    }

    /// Attaches the structured detail.
    #[must_use]
    pub fn with_detail(mut self, detail: Value) -> Self {
        self.detail = Some(detail);
        self
    }
}

/// The additional working directories as they are now: a reader of where they live (the
/// session's app state), not a copy, so there is one set of them (issue 10).
#[derive(Clone)]
pub struct WorkingDirs(Arc<dyn Fn() -> Vec<PathBuf> + Send + Sync>);

impl WorkingDirs {
    /// Directories read by `read` at each use.
    pub fn new(read: impl Fn() -> Vec<PathBuf> + Send + Sync + 'static) -> Self {
        Self(Arc::new(read))
    }

    /// A fixed set (tools run without a session, tests).
    pub fn fixed(dirs: Vec<PathBuf>) -> Self {
        Self::new(move || dirs.clone())
    }

    /// The directories now, absolute.
    pub fn get(&self) -> Vec<PathBuf> {
        (self.0)()
    }
}

impl Default for WorkingDirs {
    fn default() -> Self {
        Self::fixed(Vec::new())
    }
}

impl fmt::Debug for WorkingDirs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WorkingDirs").field(&self.get()).finish()
    }
}

/// What tools may touch. Cheap to clone (shared parts are behind `Arc`s).
///
/// Build one with [`ToolContext::new`] (a fresh session) and adjust the public fields;
/// a sub-agent's context clones the read-file state (SA-6) rather than sharing it:
/// `read_files: Arc::new(Mutex::new(parent.read_files()))`.
#[derive(Clone)]
pub struct ToolContext {
    /// The working directory, shared by every Bash call of a session (a `cd` persists).
    pub cwd: Arc<Mutex<PathBuf>>,
    /// The project root (for "inside the project" checks and relative paths).
    pub project_root: PathBuf,
    /// Directories outside the project a `cd` may stay in (the additional working
    /// directories, read where they live — the app state — at each use, so ones added
    /// during the session count at once); a `cd` anywhere else is undone after the
    /// command.
    pub working_dirs: WorkingDirs,
    /// Cancelled when the turn is interrupted: long calls must stop promptly.
    pub cancel: CancellationToken,
    /// Environment variables applied to spawned processes on top of strata's own: the
    /// app state's overlay (settings `env`, additive only: FX-5), shared.
    pub env: EnvOverlay,
    /// Hooks into the session: file history, large output storage, todos.
    pub hooks: Arc<dyn ToolHooks>,
    /// Which files were read and when: Write and Edit refuse to change an existing file
    /// the model has not read, or one that changed on disk since it was read.
    pub read_files: Arc<Mutex<FileReadState>>,
    /// Credentials: removed from tool processes' environment, redacted from results.
    pub secrets: Secrets,
    /// Who owns the background work these tools start (a background shell stops with
    /// its owner).
    pub owner: TaskOwner,
}

/// The agent that owns background work started by its tools (SA-3, SA-5).
#[derive(Clone, Debug, Default)]
pub struct TaskOwner {
    /// Cancelled when the owner ends — the session closing for the main agent, a
    /// sub-agent being stopped — and background work it started stops with it. Never
    /// a turn's token: a background task outlives the turn that started it.
    pub lifetime: CancellationToken,
    /// The owning agent's task id; `None` for the main agent.
    pub agent_task_id: Option<String>,
    /// How deep the owner is (0: the main agent).
    pub depth: u32,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("project_root", &self.project_root)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for a session rooted at `project_root`: the working directory starts
    /// there, nothing is cancelled, no environment overlay, nothing read yet.
    pub fn new(project_root: impl Into<PathBuf>, hooks: Arc<dyn ToolHooks>) -> Self {
        let project_root = project_root.into();
        Self {
            cwd: Arc::new(Mutex::new(project_root.clone())),
            project_root,
            working_dirs: WorkingDirs::default(),
            cancel: CancellationToken::new(),
            env: EnvOverlay::default(),
            hooks,
            read_files: Arc::new(Mutex::new(FileReadState::default())),
            secrets: Secrets::default(),
            owner: TaskOwner::default(),
        }
    }

    /// The current working directory.
    pub fn cwd(&self) -> PathBuf {
        lock(&self.cwd).clone()
    }

    /// Moves the shared working directory (what a `cd` in Bash does).
    pub fn set_cwd(&self, dir: PathBuf) {
        *lock(&self.cwd) = dir;
    }

    /// A snapshot of the environment overlay.
    pub fn env_overlay(&self) -> Vec<(String, String)> {
        self.env
            .snapshot()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Adds or overwrites one overlay variable (never removes: FX-5).
    pub fn set_env(&self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        self.env.apply([(key, value)]);
    }

    /// A copy of the read-file state (for a sub-agent's own context, SA-6).
    pub fn read_files(&self) -> FileReadState {
        lock(&self.read_files).clone()
    }

    /// Records that `path` was read (or written) and is now at `stamp`.
    pub fn record_read(&self, path: PathBuf, stamp: ReadStamp) {
        lock(&self.read_files).record(path, stamp);
    }

    /// Resolves `path` against the working directory when it is relative.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd().join(path)
        }
    }
}

/// The session services tools call into. The query loop provides the real ones (file
/// history, transcript side files, the app store's todos); tests provide recorders.
pub trait ToolHooks: Send + Sync {
    /// Called once by every Write/Edit call, after its checks passed and before `path`
    /// changes (also when `path` does not exist yet), so the file can be backed up for
    /// rewind. The implementation keeps only the first backup of a file per turn. An
    /// error aborts the edit (nothing is lost unrecorded).
    fn before_edit(&self, path: &Path) -> Result<(), String>;

    /// Stores a tool output too large for the transcript; returns where it went, for the
    /// reference left in its place.
    fn store_large_output(&self, tool_use_id: &str, content: &str) -> Result<PathBuf, String>;

    /// Replaces the session's todo list (TodoWrite).
    fn set_todos(&self, todos: Value);

    /// The session's current todo list (a JSON array), reported as `oldTodos` in
    /// TodoWrite's detail. The default is an empty list.
    fn todos(&self) -> Value {
        Value::Array(Vec::new())
    }

    /// `text` with known secret values redacted. Tools call this on output before they
    /// cut it (a secret cut in half would no longer be recognised afterwards). The
    /// default redacts nothing; [`ToolRegistry::call`] supplies hooks that redact.
    fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        std::borrow::Cow::Borrowed(text)
    }

    /// The session's background shell tasks (Bash `run_in_background`, TaskOutput,
    /// TaskStop). The default has none: those calls answer with an error.
    fn shell_tasks(&self) -> Option<Arc<bash::background::ShellTasks>> {
        None
    }

    /// The session's sub-agents (TaskOutput and TaskStop on a background agent). The
    /// default has none.
    fn agents(&self) -> Option<Arc<crate::agents::AgentRuntime>> {
        None
    }

    /// The session's permission mode now; `None` outside a session.
    fn permission_mode(&self) -> Option<PermissionMode> {
        None
    }

    /// Changes the permission mode through the session's one mode gate, so the change
    /// reaches the SDK status stream and the remote (FX-1). The default (no session)
    /// refuses.
    fn set_permission_mode(&self, mode: PermissionMode) -> Result<(), String> {
        Err(format!(
            "this run has no session whose permission mode could change to {mode}"
        ))
    }

    /// Where this session's plan is saved: `<config>/plans/<plan slug>.md`, the slug
    /// assigned on first use and kept in the bootstrap state (BS-5). `None` outside a
    /// session.
    fn plan_file(&self) -> Option<PathBuf> {
        None
    }

    /// The session's skills (the Skill tool). The default has none.
    fn skills(&self) -> Option<Arc<crate::commands::SkillCatalog>> {
        None
    }

    /// The session's id (a skill's `${CLAUDE_SESSION_ID}`). The default has none.
    fn session_id(&self) -> Option<String> {
        None
    }

    /// Asks the session's small, fast model `prompt` (WebFetch applies its prompt to a
    /// page this way); its cost counts in the session's. The default (no session) has
    /// no model to ask.
    fn ask_small_model(
        &self,
        system: String,
        prompt: String,
        cancel: CancellationToken,
    ) -> SmallModelFuture<'_> {
        let _ = (system, prompt, cancel);
        Box::pin(async { Err("this run has no model to apply the prompt with".to_owned()) })
    }

    /// Runs a web search through the session's provider (WebSearch). The default (no
    /// session) cannot search.
    fn web_search(&self, query: WebSearchQuery, cancel: CancellationToken) -> WebSearchFuture<'_> {
        let _ = (query, cancel);
        Box::pin(async { Err("this run has no model service to search with".to_owned()) })
    }
}

/// Hooks for tools used outside a session (examples, sub-systems without a transcript):
/// no file history is kept, large outputs cannot be stored aside (the tool keeps a
/// truncated copy inline and says so), and todo lists are dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl ToolHooks for NoHooks {
    fn before_edit(&self, _path: &Path) -> Result<(), String> {
        Ok(())
    }

    fn store_large_output(&self, _tool_use_id: &str, _content: &str) -> Result<PathBuf, String> {
        Err("this run has no session to store large outputs in".into())
    }

    fn set_todos(&self, _todos: Value) {}
}

/// The default tool set, in the order the model is told about them.
pub fn default_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(Bash),
        Arc::new(Glob),
        Arc::new(Grep),
        Arc::new(Read),
        Arc::new(Edit),
        Arc::new(Write),
        Arc::new(NotebookEdit),
        Arc::new(TodoWrite),
        Arc::new(TaskOutput),
        Arc::new(TaskStop),
        Arc::new(EnterPlanMode),
        Arc::new(ExitPlanMode),
        Arc::new(AskUserQuestion),
        Arc::new(Skill),
        Arc::new(WebFetch::default()),
        Arc::new(WebSearch),
    ]
}

/// The tools of a session, looked up by name.
#[derive(Debug, Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new(default_tools())
    }
}

impl ToolRegistry {
    /// A registry of `tools` (later duplicates of a name are ignored by [`Self::get`]).
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self { tools }
    }

    /// The tool called `name` (or with `name` among its aliases).
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|t| t.name() == name)
            .or_else(|| self.tools.iter().find(|t| t.aliases().contains(&name)))
    }

    /// Every tool, in order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The tool names, in order (the headless `init` line's `tools`).
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// Keeps only the tools `keep` accepts (e.g. drop those a `--disallowedTools`
    /// entry names without a pattern, so the model is not offered them).
    #[must_use]
    pub fn filtered(&self, keep: impl Fn(&dyn Tool) -> bool) -> Self {
        Self {
            tools: self
                .tools
                .iter()
                .filter(|t| keep(t.as_ref()))
                .cloned()
                .collect(),
        }
    }

    /// The definitions sent to the model.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|t| ToolDefinition::function(t.name(), t.describe(), t.input_schema()))
            .collect()
    }

    /// Runs `call` on the tool called `name`; an unknown name is an error result.
    ///
    /// Known secret values are redacted from the result (text and detail) and from a
    /// long output's side file here, for every tool, before anything records or sends
    /// them (see [`crate::secrets`]).
    pub async fn call(&self, name: &str, call: ToolCall, ctx: &ToolContext) -> ToolOutput {
        let Some(tool) = self.get(name) else {
            return ToolOutput::error(format!(
                "No such tool: {name}. Available tools: {}",
                self.names().join(", ")
            ));
        };
        let redactor = Arc::new(ctx.secrets.redactor(&ctx.env.snapshot()));
        if redactor.is_empty() {
            return tool.call(call, ctx).await;
        }
        let ctx = ToolContext {
            hooks: Arc::new(RedactingHooks {
                inner: Arc::clone(&ctx.hooks),
                redactor: Arc::clone(&redactor),
            }),
            ..ctx.clone()
        };
        let mut output = tool.call(call, &ctx).await;
        if let std::borrow::Cow::Owned(text) = redactor.redact(&output.content) {
            output.content = text;
        }
        if let Some(detail) = output.detail.as_mut() {
            redactor.redact_json(detail);
        }
        output
    }
}

/// Session hooks whose stored large outputs are redacted first.
struct RedactingHooks {
    inner: Arc<dyn ToolHooks>,
    redactor: Arc<Redactor>,
}

impl ToolHooks for RedactingHooks {
    fn before_edit(&self, path: &Path) -> Result<(), String> {
        self.inner.before_edit(path)
    }

    fn store_large_output(&self, tool_use_id: &str, content: &str) -> Result<PathBuf, String> {
        self.inner
            .store_large_output(tool_use_id, &self.redactor.redact(content))
    }

    fn set_todos(&self, todos: Value) {
        self.inner.set_todos(todos);
    }

    fn todos(&self) -> Value {
        self.inner.todos()
    }

    fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.redactor.redact(text)
    }

    fn shell_tasks(&self) -> Option<Arc<bash::background::ShellTasks>> {
        self.inner.shell_tasks()
    }

    fn agents(&self) -> Option<Arc<crate::agents::AgentRuntime>> {
        self.inner.agents()
    }

    fn permission_mode(&self) -> Option<PermissionMode> {
        self.inner.permission_mode()
    }

    fn set_permission_mode(&self, mode: PermissionMode) -> Result<(), String> {
        self.inner.set_permission_mode(mode)
    }

    fn plan_file(&self) -> Option<PathBuf> {
        self.inner.plan_file()
    }

    fn skills(&self) -> Option<Arc<crate::commands::SkillCatalog>> {
        self.inner.skills()
    }

    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }

    fn ask_small_model(
        &self,
        system: String,
        prompt: String,
        cancel: CancellationToken,
    ) -> SmallModelFuture<'_> {
        self.inner.ask_small_model(system, prompt, cancel)
    }

    fn web_search(&self, query: WebSearchQuery, cancel: CancellationToken) -> WebSearchFuture<'_> {
        self.inner.web_search(query, cancel)
    }
}
