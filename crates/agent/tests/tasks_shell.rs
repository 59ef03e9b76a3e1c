//! Background shell tasks (issue 11, item 1): Bash with `run_in_background` registers a
//! local shell task in the root store, its output streams to the task's output file,
//! TaskOutput returns new output since the last read, TaskStop ends the whole process
//! group (and what left it), the exit code and end time are recorded by themselves, and
//! the number of running tasks is capped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_agent::tools::bash::background::{MAX_BACKGROUND_SHELLS, STOP_GRACE, ShellTasks};
use strata_agent::tools::{Bash, TaskOutput, TaskStop, ToolOutput};
use strata_state::tasks::{TaskId, TaskKind, TaskStatus};
use strata_state::{AppState, RuntimeFacts, default_app_state};
use strata_store::Store;
use tools_support::Project;

struct Setup {
    p: Project,
    store: Store<AppState>,
    tasks_dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let store = Store::new(default_app_state(RuntimeFacts::default()));
    let tasks_dir = tempfile::tempdir().unwrap();
    let tasks = Arc::new(ShellTasks::new(
        Some(store.clone()),
        tasks_dir.path().join("tasks"),
    ));
    let p = Project::with_hooks(|r| r.shell_tasks = Some(tasks));
    Setup {
        p,
        store,
        tasks_dir,
    }
}

