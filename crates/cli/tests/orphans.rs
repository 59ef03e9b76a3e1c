//! Issue 16, "nothing outlives strata": the real binary against a scripted mock model
//! whose Bash calls escape the command's process group (`nohup … &`, `setsid … &`, a
//! foreground `setsid sleep`); after strata ends by each exit path — normal, SIGTERM,
//! SIGINT, SIGHUP, SIGKILL, a panic — no process of the session is left.
//!
//! Each process carries a marker no other process has (`sleep 41.<pid><n>`: a duration
//! nobody else uses), found by scanning `/proc/*/cmdline`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use strata_testkit::{MockServer, Reply};

use headless_support::{Env, LIMIT};

/// The markers of one test: `sleep` durations unique to this test process and `case`.
struct Markers {
    base: String,
}

impl Markers {
    fn new(case: u32) -> Self {
        Self {
            base: format!("4{case}.{:05}", std::process::id() % 100_000),
        }
    }

    /// The `n`th marker (a valid `sleep` argument).
    fn nth(&self, n: u32) -> String {
        format!("{}{n}", self.base)
    }

    /// The pids of running processes whose arguments include the `n`th marker.
    fn running(&self, n: u32) -> Vec<i32> {
        headless_support::pids_with_arg(&self.nth(n))
    }

    /// Every marked process still running, as (marker number, pid).
    fn left(&self, upto: u32) -> Vec<(u32, i32)> {
        (1..=upto)
            .flat_map(|n| self.running(n).into_iter().map(move |pid| (n, pid)))
            .collect()
    }

