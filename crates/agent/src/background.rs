//! What a session hears of its background work (issue 11): a task started, made progress,
//! ended.
//!
//! The tasks themselves live in the root store (SA-3), where a UI reads them; this module
//! carries the *events* that have to go somewhere else at the moment they happen:
//!
//! - to the SDK stream, as `system/task_started`, `task_progress` and `task_notification`
//!   (the official SDKs' shapes);
//! - to the main agent's model, as a `<task-notification>` message (the text the
//!   reference agent's transcripts hold) queued in [`Notifications`] and delivered at the
//!   next model request — or, when the session is idle, as the prompt of a turn of its own.
//!
//! Background shell tasks (`tools::bash::background`) and background agents
//! (`agents`) report through one [`TaskObserver`]; the engine's is [`SessionTaskEvents`].
//! Work a sub-agent started is reported on the stream but not queued for the main agent:
//! it is the sub-agent's to read.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use strata_protocol::sdk::{
    SdkMessage, SystemMessage, TaskEndStatus, TaskNotificationMessage, TaskProgressMessage,
    TaskStartedMessage, TaskUsage,
};

use crate::query::ports::EventSink;
use crate::sync::lock;

/// `local_bash` or `local_agent`, as the SDK names task types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskType {
    /// A background shell command.
    LocalBash,
    /// A background sub-agent.
    LocalAgent,
}

impl TaskType {
    /// The SDK's name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::LocalBash => "local_bash",
            TaskType::LocalAgent => "local_agent",
        }
    }
}

/// Who started a piece of background work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskOrigin {
    /// The tool call that started it.
    pub tool_use_id: Option<String>,
    /// The agent task that started it; `None`: the main agent.
    pub parent_task_id: Option<String>,
    /// How deep that agent is (0: the main agent).
    pub depth: u32,
}

/// A task began.
#[derive(Clone, Debug)]
pub struct TaskStarted {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub task_type: TaskType,
    /// What it does.
    pub description: String,
    /// Who started it.
    pub origin: TaskOrigin,
    /// An agent's type.
    pub agent_type: Option<String>,
    /// An agent's prompt.
    pub prompt: Option<String>,
}

/// A task ended.
#[derive(Clone, Debug)]
pub struct TaskEnded {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub task_type: TaskType,
    /// What it did.
    pub description: String,
    /// Who started it.
    pub origin: TaskOrigin,
    /// How it ended.
    pub status: TaskEndStatus,
    /// Where its complete output is.
    pub output_file: PathBuf,
    /// One line saying what happened (`Background command "x" completed (exit code 0)`).
    pub summary: String,
    /// An agent's totals.
    pub usage: Option<TaskUsage>,
    /// An agent's final answer, given to the model with the notification.
    pub result: Option<String>,
}

impl TaskEnded {
    /// The message the model reads: the reference agent's `<task-notification>` block.
    pub fn model_text(&self) -> String {
        let status = match self.status {
            TaskEndStatus::Completed => "completed",
            TaskEndStatus::Failed => "failed",
            TaskEndStatus::Stopped => "killed",
        };
        let mut text = format!(
            "<task-notification>\n<task-id>{}</task-id>\n<output-file>{}</output-file>\n\
             <status>{status}</status>\n<summary>{}</summary>\n",
            self.id,
            self.output_file.display(),
            self.summary
        );
        match &self.result {
            Some(result) => {
                text.push_str("<result>\n");
                text.push_str(result.trim_end());
                text.push_str("\n</result>\n</task-notification>");
            }
            None => {
                text.push_str("</task-notification>\n");
                text.push_str(&format!(
                    "Read the output file to retrieve the result: {}",
                    self.output_file.display()
                ));
            }
        }
        text
    }
}

/// An agent task's progress.
#[derive(Clone, Debug)]
pub struct TaskProgress {
    /// Its id.
    pub id: String,
    /// What it does.
    pub description: String,
    /// Who started it.
    pub origin: TaskOrigin,
    /// Its agent type.
    pub agent_type: Option<String>,
    /// Totals so far.
    pub usage: TaskUsage,
    /// The tool it called last.
    pub last_tool_name: Option<String>,
}

/// Hears a session's background work. Calls must not block: they come from the tasks'
/// own drivers.
pub trait TaskObserver: Send + Sync {
    /// A task began.
    fn started(&self, task: TaskStarted);
    /// An agent task made progress.
    fn progress(&self, progress: TaskProgress);
    /// A task ended.
    fn ended(&self, task: TaskEnded);
}

/// Messages waiting for the main agent's model (task notifications), in arrival order.
#[derive(Default)]
pub struct Notifications {
    /// Each with the kind of task it is about.
    queue: Mutex<VecDeque<(TaskType, String)>>,
    /// Given with the next request, waking nobody.
    reminders: Mutex<Vec<String>>,
    arrived: tokio::sync::Notify,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Notifications({} waiting)", lock(&self.queue).len())
    }
}

impl Notifications {
    /// Queues `text`, about a task of kind `kind`, and wakes whoever waits.
    pub fn push(&self, kind: TaskType, text: String) {
        lock(&self.queue).push_back((kind, text));
        self.arrived.notify_waiters();
        self.arrived.notify_one();
    }

