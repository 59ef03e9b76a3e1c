//! Issue 16: [`procs::shutdown_all`] — what the binary calls on every exit path — stops
//! every tracked command's processes, background `nohup`/`setsid` ones included, and no
//! command starts afterwards. One test in its own process: shutting down is final.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use std::time::Duration;

use serde_json::json;
use strata_agent::procs;
use strata_agent::tools::Bash;
use tools_support::Project;

fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

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

#[tokio::test]
async fn shutdown_stops_background_nohup_and_setsid_processes_and_refuses_new_commands() {
    let p = Project::new();
    let out = p
        .call(
            &Bash,
            json!({"command": "nohup sh -c 'echo $$ > a.pid; exec sleep 30' >/dev/null 2>&1 & \
                               setsid sh -c 'echo $$ > b.pid; exec sleep 30' >/dev/null 2>&1 & \
                               echo started"}),
        )
        .await;
    assert!(out.content.starts_with("started"), "{}", out.content);
    let (a, b) = (pid_file(&p, "a.pid").await, pid_file(&p, "b.pid").await);
    assert!(!is_dead(a) && !is_dead(b), "both run on after the call");
    assert_eq!(procs::tracked(), 1, "the finished command is still tracked");

    let left = tokio::task::spawn_blocking(|| procs::shutdown_all(procs::STOP_WAIT))
        .await
        .unwrap();
    assert_eq!(left, 0, "every supervisor confirmed");
    assert!(is_dead(a), "nohup process {a} outlived the shutdown");
    assert!(is_dead(b), "setsid process {b} outlived the shutdown");

    let out = p.call(&Bash, json!({"command": "echo late"})).await;
    assert!(out.is_error);
    assert!(out.content.contains("strata is exiting"), "{}", out.content);
}
