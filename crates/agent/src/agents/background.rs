//! Background agents: a sub-agent started with `run_in_background: true` is a local agent
//! task of the root store (SA-3) from its start to its eviction.
//!
//! - **Start**: the task is registered and marked running through the caller's tasks
//!   setter (the root's at any depth), its cancellation is put in the root's task handles
//!   (AS-2) so `TaskStop`, `stop_task` and a UI stop it the one way, and the stream hears
//!   `task_started`.
//! - **Run**: on its own tokio task, through the query loop, never prompting (SA-4); after
//!   each round of tool calls its progress (tool calls, tokens, last tool) goes to its task
//!   entry and the stream (`task_progress`). While someone views it (SL-3's retain), each
//!   change of its conversation reaches its task entry too ([`follow_when_viewed`]), so a
//!   view follows it live; unviewed, its task holds no messages.
//! - **End**: its final answer is written to `<session>/tasks/<id>.output`, the task is
//!   completed, failed or killed (its end time recorded, its eviction scheduled: SL-3),
//!   its usage joins the next `result`, and the main agent is notified (a
//!   `<task-notification>` with the answer; the stream's `task_notification`).
//! - **Eviction**: the grace period (30 s) after its end, the task leaves the root store
//!   unless someone is viewing it (SL-3: viewing retains), and everything this module held
//!   for it is dropped. A later `TaskOutput` says where its answer is on disk.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use strata_protocol::sdk::{TaskEndStatus, TaskUsage};
use strata_state::AppState;
use strata_state::tasks::{EVICTION_GRACE_MS, LocalAgent, TaskId, TaskKind, TaskState, updaters};
use strata_store::Store;
use tokio::sync::watch;

use super::events::NoEvents;
use super::prepare::Prepared;
use super::runtime::{AgentRuntime, Slot};
use crate::background::{TaskEnded, TaskObserver, TaskOrigin, TaskProgress, TaskStarted, TaskType};
use crate::query::{AgentFailure, AgentRun, TurnContext};
use crate::sync::lock;
use crate::tools::ToolOutput;

/// How long `TaskStop` waits for a stopped agent to wind down.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// How a background agent ended.
#[derive(Clone, Debug)]
pub struct AgentEnd {
    /// Completed, failed or stopped.
    pub status: TaskEndStatus,
    /// Its final answer, or why it did not finish.
    pub result: String,
    /// Its totals.
    pub usage: TaskUsage,
}

/// The live side of one background agent (held until its task is evicted).
pub(crate) struct BackgroundAgent {
    pub(crate) id: TaskId,
    pub(crate) description: String,
    pub(crate) agent_type: String,
    pub(crate) output_path: PathBuf,
    pub(crate) transcript: PathBuf,
    pub(crate) end: watch::Sender<Option<AgentEnd>>,
}

/// What `TaskOutput` reads of a background agent.
#[derive(Clone, Debug)]
pub struct AgentSnapshot {
    /// Its id.
    pub id: String,
    /// What it does.
    pub description: String,
    /// Its type.
    pub agent_type: String,
    /// How it ended; `None` while it runs.
    pub end: Option<AgentEnd>,
    /// Where its answer is written when it ends.
    pub output_path: PathBuf,
    /// Its transcript.
    pub transcript: PathBuf,
}

/// Reports a background agent's progress to its task entry and the stream.
pub struct TaskReport {
    id: TaskId,
    description: String,
    agent_type: String,
    origin: TaskOrigin,
    root: Store<AppState>,
    observer: Arc<dyn TaskObserver>,
    started: Instant,
}

impl TaskReport {
    /// After a round of tool calls: the totals so far and the tool called last.
    pub(crate) fn progress(&self, tokens: u64, tool_uses: u64, last_tool: Option<String>) {
        let tool: Option<Arc<str>> = last_tool.as_deref().map(Arc::from);
        let _ = self
            .root
            .set(updaters::progress(self.id.clone(), move |task| {
                let TaskKind::LocalAgent(agent) = &mut task.kind else {
                    return false;
                };
                let next = strata_state::tasks::AgentProgress {
                    tool_uses,
                    tokens,
                    last_tool: tool,
                };
                let changed = agent.progress != next;
                agent.progress = next;
                changed
            }));
        self.observer.progress(TaskProgress {
            id: self.id.to_string(),
            description: self.description.clone(),
            origin: self.origin.clone(),
            agent_type: Some(self.agent_type.clone()),
            usage: TaskUsage {
                total_tokens: tokens,
                tool_uses,
                duration_ms: millis(self.started.elapsed()),
            },
            last_tool_name: last_tool,
        });
    }
}

