//! [`AgentRuntime`]: runs the Agent tool's sub-agents of one session.
//!
//! A call is checked (its type exists, the nesting depth and the number of agents running
//! at once are within [`MAX_AGENT_DEPTH`] and [`MAX_RUNNING_AGENTS`]), SubagentStart hooks
//! run, and the agent is prepared (`prepare.rs`). Then either
//!
//! - **synchronously**: it runs inside the caller's turn, through the same query loop, and
//!   its final answer is the call's result; its permission prompts go to the caller's
//!   prompter (SA-4: it prompts), its messages to the stream under the call's id; or
//! - **in the background** (`run_in_background: true`): it becomes a local agent task in
//!   the root store (SA-3) and runs on its own tokio task; the call returns at once, and
//!   when it ends the main agent gets a task notification with its result
//!   (`background.rs`). It never prompts (SA-4): what would need approval is decided by
//!   the rules alone.
//!
//! Either way its usage counts in the session's cost (the bootstrap totals, which every
//! response adds to) and in its caller's `result` (a synchronous agent's totals are merged
//! into the caller's run; a background agent's into the run it ends in).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_protocol::message::Message;
use strata_session::layout::SessionLayout;
use strata_state::AppState;
use strata_state::tasks::EVICTION_GRACE_MS;
use strata_store::Store;
use tokio_util::sync::CancellationToken;

use super::definitions::AgentDefinitions;
use super::events::ForwardEvents;
use super::prepare::Prepared;
use super::tool::AgentInput;
use crate::background::{Notifications, TaskObserver};
use crate::cost::RunTotals;
use crate::permissions::PermissionEnv;
use crate::provider::Provider;
use crate::query::ports::{EventSink, PermissionPrompter};
use crate::query::{AgentFailure, AgentRun, TurnContext, run_agent};
use crate::sync::lock;
use crate::tools::{ToolCall, ToolOutput};

/// Sub-agents may start sub-agents this many levels deep (1: only the main agent starts
/// them).
pub const MAX_AGENT_DEPTH: u32 = 3;

/// At most this many sub-agents run at once in a session (synchronous and background
/// together); one more is refused with an error naming the running ones.
pub const MAX_RUNNING_AGENTS: usize = 32;

/// What a session gives its sub-agents.
pub(crate) struct AgentRuntimeParts {
    pub(crate) session_id: String,
    pub(crate) root: Store<AppState>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) permission_env: Arc<PermissionEnv>,
    pub(crate) observer: Arc<dyn TaskObserver>,
    pub(crate) notifications: Arc<Notifications>,
    pub(crate) bootstrap: crate::engine::BootstrapHandle,
    pub(crate) layout: SessionLayout,
    pub(crate) file_history: Arc<crate::file_history::SessionFileHistory>,
    pub(crate) prompt_uuid: Arc<Mutex<String>>,
    pub(crate) sdk: crate::engine::SdkOptions,
    pub(crate) definitions: Arc<Mutex<AgentDefinitions>>,
    pub(crate) cwd: PathBuf,
    pub(crate) git_branch: String,
    /// Cancelled when the session closes.
    pub(crate) lifetime: CancellationToken,
}

