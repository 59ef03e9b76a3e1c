//! Tests of the cost and usage accumulators (BS-4) and cost restore (SP-4).

use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use uuid::Uuid;

use crate::{ApiDuration, Bootstrap, CostSummary, ModelUsage, RestoreError, TurnStats, Usage};

const MODELS: [&str; 3] = ["opus", "sonnet", "haiku"];

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: input * 2,
        cache_creation_input_tokens: input / 2,
        web_search_requests: output % 3,
    }
}

/// The exact nano-dollar amount of each model's cost in a summary (each per-model `f64` is
/// an exact conversion of whole nano-dollars below 2^53, so rounding recovers it).
fn model_nanos(summary: &CostSummary) -> u64 {
    summary
        .model_usage
        .iter()
        .map(|(_, m)| (m.cost_usd * 1e9).round() as u64)
        .sum()
}

#[test]
fn bs4_add_cost_updates_total_durations_and_model_usage_in_one_call() {
    let state = Bootstrap::new(Path::new("/"));
    state.add_cost(
        0.5,
        "opus",
        usage(100, 10),
        ApiDuration {
            total: Duration::from_secs(3),
            without_retries: Duration::from_secs(1),
        },
    );
    state.add_cost(
        0.25,
        "haiku",
        usage(40, 4),
        ApiDuration::single(Duration::from_millis(500)),
    );
    state.add_cost(
        0.125,
        "opus",
        usage(1, 1),
        ApiDuration::single(Duration::from_millis(250)),
    );

    assert_eq!(state.total_cost_usd(), 0.875);
    assert_eq!(state.total_cost_nano_usd(), 875_000_000);
    assert_eq!(state.api_duration(), Duration::from_millis(3750));
    assert_eq!(
        state.api_duration_without_retries(),
        Duration::from_millis(1750)
    );
    let mut opus = usage(100, 10);
    opus.accumulate(&usage(1, 1));
    assert_eq!(
        state.model_usage("opus"),
        Some(ModelUsage {
            usage: opus,
            cost_usd: 0.625
        })
    );
    assert_eq!(state.model_usage("sonnet"), None);
    let summary = state.cost_summary();
    let order: Vec<&str> = summary
        .model_usage
        .iter()
        .map(|(m, _)| m.as_str())
        .collect();
    assert_eq!(
        order,
        ["opus", "haiku"],
        "models listed in order of first use"
    );
    assert_eq!(summary.total_usage().input_tokens, 141);
    assert_eq!(summary.session_id, state.session_id());
}

#[test]
fn bs4_invalid_cost_counts_tokens_but_not_money_and_is_logged() {
    let state = Bootstrap::new(Path::new("/"));
    state.add_cost(0.1, "opus", Usage::default(), ApiDuration::default());
    for bad in [f64::NAN, f64::INFINITY, -0.5] {
        state.add_cost(bad, "opus", usage(10, 1), ApiDuration::default());
    }
    assert_eq!(state.total_cost_nano_usd(), 100_000_000);
    assert_eq!(state.model_usage("opus").unwrap().usage.input_tokens, 30);
    let errors = state.errors();
    assert_eq!(errors.len(), 3);
    assert!(
        errors[0]
            .message
            .contains("invalid API cost NaN USD for model opus")
    );
}

#[test]
fn bs4_cost_is_rounded_to_whole_nano_dollars() {
    let state = Bootstrap::new(Path::new("/"));
    // 0.8 micro-dollars: one input token of a cheap model.
    for _ in 0..1_000 {
        state.add_cost(0.000_000_8, "haiku", usage(1, 0), ApiDuration::default());
    }
    assert_eq!(state.total_cost_nano_usd(), 800_000);
    assert_eq!(state.total_cost_usd(), 0.0008);
}

#[test]
fn bs4_add_tool_duration_updates_total_turn_duration_and_turn_count() {
    let state = Bootstrap::new(Path::new("/"));
    state.add_tool_duration(Duration::from_millis(30));
    state.add_tool_duration(Duration::from_micros(1500));
    assert_eq!(state.tool_duration(), Duration::from_micros(31_500));
    let turn = state.turn_stats();
    assert_eq!(turn.tool_duration, Duration::from_micros(31_500));
    assert_eq!(turn.tool_count, 2);
}

