//! Timing and memory helpers shared by the workloads.

use std::path::Path;
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

/// Resets the peak resident set size to the current one (Linux: `5` written to
/// `/proc/self/clear_refs`), so a workload's peak is its own, not an earlier one's.
/// False when the kernel refused.
pub(crate) fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn page_size() -> u64 {
    4096
}

/// CPU time (user + system) of the children of this process that have been waited for,
/// in milliseconds, from `/proc/self/stat` (`cutime` + `cstime`, 10 ms resolution). The
/// difference across one child's run is that child's CPU time: on a shared machine its
/// wall time depends on what else runs, its CPU time much less.
pub(crate) fn children_cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces):
    // `state` is the first, `cutime` and `cstime` the 14th and 15th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(13)?.parse::<f64>().ok()? + fields.get(14)?.parse::<f64>().ok()?;
    Some(ticks * 10.0)
}

/// The median of `samples` (sorted here); `None` when there are none.
pub(crate) fn median(samples: &mut [f64]) -> Option<f64> {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied()
}

/// CPU time (user + system) in milliseconds of the threads of this process named `name`
/// (`/proc/self/task/*/comm`), 10 ms resolution.
pub(crate) fn threads_cpu_ms(name: &str) -> Option<f64> {
    let mut total = 0.0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            total += stat_cpu_ms(&path.join("stat")).unwrap_or(0.0);
        }
    }
    Some(total)
}

/// CPU time (user + system) in milliseconds of process `pid`, 10 ms resolution.
pub(crate) fn process_cpu_ms(pid: u32) -> Option<f64> {
    stat_cpu_ms(Path::new(&format!("/proc/{pid}/stat")))
}

/// `utime` + `stime` of a `stat` file, in milliseconds.
fn stat_cpu_ms(path: &Path) -> Option<f64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name (in parentheses, may hold spaces): `state` is the
    // first, `utime` and `stime` the 12th and 13th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks * 10.0)
}
