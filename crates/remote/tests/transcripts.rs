//! The transcript stream against a real `nats-server -js` on a loopback port (issue 17
//! item 1): lines come back in the order published, byte for byte, per session; a line
//! published twice under one id (a retry after a lost acknowledgement) is stored once;
//! the bucket listing names every session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use strata_remote::{
    RemoteConnection, TranscriptPublisher, ensure_stream, fetch_lines, list_sessions,
};

struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server() -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server must be installed (apt-get install nats-server; .ci/run does it)");
    Server {
        child,
        url: format!("nats://127.0.0.1:{port}"),
        _dir: dir,
    }
}

async fn connect(url: &str) -> RemoteConnection {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match RemoteConnection::connect(url, 1).await {
            Ok(connection) => return connection,
            Err(error) if Instant::now() > deadline => panic!("{error}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_come_back_in_order_per_session_and_a_repeated_id_is_stored_once() {
    let server = start_server();
    let connection = connect(&server.url).await;
    ensure_stream(&connection, 1).await.unwrap();
    let publisher =
        TranscriptPublisher::spawn(connection.clone(), &tokio::runtime::Handle::current());
    let a: Vec<String> = (0..200)
        .map(|i| format!(r#"{{"type":"user","uuid":"a-{i}","text":"é {i}"}}"#))
        .collect();
    for (i, line) in a.iter().enumerate() {
        publisher.publish("sa", &format!("a-{i}"), line);
        // Another session's lines interleave on the same stream.
        publisher.publish("sb", &format!("b-{i}"), "{\"type\":\"assistant\"}");
    }
    // A retry of a line already stored, under its id: dropped by the server.
    publisher.publish("sa", "a-7", &a[7]);
    assert!(publisher.flush(Duration::from_secs(10)).await);
    assert_eq!(fetch_lines(&connection, "sa").await.unwrap(), a);
    assert_eq!(fetch_lines(&connection, "sb").await.unwrap().len(), 200);
    assert!(fetch_lines(&connection, "nobody").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_names_every_session_of_the_bucket() {
    let server = start_server();
    let connection = connect(&server.url).await;
    for id in ["s1", "s2"] {
        connection
            .bucket()
            .put(id, br#"{"permission_mode":"default"}"#.to_vec().into())
            .await
            .unwrap();
    }
    let mut ids: Vec<String> = list_sessions(&connection)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["s1", "s2"]);
}