impl AgentRuntime {
    /// Starts `p` in the background for `parent`'s call `tool_use_id`; returns the call's
    /// result (the agent's id and where its answer will be).
    pub(crate) fn start_background(
        self: &Arc<Self>,
        parent: &TurnContext<'_>,
        tool_use_id: &str,
        p: Prepared,
        slot: Slot,
    ) -> ToolOutput {
        let id = TaskId::from_string(&p.agent_id);
        let output_path = self
            .layout
            .tasks_dir()
            .join(format!("{}.output", p.agent_id));
        let transcript = self.layout.subagent_transcript(&p.agent_id);
        let task = TaskState::new(
            id.clone(),
            p.input.description.as_str(),
            now_ms(),
            TaskKind::LocalAgent(LocalAgent {
                agent_id: p.agent_id.as_str().into(),
                agent_type: Some(Arc::from(p.definition.name.as_str())),
                messages: Default::default(),
                retain: false,
                disk_loaded: false,
                evict_after_ms: None,
                progress: Default::default(),
            }),
        );
        // SA-3: through the tasks setter, which reaches the root at any depth.
        let tasks = &parent.agent.set_app_state_for_tasks;
        let _ = tasks.set(updaters::register(task));
        let _ = tasks.set(updaters::start(id.clone()));
        let cancel = p.ctx.cancel.clone();
        self.root
            .get()
            .runtime
            .tasks
            .insert(id.clone(), Arc::new(move || cancel.cancel()));
        let agent = Arc::new(BackgroundAgent {
            id: id.clone(),
            description: p.input.description.clone(),
            agent_type: p.definition.name.clone(),
            output_path: output_path.clone(),
            transcript: transcript.clone(),
            end: watch::channel(None).0,
        });
        lock(&self.background).insert(p.agent_id.clone(), Arc::clone(&agent));
        let origin = TaskOrigin {
            tool_use_id: Some(tool_use_id.to_owned()),
            parent_task_id: parent
                .agent
                .identity
                .agent_id
                .as_ref()
                .map(|a| a.to_string()),
            depth: parent.agent.identity.depth,
        };
        self.observer.started(TaskStarted {
            id: p.agent_id.clone(),
            task_type: TaskType::LocalAgent,
            description: p.input.description.clone(),
            origin: origin.clone(),
            agent_type: Some(p.definition.name.clone()),
            prompt: Some(p.input.prompt.clone()),
        });
        let report = TaskReport {
            id: id.clone(),
            description: p.input.description.clone(),
            agent_type: p.definition.name.clone(),
            origin: origin.clone(),
            root: self.root.clone(),
            observer: Arc::clone(&self.observer),
            started: Instant::now(),
        };
        // Short: every launch stays in the caller's conversation.
        let output = ToolOutput::ok(format!(
            "Agent {} started in the background. Its answer comes as a task notification \
             when it ends: go on with other work meanwhile. Stop it with TaskStop.",
            p.agent_id
        ))
        .with_detail(json!({
            "status": "async_launched",
            "isAsync": true,
            "agentId": p.agent_id,
            "description": p.input.description,
            "prompt": p.input.prompt,
            "resolvedModel": p.model,
            "outputFile": output_path,
            "canReadOutputFile": true,
        }));
        let runtime = Arc::clone(self);
        let following = follow_when_viewed(&p.store, self.root.clone(), id.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let run = runtime
                .run_prepared(&p, None, Arc::new(NoEvents), Some(&report))
                .await;
            // Its whole conversation is in the view by now (its last message was stored
            // before the run returned); a view opened later reads the transcript.
            drop(following);
            runtime.finish(&agent, &p, run, started.elapsed(), origin);
            // Its conversation, transcript writer and slot go now; its entry stays for the
            // grace period.
            drop(p);
            drop(slot);
            runtime.evict_later(agent).await;
        });
        output
    }

    /// Records how a background agent ended (output file, task status, usage) and tells
    /// the observer.
    fn finish(
        &self,
        agent: &BackgroundAgent,
        p: &Prepared,
        run: AgentRun,
        elapsed: Duration,
        origin: TaskOrigin,
    ) {
        let usage = TaskUsage {
            total_tokens: run.totals.total_tokens(),
            tool_uses: run.tool_uses,
            duration_ms: millis(elapsed),
        };
        let (status, result, how) = match &run.failure {
            None if run.final_text.trim().is_empty() => (
                TaskEndStatus::Completed,
                "(the agent ended without a written answer)".to_owned(),
                "completed".to_owned(),
            ),
            None => (
                TaskEndStatus::Completed,
                run.final_text.clone(),
                "completed".to_owned(),
            ),
            Some(AgentFailure::Cancelled) => (
                TaskEndStatus::Stopped,
                format!(
                    "The agent was stopped before it finished (after {} tool calls).",
                    run.tool_uses
                ),
                "was stopped".to_owned(),
            ),
            Some(AgentFailure::Failed(errors)) => {
                let why = errors.join("; ");
                (
                    TaskEndStatus::Failed,
                    format!("The agent failed: {why}"),
                    format!("failed: {why}"),
                )
            }
        };
        if let Err(e) = write_output(&agent.output_path, &result) {
            tracing::warn!(
                "the answer of agent {} could not be written to {}: {e}",
                p.agent_id,
                agent.output_path.display()
            );
        }
        let now = now_ms();
        let updater = match status {
            TaskEndStatus::Completed => updaters::complete(agent.id.clone(), now),
            TaskEndStatus::Failed => updaters::fail(agent.id.clone(), result.as_str(), now),
            TaskEndStatus::Stopped => updaters::kill(agent.id.clone(), now),
        };
        let _ = self.root.set(updater);
        self.root.get().runtime.tasks.remove(&agent.id);
        lock(&self.unreported).merge(&run.totals);
        agent.end.send_replace(Some(AgentEnd {
            status,
            result: result.clone(),
            usage,
        }));
        self.observer.ended(TaskEnded {
            id: p.agent_id.clone(),
            task_type: TaskType::LocalAgent,
            description: agent.description.clone(),
            origin,
            status,
            output_file: agent.output_path.clone(),
            summary: format!("Agent \"{}\" {how}", agent.description),
            usage: Some(usage),
            result: Some(result),
        });
    }

    /// After the grace period, evicts what is due (SL-3) and forgets agents whose task
    /// has left the root store.
    async fn evict_later(&self, agent: Arc<BackgroundAgent>) {
        drop(agent);
        self.sweep_after(self.eviction_grace()).await;
    }

    /// Waits `delay`, then evicts every finished, released agent task that is due and
    /// drops what this runtime held for those gone from the root store.
    pub(crate) async fn sweep_after(&self, delay: Duration) {
        tokio::time::sleep(delay).await;
        // The state schedules an eviction SL-3's 30 s after the end; a runtime with a
        // shorter grace (tests, benchmarks) sweeps as if that much more time had passed.
        let ahead = EVICTION_GRACE_MS.saturating_sub(millis(self.eviction_grace()));
        let _ = self.root.set(updaters::evict_due(now_ms() + ahead));
        let state = self.root.get();
        lock(&self.background)
            .retain(|id, _| state.tasks.tasks.get(&TaskId::from_string(id)).is_some());
    }

    /// How many background agents this runtime still holds (running or within their
    /// grace period).
    pub fn held(&self) -> usize {
        lock(&self.background).len()
    }

    /// The background agents still running: `(id, description, agent type)`.
    pub fn running_background(&self) -> Vec<(String, String, String)> {
        let mut running: Vec<_> = lock(&self.background)
            .values()
            .filter(|a| a.end.borrow().is_none())
            .map(|a| {
                (
                    a.id.to_string(),
                    a.description.clone(),
                    a.agent_type.clone(),
                )
            })
            .collect();
        running.sort();
        running
    }

    /// Reads background agent `id`, waiting up to `wait` for it to end. `None` when this
    /// session has no such agent (it may be a shell task, or evicted: see
    /// [`AgentRuntime::evicted_output`]).
    pub async fn read_agent(&self, id: &str, wait: Option<Duration>) -> Option<AgentSnapshot> {
        let agent = lock(&self.background).get(id).cloned()?;
        if let Some(limit) = wait {
            let mut end = agent.end.subscribe();
            let _ = tokio::time::timeout(limit, end.wait_for(Option::is_some)).await;
        }
        let end = agent.end.borrow().clone();
        Some(AgentSnapshot {
            id: id.to_owned(),
            description: agent.description.clone(),
            agent_type: agent.agent_type.clone(),
            end,
            output_path: agent.output_path.clone(),
            transcript: agent.transcript.clone(),
        })
    }

    /// Where an evicted agent's answer is, when `id` names one of this session's.
    pub fn evicted_output(&self, id: &str) -> Option<PathBuf> {
        let path = self.layout.tasks_dir().join(format!("{id}.output"));
        (id.starts_with('a') && path.is_file()).then_some(path)
    }

    /// Stops background agent `id` (SL-2's stop: through its handle in the root store)
    /// and waits for it to wind down. `None` when there is no such agent; `Err` when it
    /// had already ended.
    pub async fn stop_agent(&self, id: &str) -> Option<Result<AgentEnd, StopAgentError>> {
        let agent = lock(&self.background).get(id).cloned()?;
        if let Some(end) = agent.end.borrow().clone() {
            return Some(Err(StopAgentError::NotRunning {
                id: id.to_owned(),
                ended: Some(describe(&end)),
            }));
        }
        let state = self.root.get();
        match state.tasks.stop_or_dismiss(&agent.id) {
            strata_state::tasks::StopAction::Cancel(task) => {
                state.runtime.tasks.cancel(&task);
            }
            _ => {
                return Some(Err(StopAgentError::NotRunning {
                    id: id.to_owned(),
                    ended: None,
                }));
            }
        }
        drop(state);
        let mut end = agent.end.subscribe();
        let _ = tokio::time::timeout(STOP_WAIT, end.wait_for(Option::is_some)).await;
        let ended = agent.end.borrow().clone();
        Some(ended.ok_or_else(|| StopAgentError::StillRunning {
            id: id.to_owned(),
            waited_secs: STOP_WAIT.as_secs(),
        }))
    }
}

