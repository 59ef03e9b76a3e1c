//! The `store` workload: the cost of one update of the app-state store, including the
//! selections a terminal UI re-evaluates after every commit.
//!
//! ```text
//! cargo run --release -p strata-bench -- store [--batches N] [--updates N] [--only 0-4]
//! ```
//!
//! Five lines, one per configuration (see the workspace issue for the targets):
//! - `field`: set one scalar field of a state with 80 scalar fields plus `verbose`, with
//!   0 or 100 live selections, and with a task map of 10,000 entries also in the state
//!   (which must cost nothing: structural sharing, AS-4);
//! - `task`: flip the status of one task, cycling through all of them, in maps of 10 and
//!   of 10,000 tasks, with 100 selections.
//!
//! Selections are what UI components hold: half select `verbose`, half one of the 80
//! fields. After every commit each one is re-evaluated against the committed state, as a
//! render loop would; `renders` counts the selections that reported a change. They are
//! typed, as a component's fields are, so re-evaluating one is a direct call; through the
//! type-erased `Selected` trait (a view keeping a heterogeneous list) each costs about
//! 1.6 ns more here.

use std::hint::black_box;
use std::sync::Arc;

use serde_json::json;
use strata_state::tasks::{LocalShell, TaskId, TaskKind, TaskMap, TaskState, TaskStatus};
use strata_store::Store;

use crate::measure::median_ns_per_op;

/// The benchmark's state: 80 scalar fields, `verbose`, and a task map.
#[derive(Clone)]
struct BenchState {
    fields: [u64; 80],
    verbose: bool,
    tasks: TaskMap,
}

struct Config {
    workload: &'static str,
    tasks: usize,
    selectors: usize,
}

const CONFIGS: [Config; 5] = [
    Config {
        workload: "field",
        tasks: 0,
        selectors: 0,
    },
    Config {
        workload: "field",
        tasks: 0,
        selectors: 100,
    },
    Config {
        workload: "field",
        tasks: 10_000,
        selectors: 100,
    },
    Config {
        workload: "task",
        tasks: 10,
        selectors: 100,
    },
    Config {
        workload: "task",
        tasks: 10_000,
        selectors: 100,
    },
];

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let batches = flag(args, "--batches")?.unwrap_or(15);
    let updates = flag(args, "--updates")?.unwrap_or(100_000);
    let only = flag(args, "--only")?;
    for (i, config) in CONFIGS.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let (ns, renders) = measure(config, batches, updates as u64);
        let line = json!({
            "workload": config.workload,
            "tasks": config.tasks,
            "selectors": config.selectors,
            "ns_per_update": (ns * 10.0).round() / 10.0,
            "renders": renders,
            "updates": batches * updates,
        });
        println!("{line}");
    }
    Ok(())
}

pub(crate) fn flag(args: &[String], name: &str) -> anyhow::Result<Option<usize>> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => {
            let value = args
                .get(i + 1)
                .ok_or_else(|| anyhow::anyhow!("{name} needs a number"))?;
            Ok(Some(value.parse().map_err(|_| {
                anyhow::anyhow!("{name}: not a number: {value}")
            })?))
        }
    }
}

fn initial_state(tasks: usize) -> (BenchState, Vec<TaskId>) {
    let mut map = TaskMap::default();
    let mut ids = Vec::with_capacity(tasks);
    for i in 0..tasks {
        let id = TaskId::generate('b');
        let shell = LocalShell {
            command: Arc::from(format!("cargo test --package p{i}")),
            pid: Some(1000 + i as u32),
            exit_code: None,
            output_file: None,
        };
        let mut task = TaskState::new(
            id.clone(),
            format!("tests of p{i}"),
            i as u64,
            TaskKind::LocalShell(shell),
        );
        task.status = TaskStatus::Running;
        if let Some(next) = map.register(task) {
            map = next;
        }
        ids.push(id);
    }
    (
        BenchState {
            fields: [0; 80],
            verbose: false,
            tasks: map,
        },
        ids,
    )
}

fn measure(config: &Config, batches: usize, updates: u64) -> (f64, u64) {
    let (state, ids) = initial_state(config.tasks);
    let store = Store::new(state);
    // Half the selections show `verbose`, half one of the 80 fields. Like a UI
    // component's fields, they are typed: re-evaluating one is a direct call.
    let mut verbose: Vec<_> = (0..config.selectors.div_ceil(2))
        .map(|_| store.select(|s: &BenchState| s.verbose))
        .collect();
    let mut fields: Vec<_> = (0..config.selectors / 2)
        .map(|i| {
            let field = i % 80;
            store.select(move |s: &BenchState| s.fields[field])
        })
        .collect();
    let mut renders = 0u64;
    let mut step = 0usize;
    let mut once = |store: &Store<BenchState>| {
        step = step.wrapping_add(1);
        if config.workload == "field" {
            let field = step % 80;
            let _ = store.update(|s| s.fields[field] += 1);
        } else {
            let id = &ids[step % ids.len()];
            let _ = store.set(|s| {
                let mut next = BenchState::clone(s);
                let flipped = next.tasks.update(id, |task| {
                    let status = match task.status {
                        TaskStatus::Running => TaskStatus::Pending,
                        _ => TaskStatus::Running,
                    };
                    Some(TaskState {
                        status,
                        ..task.clone()
                    })
                });
                match flipped {
                    Some(tasks) => next.tasks = tasks,
                    None => return Arc::clone(s),
                }
                Arc::new(next)
            });
        }
        let changed = store.with(|state| {
            let mut changed = 0u64;
            for sel in &mut verbose {
                changed += u64::from(sel.update(state));
            }
            for sel in &mut fields {
                changed += u64::from(sel.update(state));
            }
            changed
        });
        renders += changed;
    };
    // Warm up caches and the allocator before timing.
    for _ in 0..updates.min(20_000) {
        once(&store);
    }
    let ns = median_ns_per_op(batches, updates, || {
        for _ in 0..updates {
            once(&store);
        }
    });
    black_box(store.get());
    (ns, renders)
}
