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

// The transcript recorder, cost accounting and file history are shared with the query
// loop; they stay reachable under `engine::` for the engine's own modules.
pub(crate) use crate::{cost, file_history};
mod commands;
mod context_report;
mod error;
mod handles;
mod live_settings;
mod mcp;
mod open;
mod permission_updates;
mod tasks;
pub(crate) use self::permission_updates::apply_permission_updates;
mod small_model;
mod ui_ops;
mod web_search;
pub(crate) use crate::record;
pub(crate) mod tool_services;

use crate::sync::lock;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use smol_str::SmolStr;
use strata_config::GlobalConfigFile;
use strata_protocol::message::Message;
use strata_protocol::permission::PermissionMode;
use strata_protocol::sdk::{InitMessage, ResultMessage};
use strata_state::{AppRoot, AppState};
use strata_store::Store;
use tokio_util::sync::CancellationToken;

pub use self::error::{CloseError, OpenError, RewindError, SetModeError, TaskError};
pub use self::handles::{BootstrapHandle, EngineHandles};
pub use self::mcp::ProjectServerAnswer;
pub use self::record::TranscriptMirror;
use self::record::{Recorder, TurnSignal};
use crate::permissions::{PermissionLaunch, check_mode_change};
use crate::provider::Provider;
pub use crate::query::ports::{EventSink, PermissionPrompt, PermissionPrompter, PromptFuture};
use crate::query::{TurnContext, TurnHost};
use crate::tools::{ToolContext, ToolRegistry};

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
    /// The bootstrap state and session scope the session runs with: the binary passes
    /// the process defaults ([`EngineHandles::process`]), a host with several sessions
    /// open at once gives each its own ([`EngineHandles::private`]).
    pub handles: EngineHandles,
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
    /// `--system-prompt` (or the `systemPrompt` of an SDK's `initialize`): replaces the
    /// default system prompt; an empty string means the default (both SDKs send one).
    pub system_prompt: Option<String>,
    /// `--append-system-prompt` (or `appendSystemPrompt`): appended to the system prompt.
    pub append_system_prompt: Option<String>,
    /// `--mcp-config` values (files or JSON), in order.
    pub mcp_config: Vec<String>,
    /// `--strict-mcp-config`: only the servers of `mcp_config`.
    pub strict_mcp_config: bool,
    /// `--max-thinking-tokens`: the thinking budget (`0`: thinking off); else the
    /// `maxThinkingTokens` setting when thinking is on.
    pub max_thinking_tokens: Option<u32>,
    /// What an SDK host adds: partial messages, a budget, the session id, hooks.
    pub sdk: SdkOptions,
}

impl EngineOptions {
    /// A session in `cwd` with config directory `config_dir`, talking to `provider` and
    /// sending its messages to `events`, with every other option at its default: no
    /// prompter (calls that need one are denied), not interactive, no resume, the
    /// settings' model and permission mode, no SDK options. Hosts change what they need
    /// with struct-update syntax:
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use strata_agent::engine::{EngineHandles, EngineOptions, EventSink};
    /// # fn f(provider: Arc<dyn strata_agent::provider::Provider>, events: Arc<dyn EventSink>) {
    /// let options = EngineOptions {
    ///     max_turns: Some(3),
    ///     ..EngineOptions::new(
    ///         "/project".into(),
    ///         "/home/me/.strata".into(),
    ///         EngineHandles::private(),
    ///         provider,
    ///         events,
    ///     )
    /// };
    /// # }
    /// ```
    pub fn new(
        cwd: PathBuf,
        config_dir: PathBuf,
        handles: EngineHandles,
        provider: Arc<dyn Provider>,
        events: Arc<dyn EventSink>,
    ) -> Self {
        Self {
            cwd,
            config_dir,
            handles,
            provider,
            model: None,
            permission: PermissionLaunch::default(),
            settings_flag: None,
            resume: None,
            fork_session: false,
            max_turns: None,
            interactive: false,
            verbose: false,
            prompter: None,
            events,
            system_prompt: None,
            append_system_prompt: None,
            mcp_config: Vec::new(),
            strict_mcp_config: false,
            max_thinking_tokens: None,
            sdk: SdkOptions::default(),
        }
    }
}

