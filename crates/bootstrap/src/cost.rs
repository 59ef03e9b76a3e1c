//! Cost and usage (BS-2, BS-4): total cost, API and tool durations, lines changed, usage by
//! model, per-turn durations and counts, and the cost summary that resume restores (SP-4).
//!
//! # Representation
//!
//! - **Cost is counted in whole nano-dollars** (`1e-9` USD) in an `AtomicU64`, not as `f64`.
//!   Integer addition is associative, so the total is exact and identical whatever order
//!   threads add in (an `f64` sum with a CAS loop depends on the interleaving and cannot be
//!   checked exactly). Each call's `cost_usd` is rounded to the nearest nano-dollar (error at
//!   most 5e-10 USD per call, i.e. below a millionth of a cent even after a million calls);
//!   the range is about 18 billion USD. Readers get `f64` dollars, exact while the total is
//!   below 2^53 nano-dollars (about 9 million USD).
//! - **Durations** are whole nanoseconds in `AtomicU64` counters.
//! - **Per-model usage** lives in a short `Mutex` around a small vector: a session uses a
//!   handful of models, so a linear scan by name beats hashing, and the vector keeps the
//!   order of first use, which is the order a cost summary lists models in.
//!
//! # Consistency
//!
//! [`Bootstrap::add_cost`] updates the total cost, the API durations and the model's usage
//! inside the per-model lock, so a [`CostSummary`] (taken under the same lock) always agrees
//! with itself: the total equals the sum of the per-model costs. Because every writer of the
//! total cost and API durations holds that lock, they are updated with a plain load and
//! store rather than a locked read-modify-write. Getters of single counters are lock-free
//! atomic reads. The other counters (tool duration, turn counters, lines) are independent
//! `fetch_add`s. All use `Relaxed` ordering: each counter is exact, but a reader racing an
//! accumulator may see one of its fields updated before another.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::Bootstrap;
use crate::sync::{duration_to_nanos, lock};

const NANOS_PER_USD: f64 = 1e9;

/// Converts dollars to whole nano-dollars, rounding to nearest. Returns `None` for a value
/// that is not a finite, non-negative amount (the caller logs it).
fn usd_to_nanos(cost_usd: f64) -> Option<u64> {
    if cost_usd.is_finite() && cost_usd >= 0.0 {
        // `as` saturates at u64::MAX for amounts beyond ~18e9 USD.
        Some((cost_usd * NANOS_PER_USD).round() as u64)
    } else {
        None
    }
}

fn nanos_to_usd(nanos: u64) -> f64 {
    nanos as f64 / NANOS_PER_USD
}

/// Token and request counts of one API response, or a sum of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens billed at the full rate.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Server-side web search requests.
    pub web_search_requests: u64,
}

impl Usage {
    /// Adds `other` field by field (saturating: a counter stuck at `u64::MAX` is more useful
    /// than a panic or a wrap to zero).
    pub fn accumulate(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(other.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
        self.web_search_requests = self
            .web_search_requests
            .saturating_add(other.web_search_requests);
    }
}

/// Usage and cost accumulated for one model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelUsage {
    /// The summed token and request counts.
    pub usage: Usage,
    /// The summed cost in USD.
    pub cost_usd: f64,
}

/// How long one API call took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApiDuration {
    /// Wall time of the call including retries and back-off.
    pub total: Duration,
    /// Wall time of the final, successful attempt only.
    pub without_retries: Duration,
}

impl ApiDuration {
    /// A call that needed no retry: both durations are `duration`.
    pub fn single(duration: Duration) -> Self {
        Self {
            total: duration,
            without_retries: duration,
        }
    }
}

/// The per-turn durations and counts, as returned by [`Bootstrap::turn_stats`] and
/// [`Bootstrap::reset_turn`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnStats {
    /// Time spent running tools this turn.
    pub tool_duration: Duration,
    /// Tool calls this turn.
    pub tool_count: u64,
    /// Time spent running hooks this turn.
    pub hook_duration: Duration,
    /// Hook runs this turn.
    pub hook_count: u64,
    /// Time spent in the permission classifier this turn.
    pub classifier_duration: Duration,
    /// Permission classifier calls this turn.
    pub classifier_count: u64,
}

