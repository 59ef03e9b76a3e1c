//! The sandbox's cost per command: the median of 200 spawns of `true`, sandboxed (prepare
//! included) against not. Ignored by default (a measurement, not a check); run with
//! `cargo test -p strata-shell --release --test overhead -- --ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(target_os = "linux")]
#![allow(clippy::print_stderr)]

use std::process::Command;
use std::time::{Duration, Instant};

use strata_shell::policy::PolicyContext;
use strata_shell::{Sandbox, SandboxPolicy, SandboxSettings};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[test]
#[ignore = "a measurement: run by hand with --ignored --nocapture"]
fn i26_6_overhead_per_true_spawn() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (project, tmp) = (base.join("proj"), base.join("tmp"));
    std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let home = std::env::home_dir().unwrap_or_else(|| base.join("home"));
    let context = PolicyContext {
        project_dir: project.clone(),
        additional_dirs: vec![],
        home,
        session_tmp: tmp,
    };
    let policy = SandboxPolicy::from_settings(&SandboxSettings::default(), &context, None).unwrap();
    let plain = (0..200)
        .map(|_| {
            let start = Instant::now();
            assert!(
                Command::new("true")
                    .current_dir(&project)
                    .status()
                    .unwrap()
                    .success()
            );
            start.elapsed()
        })
        .collect();
    let sandboxed = (0..200)
        .map(|_| {
            let start = Instant::now();
            let sandbox = Sandbox::prepare(&policy).unwrap();
            let mut cmd = Command::new("true");
            cmd.current_dir(&project);
            sandbox.apply(&mut cmd);
            assert!(cmd.status().unwrap().success());
            start.elapsed()
        })
        .collect();
    let (plain, sandboxed) = (median(plain), median(sandboxed));
    eprintln!(
        "true: {plain:?} unsandboxed, {sandboxed:?} sandboxed, {:?} added (median of 200)",
        sandboxed.saturating_sub(plain)
    );
}