/// The options an SDK client's flags add to a session (`--include-partial-messages`,
/// `--max-budget-usd`, `--session-id`, hooks).
#[derive(Clone, Default)]
pub struct SdkOptions {
    /// Emit `stream_event` messages with the model's raw stream events.
    pub include_partial_messages: bool,
    /// Stop a turn with `error_max_budget_usd` once the session has cost this much.
    pub max_budget_usd: Option<f64>,
    /// The id of a new session (`--session-id`); ignored when resuming.
    pub session_id: Option<uuid::Uuid>,
    /// `--tools`: the only built-in tools the model is offered (`None`: all of them).
    pub tools: Option<Vec<String>>,
    /// The session's hooks (settings files and SDK callbacks); `None`: none run.
    pub hooks: Option<Arc<crate::hooks::Hooks>>,
    /// Hold a turn's `result` back while background agents it started still run, giving
    /// their notifications to the model first (headless: the reference's print mode).
    pub hold_result_for_agents: bool,
    /// Agent types the host defines (`--agents` JSON), over the files'.
    pub agents: Option<Value>,
    /// `--json-schema`: every turn's answer is given through the `StructuredOutput` tool
    /// and validated against the schema ([`crate::structured`]).
    pub structured_output: Option<Arc<crate::structured::StructuredOutput>>,
    /// `--no-session-persistence`: no transcript (nor its metadata lines) is written and
    /// the project's cost slot is not saved; the session cannot be resumed.
    pub no_session_persistence: bool,
    /// `--setting-sources`: which of the user, project and local settings files load
    /// (`None`: all three; the flag and managed settings always load).
    pub setting_sources: Option<Vec<strata_config::SettingsSource>>,
    /// Where every transcript line is copied besides the file (`--remote`: the
    /// session's stream on NATS).
    pub transcript_mirror: Option<Arc<dyn TranscriptMirror>>,
}

/// One session at work.
///
/// Made by [`Engine::open`]; cheap to share behind an `Arc` (control requests arrive on
/// another task while a prompt runs). It owns the session's root store, the only one its
/// [`SessionScope`](strata_state::SessionScope) admits while it is open (UI-5); engines
/// with handles of their own ([`EngineHandles::private`]) can be open side by side in one
/// process.
pub struct Engine {
    inner: Arc<Inner>,
}

/// Everything an open session holds. Private to the engine and its modules (opening,
/// live settings, permission updates, tool services); a turn sees only its
/// [`TurnContext`].
struct Inner {
    session_id: String,
    /// Held for its lifetime: while it lives, this session's root store is the only one
    /// (UI-5); dropping it ends the root.
    _root: AppRoot,
    store: Store<AppState>,
    bootstrap: BootstrapHandle,
    provider: Arc<dyn Provider>,
    /// The provider's default model, when neither the app state nor the settings name one.
    default_model: Option<String>,
    tools: ToolRegistry,
    /// The session's MCP connections (their state is the store's `mcp` domain).
    mcp: strata_mcp::McpManager,
    /// The MCP tools last built, with the manager's generation they were built at
    /// (`engine/mcp.rs`: rebuilt only when a server's view changed).
    mcp_tools: Mutex<Option<(u64, mcp::McpTools)>>,
    /// The tools' context; each turn clones it with the turn's cancellation.
    tool_context: ToolContext,
    /// The session's fixed facts a permission decision reads beside the store's
    /// permission context (project root, home, protected directories).
    permission_env: Arc<crate::permissions::PermissionEnv>,
    recorder: Arc<Recorder>,
    /// File history's persistence port (the history itself is the app state's
    /// `file_history` domain).
    file_history: Arc<file_history::SessionFileHistory>,
    /// The uuid of the prompt being answered (file-history snapshots are per prompt).
    prompt_uuid: Arc<Mutex<String>>,
    events: Arc<dyn EventSink>,
    prompter: Option<Arc<dyn PermissionPrompter>>,
    max_turns: Option<u32>,
    cwd: PathBuf,
    project_root: PathBuf,
    global: GlobalConfigFile,
    /// Problems found while opening (bad settings files, rules that did not parse).
    warnings: Vec<String>,
    /// The resumed conversation was cut off mid-turn.
    resumed_interrupted: bool,
    /// What the resumed session had cost before this run (SP-4; 0 for a new session).
    restored_cost_usd: f64,
    /// The running turn's cancellation, for [`Engine::interrupt`].
    current_turn: Mutex<Option<CancellationToken>>,
    /// Held for its lifetime: the settings watcher (UI-7); `None` when it could not start.
    _settings_watcher: Option<strata_config::SettingsWatcher>,
    /// The SDK client's options.
    sdk: SdkOptions,
    /// The system prompt, thinking budget and context count (issue 13).
    long: crate::query::LongSession,
    /// The session's sub-agents (issue 11).
    agents: Arc<crate::agents::AgentRuntime>,
    /// Cancelled when the session closes: background work (shell tasks, agents) is its
    /// child.
    lifetime: CancellationToken,
    /// The user's custom slash commands (read at open).
    commands: crate::commands::CommandCatalog,
}

