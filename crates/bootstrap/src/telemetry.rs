//! Telemetry counters (BS-2): process-wide counts an exporter reads and reports.
//!
//! The counters are a fixed set (an enum indexing an array of atomics) rather than a map of
//! names: incrementing is one `fetch_add` with no lookup and no lock, and a new counter is a
//! visible enum change (BS-6). Cost, tokens and lines changed are not duplicated here; the
//! exporter reads them from the cost accessors.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::Bootstrap;

/// A telemetry counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Sessions started or resumed in this process.
    Sessions,
    /// Commits created by the agent.
    Commits,
    /// Pull requests created by the agent.
    PullRequests,
    /// Edit-tool proposals the user accepted.
    CodeEditAccepted,
    /// Edit-tool proposals the user rejected.
    CodeEditRejected,
    /// Milliseconds the user was actively interacting.
    ActiveTimeMs,
}

impl Counter {
    /// Every counter, in declaration order.
    pub const ALL: [Counter; 6] = [
        Counter::Sessions,
        Counter::Commits,
        Counter::PullRequests,
        Counter::CodeEditAccepted,
        Counter::CodeEditRejected,
        Counter::ActiveTimeMs,
    ];
}

/// The counter values of one bootstrap instance.
pub(crate) struct Telemetry {
    counters: [AtomicU64; Counter::ALL.len()],
}

impl Telemetry {
    pub(crate) fn new() -> Self {
        Self {
            counters: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// Telemetry counters (BS-2).
impl Bootstrap {
    /// Adds `amount` to `counter`; returns the new value.
    pub fn add_to_counter(&self, counter: Counter, amount: u64) -> u64 {
        self.telemetry.counters[counter as usize]
            .fetch_add(amount, Ordering::Relaxed)
            .wrapping_add(amount)
    }

    /// The current value of `counter`.
    pub fn counter(&self, counter: Counter) -> u64 {
        self.telemetry.counters[counter as usize].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn bs2_telemetry_counters_count_independently_across_threads() {
        let state = Bootstrap::new(Path::new("/"));
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..1000 {
                        state.add_to_counter(Counter::Commits, 1);
                        state.add_to_counter(Counter::ActiveTimeMs, 5);
                    }
                });
            }
        });
        assert_eq!(state.counter(Counter::Commits), 4000);
        assert_eq!(state.counter(Counter::ActiveTimeMs), 20_000);
        assert_eq!(state.counter(Counter::PullRequests), 0);
        assert_eq!(state.add_to_counter(Counter::Sessions, 1), 1);
    }
}