#[test]
fn bs2_reset_turn_returns_the_turn_and_zeroes_only_turn_counters() {
    let state = Bootstrap::new(Path::new("/"));
    state.add_tool_duration(Duration::from_millis(5));
    state.add_hook_duration(Duration::from_millis(7));
    state.add_hook_duration(Duration::from_millis(1));
    state.add_classifier_duration(Duration::from_millis(2));
    let turn = state.reset_turn();
    assert_eq!(
        turn,
        TurnStats {
            tool_duration: Duration::from_millis(5),
            tool_count: 1,
            hook_duration: Duration::from_millis(8),
            hook_count: 2,
            classifier_duration: Duration::from_millis(2),
            classifier_count: 1,
        }
    );
    assert_eq!(state.turn_stats(), TurnStats::default());
    assert_eq!(state.tool_duration(), Duration::from_millis(5));
}

#[test]
fn bs2_lines_changed_accumulate() {
    let state = Bootstrap::new(Path::new("/"));
    state.add_lines_changed(10, 3);
    state.add_lines_changed(5, 0);
    assert_eq!((state.lines_added(), state.lines_removed()), (15, 3));
}

#[test]
fn sp4_restore_cost_replaces_totals_of_the_same_session() {
    let original = Bootstrap::new(Path::new("/"));
    original.add_cost(
        1.234_567_891,
        "opus",
        usage(500, 50),
        ApiDuration::single(Duration::from_secs(4)),
    );
    original.add_cost(
        0.01,
        "haiku",
        usage(5, 5),
        ApiDuration::single(Duration::from_secs(1)),
    );
    original.add_tool_duration(Duration::from_secs(2));
    original.add_lines_changed(40, 12);
    let mut saved = original.cost_summary();
    saved.wall_duration = Duration::from_secs(600);

    let resumed = Bootstrap::new(Path::new("/"));
    resumed.add_cost(9.0, "other", usage(1, 1), ApiDuration::default());
    resumed.add_tool_duration(Duration::from_millis(3));
    resumed.switch_session(saved.session_id, None);
    resumed.restore_cost(&saved).unwrap();

    let restored = resumed.cost_summary();
    assert_eq!(restored.total_cost_usd, saved.total_cost_usd);
    assert_eq!(resumed.total_cost_nano_usd(), 1_244_567_891);
    assert_eq!(restored.model_usage, saved.model_usage);
    assert_eq!(restored.api_duration, Duration::from_secs(5));
    assert_eq!(restored.tool_duration, Duration::from_secs(2));
    assert_eq!((restored.lines_added, restored.lines_removed), (40, 12));
    assert!(restored.wall_duration >= Duration::from_secs(600));
    assert!(restored.wall_duration < Duration::from_secs(660));
    // Per-turn counters belong to the live turn, not to the saved session.
    assert_eq!(resumed.turn_stats().tool_count, 1);
    // Accumulation continues from the restored totals.
    resumed.add_cost(0.5, "opus", usage(0, 0), ApiDuration::default());
    assert_eq!(resumed.total_cost_nano_usd(), 1_744_567_891);
}

#[test]
fn sp4_restore_refuses_another_sessions_totals() {
    let state = Bootstrap::new(Path::new("/"));
    state.add_cost(2.0, "opus", Usage::default(), ApiDuration::default());
    let foreign = CostSummary {
        session_id: Uuid::new_v4(),
        total_cost_usd: 99.0,
        api_duration: Duration::ZERO,
        api_duration_without_retries: Duration::ZERO,
        tool_duration: Duration::ZERO,
        wall_duration: Duration::ZERO,
        lines_added: 0,
        lines_removed: 0,
        model_usage: Vec::new(),
    };
    assert_eq!(
        state.restore_cost(&foreign),
        Err(RestoreError::SessionMismatch {
            saved: foreign.session_id,
            current: state.session_id()
        })
    );
    assert_eq!(state.total_cost_usd(), 2.0, "nothing restored");
}

#[test]
fn bs2_reset_cost_zeroes_the_totals() {
    let state = Bootstrap::new(Path::new("/"));
    state.add_cost(
        2.0,
        "opus",
        usage(1, 1),
        ApiDuration::single(Duration::from_secs(1)),
    );
    state.add_tool_duration(Duration::from_secs(1));
    state.add_lines_changed(1, 1);
    state.reset_cost();
    let summary = state.cost_summary();
    assert_eq!(summary.total_cost_usd, 0.0);
    assert!(summary.model_usage.is_empty());
    assert_eq!(summary.api_duration, Duration::ZERO);
    assert_eq!(summary.tool_duration, Duration::ZERO);
    assert_eq!((summary.lines_added, summary.lines_removed), (0, 0));
}

