//! The session's background work as hosts reach it (issue 11): a turn's `result` held
//! back while background agents finish, the prompt of a turn for news that arrived while
//! idle, stopping a task by id (`stop_task`, a UI), viewing an agent's conversation
//! (SL-2: retain, its messages loaded from its transcript and followed while it runs)
//! and leaving it (release), and the sub-agent runtime itself.

use std::sync::Arc;

use strata_protocol::message::Message;
use strata_protocol::sdk::ResultMessage;
use strata_state::AppState;
use strata_state::tasks::{TaskId, TaskKind, TaskMessages, updaters};
use tokio_util::sync::CancellationToken;

use super::{Engine, Inner, TaskError};
use crate::agents::AgentRuntime;
use crate::tools::ToolRegistry;

impl Engine {
    /// The session's sub-agents: their types, the background ones running, their
    /// notifications.
    pub fn agents(&self) -> &Arc<AgentRuntime> {
        &self.inner.agents
    }

    /// With [`SdkOptions::hold_result_for_agents`]: while background agents the turn
    /// started still run, the turn's `result` is held back; each agent's end is given to
    /// the model as a turn of its own (its notification the prompt), and the last turn's
    /// `result` — with the totals of them all — is the one returned. Bounded by
    /// `CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS` (default 10 minutes, the reference's
    /// variable), after which the result goes out with the agents still running listed.
    /// Either way the result lists the background work still running.
    pub(super) async fn hold_for_background(
        &self,
        first: ResultMessage,
        tools: &ToolRegistry,
        cancel: &CancellationToken,
    ) -> ResultMessage {
        let inner = &self.inner;
        let mut result = first;
        if inner.sdk.hold_result_for_agents {
            let ceiling = std::env::var("CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS")
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(BACKGROUND_WAIT_CEILING, std::time::Duration::from_millis);
            let deadline = tokio::time::Instant::now() + ceiling;
            // Only agents hold the result (the reference's rule): a background shell may be
            // a server that never ends.
            while !cancel.is_cancelled()
                && (!inner.agents.running_background().is_empty()
                    || inner.agents.notifications().has_agent_news())
            {
                let arrived = tokio::select! {
                    () = inner.agents.notifications().wait_for_agent_news() => true,
                    () = tokio::time::sleep_until(deadline) => false,
                    () = cancel.cancelled() => false,
                };
                if !arrived {
                    break;
                }
                let prompt = notifications_prompt(&inner.agents.notifications().drain());
                let agent = inner.root_agent(cancel);
                let turn = inner.turn_context(tools, &agent);
                let next =
                    crate::query::run_turn(&turn, prompt, Vec::new(), None, cancel.clone()).await;
                result = combine(result, next);
            }
        }
        let unreported = inner.agents.take_unreported();
        if unreported.cost_usd() > 0.0 {
            result.total_cost_usd += unreported.cost_usd();
        }
        result.background_tasks = background_summary(&inner.store.get());
        result
    }

    /// Starts stopping background task `id` and returns at once (control request
    /// `stop_task`: its `task_notification` follows when it has ended). `Err` when the
    /// session has no running task with that id.
    pub fn request_stop(&self, id: &str) -> Result<(), TaskError> {
        let task_id = TaskId::from_string(id.trim());
        let running = self
            .inner
            .store
            .get()
            .tasks
            .tasks
            .get(&task_id)
            .map(|t| !t.status.is_terminal());
        match running {
            None => Err(TaskError::Unknown {
                id: id.trim().to_owned(),
            }),
            Some(false) => Err(TaskError::Ended {
                id: id.trim().to_owned(),
            }),
            Some(true) => {
                let inner = Arc::clone(&self.inner);
                let id = id.trim().to_owned();
                tokio::spawn(async move {
                    if let Err(e) = stop_task(&inner, &id).await {
                        tracing::warn!("stop_task {id}: {e}");
                    }
                });
                Ok(())
            }
        }
    }

    /// Stops background task `id` — a shell command or an agent — and waits until it has
    /// ended (control request `stop_task`). `Err` says why nothing was stopped.
    pub async fn stop_task(&self, id: &str) -> Result<String, TaskError> {
        stop_task(&self.inner, id).await
    }

    /// Opens background agent `id` for viewing (SL-2, SL-3): its task is retained — not
    /// evicted while viewed — with its conversation loaded from its transcript; while the
    /// agent runs, its task follows its conversation as it grows (a host selects the
    /// task's messages and sees them change). `Err` when there is no such agent task or
    /// its transcript cannot be read.
    pub fn view_agent(&self, id: &str) -> Result<(), TaskError> {
        let task_id = TaskId::from_string(id);
        let state = self.inner.store.get();
        let Some(task) = state.tasks.tasks.get(&task_id) else {
            return Err(TaskError::Unknown { id: id.to_owned() });
        };
        let TaskKind::LocalAgent(agent) = &task.kind else {
            return Err(TaskError::NotAnAgent { id: id.to_owned() });
        };
        let path = self
            .inner
            .agents
            .layout
            .subagent_transcript(&agent.agent_id);
        drop(state);
        let messages = load_messages(&path)?;
        let _ = self
            .inner
            .store
            .set(updaters::enter_view(task_id, Some(messages)));
        Ok(())
    }