/// The sub-agents of one session.
pub struct AgentRuntime {
    pub(crate) session_id: String,
    pub(crate) root: Store<AppState>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) permission_env: Arc<PermissionEnv>,
    pub(crate) observer: Arc<dyn TaskObserver>,
    notifications: Arc<Notifications>,
    pub(crate) bootstrap: crate::engine::BootstrapHandle,
    pub(crate) layout: SessionLayout,
    pub(crate) file_history: Arc<crate::file_history::SessionFileHistory>,
    pub(crate) prompt_uuid: Arc<Mutex<String>>,
    /// The session's SDK options, without partial messages (a sub-agent's raw stream is
    /// not the session's).
    pub(crate) sdk: crate::engine::SdkOptions,
    definitions: Arc<Mutex<AgentDefinitions>>,
    pub(crate) cwd: PathBuf,
    pub(crate) git_branch: String,
    lifetime: CancellationToken,
    /// How many sub-agents run now, by id and description (for the fan-out limit).
    running: Mutex<HashMap<String, String>>,
    /// Background agents not yet evicted (what TaskOutput and TaskStop reach).
    pub(crate) background: Mutex<HashMap<String, Arc<super::background::BackgroundAgent>>>,
    /// Usage of background agents that ended since the last `result` took it.
    pub(crate) unreported: Mutex<RunTotals>,
    /// SL-3's grace period in milliseconds (shorter in tests and benchmarks).
    eviction_grace_ms: std::sync::atomic::AtomicU64,
    started: AtomicUsize,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("session_id", &self.session_id)
            .field("running", &lock(&self.running).len())
            .finish_non_exhaustive()
    }
}

impl AgentRuntime {
    /// The runtime of a session.
    pub(crate) fn new(parts: AgentRuntimeParts) -> Arc<Self> {
        let mut sdk = parts.sdk;
        // A sub-agent's raw stream is not the session's, its answer is not the session's
        // structured output, and its lines are not mirrored into the session's stream.
        sdk.include_partial_messages = false;
        sdk.structured_output = None;
        sdk.transcript_mirror = None;
        Arc::new(Self {
            session_id: parts.session_id,
            root: parts.root,
            provider: parts.provider,
            permission_env: parts.permission_env,
            observer: parts.observer,
            notifications: parts.notifications,
            bootstrap: parts.bootstrap,
            layout: parts.layout,
            file_history: parts.file_history,
            prompt_uuid: parts.prompt_uuid,
            sdk,
            definitions: parts.definitions,
            cwd: parts.cwd,
            git_branch: parts.git_branch,
            lifetime: parts.lifetime,
            running: Mutex::new(HashMap::new()),
            background: Mutex::new(HashMap::new()),
            unreported: Mutex::new(RunTotals::default()),
            eviction_grace_ms: std::sync::atomic::AtomicU64::new(EVICTION_GRACE_MS),
            started: AtomicUsize::new(0),
        })
    }

    /// The session's agent types.
    pub fn definitions(&self) -> AgentDefinitions {
        lock(&self.definitions).clone()
    }

    /// Adds an SDK host's agent types (`initialize`'s `agents`, `--agents`); what does not
    /// fit comes back one line each.
    pub fn add_definitions(&self, value: &Value, origin: &str) -> Vec<String> {
        lock(&self.definitions).add_json(value, origin)
    }

    /// The main agent's waiting task notifications.
    pub fn notifications(&self) -> &Arc<Notifications> {
        &self.notifications
    }

    /// How long a finished background agent stays before it is evicted (SL-3: 30 s).
    pub fn eviction_grace(&self) -> Duration {
        Duration::from_millis(self.eviction_grace_ms.load(Ordering::Relaxed))
    }

    /// Evicts finished background agents `grace` after they end instead of SL-3's 30 s
    /// (tests, benchmarks).
    pub fn set_eviction_grace(&self, grace: Duration) {
        let ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
        self.eviction_grace_ms.store(ms, Ordering::Relaxed);
    }

    /// How many sub-agents this session has started.
    pub fn started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    /// Stops every sub-agent (the session is closing).
    pub fn shutdown(&self) {
        self.lifetime.cancel();
    }

    /// Takes the usage of background agents that ended since the last call.
    pub(crate) fn take_unreported(&self) -> RunTotals {
        std::mem::take(&mut *lock(&self.unreported))
    }