impl Engine {
    /// Opens a new session, or resumes the one `options.resume` names (the transcript
    /// rebuilt by the rules of `COMPAT.md`; `--fork-session` continues in a copy).
    pub async fn open(options: EngineOptions) -> Result<Engine, OpenError> {
        let inner = tokio::task::spawn_blocking(move || open::open(options))
            .await
            .map_err(|e| OpenError::Task(e.to_string()))??;
        Ok(Engine {
            inner: Arc::new(inner),
        })
    }

    /// The session id.
    pub fn session_id(&self) -> String {
        self.inner.session_id.clone()
    }

    /// The session's credentials (variable names and known secret values), shared with
    /// its tools: a value registered here is redacted from every tool result.
    pub fn secrets(&self) -> &crate::secrets::Secrets {
        &self.inner.tool_context.secrets
    }

    /// The session's root store (read state, subscribe, select).
    pub fn store(&self) -> &Store<AppState> {
        &self.inner.store
    }

    /// The root store with its effects hub: what a host attaches ports to (the remote
    /// metadata port, FX-1) and applies metadata made elsewhere through (FX-7).
    pub fn app_store(&self) -> &strata_state::AppStore {
        self.inner._root.store()
    }

    /// Problems found while opening: settings files that did not parse, rules that did
    /// not, modes that were refused. Each is one line for the user.
    pub fn warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// The user's custom slash commands found when the session opened (for `/help` and
    /// completion; a prompt `/name args` runs one).
    pub fn custom_commands(&self) -> &crate::commands::CommandCatalog {
        &self.inner.commands
    }

    /// Whether the resumed conversation had been cut off mid-turn.
    pub fn resumed_interrupted(&self) -> bool {
        self.inner.resumed_interrupted
    }

    /// What the session had cost before this run, in USD: the project's cost slot when it
    /// belongs to this session, else the usage in its transcript (SP-4); 0 for a new
    /// session. A UI adds each turn's cost to it, so a resumed session's total does not
    /// start again at zero.
    pub fn restored_cost_usd(&self) -> f64 {
        self.inner.restored_cost_usd
    }

    /// The model the next request will use.
    pub fn model(&self) -> String {
        self.inner.model()
    }

    /// The provider's default model: what [`Engine::model`] is when neither the app state
    /// (`main_loop_model`) nor the settings name one.
    pub fn default_model(&self) -> Option<&str> {
        self.inner.default_model.as_deref()
    }

