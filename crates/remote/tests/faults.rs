//! Faults (issue 17 item 5) against real `nats-server -js` processes on loopback ports:
//! the server down at start, killed mid-session and restarted on its file store, a
//! three-node cluster losing a node, the outbox spilling past its bound, a crashed
//! process's spill file replayed on resume. Every test reads the stream back and
//! compares it with what was written locally: nothing lost, nothing duplicated, in order.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strata_remote::{
    OutboxLimits, REPLAY_FILE, RemoteConnection, RemoteOptions, SPILL_FILE, TranscriptPublisher,
    fetch_lines, read_spill_file, write_metadata,
};
use strata_state::{RemoteConnectionStatus, SessionMetadataPatch};
use strata_testkit::nats::{NatsCluster, NatsServer};

const FLUSH: Duration = Duration::from_secs(30);

/// Line `i` of a transcript: conversation lines with a uuid, every fifth a metadata line
/// without one.
fn line(i: usize) -> (Option<String>, String) {
    if i % 5 == 4 {
        (
            None,
            format!(r#"{{"type":"file-history-snapshot","n":{i}}}"#),
        )
    } else {
        let uuid = format!("00000000-0000-4000-8000-{i:012}");
        (
            Some(uuid.clone()),
            format!(r#"{{"type":"user","uuid":"{uuid}","n":{i}}}"#),
        )
    }
}

/// A session's local side: its transcript file, written as the recorder writes it, and
/// the publisher the mirror feeds.
struct Local {
    session: String,
    transcript: std::path::PathBuf,
    dir: std::path::PathBuf,
    lines: Vec<String>,
}

impl Local {
    fn new(root: &Path, session: &str) -> Self {
        let dir = root.join(session);
        std::fs::create_dir_all(&dir).unwrap();
        Self {
            session: session.into(),
            transcript: root.join(format!("{session}.jsonl")),
            dir,
            lines: Vec::new(),
        }
    }

    /// Writes line `i` to the transcript, then mirrors it (the recorder's order).
    fn write(&mut self, publisher: &TranscriptPublisher, i: usize) {
        let (uuid, text) = line(i);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.transcript)
            .unwrap();
        writeln!(file, "{text}").unwrap();
        let id = uuid.unwrap_or_else(|| format!("meta-{i}"));
        publisher.publish(&self.session, &id, &text);
        self.lines.push(text);
    }
}

/// Records every status the connection goes through.
fn record_statuses(connection: &RemoteConnection) -> Arc<Mutex<Vec<RemoteConnectionStatus>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut state = connection.state();
    let out = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let status = state.borrow_and_update().status;
            {
                let mut seen = out.lock().unwrap();
                if seen.last() != Some(&status) {
                    seen.push(status);
                }
            }
            if state.changed().await.is_err() {
                return;
            }
        }
    });
    seen
}

