//! Issue 11 through the real binary and the scripted mock model (items 2, 4, 5): a
//! background agent in `-p` (its `task_started`, `task_progress` and `task_notification`
//! lines, the result held back until it ended, its transcript listed and shown by
//! `strata sessions show`), agent types sent at `initialize`, and `stop_task` on a
//! background shell in a stream-json session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::json;
use strata_testkit::{MockServer, Reply};

use headless_support::{Driver, Env, kind};

#[tokio::test]
async fn a_background_agent_in_print_mode_reports_its_task_and_holds_the_result() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_bg",
        "Agent",
        json!({"description": "Look around", "prompt": "TASK-LOOK: list the files", "subagent_type": "Explore", "run_in_background": true}),
    ));
    server.push(Reply::new().text("It is looking."));
    server.push_for_task(
        "TASK-LOOK",
        Reply::new().tool_use("toolu_glob", "Glob", json!({"pattern": "*"})),
    );
    server.push_for_task("TASK-LOOK", Reply::new().text("Nothing but .git here."));
    server.push_when(
        |r| r.body_text().contains("task-notification"),
        Reply::new().text("The explorer found nothing but .git."),
    );
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "Look around",
                "--output-format",
                "stream-json",
                "--verbose",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines = run.lines();
    let kinds: Vec<String> = lines.iter().map(kind).collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    assert!(at("system/task_started") < at("system/task_progress"));
    assert!(at("system/task_progress") < at("system/task_notification"));
    assert!(at("system/task_notification") < at("result"));
    assert_eq!(
        kinds.iter().filter(|k| *k == "result").count(),
        1,
        "{kinds:?}"
    );
    let started = &lines[at("system/task_started")];
    assert_eq!(started["task_type"], "local_agent");
    assert_eq!(started["subagent_type"], "Explore");
    assert_eq!(started["tool_use_id"], "toolu_bg");
    let task_id = started["task_id"].as_str().unwrap().to_owned();
    let progress = &lines[at("system/task_progress")];
    assert_eq!(progress["last_tool_name"], "Glob");
    assert_eq!(progress["usage"]["tool_uses"], 1);
    let done = &lines[at("system/task_notification")];
    assert_eq!(done["task_id"], task_id.as_str());
    assert_eq!(done["status"], "completed");
    assert!(
        done["output_file"]
            .as_str()
            .unwrap()
            .ends_with(&format!("tasks/{task_id}.output"))
    );
    let result = run.result();
    assert_eq!(result["result"], "The explorer found nothing but .git.");
    assert!(result.get("background_tasks").is_none(), "{result}");
    let init = lines.iter().find(|l| kind(l) == "system/init").unwrap();
    assert!(
        init["agents"]
            .as_array()
            .unwrap()
            .contains(&json!("Explore"))
    );

    // Item 5: the agent's transcript is listed with the session and shown.
    let session = result["session_id"].as_str().unwrap();
    let show = env.run(None, &["sessions", "show", session]).await;
    assert_eq!(show.code, Some(0), "{}", show.stderr);
    assert!(
        show.stdout.contains(&format!("sub-agent:  {task_id}")),
        "{}",
        show.stdout
    );
    let agent = env
        .run(None, &["sessions", "show", session, "--agent", &task_id])
        .await;
    assert_eq!(agent.code, Some(0), "{}", agent.stderr);
    assert!(agent.stdout.contains("TASK-LOOK"), "{}", agent.stdout);
    assert!(
        agent.stdout.contains("Nothing but .git here."),
        "{}",
        agent.stdout
    );
}

#[tokio::test]
async fn stop_task_stops_a_background_shell_and_its_notification_follows() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_sleep",
        "Bash",
        json!({"command": "sleep 300", "run_in_background": true, "description": "Long sleep"}),
    ));
    server.push(Reply::new().text("Sleeping in the background."));
    // The stopped task's notification is a turn of its own once the session is idle.
    server.push_when(
        |r| r.body_text().contains("task-notification"),
        Reply::new().text("The sleep was stopped."),
    );
    let mut driver = Driver::start(&env, &server, &["--allowedTools", "Bash(sleep:*)"]);
    driver
        .control(
            "init",
            json!({"subtype": "initialize", "agents": {
                "checker": {"description": "Checks things", "prompt": "You check."}
            }}),
        )
        .await;
    let init = driver.response("init").await;
    let agents = init["response"]["response"]["agents"]
        .as_array()
        .unwrap()
        .clone();
    assert!(agents.iter().any(|a| a["name"] == "checker"), "{agents:?}");
    driver.prompt("Sleep in the background").await;
    let started = driver.until(|l| kind(l) == "system/task_started").await;
    assert_eq!(started["task_type"], "local_bash");
    let id = started["task_id"].as_str().unwrap().to_owned();
    driver.result().await;
    driver
        .control("stop", json!({"subtype": "stop_task", "task_id": id}))
        .await;
    let ack = driver.response("stop").await;
    assert_eq!(ack["response"]["subtype"], "success", "{ack}");
    let done = driver
        .until(|l| kind(l) == "system/task_notification")
        .await;
    assert_eq!(done["task_id"], id.as_str());
    assert_eq!(done["status"], "stopped");
    let follow_up = driver.result().await;
    assert_eq!(follow_up["result"], "The sleep was stopped.");
    // An id that names no running task is an error answer.
    driver
        .control("again", json!({"subtype": "stop_task", "task_id": id}))
        .await;
    let again = driver.response("again").await;
    assert_eq!(again["response"]["subtype"], "error", "{again}");
    let finished = driver.finish().await;
    assert_eq!(finished.code, Some(0), "{}", finished.stderr);
}