    /// Runs one Agent call from `parent`'s turn; returns its result and, for a
    /// synchronous agent, its usage (counted in the caller's result).
    ///
    /// Boxed, with `Send` stated: the loop calls this, and this runs the loop again (for
    /// the sub-agent), a cycle the compiler cannot see through on its own.
    pub(crate) fn run_call<'a>(
        self: &'a Arc<Self>,
        parent: &'a TurnContext<'a>,
        call: ToolCall,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = (ToolOutput, Option<RunTotals>)> + Send + 'a>,
    > {
        Box::pin(self.run_call_inner(parent, call))
    }

    async fn run_call_inner(
        self: &Arc<Self>,
        parent: &TurnContext<'_>,
        call: ToolCall,
    ) -> (ToolOutput, Option<RunTotals>) {
        let input = match AgentInput::parse(&call.input) {
            Ok(input) => input,
            Err(err) => return (err, None),
        };
        let depth = parent.agent.identity.depth + 1;
        if depth > MAX_AGENT_DEPTH {
            return (
                ToolOutput::error(format!(
                    "Sub-agents nest at most {MAX_AGENT_DEPTH} levels deep and this agent is \
                     already {} deep: do this part of the work yourself.",
                    depth - 1
                )),
                None,
            );
        }
        let Some(definition) = lock(&self.definitions).get(input.agent_type()).cloned() else {
            let known = lock(&self.definitions).names().join(", ");
            return (
                ToolOutput::error(format!(
                    "There is no agent type {:?}. The types are: {known}.",
                    input.agent_type()
                )),
                None,
            );
        };
        let is_async = input.run_in_background == Some(true);
        let agent_id = strata_state::tasks::TaskId::generate('a').to_string();
        let Some(slot) = self.take_slot(&agent_id, &input.description) else {
            let running: Vec<String> = lock(&self.running)
                .iter()
                .map(|(id, d)| format!("{id} ({d})"))
                .collect();
            return (
                ToolOutput::error(format!(
                    "Too many agents at once: {} are running ({}), the limit is \
                     {MAX_RUNNING_AGENTS}. Wait for one to finish (or stop one with \
                     TaskStop), then start this one again.",
                    running.len(),
                    running.join(", ")
                )),
                None,
            );
        };
        self.started.fetch_add(1, Ordering::Relaxed);
        let hook_context = self
            .subagent_start_hooks(parent, &agent_id, &definition.name)
            .await;
        let prepared =
            match self.prepare(parent, agent_id, definition, input, is_async, hook_context) {
                Ok(prepared) => prepared,
                Err(err) => return (err, None),
            };
        if is_async {
            return (
                self.start_background(parent, &call.id, prepared, slot),
                None,
            );
        }
        let started = Instant::now();
        let events: Arc<dyn EventSink> = Arc::new(ForwardEvents {
            inner: Arc::clone(parent.events),
            parent_tool_use_id: Arc::from(call.id.as_str()),
        });
        // On a task of its own, though the caller waits for it: a sub-agent's turn polled
        // inside its caller's would stack each level's frames on one thread's stack.
        let prompter = parent.prompter.cloned();
        let runtime = Arc::clone(self);
        let ran = tokio::spawn(async move {
            let run = runtime
                .run_prepared(&prepared, prompter, events, None)
                .await;
            (prepared, run)
        })
        .await;
        drop(slot);
        match ran {
            Ok((prepared, run)) => {
                let output = completed_output(&prepared, &run, started.elapsed(), &self.layout);
                (output, Some(run.totals))
            }
            Err(e) => (
                ToolOutput::error(format!("The agent stopped abnormally: {e}")),
                None,
            ),
        }
    }