async fn wait_for_status(connection: &RemoteConnection, status: RemoteConnectionStatus) {
    let mut state = connection.state();
    tokio::time::timeout(
        Duration::from_secs(20),
        state.wait_for(|s| s.status == status),
    )
    .await
    .unwrap_or_else(|_| panic!("the connection never became {status:?}"))
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_server_down_at_start_then_started_publishes_every_line_in_order() {
    let mut server = NatsServer::stopped();
    let root = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let connection = RemoteConnection::start(&RemoteOptions::from_url(&server.url()))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "connecting happens in the background: {:?}",
        started.elapsed()
    );
    let statuses = record_statuses(&connection);
    let publisher = TranscriptPublisher::spawn_with(
        connection.clone(),
        OutboxLimits::default(),
        true,
        &tokio::runtime::Handle::current(),
    );
    let mut local = Local::new(root.path(), "down-at-start");
    publisher.attach(&local.session, &local.transcript, &local.dir);
    let writing = Instant::now();
    for i in 0..300 {
        local.write(&publisher, i);
    }
    assert!(
        writing.elapsed() < Duration::from_secs(2),
        "a server that is away never slows the writer: {:?}",
        writing.elapsed()
    );
    wait_for_status(&connection, RemoteConnectionStatus::Disconnected).await;
    assert_eq!(publisher.stats().pending, 300);

    server.restart();
    assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    assert_eq!(
        fetch_lines(&connection, &local.session).await.unwrap(),
        local.lines
    );
    let statuses = statuses.lock().unwrap().clone();
    assert!(
        statuses.ends_with(&[
            RemoteConnectionStatus::Disconnected,
            RemoteConnectionStatus::Connected
        ]),
        "{statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_server_killed_mid_session_and_restarted_loses_and_duplicates_nothing() {
    let mut server = NatsServer::start();
    let root = tempfile::tempdir().unwrap();
    let connection = RemoteConnection::connect_url(&server.url()).await.unwrap();
    let statuses = record_statuses(&connection);
    let publisher = TranscriptPublisher::spawn_with(
        connection.clone(),
        OutboxLimits::default(),
        true,
        &tokio::runtime::Handle::current(),
    );
    let mut local = Local::new(root.path(), "killed-mid-session");
    publisher.attach(&local.session, &local.transcript, &local.dir);
    for i in 0..200 {
        local.write(&publisher, i);
    }
    // Killed while lines are in flight.
    server.kill();
    for i in 200..400 {
        local.write(&publisher, i);
    }
    wait_for_status(&connection, RemoteConnectionStatus::Reconnecting).await;
    let bucket = connection.bucket().await;
    // The metadata bucket works again once the server is back.
    let patch = SessionMetadataPatch {
        permission_mode: strata_protocol::permission::ExternalPermissionMode::Plan,
        is_ultraplan_mode: None,
    };
    server.restart();
    for i in 400..500 {
        local.write(&publisher, i);
    }
    assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    assert_eq!(
        fetch_lines(&connection, &local.session).await.unwrap(),
        local.lines
    );
    assert!(
        write_metadata(&bucket, &local.session, &serde_json::Map::new(), &patch)
            .await
            .unwrap()
    );
    let statuses = statuses.lock().unwrap().clone();
    assert!(
        statuses.ends_with(&[
            RemoteConnectionStatus::Connected,
            RemoteConnectionStatus::Reconnecting,
            RemoteConnectionStatus::Connected
        ]),
        "{statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_three_node_cluster_losing_a_node_loses_and_duplicates_nothing() {
    let mut cluster = NatsCluster::start();
    let root = tempfile::tempdir().unwrap();
    let options = RemoteOptions {
        servers: cluster.urls(),
        replicas: Some(3),
        ..RemoteOptions::default()
    };
    let connection = RemoteConnection::connect(&options, Duration::from_secs(30))
        .await
        .unwrap();
    let mut bound = connection.ready().await;
    let info = bound.stream.info().await.unwrap();
    assert_eq!(info.config.num_replicas, 3, "an R3 stream");
    let bucket_info = bound.bucket.status().await.unwrap();
    assert_eq!(bucket_info.info.config.num_replicas, 3, "an R3 bucket");

    let publisher = TranscriptPublisher::spawn_with(
        connection.clone(),
        OutboxLimits::default(),
        true,
        &tokio::runtime::Handle::current(),
    );
    let mut local = Local::new(root.path(), "cluster");
    publisher.attach(&local.session, &local.transcript, &local.dir);
    for i in 0..300 {
        local.write(&publisher, i);
    }
    // The node this client talks to goes: the client moves to another, the stream's
    // replicas elect a new leader if it was one.
    let port = connection.client().server_info().port;
    let victim = cluster
        .urls()
        .iter()
        .position(|u| u.ends_with(&format!(":{port}")))
        .expect("connected to one of the nodes");
    cluster.kill(victim);
    for i in 300..600 {
        local.write(&publisher, i);
        if i % 100 == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    assert_eq!(
        fetch_lines(&connection, &local.session).await.unwrap(),
        local.lines
    );
    // The bucket still takes writes with a node down.
    let patch = SessionMetadataPatch {
        permission_mode: strata_protocol::permission::ExternalPermissionMode::AcceptEdits,
        is_ultraplan_mode: None,
    };
    // (A write during the bucket's own leader election may time out: the port retries,
    // and so does this.)
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match write_metadata(
            &bound.bucket,
            &local.session,
            &serde_json::Map::new(),
            &patch,
        )
        .await
        {
            Ok(written) => break assert!(written),
            Err(error) if Instant::now() > deadline => panic!("{error}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_past_the_bound_the_outbox_spills_to_disk_and_replays_in_order() {
    let mut server = NatsServer::stopped();
    let root = tempfile::tempdir().unwrap();
    let connection = RemoteConnection::start(&RemoteOptions::from_url(&server.url()))
        .await
        .unwrap();
    let publisher = TranscriptPublisher::spawn_with(
        connection.clone(),
        OutboxLimits {
            memory_lines: 8,
            memory_bytes: 1 << 20,
        },
        true,
        &tokio::runtime::Handle::current(),
    );
    let mut local = Local::new(root.path(), "spilled");
    publisher.attach(&local.session, &local.transcript, &local.dir);
    for i in 0..100 {
        local.write(&publisher, i);
    }
    let spill = local.dir.join(SPILL_FILE);
    let on_disk = read_spill_file(&spill).unwrap();
    assert_eq!(on_disk.len(), 100, "everything waiting is on disk");
    assert_eq!(
        on_disk.iter().map(|e| e.line.clone()).collect::<Vec<_>>(),
        local.lines
    );
    assert!(publisher.stats().spilled >= 90);

    server.restart();
    assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    assert_eq!(
        fetch_lines(&connection, &local.session).await.unwrap(),
        local.lines
    );
    assert!(!spill.exists(), "a drained spill file is removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_a_crashed_processs_spill_file_is_replayed_when_the_session_resumes() {
    let mut server = NatsServer::start();
    let root = tempfile::tempdir().unwrap();
    let mut local = Local::new(root.path(), "crashed");
    let limits = OutboxLimits {
        memory_lines: 8,
        memory_bytes: 1 << 20,
    };
    {
        let connection = RemoteConnection::connect_url(&server.url()).await.unwrap();
        let first = TranscriptPublisher::spawn_with(
            connection.clone(),
            limits,
            true,
            &tokio::runtime::Handle::current(),
        );
        first.attach(&local.session, &local.transcript, &local.dir);
        for i in 0..50 {
            local.write(&first, i);
        }
        assert!(first.flush(FLUSH).await);
        server.kill();
        for i in 50..120 {
            local.write(&first, i);
        }
        // The process dies here: no flush, no persist; its outbox was on disk.
    }
    assert!(local.dir.join(SPILL_FILE).exists());
    server.restart();

    let connection = RemoteConnection::connect_url(&server.url()).await.unwrap();
    let second = TranscriptPublisher::spawn_with(
        connection.clone(),
        limits,
        true,
        &tokio::runtime::Handle::current(),
    );
    second.attach(&local.session, &local.transcript, &local.dir);
    for i in 120..130 {
        local.write(&second, i);
    }
    assert!(second.flush(FLUSH).await, "{:?}", second.stats());
    assert_eq!(
        fetch_lines(&connection, &local.session).await.unwrap(),
        local.lines,
        "the replayed spill, then the new lines: every line once, in order"
    );
    assert!(!local.dir.join(SPILL_FILE).exists());
    assert!(!local.dir.join(REPLAY_FILE).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_lines_only_in_memory_at_a_crash_are_caught_up_from_the_transcript() {
    let server = NatsServer::start();
    let root = tempfile::tempdir().unwrap();
    let mut local = Local::new(root.path(), "memory-only");
    // A first run wrote lines without the remote (or died before publishing them).
    for i in 0..40 {
        let (_, text) = line(i);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&local.transcript)
            .unwrap();
        writeln!(file, "{text}").unwrap();
        local.lines.push(text);
    }
    let connection = RemoteConnection::connect_url(&server.url()).await.unwrap();
    // The stream already has the first ten (published by that run before it died).
    let earlier =
        TranscriptPublisher::spawn(connection.clone(), &tokio::runtime::Handle::current());
    for (i, text) in local.lines[..10].iter().enumerate() {
        earlier.publish(&local.session, &line(i).0.unwrap_or(format!("m{i}")), text);
    }
    assert!(earlier.flush(FLUSH).await);
    drop(earlier);

    let publisher = TranscriptPublisher::spawn_with(
        connection.clone(),
        OutboxLimits::default(),
        true,
        &tokio::runtime::Handle::current(),
    );
    publisher.attach(&local.session, &local.transcript, &local.dir);
    for i in 40..45 {
        local.write(&publisher, i);
    }
    assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    assert_eq!(
        fetch_lines(&connection, &local.session).await.unwrap(),
        local.lines
    );
}