/// The cost totals of a session: what the project's cost slot in `config.json` saves and
/// what resuming that session restores (SP-4). Plain data; the config layer owns the file
/// format.
#[derive(Debug, Clone, PartialEq)]
pub struct CostSummary {
    /// The session these totals belong to.
    pub session_id: Uuid,
    /// Total cost in USD.
    pub total_cost_usd: f64,
    /// Summed API wall time including retries.
    pub api_duration: Duration,
    /// Summed API wall time of the successful attempts.
    pub api_duration_without_retries: Duration,
    /// Summed tool run time.
    pub tool_duration: Duration,
    /// Wall time of the session so far.
    pub wall_duration: Duration,
    /// Lines added by edits.
    pub lines_added: u64,
    /// Lines removed by edits.
    pub lines_removed: u64,
    /// Usage and cost per model, in order of first use.
    pub model_usage: Vec<(String, ModelUsage)>,
}

impl CostSummary {
    /// The usage summed over all models (the slot's `lastTotal*Tokens` fields).
    pub fn total_usage(&self) -> Usage {
        let mut total = Usage::default();
        for (_, model) in &self.model_usage {
            total.accumulate(&model.usage);
        }
        total
    }
}

/// Why a saved cost summary was not restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// The summary belongs to another session; restoring it would charge this session with
    /// someone else's cost.
    #[error(
        "the saved cost totals belong to session {saved}, not the current session {current}; \
         switch to that session before restoring its cost"
    )]
    SessionMismatch {
        /// The session the summary was saved for.
        saved: Uuid,
        /// The session that is current.
        current: Uuid,
    },
}

#[derive(Default)]
struct ModelTotals {
    usage: Usage,
    cost_nanos: u64,
}

#[derive(Default)]
struct TurnCounters {
    tool_nanos: AtomicU64,
    tool_count: AtomicU64,
    hook_nanos: AtomicU64,
    hook_count: AtomicU64,
    classifier_nanos: AtomicU64,
    classifier_count: AtomicU64,
}

/// Wall clock of the session: time since `started`, plus what a restore carried over.
struct WallClock {
    started: Instant,
    carried: Duration,
}

/// The cost and usage counters of one bootstrap instance.
pub(crate) struct CostState {
    cost_nanos: AtomicU64,
    api_nanos: AtomicU64,
    api_without_retries_nanos: AtomicU64,
    tool_nanos: AtomicU64,
    lines_added: AtomicU64,
    lines_removed: AtomicU64,
    models: Mutex<Vec<(Box<str>, ModelTotals)>>,
    turn: TurnCounters,
    wall: Mutex<WallClock>,
}

impl CostState {
    pub(crate) fn new() -> Self {
        Self {
            cost_nanos: AtomicU64::new(0),
            api_nanos: AtomicU64::new(0),
            api_without_retries_nanos: AtomicU64::new(0),
            tool_nanos: AtomicU64::new(0),
            lines_added: AtomicU64::new(0),
            lines_removed: AtomicU64::new(0),
            models: Mutex::new(Vec::new()),
            turn: TurnCounters::default(),
            wall: Mutex::new(WallClock {
                started: Instant::now(),
                carried: Duration::ZERO,
            }),
        }
    }
}

/// Adds to a counter whose writers are all serialised by the same lock (see `add_cost`).
fn add_under_lock(counter: &AtomicU64, amount: u64) {
    let current = counter.load(Ordering::Relaxed);
    counter.store(current.saturating_add(amount), Ordering::Relaxed);
}

fn swap_duration(counter: &AtomicU64) -> Duration {
    Duration::from_nanos(counter.swap(0, Ordering::Relaxed))
}

fn load_duration(counter: &AtomicU64) -> Duration {
    Duration::from_nanos(counter.load(Ordering::Relaxed))
}

