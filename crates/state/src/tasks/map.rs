//! [`TaskMap`]: every task of a session, by id, as a persistent map, with the task
//! lifecycle (register, start, progress, complete, fail, kill).
//!
//! Every operation that might change the map returns `Option<TaskMap>`: `None` means
//! "nothing changed", so an app-state updater can hand back the previous state itself and
//! the store notifies nobody (ST-3). Changing one task costs the same whatever the number
//! of tasks: the map is a [`LogMap`] (AS-4).

use std::sync::Arc;

use super::log_map::LogMap;
use super::model::{TaskId, TaskKind, TaskState, TaskStatus};

/// How long a finished agent task that nobody views stays in the map (SL-3).
pub const EVICTION_GRACE_MS: u64 = 30_000;

/// Every task of a session, by id, in id order (creation order within a kind).
#[derive(Clone, Default, PartialEq)]
pub struct TaskMap(LogMap<TaskId, Arc<TaskState>>);

impl TaskMap {
    /// The task with this id.
    pub fn get(&self, id: &TaskId) -> Option<&Arc<TaskState>> {
        self.0.get(id)
    }

    /// The number of tasks.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no tasks.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The tasks in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<TaskState>> {
        self.0.iter().map(|(_, task)| task)
    }

    /// True when both maps are the same version (O(1)); for selections.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        self.0.ptr_eq(&other.0)
    }

    /// Adds `task` (or replaces the task with its id). `None` when an equal task is
    /// already there.
    ///
    /// ```
    /// use strata_state::tasks::{LocalShell, TaskId, TaskKind, TaskMap, TaskState};
    /// let task = TaskState::new(TaskId::generate('b'), "npm test", 0, TaskKind::LocalShell(
    ///     LocalShell { command: "npm test".into(), pid: None, exit_code: None, output_file: None }));
    /// let map = TaskMap::default().register(task.clone()).unwrap();
    /// assert_eq!(map.len(), 1);
    /// assert!(map.register(task).is_none()); // already there: unchanged
    /// ```
    pub fn register(&self, task: TaskState) -> Option<TaskMap> {
        if self
            .0
            .get(&task.id)
            .is_some_and(|existing| **existing == task)
        {
            return None;
        }
        Some(TaskMap(self.0.insert(task.id.clone(), Arc::new(task))))
    }

    /// Replaces the task `id` with `f(task)`; `None` when there is no such task or `f`
    /// returns `None` (no change).
    pub fn update(
        &self,
        id: &TaskId,
        f: impl FnOnce(&TaskState) -> Option<TaskState>,
    ) -> Option<TaskMap> {
        let old = self.0.get(id)?;
        let task = f(old)?;
        // A change that drops a conversation is applied to the base at once, so the
        // memory is released now rather than at the next compaction (SL-3).
        let frees_memory = messages_len(old) > messages_len(&task);
        Some(TaskMap(if frees_memory {
            self.0.insert_eager(id.clone(), Arc::new(task))
        } else {
            self.0.replace(id.clone(), Arc::new(task))
        }))
    }

    /// Removes the task `id`; `None` when there is no such task.
    pub fn remove(&self, id: &TaskId) -> Option<TaskMap> {
        self.0.remove(id).map(TaskMap)
    }

    /// Marks a pending task running. `None` unless it was pending.
    pub fn start(&self, id: &TaskId) -> Option<TaskMap> {
        self.update(id, |task| {
            (task.status == TaskStatus::Pending).then(|| TaskState {
                status: TaskStatus::Running,
                ..task.clone()
            })
        })
    }

    /// Applies a progress report `f` to a task that has not finished: `f` edits a copy and
    /// returns whether it changed anything. `None` when the task is finished, missing, or
    /// `f` changed nothing.
    ///
    /// ```
    /// use strata_state::tasks::{LocalShell, TaskId, TaskKind, TaskMap, TaskState};
    /// let id = TaskId::generate('b');
    /// let map = TaskMap::default().register(TaskState::new(id.clone(), "build", 0,
    ///     TaskKind::LocalShell(LocalShell { command: "make".into(), pid: None, exit_code: None, output_file: None }))).unwrap();
    /// let set_pid = |t: &mut TaskState| match &mut t.kind {
    ///     TaskKind::LocalShell(shell) if shell.pid != Some(42) => { shell.pid = Some(42); true }
    ///     _ => false,
    /// };
    /// let map = map.progress(&id, set_pid).unwrap();
    /// assert!(map.progress(&id, set_pid).is_none()); // same pid again: unchanged
    /// ```
    pub fn progress(&self, id: &TaskId, f: impl FnOnce(&mut TaskState) -> bool) -> Option<TaskMap> {
        self.update(id, |task| {
            if task.status.is_terminal() {
                return None;
            }
            let mut next = task.clone();
            f(&mut next).then_some(next)
        })
    }

    /// Marks a task completed at `now_ms`. `None` when it had already finished.
    pub fn complete(&self, id: &TaskId, now_ms: u64) -> Option<TaskMap> {
        self.finish(id, TaskStatus::Completed, None, now_ms)
    }

    /// Marks a task failed with `error` at `now_ms`. `None` when it had already finished.
    pub fn fail(&self, id: &TaskId, error: impl Into<Arc<str>>, now_ms: u64) -> Option<TaskMap> {
        self.finish(id, TaskStatus::Failed, Some(error.into()), now_ms)
    }

    /// Marks a task killed at `now_ms`. `None` when it had already finished.
    pub fn kill(&self, id: &TaskId, now_ms: u64) -> Option<TaskMap> {
        self.finish(id, TaskStatus::Killed, None, now_ms)
    }

    /// The one way a task reaches a terminal status: sets the end time, and for a local
    /// agent nobody is viewing, schedules its eviction (SL-3).
    fn finish(
        &self,
        id: &TaskId,
        status: TaskStatus,
        error: Option<Arc<str>>,
        now_ms: u64,
    ) -> Option<TaskMap> {
        self.update(id, |task| {
            if task.status.is_terminal() {
                return None;
            }
            let mut next = TaskState {
                status,
                end_time_ms: Some(now_ms),
                error,
                ..task.clone()
            };
            if let TaskKind::LocalAgent(agent) = &mut next.kind
                && !agent.retain
            {
                agent.evict_after_ms = Some(now_ms + EVICTION_GRACE_MS);
            }
            Some(next)
        })
    }
}