#[test]
fn bs4_summary_taken_during_concurrent_adds_is_self_consistent() {
    let state = Bootstrap::new(Path::new("/"));
    std::thread::scope(|scope| {
        for thread in 0..2u64 {
            let state = &state;
            scope.spawn(move || {
                for n in 0..20_000u64 {
                    let model = MODELS[((n + thread) % 3) as usize];
                    state.add_cost(
                        (n % 97) as f64 / 1e9,
                        model,
                        usage(1, 0),
                        ApiDuration::default(),
                    );
                }
            });
        }
        scope.spawn(|| {
            for _ in 0..500 {
                let summary = state.cost_summary();
                let total_nanos = (summary.total_cost_usd * 1e9).round() as u64;
                assert_eq!(total_nanos, model_nanos(&summary));
                assert_eq!(summary.total_usage().input_tokens, {
                    // Every add carries one input token, so tokens count the adds seen.
                    summary
                        .model_usage
                        .iter()
                        .map(|(_, m)| m.usage.input_tokens)
                        .sum::<u64>()
                });
            }
        });
    });
    assert_eq!(state.total_cost_nano_usd(), 2 * expected_nanos_for(20_000));
}

fn expected_nanos_for(count: u64) -> u64 {
    (0..count).map(|n| n % 97).sum()
}

/// One accumulator call in a generated workload.
#[derive(Debug, Clone)]
enum Op {
    Cost {
        model: usize,
        nanos: u64,
        input: u64,
        output: u64,
        api_ms: u64,
    },
    Tool {
        micros: u64,
    },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            0..MODELS.len(),
            0..5_000_000_000u64,
            0..100_000u64,
            0..10_000u64,
            0..60_000u64
        )
            .prop_map(|(model, nanos, input, output, api_ms)| Op::Cost {
                model,
                nanos,
                input,
                output,
                api_ms,
            }),
        (0..10_000_000u64).prop_map(|micros| Op::Tool { micros }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// BS-4: accumulators called from many threads, in any interleaving of amounts and
    /// models, lose nothing: every total equals the sequential sum exactly.
    #[test]
    fn bs4_concurrent_accumulators_lose_nothing(
        ops in prop::collection::vec((0..4usize, op_strategy()), 1..400),
        threads in 2..5usize,
    ) {
        let state = Bootstrap::new(Path::new("/"));
        let mut per_thread: Vec<Vec<Op>> = vec![Vec::new(); threads];
        for (thread, op) in &ops {
            per_thread[thread % threads].push(op.clone());
        }
        std::thread::scope(|scope| {
            for ops in &per_thread {
                let state = &state;
                scope.spawn(move || {
                    for op in ops {
                        match *op {
                            Op::Cost { model, nanos, input, output, api_ms } => state.add_cost(
                                nanos as f64 / 1e9,
                                MODELS[model],
                                usage(input, output),
                                ApiDuration::single(Duration::from_millis(api_ms)),
                            ),
                            Op::Tool { micros } => {
                                state.add_tool_duration(Duration::from_micros(micros));
                                std::thread::yield_now();
                            }
                        }
                    }
                });
            }
        });

        let mut total_nanos = 0u64;
        let mut api = Duration::ZERO;
        let mut tool = Duration::ZERO;
        let mut tool_count = 0u64;
        let mut per_model = [(0u64, Usage::default()); 3];
        for (_, op) in &ops {
            match *op {
                Op::Cost { model, nanos, input, output, api_ms } => {
                    total_nanos += nanos;
                    api += Duration::from_millis(api_ms);
                    per_model[model].0 += nanos;
                    per_model[model].1.accumulate(&usage(input, output));
                }
                Op::Tool { micros } => {
                    tool += Duration::from_micros(micros);
                    tool_count += 1;
                }
            }
        }
        prop_assert_eq!(state.total_cost_nano_usd(), total_nanos);
        prop_assert_eq!(state.api_duration(), api);
        prop_assert_eq!(state.api_duration_without_retries(), api);
        prop_assert_eq!(state.tool_duration(), tool);
        let turn = state.turn_stats();
        prop_assert_eq!(turn.tool_duration, tool);
        prop_assert_eq!(turn.tool_count, tool_count);
        for (index, model) in MODELS.iter().enumerate() {
            let (nanos, expected_usage) = per_model[index];
            match state.model_usage(model) {
                Some(got) => {
                    prop_assert_eq!(got.usage, expected_usage);
                    prop_assert_eq!((got.cost_usd * 1e9).round() as u64, nanos);
                }
                None => prop_assert!(
                    ops.iter().all(|(_, op)| !matches!(op, Op::Cost { model: m, .. } if *m == index)),
                    "model {} missing", model
                ),
            }
        }
        let summary = state.cost_summary();
        prop_assert_eq!(model_nanos(&summary), total_nanos);
    }
}