/// Cost and usage (BS-2, BS-4, SP-4).
impl Bootstrap {
    /// Records one API response (BS-4): adds `cost_usd` to the total and to `model`'s cost,
    /// `usage` to `model`'s usage, and `api` to the API durations, all in one critical
    /// section so a [`CostSummary`] never sees one without the other.
    ///
    /// A `cost_usd` that is negative, NaN or infinite is counted as zero (the tokens still
    /// count) and noted in the error log: a pricing bug must not corrupt the total.
    ///
    /// ```
    /// use std::path::Path;
    /// use std::time::Duration;
    /// use strata_bootstrap::{ApiDuration, Bootstrap, Usage};
    ///
    /// let state = Bootstrap::new(Path::new("/"));
    /// let usage = Usage { input_tokens: 1200, output_tokens: 300, ..Usage::default() };
    /// state.add_cost(0.0081, "sonnet", usage, ApiDuration::single(Duration::from_millis(900)));
    /// state.add_cost(0.0019, "haiku", usage, ApiDuration::single(Duration::from_millis(300)));
    ///
    /// assert!((state.total_cost_usd() - 0.01).abs() < 1e-12);
    /// assert_eq!(state.api_duration(), Duration::from_millis(1200));
    /// let summary = state.cost_summary();
    /// assert_eq!(summary.model_usage[0].0, "sonnet");
    /// assert_eq!(summary.total_usage().input_tokens, 2400);
    /// ```
    pub fn add_cost(&self, cost_usd: f64, model: &str, usage: Usage, api: ApiDuration) {
        let nanos = match usd_to_nanos(cost_usd) {
            Some(nanos) => nanos,
            None => {
                self.log_error(format!(
                    "ignored invalid API cost {cost_usd} USD for model {model}: a cost must \
                     be a finite, non-negative amount; the response's tokens were still counted"
                ));
                0
            }
        };
        let api_nanos = duration_to_nanos(api.total);
        let api_without_retries_nanos = duration_to_nanos(api.without_retries);
        let cost = &self.cost;
        let mut models = lock(&cost.models);
        let index = match models.iter().position(|(name, _)| &**name == model) {
            Some(index) => index,
            None => {
                models.push((Box::from(model), ModelTotals::default()));
                models.len() - 1
            }
        };
        let (_, totals) = &mut models[index];
        totals.usage.accumulate(&usage);
        totals.cost_nanos = totals.cost_nanos.saturating_add(nanos);
        // Every writer of these three counters holds the models lock, so a plain load and
        // store cannot lose an update; it avoids three locked read-modify-write
        // instructions on the hottest path. Lock-free readers still see whole values.
        add_under_lock(&cost.cost_nanos, nanos);
        add_under_lock(&cost.api_nanos, api_nanos);
        add_under_lock(&cost.api_without_retries_nanos, api_without_retries_nanos);
    }

    /// Total cost of the session in USD.
    pub fn total_cost_usd(&self) -> f64 {
        nanos_to_usd(self.total_cost_nano_usd())
    }

    /// Total cost in whole nano-dollars, the exact stored value (see the module docs).
    pub fn total_cost_nano_usd(&self) -> u64 {
        self.cost.cost_nanos.load(Ordering::Relaxed)
    }

    /// Summed API wall time including retries.
    pub fn api_duration(&self) -> Duration {
        load_duration(&self.cost.api_nanos)
    }

    /// Summed API wall time of the successful attempts only.
    pub fn api_duration_without_retries(&self) -> Duration {
        load_duration(&self.cost.api_without_retries_nanos)
    }

    /// The usage and cost of one model, if it was used.
    pub fn model_usage(&self, model: &str) -> Option<ModelUsage> {
        lock(&self.cost.models)
            .iter()
            .find(|(name, _)| &**name == model)
            .map(|(_, totals)| public_usage(totals))
    }

