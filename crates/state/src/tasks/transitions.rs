//! Multi-field transitions of the tasks domain (SL-2) and its memory discipline (SL-3).
//!
//! Viewing an agent *retains* it: it is not evicted and its conversation is held in
//! memory. Leaving the view *releases* it: the conversation is dropped, the loaded flag
//! cleared, and a finished task is scheduled for eviction 30 s after it ended. Dismissing
//! a finished task removes it at once. An eviction sweep removes tasks whose time has
//! come. Background agents therefore hold their messages only while someone looks at
//! them, which is what keeps memory bounded when many agents run.
//!
//! Every function returns `None` when nothing changes, so the app-state updater built on
//! it can return the previous state (ST-3). Time is a parameter (`now_ms`), never read
//! here; [`Clock`] gives the caller a real or a manual clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::map::{EVICTION_GRACE_MS, TaskMap};
use super::model::{TaskId, TaskKind, TaskMessages, TaskState};
use super::{TasksDomain, ViewSelectionMode};

/// Where time comes from, so eviction can be tested without sleeping.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock that only moves when told to; for tests.
///
/// ```
/// use strata_state::tasks::{Clock, ManualClock};
/// let clock = ManualClock::new(1_000);
/// clock.advance(500);
/// assert_eq!(clock.now_ms(), 1_500);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock showing `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Self(AtomicU64::new(now_ms))
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What stopping or dismissing a task requires (see [`TasksDomain::stop_or_dismiss`]).
#[derive(Clone, Debug, PartialEq)]
pub enum StopAction {
    /// The task is running: cancel it through its handle; it reports its end itself.
    /// If it has no handle, apply [`TaskMap::kill`] instead.
    Cancel(TaskId),
    /// The task had finished and is now gone from the domain.
    Dismissed(TasksDomain),
    /// No such task.
    Nothing,
}

impl TasksDomain {
    /// Views task `id` (SL-2): releases the task viewed before (if another), retains this
    /// one if it is a local agent (no eviction; `messages`, loaded from its transcript by
    /// the caller, are kept in memory), and switches the view to it. `None` when `id` is
    /// unknown or already viewed as asked.
    ///
    /// ```
    /// use strata_state::tasks::{LocalAgent, TaskId, TaskKind, TaskMap, TaskState, TasksDomain};
    /// let id = TaskId::generate('a');
    /// let agent = LocalAgent { agent_id: "a1".into(), agent_type: None, messages: Default::default(),
    ///     retain: false, disk_loaded: false, evict_after_ms: None, progress: Default::default() };
    /// let tasks = TaskMap::default().register(TaskState::new(id.clone(), "review", 0, TaskKind::LocalAgent(agent))).unwrap();
    /// let domain = TasksDomain { tasks, ..Default::default() };
    /// let viewing = domain.enter_view(&id, Some(Default::default())).unwrap();
    /// assert_eq!(viewing.viewing_agent_task_id, Some(id.clone()));
    /// let back = viewing.exit_view().unwrap();
    /// assert_eq!(back.viewing_agent_task_id, None);
    /// ```
    pub fn enter_view(&self, id: &TaskId, messages: Option<TaskMessages>) -> Option<TasksDomain> {
        self.tasks.get(id)?;
        let mut next = self.clone();
        let mut changed = false;
        if let Some(previous) = self.viewing_agent_task_id.as_ref().filter(|p| *p != id)
            && let Some(tasks) = release(&next.tasks, previous)
        {
            next.tasks = tasks;
            changed = true;
        }
        if let Some(tasks) = retain(&next.tasks, id, messages) {
            next.tasks = tasks;
            changed = true;
        }
        if next.viewing_agent_task_id.as_ref() != Some(id) {
            next.viewing_agent_task_id = Some(id.clone());
            changed = true;
        }
        if next.view_selection_mode != ViewSelectionMode::ViewingAgent {
            next.view_selection_mode = ViewSelectionMode::ViewingAgent;
            changed = true;
        }
        changed.then_some(next)
    }

