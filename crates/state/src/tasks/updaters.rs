//! App-state updaters for the task lifecycle and the agent view: what callers hand to
//! the store.
//!
//! Each function returns an updater `FnOnce(&Arc<AppState>) -> Arc<AppState>` that hands
//! back the previous state itself when nothing changes (an unknown task, a task that has
//! already finished, a view already showing that task), so the store commits nothing and
//! notifies nobody (ST-3).
//!
//! ```
//! use std::sync::Arc;
//! use strata_state::tasks::{updaters, LocalShell, TaskId, TaskKind, TaskState};
//! use strata_state::{default_app_state, RuntimeFacts};
//! use strata_store::Store;
//!
//! let store = Store::new(default_app_state(RuntimeFacts::default()));
//! let id = TaskId::generate('b');
//! let shell = LocalShell { command: "make".into(), pid: None, exit_code: None, output_file: None };
//! let _ = store.set(updaters::register(TaskState::new(id.clone(), "build", 0, TaskKind::LocalShell(shell))));
//! let _ = store.set(updaters::complete(id.clone(), 10));
//! let before = store.get();
//! assert!(!store.set(updaters::complete(id, 20)).is_committed()); // already finished
//! assert!(Arc::ptr_eq(&before, &store.get()));
//! ```

use std::sync::Arc;

use super::model::{TaskId, TaskMessages, TaskState};
use super::{TaskMap, TasksDomain};
use crate::AppState;

/// An updater of the app state.
pub type Updater = Box<dyn FnOnce(&Arc<AppState>) -> Arc<AppState> + Send>;

/// The state with `tasks` changed by `f`, or the same state when `f` returns `None`.
fn on_tasks(
    prev: &Arc<AppState>,
    f: impl FnOnce(&TasksDomain) -> Option<TasksDomain>,
) -> Arc<AppState> {
    match f(&prev.tasks) {
        Some(tasks) => Arc::new(AppState {
            tasks,
            ..AppState::clone(prev)
        }),
        None => Arc::clone(prev),
    }
}

/// The state with the task map changed by `f` (see [`on_tasks`]).
fn on_map(prev: &Arc<AppState>, f: impl FnOnce(&TaskMap) -> Option<TaskMap>) -> Arc<AppState> {
    on_tasks(prev, |domain| {
        f(&domain.tasks).map(|tasks| TasksDomain {
            tasks,
            ..domain.clone()
        })
    })
}

/// Registers `task` (or replaces the task with its id).
pub fn register(task: TaskState) -> Updater {
    Box::new(move |prev| on_map(prev, |m| m.register(task)))
}

/// Marks a pending task running.
pub fn start(id: TaskId) -> Updater {
    Box::new(move |prev| on_map(prev, |m| m.start(&id)))
}

/// Applies a progress report to a task that has not finished; `f` returns whether it
/// changed anything.
pub fn progress(id: TaskId, f: impl FnOnce(&mut TaskState) -> bool + Send + 'static) -> Updater {
    Box::new(move |prev| on_map(prev, |m| m.progress(&id, f)))
}

/// Marks a task completed at `now_ms`.
pub fn complete(id: TaskId, now_ms: u64) -> Updater {
    Box::new(move |prev| on_map(prev, |m| m.complete(&id, now_ms)))
}

/// Marks a task failed with `error` at `now_ms`.
pub fn fail(id: TaskId, error: impl Into<Arc<str>>, now_ms: u64) -> Updater {
    let error = error.into();
    Box::new(move |prev| on_map(prev, |m| m.fail(&id, error, now_ms)))
}

/// Marks a task killed at `now_ms`.
pub fn kill(id: TaskId, now_ms: u64) -> Updater {
    Box::new(move |prev| on_map(prev, |m| m.kill(&id, now_ms)))
}

/// Views task `id`, retaining it with `messages` loaded from its transcript (SL-2).
pub fn enter_view(id: TaskId, messages: Option<TaskMessages>) -> Updater {
    Box::new(move |prev| on_tasks(prev, |d| d.enter_view(&id, messages)))
}

/// A viewed agent's conversation as it grows: `messages` replace those task `id` holds
/// while it is retained; unchanged when nobody views it (SL-3).
pub fn follow_view(id: TaskId, messages: TaskMessages) -> Updater {
    Box::new(move |prev| on_tasks(prev, |d| d.follow_view(&id, &messages)))
}

/// Leaves the agent view, releasing the viewed task (SL-2).
pub fn exit_view() -> Updater {
    Box::new(|prev| on_tasks(prev, TasksDomain::exit_view))
}

/// Removes a finished task at once (the "dismiss" half of stop-or-dismiss, SL-3).
pub fn dismiss(id: TaskId) -> Updater {
    Box::new(move |prev| {
        on_tasks(prev, |d| match d.stop_or_dismiss(&id) {
            super::StopAction::Dismissed(next) => Some(next),
            _ => None,
        })
    })
}

/// Evicts every task whose grace period ended by `now_ms` (SL-3).
pub fn evict_due(now_ms: u64) -> Updater {
    Box::new(move |prev| on_tasks(prev, |d| d.evict_due(now_ms)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{LocalAgent, TaskKind, TaskStatus};
    use crate::{RuntimeFacts, default_app_state};
    use strata_store::Store;

    fn agent(id: &TaskId) -> TaskState {
        TaskState::new(
            id.clone(),
            "agent",
            0,
            TaskKind::LocalAgent(LocalAgent {
                agent_id: "a".into(),
                agent_type: None,
                messages: TaskMessages::new(),
                retain: false,
                disk_loaded: false,
                evict_after_ms: None,
                progress: Default::default(),
            }),
        )
    }

    /// Every updater hands back the very same state when it changes nothing.
    #[test]
    fn sl2_updaters_return_the_previous_state_pointer_when_nothing_changes() {
        let store = Store::new(default_app_state(RuntimeFacts::default()));
        let id = TaskId::generate('a');
        let unknown = TaskId::generate('a');
        assert!(store.set(register(agent(&id))).is_committed());
        assert!(store.set(start(id.clone())).is_committed());
        let unchanged: Vec<(&str, Updater)> = vec![
            (
                "register again",
                register(TaskState {
                    status: TaskStatus::Running,
                    ..agent(&id)
                }),
            ),
            ("start a running task", start(id.clone())),
            ("progress with no change", progress(id.clone(), |_| false)),
            ("complete an unknown task", complete(unknown.clone(), 5)),
            ("exit a view that is not open", exit_view()),
            ("dismiss a running task", dismiss(id.clone())),
            ("evict nothing due", evict_due(0)),
            ("view an unknown task", enter_view(unknown.clone(), None)),
            (
                "follow an agent nobody views",
                follow_view(id.clone(), TaskMessages::new()),
            ),
        ];
        for (what, updater) in unchanged {
            let before = store.get();
            assert!(!store.set(updater).is_committed(), "{what}");
            assert!(Arc::ptr_eq(&before, &store.get()), "{what}");
        }
        assert!(store.set(kill(id.clone(), 7)).is_committed());
        for (what, updater) in [
            ("complete a killed task", complete(id.clone(), 8)),
            ("fail a killed task", fail(id.clone(), "x", 8)),
            ("kill it again", kill(id.clone(), 9)),
        ] {
            let before = store.get();
            assert!(!store.set(updater).is_committed(), "{what}");
            assert!(Arc::ptr_eq(&before, &store.get()), "{what}");
        }
        assert!(store.set(dismiss(id.clone())).is_committed());
        assert!(store.get().tasks.tasks.is_empty());
    }
}