/// Why [`AgentRuntime::stop_agent`] stopped nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StopAgentError {
    /// The agent had already ended (`ended` says how, when known).
    #[error("Agent {id} is not running{}.", ended.map(|how| format!(": it {how}")).unwrap_or_default())]
    NotRunning {
        /// The agent's id.
        id: String,
        /// How it ended ("completed", "was stopped"), when it is known.
        ended: Option<&'static str>,
    },
    /// The agent was told to stop and had not ended when the wait ran out; it may still
    /// end later.
    #[error("Agent {id} was told to stop but had not ended {waited_secs} s later.")]
    StillRunning {
        /// The agent's id.
        id: String,
        /// How long the stop waited.
        waited_secs: u64,
    },
}

/// Keeps a viewed agent's task showing its conversation as it grows: after each commit
/// of the agent's own store that changed its messages, they go — shared, not copied — to
/// its task in the root store, which keeps them only while the task is retained (a view
/// is open: [`updaters::follow_view`]). Dropping the subscription stops it.
fn follow_when_viewed(
    conversation: &Store<AppState>,
    root: Store<AppState>,
    id: TaskId,
) -> strata_store::Subscription {
    let last = std::sync::Mutex::new(conversation.get().messages.clone());
    conversation.subscribe(move |state| {
        {
            let mut last = lock(&last);
            if strata_state::same_conversation(&last, &state.messages) {
                return;
            }
            *last = state.messages.clone();
        }
        // Another store than the one delivering: its commit is delivered on its own
        // (nothing of the root's listeners writes to an agent's store).
        let _ = root.set(updaters::follow_view(id.clone(), state.messages.clone()));
    })
}

/// How an agent ended, for messages ("completed", "was stopped").
pub fn describe(end: &AgentEnd) -> &'static str {
    match end.status {
        TaskEndStatus::Completed => "completed",
        TaskEndStatus::Failed => "failed",
        TaskEndStatus::Stopped => "was stopped",
    }
}

fn write_output(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, millis)
}
