//! Issue 11, background shell tasks through the real binary and the scripted mock model:
//! while background tasks started with Bash `run_in_background` run (each one a shell
//! that forked a child), strata ends by SIGTERM, SIGINT, SIGHUP, a panic or a normal
//! exit, and no process of any task is left.
//!
//! Each task's processes carry a marker no other process has (`sleep 5<case>.<pid><n>`),
//! found by scanning `/proc/*/cmdline` (the method of `orphans.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use strata_testkit::{MockServer, Reply};

use headless_support::{Env, LIMIT};

/// How many background tasks each case starts.
const TASKS: u32 = 50;

struct Markers {
    base: String,
}

impl Markers {
    fn new(case: u32) -> Self {
        Self {
            base: format!("5{case}.{:05}", std::process::id() % 100_000),
        }
    }

    fn nth(&self, n: u32) -> String {
        format!("{}{n:02}", self.base)
    }

    /// Pids of running processes whose arguments include marker `n`.
    fn running(&self, n: u32) -> Vec<i32> {
        headless_support::pids_with_arg(&self.nth(n))
    }

    fn left(&self, upto: u32) -> Vec<(u32, i32)> {
        (1..=upto)
            .flat_map(|n| self.running(n).into_iter().map(move |pid| (n, pid)))
            .collect()
    }

    /// Waits until marker `n` runs in at least `count` processes, for every `n` up to
    /// `upto`.
    async fn wait_running(&self, upto: u32, count: usize) {
        let start = Instant::now();
        while (1..=upto).any(|n| self.running(n).len() < count) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the tasks did not start: {:?}",
                self.left(upto)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn cleanup(&self, upto: u32) {
        for (_, pid) in self.left(upto) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Scripts [`TASKS`] background tasks (a shell that forks a `sleep` child and runs a
/// second one itself: two marked processes each), then `last` (a reply).
fn script(server: &MockServer, m: &Markers, last: Reply) {
    for n in 1..=TASKS {
        let marker = m.nth(n);
        server.push(Reply::new().tool_use(
            format!("toolu_bg{n}"),
            "Bash",
            json!({
                "command": format!("sleep {marker} & sleep {marker}; wait"),
                "run_in_background": true,
                "description": format!("task {n}"),
            }),
        ));
    }
    server.push(last);
}

fn spawn(env: &Env, server: &MockServer) -> tokio::process::Child {
    let mut cmd = env.command(Some(server), &["-p", "go", "--allowedTools", "Bash"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

/// Starts the tasks, then a foreground `sleep` (marker `TASKS + 1`) that keeps the turn
/// running; sends `signal` once everything runs and checks nothing is left.
async fn signal_case(case: u32, signal: Signal, code: i32) {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let m = Markers::new(case);
    let fg = TASKS + 1;
    script(
        &server,
        &m,
        Reply::new().tool_use(
            "toolu_fg",
            "Bash",
            json!({"command": format!("sleep {}", m.nth(fg))}),
        ),
    );
    server.push(Reply::new().text("done"));
    let child = spawn(&env, &server);
    m.wait_running(TASKS, 2).await;
    m.wait_running(fg, 1).await;
    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, signal).unwrap();
    let output = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("strata exits after the signal")
        .unwrap();
    let left = m.left(fg);
    m.cleanup(fg);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        left.is_empty(),
        "{signal}: background task processes outlived strata: {left:?}\n{stderr}"
    );
    assert_eq!(output.status.code(), Some(code), "{signal}: {stderr}");
}

#[tokio::test]
async fn sigterm_with_background_tasks_running_leaves_no_task_process() {
    signal_case(1, Signal::SIGTERM, 143).await;
}

#[tokio::test]
async fn sigint_with_background_tasks_running_leaves_no_task_process() {
    signal_case(2, Signal::SIGINT, 130).await;
}

#[tokio::test]
async fn sighup_with_background_tasks_running_leaves_no_task_process() {
    signal_case(3, Signal::SIGHUP, 129).await;
}

/// A foreground call that waits for the test to create `gate` in the project, so the
/// test can see every task running before the turn goes on.
fn gate() -> Reply {
    Reply::new().tool_use(
        "toolu_gate",
        "Bash",
        json!({"command": "while [ ! -e gate ]; do sleep 0.05; done; echo open"}),
    )
}

/// Runs the tasks, the gate and then `last`; returns strata's exit code and stderr once
/// it ended, and what was left of the tasks' processes.
async fn gated_case(
    case: u32,
    last: Reply,
    panic_on: Option<&str>,
) -> (Option<i32>, String, Vec<(u32, i32)>) {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let m = Markers::new(case);
    script(&server, &m, gate());
    server.push(last);
    server.push(Reply::new().text("done"));
    let mut cmd = env.command(Some(&server), &["-p", "go", "--allowedTools", "Bash"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(command) = panic_on {
        cmd.env("STRATA_DEBUG_PANIC_COMMAND", command);
    }
    let child = cmd.spawn().unwrap();
    m.wait_running(TASKS, 2).await;
    std::fs::write(env.proj.join("gate"), "").unwrap();
    let output = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("strata exits")
        .unwrap();
    let left = m.left(TASKS);
    m.cleanup(TASKS);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stderr, left)
}

/// A panic mid-turn (the debug-only `STRATA_DEBUG_PANIC_COMMAND` trigger) while the
/// tasks run: exit code 101, no task process left.
#[tokio::test]
async fn a_panic_with_background_tasks_running_leaves_no_task_process() {
    let (code, stderr, left) = gated_case(
        4,
        Reply::new().tool_use("toolu_p", "Bash", json!({"command": "echo panic-now"})),
        Some("echo panic-now"),
    )
    .await;
    assert!(left.is_empty(), "processes outlived strata: {left:?}");
    assert_eq!(code, Some(101), "{stderr}");
    assert!(stderr.contains("STRATA_DEBUG_PANIC_COMMAND"), "{stderr}");
}

/// The turn ends while the tasks still run; strata exits normally and they are gone.
#[tokio::test]
async fn normal_exit_with_background_tasks_running_leaves_no_task_process() {
    let (code, stderr, left) = gated_case(5, Reply::new().text("started them"), None).await;
    assert!(left.is_empty(), "processes outlived strata: {left:?}");
    assert_eq!(code, Some(0), "{stderr}");
}
