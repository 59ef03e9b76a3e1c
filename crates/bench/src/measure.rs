//! Timing and memory helpers shared by the workloads.

use std::time::Instant;

/// Runs `batch` (which performs `per_batch` operations) `batches` times and returns the
/// median nanoseconds per operation. The median of several batches resists the odd
/// scheduler hiccup on a busy 2-core machine better than one long run.
#[allow(dead_code)]
pub(crate) fn median_ns_per_op(batches: usize, per_batch: u64, mut batch: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..batches)
        .map(|_| {
            let start = Instant::now();
            batch();
            start.elapsed().as_nanos() as f64 / per_batch as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The resident set size of this process in MiB, read from `/proc/self/statm`.
#[allow(dead_code)]
pub(crate) fn rss_mb() -> Option<f64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: f64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size() as f64 / (1024.0 * 1024.0))
}

/// The peak resident set size of this process in MiB (`VmHWM` in `/proc/self/status`).
#[allow(dead_code)]
pub(crate) fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn page_size() -> u64 {
    4096
}
