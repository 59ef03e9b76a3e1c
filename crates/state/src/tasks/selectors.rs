//! Derived values of the tasks domain (SL-1): pure functions of only the fields they need.
//!
//! They take the viewed-task id and the task map rather than the whole app state, so a
//! UI selection built on them depends on exactly those two fields, and a failed lookup
//! anywhere yields "nothing" instead of an error.

use std::sync::Arc;

use super::map::TaskMap;
use super::model::{TaskId, TaskKind, TaskState};

/// The in-process teammate the user is viewing: `None` when nothing is viewed, the id is
/// unknown, or the viewed task is not a teammate.
///
/// ```
/// use strata_state::tasks::{viewed_teammate_task, TaskMap, TaskId};
/// assert!(viewed_teammate_task(None, &TaskMap::default()).is_none());
/// assert!(viewed_teammate_task(Some(&TaskId::from_string("t1")), &TaskMap::default()).is_none());
/// ```
pub fn viewed_teammate_task<'a>(
    viewing: Option<&TaskId>,
    tasks: &'a TaskMap,
) -> Option<&'a Arc<TaskState>> {
    let task = tasks.get(viewing?)?;
    matches!(task.kind, TaskKind::InProcessTeammate(_)).then_some(task)
}

/// Who receives what the user types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputTarget {
    /// The main conversation (the leader agent).
    Leader,
    /// The in-process teammate being viewed.
    Teammate {
        /// Its task.
        task_id: TaskId,
        /// Its name.
        name: smol_str::SmolStr,
    },
    /// The local sub-agent being viewed, addressed by its agent id.
    LocalAgent {
        /// Its task.
        task_id: TaskId,
        /// Its agent id.
        agent_id: smol_str::SmolStr,
    },
}

/// The agent user input goes to: the viewed teammate or local agent, else the leader.
/// A viewed agent that has finished can no longer take input, so input goes to the
/// leader.
///
/// ```
/// use strata_state::tasks::{input_target, InputTarget, TaskMap};
/// assert_eq!(input_target(None, &TaskMap::default()), InputTarget::Leader);
/// ```
pub fn input_target(viewing: Option<&TaskId>, tasks: &TaskMap) -> InputTarget {
    let Some(task) = viewing.and_then(|id| tasks.get(id)) else {
        return InputTarget::Leader;
    };
    if task.status.is_terminal() {
        return InputTarget::Leader;
    }
    match &task.kind {
        TaskKind::InProcessTeammate(mate) => InputTarget::Teammate {
            task_id: task.id.clone(),
            name: mate.name.clone(),
        },
        TaskKind::LocalAgent(agent) => InputTarget::LocalAgent {
            task_id: task.id.clone(),
            agent_id: agent.agent_id.clone(),
        },
        TaskKind::LocalShell(_) | TaskKind::RemoteAgent(_) => InputTarget::Leader,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{InProcessTeammate, LocalAgent, LocalShell, TaskStatus};

    fn map_with(tasks: Vec<TaskState>) -> TaskMap {
        tasks
            .into_iter()
            .fold(TaskMap::default(), |m, t| m.register(t).unwrap_or(m))
    }

    fn teammate(id: &TaskId) -> TaskState {
        TaskState::new(
            id.clone(),
            "mate",
            0,
            TaskKind::InProcessTeammate(InProcessTeammate {
                name: "reviewer".into(),
                color: None,
                messages: Default::default(),
                plan_mode_required: false,
            }),
        )
    }

    fn agent(id: &TaskId) -> TaskState {
        TaskState::new(
            id.clone(),
            "agent",
            0,
            TaskKind::LocalAgent(LocalAgent {
                agent_id: "a77".into(),
                agent_type: None,
                messages: Default::default(),
                retain: false,
                disk_loaded: false,
                evict_after_ms: None,
                progress: Default::default(),
            }),
        )
    }

    fn shell(id: &TaskId) -> TaskState {
        TaskState::new(
            id.clone(),
            "sh",
            0,
            TaskKind::LocalShell(LocalShell {
                command: "ls".into(),
                pid: None,
                exit_code: None,
                output_file: None,
            }),
        )
    }

    #[test]
    fn sl1_viewed_teammate_is_none_when_any_lookup_fails() {
        let (t, a, missing) = (
            TaskId::generate('t'),
            TaskId::generate('a'),
            TaskId::generate('t'),
        );
        let tasks = map_with(vec![teammate(&t), agent(&a)]);
        assert_eq!(
            viewed_teammate_task(Some(&t), &tasks).map(|x| &x.id),
            Some(&t)
        );
        assert!(
            viewed_teammate_task(Some(&a), &tasks).is_none(),
            "not a teammate"
        );
        assert!(
            viewed_teammate_task(Some(&missing), &tasks).is_none(),
            "unknown id"
        );
        assert!(
            viewed_teammate_task(None, &tasks).is_none(),
            "nothing viewed"
        );
    }

    #[test]
    fn sl1_input_goes_to_the_viewed_teammate_or_local_agent_else_the_leader() {
        let (t, a, s) = (
            TaskId::generate('t'),
            TaskId::generate('a'),
            TaskId::generate('b'),
        );
        let tasks = map_with(vec![teammate(&t), agent(&a), shell(&s)]);
        assert_eq!(
            input_target(Some(&t), &tasks),
            InputTarget::Teammate {
                task_id: t.clone(),
                name: "reviewer".into()
            }
        );
        assert_eq!(
            input_target(Some(&a), &tasks),
            InputTarget::LocalAgent {
                task_id: a.clone(),
                agent_id: "a77".into()
            }
        );
        assert_eq!(
            input_target(Some(&s), &tasks),
            InputTarget::Leader,
            "a shell takes no input"
        );
        assert_eq!(
            input_target(Some(&TaskId::generate('a')), &tasks),
            InputTarget::Leader
        );
        let finished = tasks.complete(&a, 1).unwrap();
        assert_eq!(
            input_target(Some(&a), &finished),
            InputTarget::Leader,
            "a finished agent"
        );
        assert_eq!(finished.get(&a).unwrap().status, TaskStatus::Completed);
    }
}
