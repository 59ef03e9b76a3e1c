//! Micro-benchmarks of the app state and its change hook (divan):
//! `cargo bench -p strata-state`.
//!
//! What they show: cloning a large state costs the same as cloning an empty one (AS-4),
//! and a commit through the root store with the effects hub installed costs about what
//! a bare store commit costs when no watched field changed (the hook only compares).

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use strata_protocol::message::Message;
use strata_state::tasks::{LocalShell, TaskId, TaskKind, TaskState};
use strata_state::{
    AppState, EffectsHub, RecordingPorts, RuntimeFacts, SessionScope, default_app_state,
};
use strata_store::Store;

fn main() {
    divan::main();
}

/// A state with `n` messages and `n / 10` tasks.
fn state(n: usize) -> AppState {
    let mut s = default_app_state(RuntimeFacts::default());
    s.messages = (0..n)
        .map(|i| Arc::new(Message::user_text(format!("message {i}"))))
        .collect();
    for i in 0..n / 10 {
        let task = TaskState::new(
            TaskId::generate('b'),
            format!("task {i}"),
            0,
            TaskKind::LocalShell(LocalShell {
                command: "true".into(),
                pid: None,
                exit_code: None,
                output_file: None,
            }),
        );
        if let Some(tasks) = s.tasks.tasks.register(task) {
            s.tasks.tasks = tasks;
        }
    }
    s
}

#[divan::bench(args = [0, 10_000])]
fn clone_state(bencher: divan::Bencher<'_, '_>, n: usize) {
    let s = state(n);
    bencher.bench_local(|| divan::black_box(&s).clone());
}

/// A commit that touches no watched field, through the root store with the hub.
#[divan::bench(args = [0, 10_000])]
fn commit_with_hub(bencher: divan::Bencher<'_, '_>, n: usize) {
    let initial = state(n);
    let rec = RecordingPorts::default();
    let hub = EffectsHub::new(rec.ports(&initial.runtime));
    let scope = SessionScope::new();
    let root = scope.create_root(initial, hub).unwrap();
    let mut i = 0u64;
    bencher.bench_local(|| {
        i += 1;
        root.update(|s| s.speculation_time_saved_ms = i)
    });
}

/// The same commit on a bare store, for comparison.
#[divan::bench(args = [0, 10_000])]
fn commit_without_hook(bencher: divan::Bencher<'_, '_>, n: usize) {
    let store = Store::new(state(n));
    let mut i = 0u64;
    bencher.bench_local(|| {
        i += 1;
        store.update(|s| s.speculation_time_saved_ms = i)
    });
}

/// The hook alone, on two states that differ in an unwatched field.
#[divan::bench]
fn hook_unwatched_change(bencher: divan::Bencher<'_, '_>) {
    let old = state(1000);
    let mut new = old.clone();
    new.speculation_time_saved_ms = 1;
    let rec = RecordingPorts::default();
    let hub = EffectsHub::new(rec.ports(&old.runtime));
    bencher.bench_local(|| hub.on_change(divan::black_box(&new), divan::black_box(&old)));
}
