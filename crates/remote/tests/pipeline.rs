//! Publishing a window of lines at once (issue 17 item 5, the publishing target) against
//! real `nats-server -js` processes on loopback ports: the server-side rule the window's
//! order rests on, two processes publishing into the stream at once, a server killed
//! again and again while windows are in flight, and lines larger than the server takes.
//! Every test reads the stream back: nothing lost, nothing duplicated, in order.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::time::Duration;

use async_nats::jetstream::context::{Publish, PublishErrorKind};
use strata_remote::{OutboxLimits, RemoteConnection, TranscriptPublisher, fetch_lines, subject};
use strata_testkit::nats::NatsServer;

const FLUSH: Duration = Duration::from_secs(60);

fn line(session: &str, i: usize) -> (String, String) {
    let id = format!("{session}-{i}");
    (
        id.clone(),
        format!(r#"{{"type":"user","uuid":"{id}","n":{i}}}"#),
    )
}

fn held(connection: &RemoteConnection) -> TranscriptPublisher {
    TranscriptPublisher::spawn_with(
        connection.clone(),
        OutboxLimits::default(),
        true,
        &tokio::runtime::Handle::current(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_the_server_stores_a_line_only_right_after_its_predecessor() {
    // The rule a window's order rests on: a line sent with `Nats-Expected-Last-Msg-Id`
    // is refused unless its predecessor is the stream's last message.
    let server = NatsServer::start();
    let connection = RemoteConnection::connect_url(&server.url()).await.unwrap();
    let js = connection.ready().await.js;
    let send = async |text: &str, expected: Option<&str>| {
        let mut publish = Publish::build()
            .payload(text.to_owned().into_bytes().into())
            .message_id(text);
        if let Some(expected) = expected {
            publish = publish.expected_last_message_id(expected);
        }
        js.send_publish(subject("order"), publish)
            .await
            .unwrap()
            .await
            .map(|_| ())
            .map_err(|error| error.kind())
    };
    assert_eq!(send("a", None).await, Ok(()));
    // "b" was lost on its way: "c", sent after it, must not be stored before it.
    assert_eq!(
        send("c", Some("b")).await,
        Err(PublishErrorKind::WrongLastMessageId)
    );
    assert_eq!(send("b", Some("a")).await, Ok(()));
    assert_eq!(send("c", Some("b")).await, Ok(()));
    assert_eq!(
        fetch_lines(&connection, "order").await.unwrap(),
        ["a", "b", "c"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_two_processes_publishing_at_once_keep_each_session_whole_and_in_order() {
    // Each line of a window expects its predecessor to be the stream's last message, so
    // another process's lines in between make the server refuse the rest of a window:
    // those lines must go again, none lost, none twice.
    let server = NatsServer::start();
    let one = RemoteConnection::connect_url(&server.url()).await.unwrap();
    let two = RemoteConnection::connect_url(&server.url()).await.unwrap();
    let publishers = [
        TranscriptPublisher::spawn(one.clone(), &tokio::runtime::Handle::current()),
        TranscriptPublisher::spawn(two.clone(), &tokio::runtime::Handle::current()),
    ];
    let sessions = ["first", "second"];
    let mut expected = [Vec::new(), Vec::new()];
    for i in 0..3_000 {
        for (n, publisher) in publishers.iter().enumerate() {
            let (id, text) = line(sessions[n], i);
            publisher.publish(sessions[n], &id, &text);
            expected[n].push(text);
        }
        if i % 500 == 0 {
            tokio::task::yield_now().await;
        }
    }
    for publisher in &publishers {
        assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    }
    for (n, session) in sessions.iter().enumerate() {
        assert_eq!(fetch_lines(&one, session).await.unwrap(), expected[n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_a_server_killed_again_and_again_while_windows_are_in_flight_loses_and_duplicates_nothing()
 {
    let mut server = NatsServer::start();
    let connection = RemoteConnection::connect_url(&server.url()).await.unwrap();
    let publisher =
        TranscriptPublisher::spawn(connection.clone(), &tokio::runtime::Handle::current());
    let mut expected = Vec::new();
    let mut i = 0;
    for _ in 0..3 {
        // Enough lines that windows are in flight when the server dies.
        for _ in 0..1_500 {
            let (id, text) = line("crashes", i);
            publisher.publish("crashes", &id, &text);
            expected.push(text);
            i += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        server.kill();
        for _ in 0..200 {
            let (id, text) = line("crashes", i);
            publisher.publish("crashes", &id, &text);
            expected.push(text);
            i += 1;
        }
        server.restart();
    }
    assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    assert_eq!(fetch_lines(&connection, "crashes").await.unwrap(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_larger_than_the_server_takes_is_left_out_and_the_lines_after_it_follow() {
    let server = NatsServer::start_with_max_payload(4_096);
    let connection = RemoteConnection::connect_url(&server.url()).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let big = format!(
        r#"{{"type":"user","uuid":"big","text":"{}"}}"#,
        "x".repeat(8_000)
    );

    // Live: the big line sits in the middle of a window.
    let publisher =
        TranscriptPublisher::spawn(connection.clone(), &tokio::runtime::Handle::current());
    let mut expected = Vec::new();
    for i in 0..20 {
        let (id, text) = line("live", i);
        publisher.publish("live", &id, &text);
        expected.push(text);
        if i == 10 {
            publisher.publish("live", "big", &big);
        }
    }
    assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    assert_eq!(fetch_lines(&connection, "live").await.unwrap(), expected);

    // Caught up from a transcript written without the remote: the same.
    let transcript = root.path().join("old.jsonl");
    let mut file = std::fs::File::create(&transcript).unwrap();
    let mut expected = Vec::new();
    for i in 0..20 {
        let (_, text) = line("old", i);
        writeln!(file, "{text}").unwrap();
        expected.push(text);
        if i == 3 {
            writeln!(file, "{big}").unwrap();
        }
    }
    drop(file);
    let resumed = held(&connection);
    resumed.attach("old", &transcript, &root.path().join("old"));
    assert!(resumed.flush(FLUSH).await, "{:?}", resumed.stats());
    assert_eq!(fetch_lines(&connection, "old").await.unwrap(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_5_a_backlog_is_paced_while_a_turn_runs_and_a_turns_lines_still_go_out_live() {
    let server = NatsServer::start();
    let connection = RemoteConnection::connect_url(&server.url()).await.unwrap();
    let publisher =
        TranscriptPublisher::spawn(connection.clone(), &tokio::runtime::Handle::current());
    publisher.turn(true);

    // A line of the running turn is gathered for a moment, not held until the turn ends.
    let (id, text) = line("paced", 0);
    publisher.publish("paced", &id, &text);
    let mut expected = vec![text];
    let started = std::time::Instant::now();
    while fetch_lines(&connection, "paced").await.unwrap().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a running turn's line did not go out"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // A backlog of 3,000 lines of about 1 KB while the turn runs: about 6,000 units of
    // the pace (one a line, one a KiB) at 8,000 a second, less the burst of 256: 0.7 s.
    let filler = "x".repeat(1_000);
    let started = std::time::Instant::now();
    for i in 1..=3_000 {
        let id = format!("paced-{i}");
        let text = format!(r#"{{"type":"user","uuid":"{id}","text":"{filler}"}}"#);
        publisher.publish("paced", &id, &text);
        expected.push(text);
    }
    assert!(publisher.flush(FLUSH).await, "{:?}", publisher.stats());
    let paced = started.elapsed();
    assert!(
        paced >= Duration::from_millis(600),
        "the backlog went out in {paced:?}, faster than the pace allows while a turn runs"
    );
    assert_eq!(fetch_lines(&connection, "paced").await.unwrap(), expected);
    publisher.turn(false);
}
