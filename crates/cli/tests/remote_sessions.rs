//! `--remote` through the real binary (issue 17 items 1–3): two strata processes with
//! their own config directories act as two hosts sharing one `nats-server -js` on a
//! loopback port. The first runs a session; its metadata and every transcript line reach
//! NATS; `sessions list --remote` lists it; the second rebuilds it from the stream,
//! byte for byte, resumes it in the permission mode the metadata holds, and a mode set
//! in the bucket while a session runs reaches it through the mode gate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;
mod tmux_support;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_remote::{RemoteConnection, fetch_lines};
use strata_testkit::nats::NatsServer;
use strata_testkit::{MockResponse, MockServer};

use headless_support::{Driver, Env};
use tmux_support::Pane;

async fn connect(url: &str) -> RemoteConnection {
    RemoteConnection::connect_url(url).await.unwrap()
}

fn transcript_lines(env: &Env) -> (std::path::PathBuf, Vec<String>) {
    let (path, _) = env.transcripts().into_iter().next().expect("a transcript");
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text.lines().map(str::to_owned).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_moves_between_two_hosts_through_nats() {
    let nats = NatsServer::start();
    let connection = connect(&nats.url()).await;
    let server = MockServer::start().await.unwrap();

    // Host A: a session with the remote on.
    let a = Env::new();
    let id = first_turn(&a, &server, &nats.url()).await;
    let (_, local) = transcript_lines(&a);
    let replicated = fetch_lines(&connection, &id).await.unwrap();
    assert_eq!(
        replicated, local,
        "every line reached the stream, in order, as written"
    );

    // Its metadata document is in the bucket and the listing shows it.
    let doc: Value =
        serde_json::from_slice(&connection.bucket().await.get(&id).await.unwrap().unwrap())
            .unwrap();
    assert_eq!(doc["permission_mode"], "default");
    assert_eq!(doc["status"], "ended");
    let listed = a
        .run(
            None,
            &["sessions", "list", "--remote", &nats.url(), "--json"],
        )
        .await;
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["sessionId"] == id),
        "{rows}"
    );

    // Elsewhere, the session is set to plan mode.
    let mut plan = doc.as_object().unwrap().clone();
    plan.insert("permission_mode".into(), json!("plan"));
    connection
        .bucket()
        .await
        .put(&id, serde_json::to_vec(&plan).unwrap().into())
        .await
        .unwrap();

    // Host B has never seen the session: it is rebuilt from the stream and resumed.
    let b = Env::new();
    server.push(MockResponse::text("it was 42"));
    let run = b
        .run(
            Some(&server),
            &[
                "-p",
                "what was it?",
                "--output-format",
                "stream-json",
                "--verbose",
                "-r",
                &id,
                "--remote",
                &nats.url(),
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let init = run
        .lines()
        .into_iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init")
        .unwrap();
    assert_eq!(init["session_id"], id.as_str());
    assert_eq!(
        init["permissionMode"], "plan",
        "the restored mode is the metadata's (FX-7)"
    );
    let (_, rebuilt) = transcript_lines(&b);
    assert_eq!(
        rebuilt[..local.len()],
        local[..],
        "the rebuilt transcript holds host A's lines byte for byte"
    );
    let asked = server.requests().last().unwrap().body_text();
    assert!(
        asked.contains("remember 42"),
        "the history reached the model"
    );
    // And host B's new lines were replicated too.
    let replicated = fetch_lines(&connection, &id).await.unwrap();
    assert_eq!(replicated, rebuilt);
}

/// The session's id from a `--output-format json` run.
fn session_of(run: &headless_support::Run) -> String {
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    serde_json::from_str::<Value>(run.stdout.trim()).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The stream's lines as a transcript file holds them (each ended by a newline).
fn as_file(lines: &[String]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| [l.as_bytes(), b"\n"].concat())
        .collect()
}

/// A new session's first turn on host `env` ("remember 42", answered "noted"), with the
/// remote at `url` on; its id.
async fn first_turn(env: &Env, server: &MockServer, url: &str) -> String {
    server.push(MockResponse::text("noted"));
    session_of(
        &env.run(
            Some(server),
            &[
                "-p",
                "remember 42",
                "--output-format",
                "json",
                "--remote",
                url,
            ],
        )
        .await,
    )
}

/// A turn of session `id` on a host, with the remote on.
async fn turn(
    env: &Env,
    server: &MockServer,
    url: &str,
    id: &str,
    prompt: &str,
) -> headless_support::Run {
    env.run(
        Some(server),
        &[
            "-p",
            prompt,
            "--output-format",
            "json",
            "-r",
            id,
            "--remote",
            url,
        ],
    )
    .await
}

/// A session begun on host `a` ("remember 42") and gone on on host B ("make it 43",
/// answered "now it is 43"), both with the remote on.
struct MovedToB {
    _nats: NatsServer,
    url: String,
    connection: RemoteConnection,
    server: MockServer,
    a: Env,
    id: String,
}

impl MovedToB {
    async fn start() -> Self {
        let nats = NatsServer::start();
        let url = nats.url();
        let connection = connect(&url).await;
        let server = MockServer::start().await.unwrap();
        let (a, b) = (Env::new(), Env::new());
        let id = first_turn(&a, &server, &url).await;
        server.push(MockResponse::text("now it is 43"));
        let run = turn(&b, &server, &url, &id, "make it 43").await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        Self {
            _nats: nats,
            url,
            connection,
            server,
            a,
            id,
        }
    }

    /// Asserts that host A's transcript is byte for byte what the stream holds, and
    /// returns the stream's lines.
    async fn assert_a_holds_the_stream(&self) -> Vec<String> {
        let (path, _) = transcript_lines(&self.a);
        let replicated = fetch_lines(&self.connection, &self.id).await.unwrap();
        assert_eq!(
            String::from_utf8(std::fs::read(&path).unwrap()).unwrap(),
            String::from_utf8(as_file(&replicated)).unwrap(),
            "A's file is byte for byte what the stream holds: one history, no fork"
        );
        replicated
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_a_session_moves_back_a_to_b_to_a_and_a_sees_b_s_turn() {
    let moved = MovedToB::start().await;
    let MovedToB {
        url, server, a, id, ..
    } = &moved;

    // Back on host A, whose copy lacks B's turn.
    server.push(MockResponse::text("43"));
    let run = turn(a, server, url, id, "what is it now?").await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("differ"), "{}", run.stderr);
    let asked = server.requests().last().unwrap().body_text();
    assert!(
        asked.contains("make it 43") && asked.contains("now it is 43"),
        "the resumed session on A sees B's turn: {asked}"
    );
    assert!(asked.contains("remember 42"), "and A's own first turn");
    let replicated = moved.assert_a_holds_the_stream().await;
    assert_eq!(
        replicated
            .iter()
            .filter(|l| l.contains("make it 43"))
            .count(),
        1,
        "B's prompt once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_a_session_picked_with_resume_in_the_ui_is_first_brought_level_with_the_remote() {
    let moved = MovedToB::start().await;
    let MovedToB { url, server, a, .. } = &moved;

    // Host A opens the UI on a new session and picks the old one with `/resume`: its copy
    // lacks B's turn until it is brought level with the stream.
    server.push(MockResponse::text("43 it is"));
    let done = tokio::task::block_in_place(|| {
        let Some(pane) = Pane::start(a, Some(server), &["--remote", url], 100, 30) else {
            return false;
        };
        pane.wait_for("remote connected");
        pane.type_text("/resume");
        pane.keys(&["Enter"]);
        pane.wait_for("Resume a session");
        pane.type_text("remember 42");
        pane.keys(&["Enter"]);
        pane.wait_for("now it is 43");
        pane.type_text("what is it now?");
        pane.keys(&["Enter"]);
        pane.wait_for("43 it is");
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
        true
    });
    if !done {
        return;
    }
    let asked = server.requests().last().unwrap().body_text();
    assert!(asked.contains("make it 43"), "A's turn sees B's: {asked}");
    moved.assert_a_holds_the_stream().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_resume_in_the_ui_while_the_remote_is_away_takes_the_local_copy_at_once() {
    let mut nats = NatsServer::start();
    let url = nats.url();
    let server = MockServer::start().await.unwrap();
    let a = Env::new();
    first_turn(&a, &server, &url).await;
    tokio::task::block_in_place(|| {
        let Some(pane) = Pane::start(&a, Some(&server), &["--remote", &url], 100, 30) else {
            return;
        };
        pane.wait_for("remote connected");
        nats.kill();
        pane.wait_for("remote reconnecting");
        pane.type_text("/resume");
        pane.keys(&["Enter"]);
        pane.wait_for("Resume a session");
        pane.type_text("remember 42");
        let picked = Instant::now();
        pane.keys(&["Enter"]);
        // The earlier answer is shown again: the UI did not wait for the server.
        pane.wait_for("noted");
        assert!(
            picked.elapsed() < Duration::from_secs(5),
            "the pick waited {:?} for a server that is away",
            picked.elapsed()
        );
        pane.wait_for("cannot be reached");
        pane.keys(&["C-d"]);
        pane.wait_for("STRATA-EXITED=0");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_forked_session_reaches_the_stream_whole_though_it_shares_its_parents_uuids() {
    let nats = NatsServer::start();
    let url = nats.url();
    let connection = connect(&url).await;
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    let parent = first_turn(&env, &server, &url).await;
    // The fork copies the parent's lines under the same uuids, at once (well inside the
    // server's de-duplication window).
    server.push(MockResponse::text("forked"));
    let fork = session_of(
        &env.run(
            Some(&server),
            &[
                "-p",
                "and in the fork?",
                "--output-format",
                "json",
                "-r",
                &parent,
                "--fork-session",
                "--remote",
                &url,
            ],
        )
        .await,
    );
    assert_ne!(fork, parent);
    let path = env
        .transcripts()
        .into_iter()
        .map(|(path, _)| path)
        .find(|path| path.to_string_lossy().contains(&fork))
        .expect("the fork's transcript");
    assert_eq!(
        String::from_utf8(as_file(&fetch_lines(&connection, &fork).await.unwrap())).unwrap(),
        std::fs::read_to_string(&path).unwrap(),
        "the fork's stream holds every line of its transcript, the copied ones too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_a_copy_that_differs_from_the_remote_is_left_untouched_and_said() {
    let nats = NatsServer::start();
    let url = nats.url();
    let server = MockServer::start().await.unwrap();
    let (a, b) = (Env::new(), Env::new());

    let id = first_turn(&a, &server, &url).await;
    // B goes on through the remote; A goes on without it: two histories.
    server.push(MockResponse::text("b-reply-7731"));
    assert_eq!(
        turn(&b, &server, &url, &id, "b-turn-7731").await.code,
        Some(0)
    );
    server.push(MockResponse::text("a-reply-5512"));
    let run = a
        .run(
            Some(&server),
            &["-p", "a-turn-5512", "--output-format", "json", "-r", &id],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let (path, _) = transcript_lines(&a);
    let before = std::fs::read(&path).unwrap();
    let connection = connect(&url).await;
    let remote = fetch_lines(&connection, &id).await.unwrap();

    // Resuming A's copy with the remote changes none of its lines, and says why.
    server.push(MockResponse::text("still A"));
    let run = turn(&a, &server, &url, &id, "and now?").await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(&id)
            && run.stderr.contains("differ")
            && run.stderr.contains("--fork-session"),
        "the user is told which session, that the copies differ and what to do: {}",
        run.stderr
    );
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        after[..before.len()],
        before[..],
        "no local line lost or rewritten"
    );
    let asked = server.requests().last().unwrap().body_text();
    assert!(
        asked.contains("a-turn-5512") && !asked.contains("b-turn-7731"),
        "{asked}"
    );
    assert_eq!(
        fetch_lines(&connection, &id).await.unwrap(),
        remote,
        "the stream keeps B's history alone: A's new lines are not mixed into it"
    );

    // The way out it names: A's copy, forked, is published as a session of its own.
    server.push(MockResponse::text("forked"));
    let run = a
        .run(
            Some(&server),
            &[
                "-p",
                "fork it",
                "--output-format",
                "json",
                "-r",
                &id,
                "--fork-session",
                "--remote",
                &url,
            ],
        )
        .await;
    let fork = session_of(&run);
    assert_ne!(fork, id);
    let published = fetch_lines(&connection, &fork).await.unwrap();
    assert!(
        published.iter().any(|l| l.contains("fork it")),
        "{published:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_1_a_local_copy_is_resumed_at_once_when_the_remote_cannot_be_reached() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again: nothing listens there
    let url = format!("nats://127.0.0.1:{port}");
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    server.push(MockResponse::text("noted"));
    let id = session_of(
        &env.run(
            Some(&server),
            &[
                "-p",
                "remember 7",
                "--output-format",
                "json",
                "--remote",
                &url,
            ],
        )
        .await,
    );
    server.push(MockResponse::text("7"));
    let started = Instant::now();
    let run = turn(&env, &server, &url, &id, "what was it?").await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot be reached") && run.stderr.contains(&id),
        "the user is told the local copy is resumed: {}",
        run.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "not the full 10 s wait for a server already known to be away: {:?}",
        started.elapsed()
    );
    let asked = server.requests().last().unwrap().body_text();
    assert!(
        asked.contains("remember 7"),
        "the local history was resumed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_change_made_in_the_bucket_reaches_a_running_session() {
    let nats = NatsServer::start();
    let connection = connect(&nats.url()).await;
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    server.push(MockResponse::text("ok"));
    let mut s = Driver::spawn(env.command(
        Some(&server),
        &[
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--remote",
            &nats.url(),
        ],
    ));
    let init = s
        .until(|l| l["type"] == "system" && l["subtype"] == "init")
        .await;
    let id = init["session_id"].as_str().unwrap().to_owned();
    // The session writes its document once connected (in the background).
    let bucket = connection.bucket().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let stored = loop {
        if let Some(bytes) = bucket.get(&id).await.unwrap() {
            break bytes;
        }
        assert!(
            Instant::now() < deadline,
            "the session's document never came"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let started = Instant::now();
    let mut doc: serde_json::Map<String, Value> = serde_json::from_slice(&stored).unwrap();
    doc.insert("permission_mode".into(), json!("acceptEdits"));
    // A client changing the document says when (latest wins).
    doc.insert("updated_at".into(), json!(chrono::Utc::now().to_rfc3339()));
    connection
        .bucket()
        .await
        .put(&id, serde_json::to_vec(&doc).unwrap().into())
        .await
        .unwrap();
    // (Lines about the connection itself carry `remote_connection`.)
    let status = s
        .until(|l| {
            l["type"] == "system"
                && l["subtype"] == "status"
                && l.get("remote_connection").is_none()
        })
        .await;
    assert_eq!(status["permissionMode"], "acceptEdits");
    eprintln!("the change reached the session in {:?}", started.elapsed());
    s.prompt("hi").await;
    assert_eq!(s.result().await["subtype"], "success");
    let finished = s.finish().await;
    assert_eq!(finished.code, Some(0), "{}", finished.stderr);
}

#[tokio::test]
async fn a_remote_that_cannot_be_reached_at_start_leaves_a_local_session_and_says_so() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again: nothing listens there
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    server.push(MockResponse::text("still here"));
    let url = format!("nats://127.0.0.1:{port}");
    let started = Instant::now();
    let run = env
        .run(Some(&server), &["-p", "hi", "--remote", &url])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "still here");
    assert!(
        run.stderr.contains("runs locally"),
        "the user is told: {}",
        run.stderr
    );
    assert_eq!(
        env.transcripts().len(),
        1,
        "the local transcript is written"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Polls the session's document in the bucket until `wanted` holds (fails after 10 s).
async fn doc_until(
    connection: &RemoteConnection,
    id: &str,
    what: &str,
    wanted: impl Fn(&Value) -> bool,
) -> Value {
    let bucket = connection.bucket().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let doc = bucket
            .get(id)
            .await
            .unwrap()
            .map(|bytes| serde_json::from_slice::<Value>(&bytes).unwrap());
        if let Some(doc) = doc.filter(|d| wanted(d)) {
            return doc;
        }
        assert!(Instant::now() < deadline, "the document never had {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fx1_the_document_carries_the_listing_title_and_follows_the_model() {
    let nats = NatsServer::start();
    let url = nats.url();
    let connection = connect(&url).await;
    let server = MockServer::start().await.unwrap();
    let a = Env::new();
    let mut s = Driver::spawn(a.command(
        Some(&server),
        &[
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--model",
            "claude-first",
            "--remote",
            &url,
        ],
    ));
    let init = s
        .until(|l| l["type"] == "system" && l["subtype"] == "init")
        .await;
    let id = init["session_id"].as_str().unwrap().to_owned();
    server.push(MockResponse::text("done"));
    s.prompt("tidy the parser please").await;
    assert_eq!(s.result().await["subtype"], "success");
    let doc = doc_until(&connection, &id, "the first prompt as title", |d| {
        d["title"] == "tidy the parser please"
    })
    .await;
    assert_eq!(doc["model"], "claude-first");

    // The model changes while the session runs.
    s.control(
        "sm",
        json!({"subtype": "set_model", "model": "claude-second"}),
    )
    .await;
    assert_eq!(s.response("sm").await["response"]["subtype"], "success");
    doc_until(&connection, &id, "the new model", |d| {
        d["model"] == "claude-second"
    })
    .await;
    let finished = s.finish().await;
    assert_eq!(finished.code, Some(0), "{}", finished.stderr);

    // It is what `sessions list` shows as the title.
    let listed = a.run(None, &["sessions", "list", "--json"]).await;
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["sessionId"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        row["title"].as_str().or(row["firstPrompt"].as_str()),
        Some("tidy the parser please")
    );

    // Resumed on another host, the title is still the session's first prompt.
    let b = Env::new();
    server.push(MockResponse::text("again"));
    let run = turn(&b, &server, &url, &id, "a later prompt").await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let doc = doc_until(&connection, &id, "the ended resumed session", |d| {
        d["status"] == "ended"
    })
    .await;
    assert_eq!(doc["title"], "tidy the parser please");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_no_session_persistence_publishes_nothing_to_the_stream() {
    let nats = NatsServer::start();
    let url = nats.url();
    let connection = connect(&url).await;
    let server = MockServer::start().await.unwrap();
    let env = Env::new();
    server.push(MockResponse::text("not kept"));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "forget this",
                "--output-format",
                "json",
                "--no-session-persistence",
                "--remote",
                &url,
            ],
        )
        .await;
    let id = session_of(&run);
    assert!(env.transcripts().is_empty(), "nothing written locally");
    assert!(fetch_lines(&connection, &id).await.unwrap().is_empty());
    let mut stream = connection.ready().await.stream;
    assert_eq!(
        stream.info().await.unwrap().state.messages,
        0,
        "no line of any session reached the stream"
    );
}