    /// The `system/init` message describing the session.
    pub fn init_message(&self) -> InitMessage {
        let inner = &self.inner;
        let state = inner.store.get();
        InitMessage {
            cwd: inner.cwd.to_string_lossy().into_owned(),
            session_id: inner.session_id.clone(),
            tools: inner
                .tools
                .names()
                .into_iter()
                .map(str::to_owned)
                .chain(state.mcp.tools.iter().map(|t| t.qualified_name.to_string()))
                .collect(),
            mcp_servers: state
                .mcp
                .clients
                .iter()
                .map(|(name, c)| strata_protocol::sdk::McpServerStatus {
                    name: name.to_string(),
                    status: strata_mcp::status_name(&c.status).to_owned(),
                })
                .collect(),
            model: inner.model(),
            permission_mode: state.tool_permission_context.mode.to_string(),
            // Command files, skills and MCP prompts: one list (engine/commands.rs).
            slash_commands: self
                .slash_command_entries()
                .into_iter()
                .map(|e| e.name)
                .collect(),
            api_key_source: inner.provider.api_key_source().to_owned(),
            claude_code_version: env!("CARGO_PKG_VERSION").to_owned(),
            output_style: inner.long.prompt.output_style_name(),
            uuid: uuid::Uuid::new_v4().to_string(),
            // The agent types the Agent tool offers (the SDKs' `agents`: names), and the
            // skills the session found (`skills`: names, as the SDKs' type declares).
            extra: serde_json::Map::from_iter([
                (
                    "agents".to_owned(),
                    Value::from(inner.agents.definitions().names()),
                ),
                (
                    "skills".to_owned(),
                    Value::from(
                        inner
                            .skills()
                            .skills()
                            .iter()
                            .map(|s| s.name.clone())
                            .collect::<Vec<_>>(),
                    ),
                ),
            ]),
        }
    }

    /// Runs one user prompt to the end of the turn (or `--max-turns`, or `cancel`), and
    /// returns the `result` message (also emitted). An interrupted turn is recorded and
    /// the session stays resumable.
    pub async fn run_prompt(&self, prompt: Message, cancel: CancellationToken) -> ResultMessage {
        self.run_prompt_with_uuid(prompt, None, cancel).await
    }

    /// [`run_prompt`](Self::run_prompt), recording the prompt under `uuid` when it is a
    /// UUID (an SDK client names its prompts, then rewinds files to one of them with
    /// `rewind_files`); another value is ignored and a new uuid used.
    pub async fn run_prompt_with_uuid(
        &self,
        prompt: Message,
        uuid: Option<String>,
        cancel: CancellationToken,
    ) -> ResultMessage {
        let uuid = uuid.filter(|u| uuid::Uuid::parse_str(u).is_ok());
        *lock(&self.inner.current_turn) = Some(cancel.clone());
        let _running = TurnSignal::start(self.inner.sdk.transcript_mirror.clone());
        let (prompt, meta, command_turn) = self.inner.expand_custom_command(prompt, &cancel).await;
        let prompt = self.inner.expand_mcp_prompt(prompt, &cancel).await;
        let tools = self.inner.turn_tools(&cancel).await;
        let agent = self.inner.root_agent(&cancel);
        let turn = self.inner.turn_context(&tools, &agent);
        // `/compact [instructions]` is a slash prompt in every mode (headless and
        // stream-json included): it compacts instead of asking the model.
        let result = match compact_command(&prompt) {
            Some(instructions) => {
                crate::query::run_compact(&turn, instructions.as_deref(), cancel).await
            }
            None => {
                let result =
                    crate::query::run_turn(&turn, prompt, meta, uuid, cancel.clone()).await;
                let result = self.hold_for_background(result, &tools, &cancel).await;
                self.inner
                    .events
                    .emit(strata_protocol::sdk::SdkMessage::Result(result.clone()));
                result
            }
        };
        command_turn.finish(&self.inner);
        lock(&self.inner.current_turn).take();
        result
    }

    /// The session's system prompt (its output style: `/output-style`).
    pub fn session_prompt(&self) -> &crate::prompt::SessionPrompt {
        &self.inner.long.prompt
    }

    /// Replaces the system prompt and the appended text (an SDK's `initialize`); the
    /// next request uses them. `None` keeps what the flags set.
    pub fn set_system_prompt(&self, system_prompt: Option<String>, append: Option<String>) {
        self.inner.long.prompt.set_overrides(system_prompt, append);
    }