    /// Leaves the agent view (SL-2): releases the viewed task and returns to the main
    /// conversation. `None` when nothing was viewed.
    pub fn exit_view(&self) -> Option<TasksDomain> {
        if self.viewing_agent_task_id.is_none()
            && self.view_selection_mode == ViewSelectionMode::None
        {
            return None;
        }
        let mut next = self.clone();
        if let Some(viewed) = &self.viewing_agent_task_id
            && let Some(tasks) = release(&next.tasks, viewed)
        {
            next.tasks = tasks;
        }
        next.viewing_agent_task_id = None;
        next.view_selection_mode = ViewSelectionMode::None;
        Some(next)
    }

    /// A viewed agent's conversation as it grows (SL-3: only a retained task holds its
    /// messages): `messages` — the running agent's own conversation, shared, not copied —
    /// replace those the task holds, so a view follows the agent live. `None` when `id`
    /// is not a retained local agent (nobody is looking: nothing is kept) or already
    /// holds these very messages.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata_protocol::message::Message;
    /// use strata_state::tasks::{LocalAgent, TaskId, TaskKind, TaskMap, TaskMessages, TaskState, TasksDomain};
    /// let id = TaskId::generate('a');
    /// let agent = LocalAgent { agent_id: "a1".into(), agent_type: None, messages: Default::default(),
    ///     retain: false, disk_loaded: false, evict_after_ms: None, progress: Default::default() };
    /// let tasks = TaskMap::default().register(TaskState::new(id.clone(), "review", 0, TaskKind::LocalAgent(agent))).unwrap();
    /// let domain = TasksDomain { tasks, ..Default::default() };
    /// let grown: TaskMessages = [Arc::new(Message::user_text("look"))].into_iter().collect();
    /// assert!(domain.follow_view(&id, &grown).is_none(), "not viewed: nothing kept");
    /// let viewing = domain.enter_view(&id, Some(TaskMessages::new())).unwrap();
    /// let followed = viewing.follow_view(&id, &grown).unwrap();
    /// assert!(followed.follow_view(&id, &grown).is_none(), "the same messages again");
    /// ```
    pub fn follow_view(&self, id: &TaskId, messages: &TaskMessages) -> Option<TasksDomain> {
        let tasks = self.tasks.update(id, |task| {
            let TaskKind::LocalAgent(agent) = &task.kind else {
                return None;
            };
            if !agent.retain || crate::same_conversation(&agent.messages, messages) {
                return None;
            }
            let mut next = task.clone();
            if let TaskKind::LocalAgent(agent) = &mut next.kind {
                agent.messages = messages.clone();
            }
            Some(next)
        })?;
        Some(TasksDomain {
            tasks,
            ..self.clone()
        })
    }

    /// Decides how to stop or dismiss task `id` (SL-2, SL-3): a running task is cancelled
    /// (the caller runs [`StopAction::Cancel`] through the task's handle), a finished one
    /// is removed at once.
    pub fn stop_or_dismiss(&self, id: &TaskId) -> StopAction {
        match self.tasks.get(id) {
            None => StopAction::Nothing,
            Some(task) if !task.status.is_terminal() => StopAction::Cancel(id.clone()),
            Some(_) => match self.without_tasks(|task| task.id == *id) {
                Some(next) => StopAction::Dismissed(next),
                None => StopAction::Nothing,
            },
        }
    }

    /// Removes every finished, released task whose eviction time is due (SL-3). `None`
    /// when nothing is due.
    pub fn evict_due(&self, now_ms: u64) -> Option<TasksDomain> {
        self.without_tasks(|task| is_due(task, now_ms))
    }

