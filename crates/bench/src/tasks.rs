//! The `tasks` workload: memory held by agent tasks over their whole life (SL-3).
//!
//! ```text
//! cargo run --release -p strata-bench -- tasks [--tasks N] [--messages N] [--bytes N] [--state-only]
//! ```
//!
//! This line is the state layer alone; the second line the workload prints is the same
//! life on real sub-agents (`agents.rs`), unless `--state-only`.
//!
//! Registers 1,000 local agent tasks holding 1,000 messages of ~1 KB each (as if all were
//! being watched), finishes them, views and releases each one, advances a manual clock
//! past the eviction grace period and runs the sweep — all through the store, as the
//! agent does. Prints the resident memory before (baseline), at the peak, and after
//! eviction. The reference agent's users report background agents growing to 9–26 GB;
//! here memory must come back to within 10% of the baseline once tasks are evicted.
//!
//! After eviction the process asks the allocator to hand freed pages back to the system
//! ; otherwise glibc keeps them for reuse and the RSS
//! would not show what the process actually holds.

use std::sync::Arc;

use serde_json::json;
use strata_protocol::message::Message;
use strata_state::tasks::{
    Clock, EVICTION_GRACE_MS, LocalAgent, ManualClock, TaskId, TaskKind, TaskMessages, TaskState,
    TasksDomain,
};
use strata_store::Store;

use crate::measure::{peak_rss_mb, rss_mb};

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let tasks = crate::store::flag(args, "--tasks")?.unwrap_or(1_000);
    let messages = crate::store::flag(args, "--messages")?.unwrap_or(1_000);
    let bytes = crate::store::flag(args, "--bytes")?.unwrap_or(1_000);

    let clock = ManualClock::new(1_700_000_000_000);
    let store = Store::new(TasksDomain::default());
    // Warm up: a tenth of the workload through every phase, so the code pages and the
    // allocator's per-thread caches (glibc keeps up to 7 freed chunks per size class,
    // pinning their pages) are in their steady state before the baseline is taken. The
    // measured cycle must then come back to that level: memory does not accumulate.
    lifecycle(&store, &clock, (tasks / 10).max(1), messages, bytes)?;
    release_free_memory();
    let baseline = rss_mb().unwrap_or(0.0);

    lifecycle(&store, &clock, tasks, messages, bytes)?;
    let peak = peak_rss_mb().unwrap_or(0.0);
    release_free_memory();
    let after = rss_mb().unwrap_or(0.0);

    let round = |mb: f64| (mb * 10.0).round() / 10.0;
    println!(
        "{}",
        json!({
            "workload": "tasks",
            "tasks": tasks,
            "messages_per_task": messages,
            "baseline_rss_mb": round(baseline),
            "peak_rss_mb": round(peak),
            "after_eviction_rss_mb": round(after),
        })
    );
    // Then the same life on real agents, through a whole engine (issue 11).
    if args.iter().any(|a| a == "--state-only") {
        return Ok(());
    }
    crate::agents::run(args)
}

/// One whole life of `tasks` agents through `store`: register with their conversations
/// in memory, finish, view and release each, evict after the grace period.
fn lifecycle(
    store: &Store<TasksDomain>,
    clock: &ManualClock,
    tasks: usize,
    messages: usize,
    bytes: usize,
) -> anyhow::Result<()> {
    // Register running agents, each holding its conversation in memory.
    let mut ids = Vec::with_capacity(tasks);
    for t in 0..tasks {
        let id = TaskId::generate('a');
        let mut task = TaskState::new(
            id.clone(),
            format!("agent {t}"),
            clock.now_ms(),
            TaskKind::LocalAgent(LocalAgent {
                agent_id: id.as_str().into(),
                agent_type: Some("general-purpose".into()),
                messages: conversation(t, messages, bytes),
                retain: true,
                disk_loaded: true,
                evict_after_ms: None,
                progress: Default::default(),
            }),
        );
        task.status = strata_state::tasks::TaskStatus::Running;
        let _ = store.set(|d| match d.tasks.register(task) {
            Some(tasks) => Arc::new(TasksDomain {
                tasks,
                ..TasksDomain::clone(d)
            }),
            None => Arc::clone(d),
        });
        ids.push(id);
    }
    // Finish them all.
    for id in &ids {
        let now = clock.now_ms();
        let _ = store.set(|d| match d.tasks.complete(id, now) {
            Some(tasks) => Arc::new(TasksDomain {
                tasks,
                ..TasksDomain::clone(d)
            }),
            None => Arc::clone(d),
        });
    }
    // View each (its transcript loaded again) and leave: release drops the messages.
    for (t, id) in ids.iter().enumerate() {
        let loaded = conversation(t, messages, bytes);
        let _ = store.set(|d| {
            d.enter_view(id, Some(loaded))
                .map_or_else(|| Arc::clone(d), Arc::new)
        });
        let _ = store.set(|d| d.exit_view().map_or_else(|| Arc::clone(d), Arc::new));
    }

    // The grace period passes; the sweep evicts every task.
    clock.advance(EVICTION_GRACE_MS);
    let now = clock.now_ms();
    let _ = store.set(|d| d.evict_due(now).map_or_else(|| Arc::clone(d), Arc::new));
    anyhow::ensure!(
        store.get().tasks.is_empty(),
        "eviction left {} tasks",
        store.get().tasks.len()
    );

    Ok(())
}

/// A conversation of `n` messages of about `bytes` bytes each.
fn conversation(task: usize, n: usize, bytes: usize) -> TaskMessages {
    (0..n)
        .map(|i| {
            let mut text = format!("task {task} message {i}: ");
            while text.len() < bytes {
                text.push_str("lorem ipsum dolor sit amet ");
            }
            text.truncate(bytes);
            Arc::new(Message::user_text(text))
        })
        .collect()
}

/// Hands freed heap pages back to the operating system. glibc keeps freed small
/// allocations in its arenas for reuse; `malloc_trim(0)` releases every whole free page
/// (in the middle of the heap too), so the resident size reflects what is really held.
#[allow(unsafe_code)]
pub(crate) fn release_free_memory() {
    // SAFETY: `malloc_trim` only walks glibc's own free lists; it has no preconditions
    // and is safe to call at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}
