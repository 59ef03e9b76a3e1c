//! SL-2 and SL-3 through the public API: viewing retains, leaving releases, finished
//! tasks are evicted after the grace period, dismissing removes at once. Time comes from
//! a manual clock: nothing sleeps.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use strata_protocol::message::Message;
use strata_state::tasks::{
    Clock, EVICTION_GRACE_MS, LocalAgent, ManualClock, StopAction, TaskId, TaskKind, TaskMap,
    TaskMessages, TaskState, TaskStatus, TasksDomain, ViewSelectionMode, task_messages,
};

fn agent(id: &TaskId) -> TaskState {
    TaskState::new(
        id.clone(),
        "explore the repo",
        0,
        TaskKind::LocalAgent(LocalAgent {
            agent_id: id.as_str().into(),
            agent_type: Some("Explore".into()),
            messages: TaskMessages::new(),
            retain: false,
            disk_loaded: false,
            evict_after_ms: None,
            progress: Default::default(),
        }),
    )
}

fn domain(ids: &[&TaskId]) -> TasksDomain {
    let tasks = ids
        .iter()
        .fold(TaskMap::default(), |m, id| m.register(agent(id)).unwrap());
    let tasks = ids.iter().fold(tasks, |m, id| m.start(id).unwrap());
    TasksDomain {
        tasks,
        ..Default::default()
    }
}

fn transcript(n: usize) -> TaskMessages {
    (0..n)
        .map(|i| Arc::new(Message::user_text(format!("message {i}"))))
        .collect()
}

fn local(domain: &TasksDomain, id: &TaskId) -> LocalAgent {
    match &domain.tasks.get(id).unwrap().kind {
        TaskKind::LocalAgent(agent) => agent.clone(),
        _ => unreachable!(),
    }
}

#[test]
fn sl2_entering_a_view_releases_the_previous_agent_and_retains_the_new_one() {
    let (a, b) = (TaskId::generate('a'), TaskId::generate('a'));
    let d = domain(&[&a, &b]);
    let d = d.enter_view(&a, Some(transcript(3))).unwrap();
    assert!(local(&d, &a).retain);
    assert!(local(&d, &a).disk_loaded);
    assert_eq!(local(&d, &a).messages.len(), 3);
    assert_eq!(d.view_selection_mode, ViewSelectionMode::ViewingAgent);

    let d = d.enter_view(&b, Some(transcript(2))).unwrap();
    assert_eq!(d.viewing_agent_task_id, Some(b.clone()));
    let released = local(&d, &a);
    assert!(!released.retain && !released.disk_loaded && released.messages.is_empty());
    assert_eq!(local(&d, &b).messages.len(), 2);
}

#[test]
fn sl2_transitions_return_none_when_nothing_changes() {
    let a = TaskId::generate('a');
    let d = domain(&[&a]);
    assert!(d.exit_view().is_none(), "nothing viewed");
    assert!(
        d.enter_view(&TaskId::generate('a'), None).is_none(),
        "unknown task"
    );
    let viewing = d.enter_view(&a, None).unwrap();
    assert!(viewing.enter_view(&a, None).is_none(), "already viewing it");
    assert!(
        viewing.evict_due(u64::MAX).is_none(),
        "a viewed task is never due"
    );
    assert!(matches!(
        d.stop_or_dismiss(&TaskId::generate('a')),
        StopAction::Nothing
    ));
}

#[test]
fn sl3_a_finished_agent_nobody_views_is_evicted_after_the_grace_period() {
    let clock = ManualClock::new(1_000_000);
    let a = TaskId::generate('a');
    let mut d = domain(&[&a]);
    d.tasks = d.tasks.complete(&a, clock.now_ms()).unwrap();
    assert_eq!(
        d.next_eviction_ms(),
        Some(clock.now_ms() + EVICTION_GRACE_MS)
    );

    clock.advance(EVICTION_GRACE_MS - 1);
    assert!(
        d.evict_due(clock.now_ms()).is_none(),
        "still inside the grace period"
    );
    clock.advance(1);
    let swept = d.evict_due(clock.now_ms()).unwrap();
    assert!(swept.tasks.get(&a).is_none());
    assert_eq!(swept.next_eviction_ms(), None);
}

