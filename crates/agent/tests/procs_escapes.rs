//! Issue 16, "nothing outlives strata", at the tool level: commands that leave their
//! process group (`setsid`, `nohup … &`, double forks) are still stopped on timeout and
//! cancellation, a result says "killed" only when they are gone, background processes
//! are tracked, and the supervisor cannot be started by hand. (The exit paths of the
//! binary are tested in `crates/cli/tests/orphans.rs`; the shutdown of everything tracked
//! in `procs_shutdown.rs`, its own process.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use std::time::{Duration, Instant};

use serde_json::json;
use strata_agent::tools::Bash;
use tools_support::Project;

/// Whether a process is gone (or a zombie: it runs no more).
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

fn read_pid(p: &Project, rel: &str) -> i32 {
    p.read(rel).trim().parse().unwrap()
}

/// Waits until the file `rel` holds a pid.
async fn pid_file(p: &Project, rel: &str) -> i32 {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(p.path(rel))
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{rel} was never written");
}

/// The bug: a foreground `setsid sleep` left the process group, so killing the group on
/// timeout left it running while the result said it was killed.
#[tokio::test]
async fn timed_out_setsid_sleep_is_gone_when_the_result_says_killed() {
    let p = Project::new();
    let out = p
        .call(
            &Bash,
            json!({
                "command": "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30'",
                "timeout": 500
            }),
        )
        .await;
    assert!(
        out.content.starts_with(
            "Command timed out after 500 ms; it and every process it started were killed."
        ),
        "{}",
        out.content
    );
    let pid = read_pid(&p, "escaped.pid");
    assert!(
        is_dead(pid),
        "the setsid process {pid} survived the timeout"
    );
}

#[tokio::test]
async fn cancelled_command_stops_its_nohup_and_double_fork_escapes() {
    let p = Project::new();
    let cancel = p.ctx.cancel.clone();
    let command = "nohup sh -c 'echo $$ > nohup.pid; exec sleep 30' >/dev/null 2>&1 & \
                   (setsid sh -c 'echo $$ > orphan.pid; exec sleep 30' >/dev/null 2>&1 &) ; \
                   sleep 30";
    let call = p.call(&Bash, json!({ "command": command }));
    let watcher = async {
        let a = pid_file(&p, "nohup.pid").await;
        let b = pid_file(&p, "orphan.pid").await;
        cancel.cancel();
        (a, b)
    };
    let (out, (a, b)) = tokio::join!(call, watcher);
    assert!(
        out.content
            .contains("interrupted by the user; it and every process it started were killed."),
        "{}",
        out.content
    );
    assert!(is_dead(a), "nohup process {a} survived");
    assert!(is_dead(b), "double-forked setsid process {b} survived");
}

#[tokio::test]
async fn background_processes_that_release_the_output_run_on_and_are_reported() {
    let p = Project::new();
    let started = Instant::now();
    let out = p
        .call(
            &Bash,
            json!({"command": "setsid sh -c 'echo $$ > bg.pid; exec sleep 2' >/dev/null 2>&1 & echo ok"}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the call did not wait"
    );
    assert!(
        out.content
            .starts_with("ok\n[1 background process started by the command is still running"),
        "{}",
        out.content
    );
    let pid = pid_file(&p, "bg.pid").await;
    assert!(!is_dead(pid), "it runs on after the call");
}

/// A command that kills its own supervisor is not reported as stopped or finished.
#[tokio::test]
async fn a_killed_supervisor_is_reported_as_such() {
    let p = Project::new();
    let out = p
        .call(&Bash, json!({"command": "kill -9 $PPID; sleep 0.2"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("supervisor process was killed")
            && out.content.contains("may still be running"),
        "{}",
        out.content
    );
}

#[test]
fn the_supervisor_refuses_to_run_without_strata() {
    let exe = std::env::current_exe().unwrap();
    let supervisor = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join(strata_agent::procs::SUPERVISOR_BINARY))
        .find(|p| p.is_file())
        .expect("cargo built the supervisor binary");
    let out = std::process::Command::new(&supervisor)
        .args([strata_agent::procs::SUPERVISE_ARG, "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is internal"), "{stderr}");
}