    /// Runs the SessionStart hooks (`source`: `startup`, `resume`, `clear`, `compact`);
    /// what they add for the model joins the system prompt. Returns the problems to
    /// report.
    pub async fn session_start_hooks(&self, source: &str) -> Vec<String> {
        let Some(hooks) = self.inner.sdk.hooks.clone() else {
            return Vec::new();
        };
        let outcome = hooks
            .run(
                crate::hooks::HookEvent::SessionStart,
                Some(source),
                &self.inner.hook_session(),
                serde_json::json!({"source": source}),
                None,
                &CancellationToken::new(),
            )
            .await;
        if let Some(context) = outcome.context_text() {
            self.inner.long.prompt.set_hook_context(Some(context));
        }
        outcome.errors
    }

    /// Runs the SessionEnd hooks (`reason`: `other`, `prompt_input_exit`, …), bounded
    /// by their timeouts; returns the problems to report.
    pub async fn session_end_hooks(&self, reason: &str) -> Vec<String> {
        let Some(hooks) = self.inner.sdk.hooks.clone() else {
            return Vec::new();
        };
        hooks
            .run(
                crate::hooks::HookEvent::SessionEnd,
                Some(reason),
                &self.inner.hook_session(),
                serde_json::json!({"reason": reason}),
                None,
                &CancellationToken::new(),
            )
            .await
            .errors
    }

    /// The session's hooks, if any.
    pub fn hooks(&self) -> Option<&Arc<crate::hooks::Hooks>> {
        self.inner.sdk.hooks.as_ref()
    }

    /// The session's transcript file.
    pub fn transcript_path(&self) -> PathBuf {
        self.inner.recorder.path()
    }

    /// The context window's use (control request `get_context_usage`): the SDK's shape,
    /// `totalTokens`, `maxTokens`, `percentage`, `categories` (system prompt, tools,
    /// memory files, messages, free space) and `memoryFiles` (path, type, tokens).
    pub fn context_usage(&self) -> Value {
        context_report::report(&self.inner)
    }

    /// Sets the thinking budget (control request `set_max_thinking_tokens`): `None`: back
    /// to the settings' budget (thinking as the settings say), `Some(0)`: off.
    pub fn set_max_thinking_tokens(&self, tokens: Option<u32>) {
        self.inner.long.set_thinking_tokens(tokens);
    }

    /// Problems with the memory files (cut, left out, unreadable), each naming the file.
    pub fn memory_warnings(&self) -> &[String] {
        self.inner.long.prompt.warnings()
    }

    /// Interrupts the running turn, if any (control request `interrupt`).
    pub fn interrupt(&self) {
        if let Some(turn) = lock(&self.inner.current_turn).as_ref() {
            turn.cancel();
        }
    }

    /// Changes the permission mode through the one gate (control request
    /// `set_permission_mode`); the change reaches the SDK status stream and the remote
    /// through the effects hub (FX-1). A refused change leaves the mode as it was and
    /// says why ([`SetModeError`]).
    pub fn set_permission_mode(&self, mode: &str) -> Result<(), SetModeError> {
        self.inner.set_permission_mode(mode)
    }

    /// Changes the main-loop model (`None` or blank: back to the default). FX-2 persists
    /// it. Any name is taken: providers (OpenAI-compatible servers especially) serve
    /// models strata has no list of, and a name the service does not know fails the next
    /// request with the service's own message.
    pub fn set_model(&self, model: Option<String>) {
        let model = model.filter(|m| !m.trim().is_empty()).map(SmolStr::from);
        let _ = self.inner.store.update(|s| {
            if s.main_loop_model != model {
                s.main_loop_model = model.clone();
            }
        });
    }

    /// Restores the files edited since user message `uuid` (control request
    /// `rewind_files`); the report as JSON (`filesChanged`, `insertions`, `deletions`).
    /// [`RewindError::TargetNotFound`] when no prompt of the session has that uuid.
    pub fn rewind_files(&self, uuid: &str, dry_run: bool) -> Result<Value, RewindError> {
        let report =
            file_history::rewind(&self.inner.store, &self.inner.file_history, uuid, dry_run)?;
        Ok(serde_json::json!({
            "dryRun": report.dry_run,
            "filesChanged": report.files_changed(),
            "insertions": report.insertions(),
            "deletions": report.deletions(),
            "files": report.changes.iter().map(|c| c.path.clone()).collect::<Vec<_>>(),
            "outsideProject": report.outside_project,
        }))
    }

