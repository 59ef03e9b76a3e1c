//! Tasks and agents: the background work of a session, as pure data.
//!
//! A session runs more than its main conversation: shell commands in the background,
//! local sub-agents, in-process teammates, remote agents. Each is a *task* in one map
//! keyed by [`TaskId`] ([`TaskMap`], a persistent ordered map: updating one task among
//! 10,000 copies a few small nodes, never the map — AS-4). Around the map sit the fields
//! that say which task the user is looking at ([`TasksDomain`]).
//!
//! Everything here is immutable data plus pure functions. Runtime handles (a task's
//! cancellation, its process) are not stored in a task: they live in a handle registry
//! beside the state (AS-2), reached through [`TaskHandles`].
//!
//! The pieces: [`TaskMap`] with the per-task lifecycle (register, start, progress,
//! complete, fail, kill), each returning "unchanged" when nothing changes; selectors
//! ([`viewed_teammate_task`], [`input_target`], SL-1); transitions on [`TasksDomain`]
//! (enter and exit a view, stop or dismiss, the eviction sweep: SL-2, SL-3); and
//! [`updaters`], the same operations as app-state updaters for the store.

mod handles;
pub mod log_map;
mod map;
mod model;
mod selectors;
mod transitions;
pub mod updaters;

pub use handles::{Cancel, TaskHandles};
pub use map::{EVICTION_GRACE_MS, TaskMap};
pub use model::{
    AgentProgress, InProcessTeammate, LocalAgent, LocalShell, RemoteAgent, TaskId, TaskKind,
    TaskMessages, TaskState, TaskStatus,
};
pub use selectors::{InputTarget, input_target, viewed_teammate_task};
pub use transitions::{Clock, ManualClock, StopAction, SystemClock, task_messages};

/// The tasks-and-agents domain of the app state (AS-1).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TasksDomain {
    /// Every task of the session, by id.
    pub tasks: TaskMap,
    /// Agent names given by the user or the model (`@reviewer`), to the task they name.
    pub agent_names: imbl::OrdMap<smol_str::SmolStr, TaskId>,
    /// The task brought to the foreground (its output shown in the main view), if any.
    pub foregrounded_task_id: Option<TaskId>,
    /// The agent task whose conversation the user is viewing, if any.
    pub viewing_agent_task_id: Option<TaskId>,
    /// How the task/teammate list is being navigated.
    pub view_selection_mode: ViewSelectionMode,
}

/// How the user is selecting among tasks and teammates in the footer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViewSelectionMode {
    /// Not selecting: input goes to the main conversation.
    #[default]
    None,
    /// Moving a highlight over the list of agents.
    SelectingAgent,
    /// Looking at one agent's conversation.
    ViewingAgent,
}