    /// The earliest time a task becomes due for eviction, for scheduling the next sweep.
    pub fn next_eviction_ms(&self) -> Option<u64> {
        self.tasks
            .iter()
            .filter_map(|task| match &task.kind {
                TaskKind::LocalAgent(agent) if !agent.retain && task.status.is_terminal() => {
                    agent.evict_after_ms
                }
                _ => None,
            })
            .min()
    }

    /// The domain without the tasks `remove` picks, and without any reference to them
    /// (view, foreground, agent names). `None` when it picks none.
    fn without_tasks(&self, remove: impl Fn(&TaskState) -> bool) -> Option<TasksDomain> {
        let doomed: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|t| remove(t))
            .map(|t| t.id.clone())
            .collect();
        if doomed.is_empty() {
            return None;
        }
        let mut next = self.clone();
        for id in &doomed {
            if let Some(tasks) = next.tasks.remove(id) {
                next.tasks = tasks;
            }
        }
        let gone = |id: &Option<TaskId>| id.as_ref().is_some_and(|id| doomed.contains(id));
        if gone(&next.viewing_agent_task_id) {
            next.viewing_agent_task_id = None;
            next.view_selection_mode = ViewSelectionMode::None;
        }
        if gone(&next.foregrounded_task_id) {
            next.foregrounded_task_id = None;
        }
        let stale: Vec<_> = next
            .agent_names
            .iter()
            .filter(|(_, id)| doomed.contains(id))
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            next.agent_names.remove(&name);
        }
        Some(next)
    }
}

fn is_due(task: &TaskState, now_ms: u64) -> bool {
    match &task.kind {
        TaskKind::LocalAgent(agent) => {
            !agent.retain
                && task.status.is_terminal()
                && agent.evict_after_ms.is_some_and(|due| due <= now_ms)
        }
        _ => false,
    }
}

/// Retains local agent `id`: no eviction while viewed, messages held in memory.
fn retain(tasks: &TaskMap, id: &TaskId, messages: Option<TaskMessages>) -> Option<TaskMap> {
    tasks.update(id, |task| {
        let TaskKind::LocalAgent(agent) = &task.kind else {
            return None;
        };
        let loaded = messages.is_some();
        if agent.retain && agent.evict_after_ms.is_none() && !loaded {
            return None;
        }
        let mut next = task.clone();
        if let TaskKind::LocalAgent(agent) = &mut next.kind {
            agent.retain = true;
            agent.evict_after_ms = None;
            if let Some(messages) = messages {
                agent.messages = messages;
                agent.disk_loaded = true;
            }
        }
        Some(next)
    })
}

/// Releases local agent `id`: drops its messages, clears the loaded flag, and if it has
/// finished, schedules its eviction 30 s after its end.
fn release(tasks: &TaskMap, id: &TaskId) -> Option<TaskMap> {
    tasks.update(id, |task| {
        let TaskKind::LocalAgent(agent) = &task.kind else {
            return None;
        };
        let evict_after_ms = match (task.status.is_terminal(), task.end_time_ms) {
            (true, Some(end)) => Some(end + EVICTION_GRACE_MS),
            _ => agent.evict_after_ms,
        };
        if !agent.retain
            && agent.messages.is_empty()
            && !agent.disk_loaded
            && agent.evict_after_ms == evict_after_ms
        {
            return None;
        }
        let mut next = task.clone();
        if let TaskKind::LocalAgent(agent) = &mut next.kind {
            agent.retain = false;
            agent.messages = TaskMessages::new();
            agent.disk_loaded = false;
            agent.evict_after_ms = evict_after_ms;
        }
        Some(next)
    })
}

/// The messages of a local agent or teammate task (empty for other kinds).
pub fn task_messages(task: &Arc<TaskState>) -> Option<&TaskMessages> {
    match &task.kind {
        TaskKind::LocalAgent(agent) => Some(&agent.messages),
        TaskKind::InProcessTeammate(mate) => Some(&mate.messages),
        _ => None,
    }
}