    /// Waits until background work has news for the main agent's model — a task
    /// notification (a shell or an agent that ended) — and takes everything waiting as
    /// the prompt of a turn of its own. A host calls it while no turn runs (the reference
    /// agent starts a turn when a notification arrives and none is running): headless
    /// stream-json sessions and the UI alike. While a turn runs, the notifications go
    /// with its next request instead; whoever calls this must not be running one.
    pub async fn next_notification_prompt(&self) -> Message {
        let notifications = self.inner.agents.notifications();
        loop {
            notifications.wait().await;
            // Taken in the same poll the wait ended in: a caller that drops this future
            // (another branch of its `select!` won) loses nothing.
            let texts = notifications.drain();
            if !texts.is_empty() {
                return notifications_prompt(&texts);
            }
        }
    }

    /// Leaves the agent view (SL-2): the viewed task is released (its messages dropped)
    /// and, when it has finished, evicted after the grace period (SL-3).
    pub fn leave_agent_view(&self) {
        let _ = self.inner.store.set(updaters::exit_view());
        let agents = Arc::clone(&self.inner.agents);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { agents.sweep_after(agents.eviction_grace()).await });
        }
    }
}

/// [`Engine::stop_task`] on the session's parts.
async fn stop_task(inner: &Inner, id: &str) -> Result<String, TaskError> {
    let id = id.trim();
    if let Some(stopped) = inner.agents.stop_agent(id).await {
        return stopped
            .map(|end| format!("Agent {id} {}.", crate::agents::describe_end(&end)))
            .map_err(TaskError::from);
    }
    let Some(shells) = inner.tool_context.hooks.shell_tasks() else {
        return Err(TaskError::Unknown { id: id.to_owned() });
    };
    shells
        .stop(id)
        .await
        .map(|end| {
            format!(
                "Task {id} {}.",
                crate::tools::bash::background::describe_end(&end)
            )
        })
        .map_err(TaskError::from)
}

/// A sub-agent's conversation read from its transcript (the same reader and rules as
/// any session's).
fn load_messages(path: &std::path::Path) -> Result<TaskMessages, TaskError> {
    let mut loaded = strata_session::resume::LoadedSession::load(path).map_err(|source| {
        TaskError::Transcript {
            path: path.to_owned(),
            source,
        }
    })?;
    let conversation = loaded.model_messages();
    Ok(conversation.messages.into_iter().map(Arc::new).collect())
}

/// How long a held-back `result` waits for background agents at most (the reference's
/// default for `CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS`).
const BACKGROUND_WAIT_CEILING: std::time::Duration = std::time::Duration::from_secs(600);

/// The prompt of a turn that delivers task notifications.
fn notifications_prompt(texts: &[String]) -> Message {
    Message::user_text(texts.join("\n\n"))
}

/// A held-back `result` and the one of the turn after it: the later one's outcome with
/// both runs' totals.
fn combine(first: ResultMessage, next: ResultMessage) -> ResultMessage {
    let mut permission_denials = first.permission_denials;
    permission_denials.extend(next.permission_denials.iter().cloned());
    ResultMessage {
        duration_ms: first.duration_ms + next.duration_ms,
        duration_api_ms: first.duration_api_ms + next.duration_api_ms,
        num_turns: first.num_turns + next.num_turns,
        total_cost_usd: first.total_cost_usd + next.total_cost_usd,
        permission_denials,
        ..next
    }
}

/// The background tasks still running, as a `result` lists them.
fn background_summary(state: &AppState) -> Vec<strata_protocol::sdk::BackgroundTaskSummary> {
    use strata_state::tasks::TaskKind;
    state
        .tasks
        .tasks
        .iter()
        .filter(|t| !t.status.is_terminal())
        .filter_map(|t| {
            let (kind, command, agent_type) = match &t.kind {
                TaskKind::LocalShell(shell) => {
                    ("local_bash", Some(shell.command.to_string()), None)
                }
                TaskKind::LocalAgent(agent) => (
                    "local_agent",
                    None,
                    agent.agent_type.as_deref().map(str::to_owned),
                ),
                _ => return None,
            };
            Some(strata_protocol::sdk::BackgroundTaskSummary {
                id: t.id.to_string(),
                kind: kind.to_owned(),
                status: if t.status == strata_state::tasks::TaskStatus::Pending {
                    "pending"
                } else {
                    "running"
                }
                .to_owned(),
                description: t.description.to_string(),
                command,
                agent_type,
            })
        })
        .collect()
}