    /// The session's MCP connections (reconnect, enable, calls outside a turn).
    pub fn mcp(&self) -> &strata_mcp::McpManager {
        &self.inner.mcp
    }

    /// Adds the MCP servers an SDK client sends in `initialize`'s `mcpServers` and starts
    /// them. In-process SDK servers (`"type": "sdk"`) cannot be reached from here and are
    /// skipped; what is skipped comes back as one line each. `Err`: the configuration
    /// as a whole does not parse, and no server was taken.
    pub fn add_sdk_mcp_servers(
        &self,
        servers: &Value,
    ) -> Result<Vec<String>, strata_mcp::config::ConfigError> {
        let mut problems = Vec::new();
        let mut servers = servers.clone();
        if let Some(map) = servers.as_object_mut() {
            map.retain(|name, v| {
                let sdk = v.get("type").and_then(Value::as_str) == Some("sdk");
                if sdk {
                    problems.push(format!(
                        "MCP server {name:?}: in-process SDK servers are not supported; it is not started"
                    ));
                }
                !sdk
            });
        }
        match strata_mcp::config::parse_servers_value(&servers, "initialize.mcpServers") {
            Ok(parsed) => self.inner.mcp.add_servers(
                parsed
                    .into_iter()
                    .map(|(name, config)| strata_mcp::ConfiguredServer {
                        name: name.into(),
                        scope: strata_state::McpConfigScope::Dynamic,
                        config,
                        blocked: None,
                        disabled: false,
                    })
                    .collect(),
            ),
            Err(e) => return Err(e),
        }
        Ok(problems)
    }

    /// Every MCP server's status as the control request `mcp_status` answers it:
    /// `{"mcpServers": [{name, status, serverInfo?, error?, stderr?, scope, tools}]}`,
    /// read from the app state.
    pub fn mcp_status(&self) -> Value {
        let state = self.inner.store.get();
        let servers: Vec<Value> = state
            .mcp
            .clients
            .iter()
            .map(|(name, c)| mcp::status_json(name, c, state.mcp.tools_of(name).count()))
            .collect();
        serde_json::json!({ "mcpServers": servers })
    }

    /// Makes the transcript durable and saves the project's cost slot (SP-4).
    ///
    /// A transcript that could not be made durable is an error (records the user was
    /// shown may be lost). A cost slot that could not be saved (a `config.json` the user
    /// broke, which is never overwritten) is only a warning, returned for the caller to
    /// show: the session itself is intact, and resume rebuilds its cost from the
    /// transcript.
    pub async fn close(self) -> Result<Vec<String>, CloseError> {
        let inner = self.inner;
        inner.mcp.shutdown();
        // Background agents and shell tasks stop with the session (their owner).
        inner.lifetime.cancel();
        inner.agents.shutdown();
        tokio::task::spawn_blocking(move || {
            // Closed means closed: the transcript is unlocked when this returns, even
            // while a cancelled background task still holds the recorder (issue 25).
            let synced = inner.recorder.shutdown();
            let mut warnings = Vec::new();
            if inner.recorder.file_exists() {
                let summary = inner.bootstrap.cost_summary();
                if let Err(e) = cost::save_cost_slot(&inner.global, &inner.project_root, &summary) {
                    warnings.push(format!("the session cost could not be saved: {e}"));
                }
            }
            synced.map(|()| warnings).map_err(CloseError::Sync)
        })
        .await
        .map_err(|e| CloseError::Task(e.to_string()))?
    }
}

impl Inner {
    /// Changes the permission mode through the one gate ([`check_mode_change`]): the
    /// control request and a prompt answer's `setMode` both come here.
    pub(crate) fn set_permission_mode(&self, mode: &str) -> Result<(), SetModeError> {
        change_mode(&self.store, mode)
    }

    /// What a hook's input says about the session now.
    fn hook_session(&self) -> crate::hooks::HookSession {
        crate::hooks::HookSession {
            session_id: self.session_id.clone(),
            transcript_path: self.recorder.path(),
            cwd: self.tool_context.cwd(),
            permission_mode: self.store.get().tool_permission_context.mode.to_string(),
        }
    }

