//! The remote through the real binary when things go wrong (issue 17 items 1 and 5): the
//! connection's status in headless `system/status` lines while the server is killed and
//! restarted, a session whose lines could not be published leaving them in its spill
//! file for the resume that publishes them, and the settings' `remote` block (used
//! without `--remote`; a bad one an error naming file, line and column; a project's not
//! used; TLS required by it never falls back to plain text). Each test starts its own
//! `nats-server -js` on a loopback port and compares the stream with the local transcript.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::time::{Duration, Instant};

use serde_json::Value;
use strata_remote::{RemoteConnection, fetch_lines};
use strata_testkit::nats::NatsServer;
use strata_testkit::{MockResponse, MockServer};

use headless_support::{Driver, Env};

fn transcript(env: &Env) -> (std::path::PathBuf, Vec<String>) {
    let (path, _) = env.transcripts().into_iter().next().expect("a transcript");
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text.lines().map(str::to_owned).collect())
}

fn remote_status(line: &Value) -> Option<&str> {
    (line["type"] == "system" && line["subtype"] == "status")
        .then(|| line["remote_connection"].as_str())
        .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_headless_status_lines_follow_the_connection_through_a_server_restart() {
    let mut nats = NatsServer::start();
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    server.push(MockResponse::text("one"));
    server.push(MockResponse::text("two"));
    let url = nats.url();
    let mut s = Driver::spawn(env.command(
        Some(&server),
        &[
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--remote",
            &url,
        ],
    ));
    let init = s
        .until(|l| l["type"] == "system" && l["subtype"] == "init")
        .await;
    let id = init["session_id"].as_str().unwrap().to_owned();
    s.until(|l| remote_status(l) == Some("connected")).await;
    s.prompt("one").await;
    assert_eq!(s.result().await["subtype"], "success");

    nats.kill();
    s.until(|l| remote_status(l) == Some("reconnecting")).await;
    // A turn while the server is away is not slowed by it.
    let started = Instant::now();
    s.prompt("two").await;
    assert_eq!(s.result().await["subtype"], "success");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    nats.restart();
    s.until(|l| remote_status(l) == Some("connected")).await;
    let finished = s.finish().await;
    assert_eq!(finished.code, Some(0), "{}", finished.stderr);
    let statuses: Vec<&str> = finished.all.iter().filter_map(remote_status).collect();
    assert!(
        statuses.ends_with(&["connected", "reconnecting", "connected"]),
        "{statuses:?}"
    );
    // Every line, the ones written while the server was away included, once, in order.
    let connection = RemoteConnection::connect_url(&url).await.unwrap();
    let (_, local) = transcript(&env);
    assert_eq!(fetch_lines(&connection, &id).await.unwrap(), local);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_lines_that_could_not_be_published_reach_the_stream_when_the_session_resumes() {
    let mut nats = NatsServer::stopped();
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    let url = nats.url();
    server.push(MockResponse::text("noted"));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "remember 42",
                "--output-format",
                "json",
                "--remote",
                &url,
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("runs locally"), "{}", run.stderr);
    let id = serde_json::from_str::<Value>(run.stdout.trim()).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (path, _) = transcript(&env);
    let session_dir = path.with_extension("");
    let spill = session_dir.join(strata_remote::SPILL_FILE);
    assert!(spill.exists(), "the lines wait on disk: {}", run.stderr);
    assert!(run.stderr.contains("remote-outbox.jsonl"), "{}", run.stderr);

    nats.restart();
    server.push(MockResponse::text("it was 42"));
    let run = env
        .run(
            Some(&server),
            &["-p", "what was it?", "-r", &id, "--remote", &url],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let connection = RemoteConnection::connect_url(&url).await.unwrap();
    let (_, local) = transcript(&env);
    assert_eq!(
        fetch_lines(&connection, &id).await.unwrap(),
        local,
        "the first run's lines, then the second's, each once"
    );
    assert!(!spill.exists());
    assert!(!session_dir.join(strata_remote::REPLAY_FILE).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_the_remote_settings_block_is_used_without_the_flag() {
    let nats = NatsServer::start();
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    std::fs::create_dir_all(&env.cfg).unwrap();
    std::fs::write(
        env.cfg.join("settings.json"),
        format!(r#"{{"remote": {{"url": "{}"}}}}"#, nats.url()),
    )
    .unwrap();
    server.push(MockResponse::text("ok"));
    let run = env
        .run(Some(&server), &["-p", "hi", "--output-format", "json"])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let id = serde_json::from_str::<Value>(run.stdout.trim()).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let connection = RemoteConnection::connect_url(&nats.url()).await.unwrap();
    let (_, local) = transcript(&env);
    assert_eq!(fetch_lines(&connection, &id).await.unwrap(), local);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_a_bad_remote_block_is_an_error_naming_file_line_and_column() {
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    std::fs::create_dir_all(&env.cfg).unwrap();
    let file = env.cfg.join("settings.json");
    std::fs::write(
        &file,
        "{\n  \"remote\": {\n    \"url\": \"nats://127.0.0.1:4222\",\n    \"tls\": {\"required\": \"yes\"}\n  }\n}\n",
    )
    .unwrap();
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("{}: line 4, column ", file.display())),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("remote.tls.required"), "{}", run.stderr);
    // The file is the user's: never rewritten.
    assert!(std::fs::read_to_string(&file).unwrap().contains("\"yes\""));

    // A credentials file that is not there is named.
    std::fs::write(
        &file,
        r#"{"remote": {"url": "nats://127.0.0.1:4222", "credentialsFile": "/nonexistent/strata.creds"}}"#,
    )
    .unwrap();
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("/nonexistent/strata.creds"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_a_projects_remote_is_not_used_and_required_tls_never_falls_back() {
    let nats = NatsServer::start();
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    // A repository's settings cannot send sessions anywhere.
    std::fs::create_dir_all(env.proj.join(".strata")).unwrap();
    std::fs::write(
        env.proj.join(".strata/settings.json"),
        format!(r#"{{"remote": {{"url": "{}"}}}}"#, nats.url()),
    )
    .unwrap();
    server.push(MockResponse::text("ok"));
    let run = env
        .run(Some(&server), &["-p", "hi", "--output-format", "json"])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("is not used"), "{}", run.stderr);
    let id = serde_json::from_str::<Value>(run.stdout.trim()).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let connection = RemoteConnection::connect_url(&nats.url()).await.unwrap();
    assert!(fetch_lines(&connection, &id).await.unwrap().is_empty());

    // The user requires TLS; this server speaks plain text: nothing is sent.
    std::fs::remove_file(env.proj.join(".strata/settings.json")).unwrap();
    std::fs::create_dir_all(&env.cfg).unwrap();
    std::fs::write(
        env.cfg.join("settings.json"),
        format!(
            r#"{{"remote": {{"url": "{}", "tls": {{"required": true}}}}}}"#,
            nats.url()
        ),
    )
    .unwrap();
    server.push(MockResponse::text("ok"));
    let run = env
        .run(Some(&server), &["-p", "hi", "--output-format", "json"])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("runs locally"), "{}", run.stderr);
    let id = serde_json::from_str::<Value>(run.stdout.trim()).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(fetch_lines(&connection, &id).await.unwrap().is_empty());
}