async fn start(s: &Setup, command: &str) -> String {
    let out =
        s.p.call(
            &Bash,
            json!({"command": command, "run_in_background": true, "description": "bg"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.content
            .starts_with("Command running in background with ID: "),
        "{}",
        out.content
    );
    out.detail.unwrap()["backgroundTaskId"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn output(s: &Setup, id: &str, block: bool, timeout: u64) -> (ToolOutput, Value) {
    let out =
        s.p.call(
            &TaskOutput,
            json!({"task_id": id, "block": block, "timeout": timeout}),
        )
        .await;
    let detail = out.detail.clone().unwrap_or(Value::Null);
    (out, detail)
}

/// Whether a process runs no more (gone, or a zombie).
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

/// Live processes whose process group is `group`.
fn members_of_group(group: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name: state, ppid, pgrp.
        let rest: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if rest.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(group) && !is_dead(pid) {
            found.push(pid);
        }
    }
    found
}

async fn wait_for_file(s: &Setup, rel: &str) -> i32 {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(s.p.path(rel))
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{rel} was never written");
}

#[tokio::test]
async fn sa3_background_bash_registers_a_shell_task_that_records_its_exit_by_itself() {
    let s = setup();
    let id = start(&s, "echo out-line; echo err-line >&2; exit 3").await;
    let task_id = TaskId::from_string(&id);
    {
        let state = s.store.get();
        let task = state
            .tasks
            .tasks
            .get(&task_id)
            .expect("registered in the root store");
        let TaskKind::LocalShell(shell) = &task.kind else {
            panic!("not a shell task: {task:?}");
        };
        assert_eq!(&*shell.command, "echo out-line; echo err-line >&2; exit 3");
        assert_eq!(&*task.description, "bg");
    }
    // Nobody reads it: the end is recorded anyway.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = s.store.get();
        let task = state.tasks.tasks.get(&task_id).unwrap();
        if task.status.is_terminal() {
            assert_eq!(task.status, TaskStatus::Failed);
            assert!(task.end_time_ms.is_some());
            let TaskKind::LocalShell(shell) = &task.kind else {
                unreachable!()
            };
            assert_eq!(shell.exit_code, Some(3));
            let file = shell.output_file.clone().unwrap();
            assert!(file.starts_with(s.tasks_dir.path()));
            assert_eq!(file.file_name().unwrap(), format!("{id}.output").as_str());
            let on_disk = std::fs::read_to_string(&*file).unwrap();
            assert!(
                on_disk.contains("out-line") && on_disk.contains("err-line"),
                "{on_disk}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "the task never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (out, d) = output(&s, &id, true, 5000).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(d["retrieval_status"], "success");
    assert_eq!(d["task"]["status"], "failed");
    assert_eq!(d["task"]["exitCode"], 3);
    assert!(
        out.content.contains("<exit_code>3</exit_code>"),
        "{}",
        out.content
    );
    assert!(out.content.contains("out-line"), "{}", out.content);
}

#[tokio::test]
async fn task_output_returns_only_the_output_since_the_previous_read() {
    let s = setup();
    let id = start(
        &s,
        "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second",
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let first = loop {
        let (out, d) = output(&s, &id, false, 0).await;
        assert!(!out.is_error, "{out:?}");
        if d["task"]["output"].as_str().unwrap().contains("first") {
            assert_eq!(d["retrieval_status"], "not_ready");
            assert_eq!(d["task"]["status"], "running");
            break d;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!first["task"]["output"].as_str().unwrap().contains("second"));
    // A blocking read with a short timeout on a running task says so.
    let (_, d) = output(&s, &id, true, 100).await;
    assert_eq!(d["retrieval_status"], "timeout");
    s.p.write("go", "");
    let (_, d) = output(&s, &id, true, 10_000).await;
    assert_eq!(d["retrieval_status"], "success");
    assert_eq!(d["task"]["status"], "completed");
    assert_eq!(d["task"]["exitCode"], 0);
    let text = d["task"]["output"].as_str().unwrap();
    assert!(text.contains("second"), "{text}");
    assert!(!text.contains("first"), "read twice: {text}");
}

#[tokio::test]
async fn task_stop_of_a_background_sleep_leaves_no_process_of_its_group() {
    let s = setup();
    let id = start(&s, "echo $$ > shell.pid; sleep 300").await;
    let group = wait_for_file(&s, "shell.pid").await;
    assert!(!members_of_group(group).is_empty());
    let out = s.p.call(&TaskStop, json!({"task_id": id})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        members_of_group(group).is_empty(),
        "left: {:?}",
        members_of_group(group)
    );
    let state = s.store.get();
    let task = state.tasks.tasks.get(&TaskId::from_string(&id)).unwrap();
    assert_eq!(task.status, TaskStatus::Killed);
    assert!(task.end_time_ms.is_some());
    // Stopping it again is a clear error.
    let again = s.p.call(&TaskStop, json!({"task_id": id})).await;
    assert!(
        again.is_error && again.content.contains("not running"),
        "{again:?}"
    );
}

#[tokio::test]
async fn task_stop_ends_a_forking_task_its_children_and_one_that_left_the_group() {
    let s = setup();
    let id = start(
        &s,
        "echo $$ > shell.pid; \
         bash -c 'sleep 300 & sleep 300 & wait' & \
         setsid bash -c 'echo $$ > escaped.pid; exec sleep 300' & \
         wait",
    )
    .await;
    let group = wait_for_file(&s, "shell.pid").await;
    let escaped = wait_for_file(&s, "escaped.pid").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while members_of_group(group).len() < 4 {
        assert!(Instant::now() < deadline, "{:?}", members_of_group(group));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!is_dead(escaped));
    let out = s.p.call(&TaskStop, json!({"shell_id": id})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        members_of_group(group).is_empty(),
        "left: {:?}",
        members_of_group(group)
    );
    assert!(is_dead(escaped), "the setsid child survived TaskStop");
}

#[tokio::test]
async fn task_stop_kills_a_task_that_ignores_sigterm_after_the_grace_period() {
    let s = setup();
    let id = start(
        &s,
        "trap '' TERM; echo $$ > shell.pid; while true; do sleep 0.05; done",
    )
    .await;
    let group = wait_for_file(&s, "shell.pid").await;
    let began = Instant::now();
    let out = s.p.call(&TaskStop, json!({"task_id": id})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        began.elapsed() >= STOP_GRACE,
        "killed before the grace period"
    );
    assert!(members_of_group(group).is_empty());
}

#[tokio::test]
async fn background_tasks_past_the_cap_are_refused_with_a_clear_error() {
    let s = setup();
    let mut ids = Vec::new();
    for _ in 0..MAX_BACKGROUND_SHELLS {
        ids.push(start(&s, "sleep 300").await);
    }
    let out =
        s.p.call(
            &Bash,
            json!({"command": "sleep 300", "run_in_background": true}),
        )
        .await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.content.contains("Too many background tasks")
            && out.content.contains(&MAX_BACKGROUND_SHELLS.to_string()),
        "{}",
        out.content
    );
    // Stopping one makes room again.
    let stopped = s.p.call(&TaskStop, json!({"task_id": ids[0]})).await;
    assert!(!stopped.is_error, "{stopped:?}");
    start(&s, "sleep 300").await;
    // The rest are stopped when the test's runtime drops their drivers.
}

#[tokio::test]
async fn task_tools_on_an_unknown_task_name_the_known_ones() {
    let s = setup();
    let none = s.p.call(&TaskStop, json!({"task_id": "b404"})).await;
    assert!(
        none.is_error && none.content.contains("started none"),
        "{none:?}"
    );
    let id = start(&s, "true").await;
    let (out, _) = output(&s, "b404", false, 0).await;
    assert!(out.is_error && out.content.contains(&id), "{out:?}");
}

#[tokio::test]
async fn background_bash_without_a_session_is_a_clear_error() {
    let p = Project::new();
    let out = p
        .call(
            &Bash,
            json!({"command": "sleep 1", "run_in_background": true}),
        )
        .await;
    assert!(
        out.is_error && out.content.contains("foreground"),
        "{out:?}"
    );
}

/// A background command must be able to receive the gentle stop: the supervisor's own
/// blocked stop signals are not inherited.
#[tokio::test]
async fn background_commands_do_not_inherit_blocked_stop_signals() {
    let s = setup();
    let id = start(&s, "grep SigBlk /proc/self/status").await;
    let (_, d) = output(&s, &id, true, 5000).await;
    let text = d["task"]["output"].as_str().unwrap().to_owned();
    let mask = u64::from_str_radix(text.trim().trim_start_matches("SigBlk:").trim(), 16).unwrap();
    for sig in [1u32, 2, 3, 15] {
        assert_eq!(mask & (1 << (sig - 1)), 0, "signal {sig} blocked: {text}");
    }
}
