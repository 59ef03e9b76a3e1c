//! The transcript stream against a real `nats-server -js` on a loopback port (issue 17
//! item 1): lines come back in the order published, byte for byte, per session; a line
//! published twice under one id (a retry after a lost acknowledgement) is stored once;
//! the bucket listing names every session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use strata_remote::{RemoteConnection, TranscriptPublisher, fetch_lines, list_sessions};
use strata_testkit::nats::NatsServer;

async fn connect(url: &str) -> RemoteConnection {
    RemoteConnection::connect_url(url).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_come_back_in_order_per_session_and_a_repeated_id_is_stored_once() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
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
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    for id in ["s1", "s2"] {
        connection
            .bucket()
            .await
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
