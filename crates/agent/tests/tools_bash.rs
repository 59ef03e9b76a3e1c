//! The Bash tool against a temp project: output, exit codes, timeouts and cancellation
//! that kill the whole process group, the shared working directory, large output
//! offloading, the environment overlay, and input errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use std::time::{Duration, Instant};

use serde_json::json;
use strata_agent::tools::{Bash, MAX_INLINE_OUTPUT_CHARS, Tool};
use tools_support::Project;

/// Whether a process is gone (or a zombie waiting for its reaper: it runs no more).
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

async fn wait_dead(pid: i32) -> bool {
    for _ in 0..200 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

fn read_pid(p: &Project, rel: &str) -> i32 {
    p.read(rel).trim().parse().unwrap()
}

#[tokio::test]
async fn bash_echo_returns_stdout() {
    let p = Project::new();
    let out = p
        .call(
            &Bash,
            json!({"command": "echo hi", "description": "Say hi"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.content, "hi");
    let d = out.detail.unwrap();
    assert_eq!(d["stdout"], "hi");
    assert_eq!(d["exitCode"], 0);
    assert_eq!(d["interrupted"], false);
}

#[tokio::test]
async fn bash_nonzero_exit_is_an_error_with_code_and_both_streams() {
    let p = Project::new();
    let out = p
        .call(&Bash, json!({"command": "echo out; echo err >&2; exit 3"}))
        .await;
    assert!(out.is_error);
    assert_eq!(out.content, "Exit code 3\nout\nerr");
    let d = out.detail.unwrap();
    assert_eq!(d["stderr"], "err");
    assert_eq!(d["exitCode"], 3);
}

#[tokio::test]
async fn bash_syntax_error_is_reported_not_raised() {
    let p = Project::new();
    let out = p.call(&Bash, json!({"command": "if then fi ((("})).await;
    assert!(out.is_error);
    assert!(out.content.starts_with("Exit code 2"), "{}", out.content);
    assert!(out.content.contains("syntax error"), "{}", out.content);
}

#[tokio::test]
async fn bash_timeout_kills_the_process_group() {
    let p = Project::new();
    let started = Instant::now();
    let out = p
        .call(
            &Bash,
            json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30", "timeout": 300}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(out.is_error);
    assert!(
        out.content.contains("timed out after 300 ms"),
        "{}",
        out.content
    );
    assert_eq!(out.detail.unwrap()["timedOut"], true);
    let bg = read_pid(&p, "bg.pid");
    assert!(
        wait_dead(bg).await,
        "background child {bg} survived the timeout"
    );
}

#[tokio::test]
async fn bash_cancellation_kills_the_process_group_and_marks_interrupted() {
    let p = Project::new();
    let cancel = p.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let out = p
        .call(
            &Bash,
            json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.is_error);
    assert!(out.content.contains("interrupted"), "{}", out.content);
    assert_eq!(out.detail.unwrap()["interrupted"], true);
    assert!(wait_dead(read_pid(&p, "bg.pid")).await);
}

#[tokio::test]
async fn bash_dropping_the_call_kills_the_process_group() {
    let p = Project::new();
    let call = p.call(&Bash, json!({"command": "echo $$ > sh.pid; sleep 30"}));
    // The turn is abandoned: the future is dropped mid-run.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    let pid = read_pid(&p, "sh.pid");
    assert!(
        wait_dead(pid).await,
        "shell {pid} survived the dropped call"
    );
}

#[tokio::test]
async fn bash_cd_persists_to_the_next_call() {
    let p = Project::new();
    let out = p
        .call(&Bash, json!({"command": "mkdir -p sub/deeper && cd sub"}))
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(p.ctx.cwd(), p.path("sub"));
    let out = p.call(&Bash, json!({"command": "pwd"})).await;
    assert_eq!(out.content, p.path("sub").display().to_string());
    // Relative cd from there, then the directory is removed under the session.
    p.call(&Bash, json!({"command": "cd deeper"})).await;
    assert_eq!(p.ctx.cwd(), p.path("sub/deeper"));
    std::fs::remove_dir_all(p.path("sub")).unwrap();
    let out = p.call(&Bash, json!({"command": "pwd"})).await;
    assert!(
        out.content.starts_with(&p.root.display().to_string()),
        "{}",
        out.content
    );
    assert!(out.content.contains("no longer exists"), "{}", out.content);
    assert_eq!(p.ctx.cwd(), p.root);
}

/// Regression: a `cd` out of the project stayed for every later command, so relative
/// paths and "inside the project" judgements were about somewhere else. It is undone,
/// and the model is told; additional working directories may be stayed in.
#[tokio::test]
async fn bash_cd_out_of_the_project_is_undone_but_working_dirs_are_kept() {
    let mut p = Project::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let elsewhere = elsewhere.path().canonicalize().unwrap();
    let out = p
        .call(
            &Bash,
            json!({"command": format!("cd {}", elsewhere.display())}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.content.contains("outside the project"),
        "{}",
        out.content
    );
    assert_eq!(p.ctx.cwd(), p.root);

    p.ctx.working_dirs = strata_agent::tools::WorkingDirs::fixed(vec![elsewhere.clone()]);
    p.call(
        &Bash,
        json!({"command": format!("cd {}", elsewhere.display())}),
    )
    .await;
    assert_eq!(
        p.ctx.cwd(),
        elsewhere,
        "an additional working directory is fine"
    );
}

#[tokio::test]
async fn bash_exit_keeps_the_previous_directory() {
    let p = Project::new();
    std::fs::create_dir(p.path("a")).unwrap();
    let out = p.call(&Bash, json!({"command": "cd a; exit 4"})).await;
    assert!(out.content.starts_with("Exit code 4"));
    assert_eq!(p.ctx.cwd(), p.root);
}

#[tokio::test]
async fn bash_large_output_is_offloaded_through_the_hook() {
    let p = Project::new();
    let out = p.call(&Bash, json!({"command": "seq 1 20000"})).await;
    assert!(!out.is_error);
    let stored = p.hooks.stored.lock().unwrap().clone();
    assert_eq!(stored.len(), 1, "stored exactly once");
    let expected: Vec<String> = (1..=20000).map(|n| n.to_string()).collect();
    assert_eq!(
        stored[0].1,
        expected.join("\n"),
        "the full output is stored"
    );
    let path = p.store.path().join(format!("{}.txt", stored[0].0));
    assert!(
        out.content.contains(&path.display().to_string()),
        "names the file"
    );
    assert!(out.content.contains("Output truncated"));
    assert!(out.content.starts_with("1\n2\n3\n"));
    assert!(out.content.chars().count() < MAX_INLINE_OUTPUT_CHARS + 400);
}

#[tokio::test]
async fn bash_small_output_is_not_offloaded() {
    let p = Project::new();
    p.call(&Bash, json!({"command": "seq 1 100"})).await;
    assert!(p.hooks.stored.lock().unwrap().is_empty());
}

#[tokio::test]
async fn bash_env_overlay_reaches_the_process() {
    let p = Project::new();
    p.ctx.set_env("STRATA_TEST_OVERLAY", "from-settings");
    p.ctx.set_env("STRATA_TEST_OVERLAY", "overwritten");
    let out = p
        .call(&Bash, json!({"command": "echo \"$STRATA_TEST_OVERLAY\""}))
        .await;
    assert_eq!(out.content, "overwritten");
}

#[tokio::test]
async fn bash_background_job_holding_output_does_not_hang_the_call() {
    let p = Project::new();
    let started = Instant::now();
    let out = p
        .call(
            &Bash,
            json!({"command": "echo started; sleep 30 & echo $! > bg.pid"}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(!out.is_error, "{out:?}");
    assert!(out.content.starts_with("started"));
    assert!(
        out.content.contains("Background processes"),
        "{}",
        out.content
    );
    assert!(wait_dead(read_pid(&p, "bg.pid")).await);
}

#[tokio::test]
async fn bash_stdin_is_empty_so_reads_do_not_block() {
    let p = Project::new();
    let out = p
        .call(&Bash, json!({"command": "cat; echo done", "timeout": 5000}))
        .await;
    assert_eq!(out.content, "done");
}

#[tokio::test]
async fn bash_invalid_input_names_the_field() {
    let p = Project::new();
    for (input, says) in [
        (json!({}), "missing field `command`"),
        (json!({"command": 5}), "`command`"),
        (json!({"command": "  "}), "`command`: must not be empty"),
        (
            json!({"command": "ls", "timeout": 600_001}),
            "`timeout`: must be between 1 and 600000",
        ),
        (json!({"command": "ls", "timeout": "10"}), "`timeout`"),
        (
            json!({"command": "ls", "run_in_background": 1}),
            "`run_in_background`",
        ),
        (json!(["ls"]), "expected a JSON object"),
    ] {
        let out = p.call(&Bash, input.clone()).await;
        assert!(out.is_error, "{input}");
        assert!(out.content.contains(says), "{input}: {}", out.content);
        assert_eq!(Bash.validate(&input).unwrap_err().content, out.content);
    }
}

#[test]
fn bash_read_only_commands_are_recognised_for_plan_mode() {
    assert!(Bash.is_read_only(&json!({"command": "git status && ls -la | wc -l"})));
    assert!(!Bash.is_read_only(&json!({"command": "ls > listing.txt"})));
    assert!(!Bash.is_read_only(&json!({"command": "npm install"})));
    assert!(Bash.is_concurrency_safe(&json!({"command": "cat a"})));
    assert!(!Bash.is_concurrency_safe(&json!({"command": "cd a"})));
}