    /// The main agent's context for a turn cancelled by `cancel`: it reads and writes the
    /// root store and its tools run in the session's tool context.
    fn root_agent(&self, cancel: &CancellationToken) -> crate::context::ToolUseContext {
        let mut tools = self.tool_context.clone();
        tools.cancel = cancel.clone();
        crate::context::ToolUseContext::root(
            &self.store,
            tools,
            Arc::new(crate::context::NoopCallbacks),
        )
    }

    /// What one turn of this session needs (the query loop sees nothing else).
    fn turn_context<'a>(
        &'a self,
        tools: &'a ToolRegistry,
        agent: &'a crate::context::ToolUseContext,
    ) -> TurnContext<'a> {
        TurnContext {
            session_id: &self.session_id,
            store: &self.store,
            provider: &*self.provider,
            tools,
            agent,
            agents: &self.agents,
            task: None,
            host: self,
            permission_env: &self.permission_env,
            prompter: self.prompter.as_ref(),
            recorder: &self.recorder,
            file_history: &self.file_history,
            prompt_uuid: &self.prompt_uuid,
            events: &self.events,
            bootstrap: &self.bootstrap,
            max_turns: self.max_turns,
            cwd: &self.cwd,
            sdk: &self.sdk,
            long: &self.long,
        }
    }

    /// The model of the next request: the app state's (BS-7: the authority), else the
    /// settings' as they are now (live, UI-7), else the provider's default.
    pub(crate) fn model(&self) -> String {
        let state = self.store.get();
        state
            .main_loop_model
            .as_ref()
            .map(|m| m.to_string())
            .or_else(|| state.settings.model.clone())
            .or_else(|| self.default_model.clone())
            .unwrap_or_default()
    }
}

/// The instructions of a `/compact [instructions]` prompt (`Some(None)`: none given),
/// `None` when `prompt` is not one.
fn compact_command(prompt: &Message) -> Option<Option<String>> {
    use strata_protocol::message::{ContentBlock, MessageContent};
    let text = match &prompt.content {
        MessageContent::Text(t) => t.as_str(),
        MessageContent::Blocks(blocks) => match blocks.as_slice() {
            [ContentBlock::Text(t)] => t.text.as_str(),
            _ => return None,
        },
    };
    let rest = text.trim().strip_prefix("/compact")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None; // `/compaction-notes` is some other command
    }
    let rest = rest.trim();
    Some((!rest.is_empty()).then(|| rest.to_owned()))
}

/// The live parts of a turn: prompt answers' permission updates, the model.
impl TurnHost for Inner {
    fn apply_permission_updates(&self, updates: &[Value]) {
        Inner::apply_permission_updates(self, updates);
    }

    fn model(&self) -> String {
        Inner::model(self)
    }

    fn tools_now(&self, turn: &ToolRegistry) -> Option<ToolRegistry> {
        Inner::tools_now(self, turn)
    }
}

/// The one mode gate ([`check_mode_change`]) on `store`: the control request, a prompt
/// answer's `setMode` and the plan-mode tools (EnterPlanMode, ExitPlanMode) all change the
/// mode here, so FX-1 (SDK status, remote metadata) fires for each of them.
pub(crate) fn change_mode(
    store: &strata_store::Store<strata_state::AppState>,
    mode: &str,
) -> Result<(), SetModeError> {
    let requested: PermissionMode = mode.parse()?;
    // The gate reads bypass availability from the same state the change is made to.
    let mut outcome = Ok(());
    let _ = store.update(|s| {
        let bypass = crate::permissions::bypass_of(&s.tool_permission_context, &s.settings);
        match check_mode_change(requested, bypass) {
            Ok(allowed) if s.tool_permission_context.mode != allowed => {
                s.tool_permission_context.mode = allowed;
                outcome = Ok(());
            }
            Ok(_) => outcome = Ok(()),
            Err(e) => outcome = Err(e),
        }
    });
    Ok(outcome?)
}
