//! Background shell tasks after they end (issue 11, item 1 leftovers): a finished task is
//! evicted from the root store after the grace period (SL-3) and a late read says where
//! its output went; the output file has known secret values redacted before it is
//! written, even when a secret arrives split across two writes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use strata_agent::secrets::Secrets;
use strata_agent::tools::bash::background::ShellTasks;
use strata_agent::tools::{Bash, TaskOutput, TaskStop};
use strata_state::tasks::{TaskId, TaskStatus};
use strata_state::{AppState, RuntimeFacts, default_app_state};
use strata_store::Store;
use tools_support::Project;

const TOKEN: &str = "tok-7f3e9a1c5b2d";

fn setup(grace: Duration) -> (Project, Store<AppState>, Arc<ShellTasks>, tempfile::TempDir) {
    let store = Store::new(default_app_state(RuntimeFacts::default()));
    let dir = tempfile::tempdir().unwrap();
    let tasks = Arc::new(
        ShellTasks::new(Some(store.clone()), dir.path().join("tasks")).with_eviction_grace(grace),
    );
    let shared = Arc::clone(&tasks);
    let p = Project::with_hooks(|r| r.shell_tasks = Some(shared));
    (p, store, tasks, dir)
}

async fn start(p: &Project, command: &str) -> String {
    let out = p
        .call(
            &Bash,
            json!({"command": command, "run_in_background": true}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    out.detail.unwrap()["backgroundTaskId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Polls `done` every 10 ms until it holds or `limit` passes.
async fn until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

#[tokio::test]
async fn sl3_a_finished_shell_task_is_evicted_after_the_grace_period() {
    let (p, store, tasks, _dir) = setup(Duration::from_millis(300));
    let id = start(&p, "echo done").await;
    let task_id = TaskId::from_string(&id);
    let ended = until(Duration::from_secs(10), || {
        store
            .get()
            .tasks
            .tasks
            .get(&task_id)
            .is_some_and(|t| t.status == TaskStatus::Completed)
    })
    .await;
    assert!(ended, "the task never completed");
    // Still there right after it ended: the grace period lets the model read it.
    let read = p
        .call(&TaskOutput, json!({"task_id": id, "block": false}))
        .await;
    assert!(read.content.contains("done"), "{}", read.content);
    let gone = until(Duration::from_secs(10), || {
        store.get().tasks.tasks.get(&task_id).is_none()
    })
    .await;
    assert!(
        gone,
        "the finished task was never evicted from the root store"
    );
    assert_eq!(tasks.held(), 0, "the task's in-memory side was kept");
    let late = p
        .call(&TaskOutput, json!({"task_id": id, "block": false}))
        .await;
    assert!(late.is_error);
    assert!(
        late.content.contains("was removed from the task list")
            && late.content.contains(&format!("{id}.output")),
        "{}",
        late.content
    );
    let stop = p.call(&TaskStop, json!({"task_id": id})).await;
    assert!(
        stop.is_error && stop.content.contains("removed"),
        "{}",
        stop.content
    );
}

#[tokio::test]
async fn a_running_shell_task_is_never_evicted() {
    let (p, store, _tasks, _dir) = setup(Duration::from_millis(50));
    let id = start(&p, "sleep 30").await;
    let task_id = TaskId::from_string(&id);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        store.get().tasks.tasks.get(&task_id).map(|t| t.status),
        Some(TaskStatus::Running)
    );
    let stop = p.call(&TaskStop, json!({"task_id": id})).await;
    assert!(!stop.is_error, "{}", stop.content);
}

#[tokio::test]
async fn task_output_file_has_secret_values_redacted_even_when_split_across_writes() {
    let (mut p, _store, _tasks, dir) = setup(Duration::from_secs(60));
    p.ctx.set_env("MY_TOKEN", TOKEN);
    let (secrets, warnings) = Secrets::new(["MY_TOKEN"]);
    assert!(warnings.is_empty());
    p.ctx.secrets = secrets;
    p.write("creds.txt", &format!("{TOKEN}\n"));
    let (head, tail) = TOKEN.split_at(6);
    // The secret reaches the pipe in two writes a moment apart, then whole from a file.
    let id = start(
        &p,
        &format!("printf 'key={head}'; sleep 0.2; printf '{tail} end\\n'; cat creds.txt"),
    )
    .await;
    let out = p
        .call(
            &TaskOutput,
            json!({"task_id": id, "block": true, "timeout": 10000}),
        )
        .await;
    assert!(
        out.content.contains("<status>completed</status>"),
        "{}",
        out.content
    );
    assert!(!out.content.contains(TOKEN), "{}", out.content);
    let file =
        std::fs::read_to_string(dir.path().join("tasks").join(format!("{id}.output"))).unwrap();
    assert!(
        !file.contains(TOKEN),
        "the output file holds the secret: {file}"
    );
    assert!(!file.contains(head) || !file.contains(tail), "{file}");
    assert!(
        file.contains("key=[redacted MY_TOKEN] end\n") && file.contains("[redacted MY_TOKEN]\n"),
        "{file}"
    );
}