    /// Runs a prepared agent to its end through the query loop.
    pub(crate) async fn run_prepared(
        self: &Arc<Self>,
        p: &Prepared,
        prompter: Option<Arc<dyn PermissionPrompter>>,
        events: Arc<dyn EventSink>,
        task: Option<&super::TaskReport>,
    ) -> AgentRun {
        let turn = TurnContext {
            session_id: &self.session_id,
            store: &p.store,
            provider: &*self.provider,
            tools: &p.tools,
            agent: &p.ctx,
            agents: self,
            task,
            host: &p.host,
            permission_env: &self.permission_env,
            prompter: prompter.as_ref(),
            recorder: &p.recorder,
            file_history: &self.file_history,
            prompt_uuid: &self.prompt_uuid,
            events: &events,
            bootstrap: &self.bootstrap,
            max_turns: p.definition.max_turns,
            cwd: &self.cwd,
            sdk: &self.sdk,
            long: &p.long,
        };
        run_agent(
            &turn,
            Message::user_text(p.input.prompt.clone()),
            &p.ctx.cancel,
        )
        .await
    }

    /// SubagentStart hooks (matched on the agent type); what they add for the model joins
    /// the agent's system prompt.
    async fn subagent_start_hooks(
        &self,
        parent: &TurnContext<'_>,
        agent_id: &str,
        agent_type: &str,
    ) -> Option<String> {
        let hooks = parent
            .hooks()
            .filter(|h| h.has(crate::hooks::HookEvent::SubagentStart))?;
        let outcome = hooks
            .run(
                crate::hooks::HookEvent::SubagentStart,
                Some(agent_type),
                &parent.hook_session(),
                json!({"agent_id": agent_id, "agent_type": agent_type}),
                None,
                &parent.agent.cancel,
            )
            .await;
        outcome.context_text()
    }

    /// Counts one more running agent, unless the limit is reached. The slot is given back
    /// when the guard drops.
    pub(crate) fn take_slot(self: &Arc<Self>, id: &str, description: &str) -> Option<Slot> {
        let mut running = lock(&self.running);
        if running.len() >= MAX_RUNNING_AGENTS {
            return None;
        }
        running.insert(id.to_owned(), description.to_owned());
        Some(Slot {
            runtime: Arc::clone(self),
            id: id.to_owned(),
        })
    }
}

/// One running agent's place under [`MAX_RUNNING_AGENTS`].
pub(crate) struct Slot {
    runtime: Arc<AgentRuntime>,
    id: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.runtime.running).remove(&self.id);
    }
}

/// The result of a synchronous agent: its final answer followed by its id and totals
/// (what the model reads), and the reference's `toolUseResult` shape.
fn completed_output(
    p: &Prepared,
    run: &AgentRun,
    elapsed: Duration,
    layout: &SessionLayout,
) -> ToolOutput {
    let tokens = run.totals.total_tokens();
    let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    match &run.failure {
        Some(AgentFailure::Cancelled) => ToolOutput::error(format!(
            "The {} agent was stopped before it finished (after {} tool calls). What it did \
             is in {}.",
            p.definition.name,
            run.tool_uses,
            layout.subagent_transcript(&p.agent_id).display()
        )),
        Some(AgentFailure::Failed(errors)) => ToolOutput::error(format!(
            "The {} agent failed: {}{}",
            p.definition.name,
            errors.join("; "),
            if run.final_text.is_empty() {
                String::new()
            } else {
                format!("\n\nIts last answer:\n{}", run.final_text)
            }
        )),
        None => {
            let text = if run.final_text.trim().is_empty() {
                "(the agent ended without a written answer)".to_owned()
            } else {
                run.final_text.clone()
            };
            ToolOutput::ok(format!(
                "{text}\n\nagentId: {}\n<usage>total_tokens: {tokens}\ntool_uses: {}\nduration_ms: {ms}</usage>",
                p.agent_id, run.tool_uses
            ))
            .with_detail(json!({
                "status": "completed",
                "prompt": p.input.prompt,
                "agentId": p.agent_id,
                "agentType": p.definition.name,
                "resolvedModel": p.model,
                "content": [{"type": "text", "text": run.final_text}],
                "totalDurationMs": ms,
                "totalTokens": tokens,
                "totalToolUseCount": run.tool_uses,
                "usage": run.totals.usage_json(),
            }))
        }
    }
}