/// How many messages a task holds in memory.
fn messages_len(task: &TaskState) -> usize {
    match &task.kind {
        TaskKind::LocalAgent(agent) => agent.messages.len(),
        TaskKind::InProcessTeammate(mate) => mate.messages.len(),
        TaskKind::LocalShell(_) | TaskKind::RemoteAgent(_) => 0,
    }
}

impl std::fmt::Debug for TaskMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k.as_str(), &v.status)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{LocalAgent, LocalShell};

    fn shell(id: &TaskId) -> TaskState {
        TaskState::new(
            id.clone(),
            "job",
            1,
            TaskKind::LocalShell(LocalShell {
                command: "true".into(),
                pid: None,
                exit_code: None,
                output_file: None,
            }),
        )
    }

    fn agent(id: &TaskId, retain: bool) -> TaskState {
        TaskState::new(
            id.clone(),
            "review",
            1,
            TaskKind::LocalAgent(LocalAgent {
                agent_id: "a1".into(),
                agent_type: None,
                messages: Default::default(),
                retain,
                disk_loaded: false,
                evict_after_ms: None,
                progress: Default::default(),
            }),
        )
    }

    #[test]
    fn lifecycle_updaters_report_no_change_when_nothing_changes() {
        let id = TaskId::generate('b');
        let map = TaskMap::default().register(shell(&id)).unwrap();
        assert!(
            map.register(shell(&id)).is_none(),
            "register of an equal task"
        );
        let running = map.start(&id).unwrap();
        assert!(running.start(&id).is_none(), "start of a running task");
        let done = running.complete(&id, 5).unwrap();
        assert!(
            done.complete(&id, 6).is_none(),
            "complete of a finished task"
        );
        assert!(done.fail(&id, "x", 6).is_none(), "fail of a finished task");
        assert!(done.kill(&id, 6).is_none(), "kill of a finished task");
        assert!(
            done.progress(&id, |_| true).is_none(),
            "progress of a finished task"
        );
        let missing = TaskId::generate('b');
        assert!(done.complete(&missing, 6).is_none(), "unknown id");
        assert_eq!(done.get(&id).unwrap().end_time_ms, Some(5));
        assert_eq!(done.get(&id).unwrap().status, TaskStatus::Completed);
    }

    #[test]
    fn sl3_finishing_an_unviewed_agent_schedules_its_eviction_after_the_grace_period() {
        let (a, b) = (TaskId::generate('a'), TaskId::generate('a'));
        let map = TaskMap::default()
            .register(agent(&a, false))
            .unwrap()
            .register(agent(&b, true))
            .unwrap();
        let map = map
            .fail(&a, "boom", 1_000)
            .unwrap()
            .kill(&b, 1_000)
            .unwrap();
        let evict = |id| match &map.get(id).unwrap().kind {
            TaskKind::LocalAgent(agent) => agent.evict_after_ms,
            _ => unreachable!(),
        };
        assert_eq!(evict(&a), Some(1_000 + EVICTION_GRACE_MS));
        assert_eq!(
            evict(&b),
            None,
            "a retained (viewed) agent is not scheduled"
        );
        assert_eq!(map.get(&a).unwrap().error.as_deref(), Some("boom"));
    }

    #[test]
    fn as4_updating_one_task_leaves_the_others_shared() {
        let ids: Vec<TaskId> = (0..1000).map(|_| TaskId::generate('b')).collect();
        let map = ids
            .iter()
            .fold(TaskMap::default(), |m, id| m.register(shell(id)).unwrap());
        let next = map.start(&ids[500]).unwrap();
        for (i, id) in ids.iter().enumerate() {
            let shared = Arc::ptr_eq(map.get(id).unwrap(), next.get(id).unwrap());
            assert_eq!(shared, i != 500, "task {i}");
        }
    }

    #[test]
    fn ids_sort_in_creation_order_and_iteration_follows_it() {
        let ids: Vec<TaskId> = (0..50).map(|_| TaskId::generate('a')).collect();
        let map = ids.iter().rev().fold(TaskMap::default(), |m, id| {
            m.register(agent(id, false)).unwrap()
        });
        let order: Vec<&TaskId> = map.iter().map(|t| &t.id).collect();
        assert_eq!(order, ids.iter().collect::<Vec<_>>());
    }
}
