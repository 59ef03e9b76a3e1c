//! Long sessions through the real binary (issue 13): `/compact` as a slash prompt in `-p`
//! and in stream-json (the `system/compact_boundary` line of the SDK stream), automatic
//! compaction at the threshold, and the `get_context_usage` and
//! `set_max_thinking_tokens` control requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::json;
use strata_testkit::{MockServer, Reply};

use headless_support::{Driver, Env, kind};

#[tokio::test]
async fn compact_slash_prompt_in_print_mode_emits_the_boundary_and_records_it() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("First answer.").usage(900, 10));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "remember the number 7",
                "--output-format",
                "stream-json",
                "--verbose",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let session = run.result()["session_id"].as_str().unwrap().to_owned();

    server.push(
        Reply::new()
            .text("The user asked to remember 7.")
            .usage(950, 20),
    );
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "/compact keep the number",
                "--resume",
                &session,
                "--output-format",
                "stream-json",
                "--verbose",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let kinds = run.kinds();
    assert!(
        kinds.contains(&"system/compact_boundary".to_owned()),
        "{kinds:?}"
    );
    let boundary = run
        .lines()
        .into_iter()
        .find(|l| kind(l) == "system/compact_boundary")
        .unwrap();
    assert_eq!(boundary["compact_metadata"]["trigger"], "manual");
    // Resumed: no response counted yet, so the context is the estimate of the
    // conversation (four characters a token).
    assert!(boundary["compact_metadata"]["pre_tokens"].as_u64().unwrap() > 0);
    assert_eq!(run.result()["subtype"], "success");
    assert!(server.requests()[1].body_text().contains("keep the number"));

    let (_, lines) = env.transcripts().into_iter().next().unwrap();
    let at = lines
        .iter()
        .position(|l| l["subtype"] == "compact_boundary")
        .unwrap();
    assert_eq!(lines[at]["uuid"], boundary["uuid"]);
    assert_eq!(lines[at + 1]["isCompactSummary"], true);
}

#[tokio::test]
async fn stream_json_compacts_automatically_past_the_threshold() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    // A 10k window compacting at 50%: the first answer reports 6k tokens.
    server.push(Reply::new().text("Big answer.").usage(5_990, 10));
    server.push(
        Reply::new()
            .text("Summary: a big answer was given.")
            .usage(6_000, 20),
    );
    server.push(Reply::new().text("Next answer.").usage(300, 5));
    let settings = json!({"contextWindow": 10_000, "autoCompactThreshold": 50}).to_string();
    let mut s = Driver::start(&env, &server, &["--settings", &settings]);
    s.next().await;
    s.prompt("first").await;
    assert_eq!(s.result().await["subtype"], "success");
    s.control("u1", json!({"subtype": "get_context_usage"}))
        .await;
    let usage = s.response("u1").await;
    let report = &usage["response"]["response"];
    assert_eq!(report["maxTokens"], 10_000, "{usage}");
    assert!(report["totalTokens"].as_u64().unwrap() >= 6_000, "{usage}");

    s.prompt("second").await;
    let boundary = s.until(|l| kind(l) == "system/compact_boundary").await;
    assert_eq!(boundary["compact_metadata"]["trigger"], "auto");
    assert_eq!(s.result().await["subtype"], "success");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The request after the compaction starts from the summary.
    assert!(
        requests[2]
            .body_text()
            .contains("Summary: a big answer was given.")
    );
    assert!(!requests[2].body_text().contains("Big answer."));
    s.finish().await;
}

#[tokio::test]
async fn set_max_thinking_tokens_changes_the_next_request() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("a"));
    let mut s = Driver::start(&env, &server, &[]);
    s.next().await;
    s.control(
        "t1",
        json!({"subtype": "set_max_thinking_tokens", "max_thinking_tokens": 2048}),
    )
    .await;
    assert_eq!(s.response("t1").await["response"]["subtype"], "success");
    s.control(
        "t2",
        json!({"subtype": "set_max_thinking_tokens", "max_thinking_tokens": "lots"}),
    )
    .await;
    let bad = s.response("t2").await;
    assert_eq!(bad["response"]["subtype"], "error");
    assert!(bad["response"]["error"].as_str().unwrap().contains("lots"));
    s.prompt("think").await;
    s.result().await;
    assert_eq!(
        server.requests()[0].json()["thinking"]["budget_tokens"],
        2048
    );
    s.finish().await;
}