#[test]
fn sl3_viewing_retains_and_leaving_the_view_schedules_eviction_from_the_end_time() {
    let clock = ManualClock::new(5_000);
    let a = TaskId::generate('a');
    let d = domain(&[&a]).enter_view(&a, Some(transcript(10))).unwrap();
    let mut d = d;
    d.tasks = d.tasks.complete(&a, clock.now_ms()).unwrap();
    assert_eq!(local(&d, &a).evict_after_ms, None, "retained while viewed");

    clock.advance(10 * EVICTION_GRACE_MS);
    assert!(
        d.evict_due(clock.now_ms()).is_none(),
        "never evicted while viewed"
    );

    let d = d.exit_view().unwrap();
    let released = local(&d, &a);
    assert_eq!(released.evict_after_ms, Some(5_000 + EVICTION_GRACE_MS));
    assert!(released.messages.is_empty() && !released.disk_loaded && !released.retain);
    assert_eq!(d.viewing_agent_task_id, None);
    assert_eq!(d.view_selection_mode, ViewSelectionMode::None);
    // Its end was long ago: the next sweep removes it.
    assert!(d.evict_due(clock.now_ms()).unwrap().tasks.is_empty());
}

#[test]
fn sl3_dismissing_a_finished_task_removes_it_and_every_reference_at_once() {
    let a = TaskId::generate('a');
    let mut d = domain(&[&a]).enter_view(&a, None).unwrap();
    d.foregrounded_task_id = Some(a.clone());
    d.agent_names.insert("explorer".into(), a.clone());
    d.tasks = d.tasks.fail(&a, "crashed", 7).unwrap();
    let StopAction::Dismissed(gone) = d.stop_or_dismiss(&a) else {
        panic!("expected dismissal")
    };
    assert!(gone.tasks.is_empty());
    assert_eq!(gone.viewing_agent_task_id, None);
    assert_eq!(gone.foregrounded_task_id, None);
    assert!(gone.agent_names.is_empty());
}

#[test]
fn sl3_stopping_a_running_agent_asks_for_cancellation() {
    let a = TaskId::generate('a');
    let d = domain(&[&a]);
    assert_eq!(d.tasks.get(&a).unwrap().status, TaskStatus::Running);
    assert_eq!(d.stop_or_dismiss(&a), StopAction::Cancel(a.clone()));
}

#[test]
fn sl3_release_frees_the_messages() {
    let a = TaskId::generate('a');
    let msgs = transcript(100);
    let first = Arc::clone(&msgs[0]);
    let d = domain(&[&a]).enter_view(&a, Some(msgs)).unwrap();
    assert_eq!(Arc::strong_count(&first), 2);
    let released = d.exit_view().unwrap();
    drop(d);
    assert_eq!(Arc::strong_count(&first), 1, "only our handle is left");
    assert!(
        task_messages(released.tasks.get(&a).unwrap())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn sl3_a_viewed_agent_follows_its_growing_conversation_and_nothing_is_kept_unviewed() {
    let (a, b) = (TaskId::generate('a'), TaskId::generate('a'));
    let d = domain(&[&a, &b]);
    // Not viewed: its conversation is not held (SL-3's memory discipline).
    assert!(d.follow_view(&a, &transcript(2)).is_none());
    let d = d.enter_view(&a, Some(transcript(1))).unwrap();
    let live = transcript(3);
    let d = d.follow_view(&a, &live).unwrap();
    assert!(
        strata_state::same_conversation(&local(&d, &a).messages, &live),
        "shared with the running agent, not copied"
    );
    assert!(local(&d, &a).retain && local(&d, &a).disk_loaded);
    assert!(
        d.follow_view(&a, &live).is_none(),
        "the same messages again"
    );
    assert!(
        d.follow_view(&b, &live).is_none(),
        "another, unviewed agent"
    );
    // Leaving drops them; a later growth is not kept.
    let d = d.exit_view().unwrap();
    assert!(local(&d, &a).messages.is_empty());
    assert!(d.follow_view(&a, &transcript(4)).is_none());
}
