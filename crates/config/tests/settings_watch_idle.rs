//! Regression: the settings watcher's thread woke 40 times a second in every idle session
//! (a ticking debouncer), which is most of an idle strata's CPU time (issue 12's idle
//! target). The dispatch thread now blocks until a file event arrives. Its own test binary,
//! so no other test's watcher thread is running beside it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::time::Duration;

use strata_config::{SettingsLocations, SettingsWatcher};

/// This process's threads named like the watcher's dispatch thread (`comm` is cut to 15
/// bytes), with their voluntary context switches.
fn watcher_threads() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let dir = entry.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() != "strata-settings" {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        let switches = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        out.push((entry.file_name().to_string_lossy().into_owned(), switches));
    }
    out
}

#[test]
fn an_idle_watcher_thread_does_not_wake_up() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("proj/.strata")).unwrap();
    let before: HashSet<String> = watcher_threads().into_iter().map(|(t, _)| t).collect();
    let locations = SettingsLocations::new(&root.join("cfg"), &root.join("proj"))
        .with_managed_dir(root.join("etc"));
    let _watcher = SettingsWatcher::start(&locations, Duration::from_millis(100), |_| {}).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let start: Vec<(String, u64)> = watcher_threads()
        .into_iter()
        .filter(|(t, _)| !before.contains(t))
        .collect();
    assert_eq!(start.len(), 1, "one dispatch thread: {start:?}");
    std::thread::sleep(Duration::from_millis(1000));
    let after = watcher_threads()
        .into_iter()
        .find(|(t, _)| *t == start[0].0)
        .unwrap();
    // A ticking debouncer (every 25 ms) switched about 40 times in this second.
    assert!(
        after.1 - start[0].1 <= 2,
        "the idle watcher thread woke {} times in a second",
        after.1 - start[0].1
    );
}