    /// Records one finished tool call (BS-4): adds `duration` to the total tool duration and
    /// to this turn's tool duration, and counts the call in this turn's tool count.
    ///
    /// ```
    /// use std::path::Path;
    /// use std::time::Duration;
    /// use strata_bootstrap::Bootstrap;
    ///
    /// let state = Bootstrap::new(Path::new("/"));
    /// state.add_tool_duration(Duration::from_millis(40));
    /// state.add_tool_duration(Duration::from_millis(60));
    /// assert_eq!(state.tool_duration(), Duration::from_millis(100));
    /// let turn = state.reset_turn();
    /// assert_eq!((turn.tool_duration, turn.tool_count), (Duration::from_millis(100), 2));
    /// assert_eq!(state.turn_stats().tool_count, 0);
    /// assert_eq!(state.tool_duration(), Duration::from_millis(100)); // totals survive the turn
    /// ```
    pub fn add_tool_duration(&self, duration: Duration) {
        let nanos = duration_to_nanos(duration);
        self.cost.tool_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.cost
            .turn
            .tool_nanos
            .fetch_add(nanos, Ordering::Relaxed);
        self.cost.turn.tool_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Summed tool run time of the session.
    pub fn tool_duration(&self) -> Duration {
        load_duration(&self.cost.tool_nanos)
    }

    /// Records one hook run: this turn's hook duration and hook count.
    pub fn add_hook_duration(&self, duration: Duration) {
        let turn = &self.cost.turn;
        turn.hook_nanos
            .fetch_add(duration_to_nanos(duration), Ordering::Relaxed);
        turn.hook_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one permission-classifier call: this turn's classifier duration and count.
    pub fn add_classifier_duration(&self, duration: Duration) {
        let turn = &self.cost.turn;
        turn.classifier_nanos
            .fetch_add(duration_to_nanos(duration), Ordering::Relaxed);
        turn.classifier_count.fetch_add(1, Ordering::Relaxed);
    }

    /// This turn's durations and counts so far.
    pub fn turn_stats(&self) -> TurnStats {
        let turn = &self.cost.turn;
        TurnStats {
            tool_duration: load_duration(&turn.tool_nanos),
            tool_count: turn.tool_count.load(Ordering::Relaxed),
            hook_duration: load_duration(&turn.hook_nanos),
            hook_count: turn.hook_count.load(Ordering::Relaxed),
            classifier_duration: load_duration(&turn.classifier_nanos),
            classifier_count: turn.classifier_count.load(Ordering::Relaxed),
        }
    }

    /// Starts a new turn: zeroes the per-turn counters and returns what they held. Each
    /// counter is swapped atomically, so an amount added concurrently lands either in the
    /// returned stats or in the new turn, never in neither.
    pub fn reset_turn(&self) -> TurnStats {
        let turn = &self.cost.turn;
        TurnStats {
            tool_duration: swap_duration(&turn.tool_nanos),
            tool_count: turn.tool_count.swap(0, Ordering::Relaxed),
            hook_duration: swap_duration(&turn.hook_nanos),
            hook_count: turn.hook_count.swap(0, Ordering::Relaxed),
            classifier_duration: swap_duration(&turn.classifier_nanos),
            classifier_count: turn.classifier_count.swap(0, Ordering::Relaxed),
        }
    }

    /// Records lines added and removed by an edit.
    pub fn add_lines_changed(&self, added: u64, removed: u64) {
        self.cost.lines_added.fetch_add(added, Ordering::Relaxed);
        self.cost
            .lines_removed
            .fetch_add(removed, Ordering::Relaxed);
    }

    /// Lines added by edits this session.
    pub fn lines_added(&self) -> u64 {
        self.cost.lines_added.load(Ordering::Relaxed)
    }

    /// Lines removed by edits this session.
    pub fn lines_removed(&self) -> u64 {
        self.cost.lines_removed.load(Ordering::Relaxed)
    }

    /// Wall time of the session: time since this state was created (or since the last
    /// restore/reset), plus the wall time a restored summary carried over.
    pub fn wall_duration(&self) -> Duration {
        let wall = lock(&self.cost.wall);
        wall.carried.saturating_add(wall.started.elapsed())
    }

    /// A consistent copy of the cost totals, for the project's cost slot (SP-4).
    pub fn cost_summary(&self) -> CostSummary {
        let session_id = self.session_id();
        let wall_duration = self.wall_duration();
        let cost = &self.cost;
        let models = lock(&cost.models);
        CostSummary {
            session_id,
            total_cost_usd: nanos_to_usd(cost.cost_nanos.load(Ordering::Relaxed)),
            api_duration: load_duration(&cost.api_nanos),
            api_duration_without_retries: load_duration(&cost.api_without_retries_nanos),
            tool_duration: load_duration(&cost.tool_nanos),
            wall_duration,
            lines_added: cost.lines_added.load(Ordering::Relaxed),
            lines_removed: cost.lines_removed.load(Ordering::Relaxed),
            model_usage: models
                .iter()
                .map(|(name, totals)| (name.to_string(), public_usage(totals)))
                .collect(),
        }
    }

    /// Restores the totals saved for the current session (resume, SP-4), replacing the
    /// current totals. The wall clock continues from the saved wall duration. Per-turn
    /// counters are untouched. Refused when the summary belongs to another session.
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_bootstrap::Bootstrap;
    ///
    /// let first = Bootstrap::new(Path::new("/"));
    /// first.add_lines_changed(10, 2);
    /// let saved = first.cost_summary();
    ///
    /// let resumed = Bootstrap::new(Path::new("/"));
    /// assert!(resumed.restore_cost(&saved).is_err()); // another session's totals
    /// resumed.switch_session(saved.session_id, None);
    /// resumed.restore_cost(&saved).unwrap();
    /// assert_eq!(resumed.lines_added(), 10);
    /// ```
    pub fn restore_cost(&self, summary: &CostSummary) -> Result<(), RestoreError> {
        let current = self.session_id();
        if summary.session_id != current {
            return Err(RestoreError::SessionMismatch {
                saved: summary.session_id,
                current,
            });
        }
        self.set_cost_totals(summary);
        Ok(())
    }

    /// Zeroes every cost total and restarts the wall clock (a new conversation in the same
    /// process). Per-turn counters are untouched; use [`Bootstrap::reset_turn`].
    pub fn reset_cost(&self) {
        self.set_cost_totals(&CostSummary {
            session_id: Uuid::nil(),
            total_cost_usd: 0.0,
            api_duration: Duration::ZERO,
            api_duration_without_retries: Duration::ZERO,
            tool_duration: Duration::ZERO,
            wall_duration: Duration::ZERO,
            lines_added: 0,
            lines_removed: 0,
            model_usage: Vec::new(),
        });
    }

    fn set_cost_totals(&self, summary: &CostSummary) {
        let restored: Vec<(Box<str>, ModelTotals)> = summary
            .model_usage
            .iter()
            .map(|(name, model)| {
                let cost_nanos = usd_to_nanos(model.cost_usd).unwrap_or(0);
                (
                    Box::from(name.as_str()),
                    ModelTotals {
                        usage: model.usage,
                        cost_nanos,
                    },
                )
            })
            .collect();
        let cost = &self.cost;
        {
            // Under the models lock, so a concurrent summary sees all old or all new totals.
            let mut models = lock(&cost.models);
            *models = restored;
            let total = usd_to_nanos(summary.total_cost_usd).unwrap_or(0);
            cost.cost_nanos.store(total, Ordering::Relaxed);
            cost.api_nanos
                .store(duration_to_nanos(summary.api_duration), Ordering::Relaxed);
            cost.api_without_retries_nanos.store(
                duration_to_nanos(summary.api_duration_without_retries),
                Ordering::Relaxed,
            );
            cost.tool_nanos
                .store(duration_to_nanos(summary.tool_duration), Ordering::Relaxed);
            cost.lines_added
                .store(summary.lines_added, Ordering::Relaxed);
            cost.lines_removed
                .store(summary.lines_removed, Ordering::Relaxed);
        }
        let mut wall = lock(&cost.wall);
        wall.started = Instant::now();
        wall.carried = summary.wall_duration;
    }
}

fn public_usage(totals: &ModelTotals) -> ModelUsage {
    ModelUsage {
        usage: totals.usage,
        cost_usd: nanos_to_usd(totals.cost_nanos),
    }
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