    /// Queues `text` for the next model request without waking anyone: something the
    /// model should know when it next works (a resumed session's lost tasks), not a
    /// reason to start a turn.
    pub fn push_reminder(&self, text: String) {
        lock(&self.reminders).push(text);
    }

    /// Takes every waiting message, reminders first.
    pub fn drain(&self) -> Vec<String> {
        let mut out: Vec<String> = lock(&self.reminders).drain(..).collect();
        out.extend(lock(&self.queue).drain(..).map(|(_, text)| text));
        out
    }

    /// True when a message about an agent waits (a held-back result waits for those).
    pub fn has_agent_news(&self) -> bool {
        lock(&self.queue)
            .iter()
            .any(|(kind, _)| *kind == TaskType::LocalAgent)
    }

    /// True when none waits.
    pub fn is_empty(&self) -> bool {
        lock(&self.queue).is_empty()
    }

    /// Returns once a message is waiting (at once when one already is).
    pub async fn wait(&self) {
        self.wait_until(|q| !q.is_empty()).await;
    }

    /// Returns once a message about an agent is waiting.
    pub async fn wait_for_agent_news(&self) {
        self.wait_until(|q| q.iter().any(|(kind, _)| *kind == TaskType::LocalAgent))
            .await;
    }

    async fn wait_until(&self, ready: impl Fn(&VecDeque<(TaskType, String)>) -> bool) {
        loop {
            // Made before the check: a push between the check and the await still wakes
            // it (`notify_waiters` reaches every future made by then).
            let arrived = self.arrived.notified();
            if ready(&lock(&self.queue)) {
                return;
            }
            arrived.await;
        }
    }
}

/// The engine's observer: SDK stream messages for every task, model notifications for
/// the main agent's.
pub struct SessionTaskEvents {
    /// Where the stream goes.
    pub events: Arc<dyn EventSink>,
    /// The session id the messages carry.
    pub session_id: String,
    /// The main agent's queue.
    pub notifications: Arc<Notifications>,
}

impl TaskObserver for SessionTaskEvents {
    fn started(&self, task: TaskStarted) {
        let is_agent = task.task_type == TaskType::LocalAgent;
        self.events
            .emit(SdkMessage::System(SystemMessage::TaskStarted(
                TaskStartedMessage {
                    task_id: task.id,
                    tool_use_id: task.origin.tool_use_id,
                    description: task.description,
                    task_type: Some(task.task_type.as_str().to_owned()),
                    subagent_type: task.agent_type,
                    is_backgrounded: Some(true),
                    spawn_depth: is_agent.then_some(task.origin.depth + 1),
                    parent_task_id: task.origin.parent_task_id,
                    prompt: task.prompt,
                    uuid: uuid::Uuid::new_v4().to_string(),
                    session_id: self.session_id.clone(),
                },
            )));
    }

    fn progress(&self, progress: TaskProgress) {
        self.events
            .emit(SdkMessage::System(SystemMessage::TaskProgress(
                TaskProgressMessage {
                    task_id: progress.id,
                    tool_use_id: progress.origin.tool_use_id,
                    description: progress.description,
                    subagent_type: progress.agent_type,
                    usage: progress.usage,
                    last_tool_name: progress.last_tool_name,
                    uuid: uuid::Uuid::new_v4().to_string(),
                    session_id: self.session_id.clone(),
                },
            )));
    }

    fn ended(&self, task: TaskEnded) {
        if task.origin.depth == 0 {
            self.notifications.push(task.task_type, task.model_text());
        }
        self.events
            .emit(SdkMessage::System(SystemMessage::TaskNotification(
                TaskNotificationMessage {
                    task_id: task.id,
                    tool_use_id: task.origin.tool_use_id,
                    status: task.status,
                    output_file: task.output_file.to_string_lossy().into_owned(),
                    summary: task.summary,
                    usage: task.usage,
                    uuid: uuid::Uuid::new_v4().to_string(),
                    session_id: self.session_id.clone(),
                },
            )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_wakes_for_a_message_pushed_later() {
        let n = Arc::new(Notifications::default());
        let waiter = {
            let n = Arc::clone(&n);
            tokio::spawn(async move { n.wait().await })
        };
        tokio::task::yield_now().await;
        n.push(TaskType::LocalBash, "done".into());
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("the waiter never woke"));
        assert_eq!(n.drain(), ["done"]);
        assert!(n.is_empty());
    }

    #[test]
    fn a_shell_notification_reads_like_the_reference_agents() {
        let ended = TaskEnded {
            id: "b1".into(),
            task_type: TaskType::LocalBash,
            description: "tests".into(),
            origin: TaskOrigin::default(),
            status: TaskEndStatus::Completed,
            output_file: PathBuf::from("/s/tasks/b1.output"),
            summary: "Background command \"tests\" completed (exit code 0)".into(),
            usage: None,
            result: None,
        };
        assert_eq!(
            ended.model_text(),
            "<task-notification>\n<task-id>b1</task-id>\n<output-file>/s/tasks/b1.output</output-file>\n\
             <status>completed</status>\n<summary>Background command \"tests\" completed (exit code 0)</summary>\n\
             </task-notification>\nRead the output file to retrieve the result: /s/tasks/b1.output"
        );
    }
}
