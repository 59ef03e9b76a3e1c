//! The SDK stream's messages about background work (issue 11): `system/task_started`,
//! `system/task_progress` and `system/task_notification`, in the shapes the official
//! Agent SDKs declare, and the summary of work still running that a `result` carries.
//!
//! Optional fields are left out when absent, as the SDKs' types mark them optional.

use serde::{Deserialize, Serialize};

/// `{"type":"system","subtype":"task_started",…}`: a background task began.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskStartedMessage {
    /// The task's id (what `stop_task` and `TaskStop` take).
    pub task_id: String,
    /// The tool call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// What it does, in a few words.
    pub description: String,
    /// `local_agent` or `local_bash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// The agent type of an agent task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
    /// It runs in the background (the caller did not wait for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_backgrounded: Option<bool>,
    /// How deep the agent that started it is (1: started by the main agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_depth: Option<u32>,
    /// The agent task that started it, when not the main agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_id: Option<String>,
    /// The prompt of an agent task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// This line's id.
    pub uuid: String,
    /// The session id.
    pub session_id: String,
}

/// A task's running totals, as `task_progress` and `task_notification` report them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskUsage {
    /// Tokens of every model response so far (input, cache and output).
    pub total_tokens: u64,
    /// Tool calls made so far.
    pub tool_uses: u64,
    /// Time since it started.
    pub duration_ms: u64,
}

/// `{"type":"system","subtype":"task_progress",…}`: an agent task made progress.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskProgressMessage {
    /// The task's id.
    pub task_id: String,
    /// The tool call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// What it does.
    pub description: String,
    /// The agent type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
    /// Totals so far.
    pub usage: TaskUsage,
    /// The tool it called last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_name: Option<String>,
    /// This line's id.
    pub uuid: String,
    /// The session id.
    pub session_id: String,
}

/// How a task ended, as `task_notification` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskEndStatus {
    /// It finished its work.
    Completed,
    /// It failed (a shell command's non-zero exit, an agent's error).
    Failed,
    /// It was stopped (`TaskStop`, `stop_task`, the session closing).
    Stopped,
}

/// `{"type":"system","subtype":"task_notification",…}`: a background task ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskNotificationMessage {
    /// The task's id.
    pub task_id: String,
    /// The tool call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// How it ended.
    pub status: TaskEndStatus,
    /// Where its complete output is.
    pub output_file: String,
    /// One line saying what happened.
    pub summary: String,
    /// Its totals (agent tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TaskUsage>,
    /// This line's id.
    pub uuid: String,
    /// The session id.
    pub session_id: String,
}

/// A task still running when a `result` was written (`result.background_tasks`; the
/// shape hook inputs give background work).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackgroundTaskSummary {
    /// The task's id.
    pub id: String,
    /// `local_agent` or `local_bash`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `running` (or `pending`).
    pub status: String,
    /// What it does.
    pub description: String,
    /// A shell task's command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// An agent task's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
}
