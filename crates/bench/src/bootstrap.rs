//! The `bootstrap` workload: cost of the bootstrap accumulators (BS-4), which run on every
//! API response and tool call and must be cheap enough never to matter.
//!
//! ```text
//! cargo run --release -p strata-bench -- bootstrap [--batches N] [--calls-per-batch N]
//! ```
//!
//! Prints one JSON object per line, e.g.
//! `{"workload":"add_cost","threads":2,"ns_per_call":57.1}`. `ns_per_call` is the median
//! over batches of the time per call as seen by one caller; with two threads both callers
//! hammer the same instance at once (contending on the same counters) and the line reports
//! the mean of their two medians.

use std::hint::black_box;
use std::path::Path;
use std::sync::Barrier;
use std::time::Duration;

use anyhow::{Context, bail};
use strata_bootstrap::{ApiDuration, Bootstrap, Usage};

use crate::measure::median_ns_per_op;

/// The models a session typically alternates between (main loop plus a small fast model).
const MODELS: [&str; 2] = ["claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"];

struct Options {
    batches: usize,
    calls_per_batch: u64,
}

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options {
        batches: 15,
        calls_per_batch: 200_000,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--batches" => options.batches = value.parse().context("--batches: a count")?,
            "--calls-per-batch" => {
                options.calls_per_batch = value.parse().context("--calls-per-batch: a count")?;
            }
            other => bail!("unknown option {other}; expected --batches or --calls-per-batch"),
        }
    }
    if options.batches == 0 || options.calls_per_batch == 0 {
        bail!("--batches and --calls-per-batch must be at least 1");
    }
    Ok(options)
}

/// One accumulator workload: a call that performs `calls` accumulator calls on `state`.
type Workload = fn(&Bootstrap, u64);

fn add_cost_batch(state: &Bootstrap, calls: u64) {
    let usage = Usage {
        input_tokens: 3,
        output_tokens: 412,
        cache_read_input_tokens: 15_005,
        cache_creation_input_tokens: 1_140,
        web_search_requests: 0,
    };
    let api = ApiDuration::single(Duration::from_millis(1_830));
    for call in 0..calls {
        state.add_cost(
            black_box(0.012_345),
            black_box(MODELS[(call % 2) as usize]),
            black_box(usage),
            black_box(api),
        );
    }
}

fn add_tool_duration_batch(state: &Bootstrap, calls: u64) {
    for _ in 0..calls {
        state.add_tool_duration(black_box(Duration::from_micros(850)));
    }
}

/// Median ns per call with `threads` callers on one shared instance.
fn measure(workload: Workload, threads: usize, options: &Options) -> f64 {
    let state = Bootstrap::new(Path::new("."));
    // Warm up: the first add_cost per model allocates its entry.
    workload(&state, 1_000);
    let barrier = Barrier::new(threads);
    let medians: Vec<f64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (state, barrier) = (&state, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    median_ns_per_op(options.batches, options.calls_per_batch, || {
                        workload(state, options.calls_per_batch);
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| handle.join().ok())
            .collect()
    });
    medians.iter().sum::<f64>() / medians.len().max(1) as f64
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let options = parse(args)?;
    let workloads: [(&str, Workload); 2] = [
        ("add_cost", add_cost_batch),
        ("add_tool_duration", add_tool_duration_batch),
    ];
    for (name, workload) in workloads {
        for threads in [1usize, 2] {
            let ns_per_call = measure(workload, threads, &options);
            let line = serde_json::json!({
                "workload": name,
                "threads": threads,
                "ns_per_call": (ns_per_call * 10.0).round() / 10.0,
            });
            println!("{line}");
        }
    }
    Ok(())
}