    /// Waits until each of markers `1..=upto` runs.
    async fn wait_running(&self, upto: u32) {
        let start = Instant::now();
        while (1..=upto).any(|n| self.running(n).is_empty()) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the session's processes did not start: {:?}",
                self.left(upto)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Kills what a failed test left behind, so it does not outlive the test either.
    fn cleanup(&self, upto: u32) {
        for (_, pid) in self.left(upto) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// The first Bash call: two background processes that escape the process group and
/// release the output (so they run on after the call).
fn background(m: &Markers) -> String {
    format!(
        "nohup sleep {} >/dev/null 2>&1 & setsid sleep {} >/dev/null 2>&1 & echo started",
        m.nth(1),
        m.nth(2)
    )
}

/// Starts `strata -p go --allowedTools Bash` with the model scripted to run
/// [`background`], then `second` (a Bash command).
fn start(env: &Env, server: &MockServer, m: &Markers, second: &str) -> tokio::process::Child {
    server.push(Reply::new().tool_use("toolu_bg", "Bash", json!({"command": background(m)})));
    server.push(Reply::new().tool_use("toolu_fg", "Bash", json!({"command": second})));
    server.push(Reply::new().text("done"));
    let mut cmd = env.command(Some(server), &["-p", "go", "--allowedTools", "Bash"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

/// Runs the session until the foreground `setsid sleep` (marker 3) runs beside the two
/// background ones, sends `signal`, and checks that strata exits with `code` leaving
/// nothing behind (`within`: how long the watchdog may take after strata is gone).
async fn signal_case(case: u32, signal: Signal, code: Option<i32>, within: Duration) {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let m = Markers::new(case);
    let child = start(&env, &server, &m, &format!("setsid sleep {}", m.nth(3)));
    m.wait_running(3).await;
    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, signal).unwrap();
    let output = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("strata exits after the signal")
        .unwrap();
    let gone_at = Instant::now();
    let mut left = m.left(3);
    while !left.is_empty() && gone_at.elapsed() < within {
        tokio::time::sleep(Duration::from_millis(10)).await;
        left = m.left(3);
    }
    m.cleanup(3);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        left.is_empty(),
        "{signal}: processes outlived strata: {left:?}\n{stderr}"
    );
    assert_eq!(output.status.code(), code, "{signal}: {stderr}");
}

#[tokio::test]
async fn sigterm_mid_turn_leaves_no_process_and_exits_143() {
    signal_case(1, Signal::SIGTERM, Some(143), Duration::ZERO).await;
}

#[tokio::test]
async fn sigint_mid_turn_leaves_no_process_and_exits_130() {
    signal_case(2, Signal::SIGINT, Some(130), Duration::ZERO).await;
}

#[tokio::test]
async fn sighup_mid_turn_leaves_no_process_and_exits_129() {
    signal_case(3, Signal::SIGHUP, Some(129), Duration::ZERO).await;
}

/// SIGKILL cannot be handled: the supervisors notice that strata is gone (their control
/// socket reaches end of file) and stop everything within the 2 s the issue allows.
#[tokio::test]
async fn sigkill_of_strata_leaves_no_process_after_2_s() {
    signal_case(4, Signal::SIGKILL, None, Duration::from_secs(2)).await;
}

/// A command that kills its own supervisor (`kill -9 $PPID`) leaves its processes
/// orphaned; strata adopted them (it is a subreaper too) and stops them on exit.
#[tokio::test]
async fn processes_of_a_killed_supervisor_are_stopped_when_strata_exits() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let m = Markers::new(8);
    let escape = format!(
        "setsid sleep {} >/dev/null 2>&1 & kill -9 $PPID; sleep {}",
        m.nth(1),
        m.nth(2)
    );
    server.push(Reply::new().tool_use("toolu_k", "Bash", json!({"command": escape})));
    server.push(Reply::new().text("done"));
    let mut cmd = env.command(Some(&server), &["-p", "go", "--allowedTools", "Bash"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    m.wait_running(2).await;
    // The call returned (its supervisor is gone) while both sleeps still run.
    let start = Instant::now();
    while server.requests().len() < 2 {
        assert!(start.elapsed() < LIMIT, "the call never returned");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let output = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let left = m.left(2);
    m.cleanup(2);
    assert!(left.is_empty(), "processes outlived strata: {left:?}");
    assert_eq!(output.status.code(), Some(0));
    let result = tool_results(&server.requests()[1].json());
    assert!(
        result[0].1.contains("supervisor process was killed")
            && result[0].1.contains("strata stops them when it exits"),
        "{result:?}"
    );
}

/// The same through a stream-json session (the turn runs as a task of its own and stdin
/// stays open): SIGTERM still leaves nothing behind.
#[tokio::test]
async fn sigterm_of_a_stream_json_session_leaves_no_process() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let m = Markers::new(7);
    server.push(Reply::new().tool_use("toolu_bg", "Bash", json!({"command": background(&m)})));
    server.push(Reply::new().tool_use(
        "toolu_fg",
        "Bash",
        json!({"command": format!("setsid sleep {}", m.nth(3))}),
    ));
    let mut driver = headless_support::Driver::start(&env, &server, &["--allowedTools", "Bash"]);
    driver.prompt("go").await;
    m.wait_running(3).await;
    let pid = Pid::from_raw(i32::try_from(driver.child.id().unwrap()).unwrap());
    kill(pid, Signal::SIGTERM).unwrap();
    let finished = driver.finish().await;
    let left = m.left(3);
    m.cleanup(3);
    assert!(left.is_empty(), "processes outlived strata: {left:?}");
    assert_eq!(finished.code, Some(143), "{}", finished.stderr);
}

/// A normal exit: the background processes of the first call were still running when
/// the session ended; the foreground `setsid sleep` timed out and was reported killed
/// only because it really was; an unredirected `nohup … &` holding the output was
/// stopped when its call ended.
#[tokio::test]
async fn normal_exit_leaves_no_nohup_or_setsid_process_and_timeouts_tell_the_truth() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let m = Markers::new(5);
    server.push(Reply::new().tool_use("toolu_bg", "Bash", json!({"command": background(&m)})));
    server.push(Reply::new().tool_use(
        "toolu_hold",
        "Bash",
        json!({"command": format!("nohup sleep {} & echo held", m.nth(4))}),
    ));
    server.push(Reply::new().tool_use(
        "toolu_fg",
        "Bash",
        json!({"command": format!("setsid sleep {}", m.nth(3)), "timeout": 300}),
    ));
    server.push(Reply::new().text("done"));
    let run = env
        .run(Some(&server), &["-p", "go", "--allowedTools", "Bash"])
        .await;
    let left = m.left(4);
    m.cleanup(4);
    assert!(left.is_empty(), "processes outlived strata: {left:?}");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "done\n");

    let results = tool_results(&server.requests().last().unwrap().json());
    let text = |id: &str| {
        results
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
    };
    assert!(
        text("toolu_bg")
            .contains("2 background processes started by the command are still running"),
        "{}",
        text("toolu_bg")
    );
    assert!(
        text("toolu_hold").contains("were stopped when it finished"),
        "{}",
        text("toolu_hold")
    );
    assert!(
        text("toolu_fg").starts_with(
            "Command timed out after 300 ms; it and every process it started were killed."
        ),
        "{}",
        text("toolu_fg")
    );
}

/// A panic mid-session (a debug-build-only trigger: `STRATA_DEBUG_PANIC_COMMAND` names a
/// command that panics in the Bash tool instead of running): the process ends with the
/// panic's exit code 101 and the background processes are gone.
#[tokio::test]
async fn a_panic_of_strata_leaves_no_process() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let m = Markers::new(6);
    server.push(Reply::new().tool_use("toolu_bg", "Bash", json!({"command": background(&m)})));
    server.push(Reply::new().tool_use("toolu_p", "Bash", json!({"command": "echo panic-now"})));
    server.push(Reply::new().text("never"));
    let mut cmd = env.command(Some(&server), &["-p", "go", "--allowedTools", "Bash"]);
    cmd.env("STRATA_DEBUG_PANIC_COMMAND", "echo panic-now");
    let run = headless_support::run_command(cmd, "").await;
    let left = m.left(2);
    m.cleanup(2);
    assert!(left.is_empty(), "processes outlived strata: {left:?}");
    assert_eq!(run.code, Some(101), "{run:?}");
    assert!(
        run.stderr.contains("STRATA_DEBUG_PANIC_COMMAND"),
        "it was the test's panic: {}",
        run.stderr
    );
}

/// `(tool_use_id, text)` of every tool result in a request body.
fn tool_results(body: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for message in body["messages"].as_array().unwrap() {
        let Some(blocks) = message["content"].as_array() else {
            continue;
        };
        for block in blocks {
            if block["type"] == "tool_result" {
                let text = match &block["content"] {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                out.push((block["tool_use_id"].as_str().unwrap().to_owned(), text));
            }
        }
    }
    out
}
