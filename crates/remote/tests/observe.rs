//! An observer's view of the remote (issue 17 item 4) against a real `nats-server -js`:
//! every session's metadata, live; the transcripts followed from a sequence on; a mode
//! request answered by the worker with the mode it is really in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Map, Value, json};
use strata_protocol::permission::{ExternalPermissionMode, PermissionMode};
use strata_remote::{
    Follow, MetadataState, ModeReply, ModeRequestError, RemoteConnection, TranscriptPublisher,
    follow_transcripts, request_mode, watch_all_metadata, watch_own_key,
};
use strata_state::{EffectsHub, RecordingPorts, RuntimeFacts, SessionScope, default_app_state};
use strata_testkit::NatsServer;

async fn connect(url: &str) -> RemoteConnection {
    // Waits (ten seconds at most) until the bucket and the stream are bound.
    RemoteConnection::connect_url(url).await.unwrap()
}

async fn next<T>(stream: &mut (impl futures::Stream<Item = T> + Unpin)) -> T {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("an item within 5 s")
        .expect("the stream goes on")
}

async fn doc(connection: &RemoteConnection, key: &str) -> Map<String, Value> {
    serde_json::from_slice(&connection.bucket().await.get(key).await.unwrap().unwrap()).unwrap()
}

async fn poll<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sessions_metadata_comes_first_then_each_change() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let bucket = connection.bucket().await;
    bucket
        .put("a", br#"{"permission_mode":"plan"}"#.to_vec().into())
        .await
        .unwrap();
    bucket.put("b", b"not json".to_vec().into()).await.unwrap();
    let mut changes = Box::pin(watch_all_metadata(&connection).await.unwrap());
    let first = next(&mut changes).await.unwrap();
    assert_eq!(first.session, "a");
    assert_eq!(
        first.state,
        MetadataState::Document(
            json!({"permission_mode":"plan"})
                .as_object()
                .unwrap()
                .clone()
        )
    );
    let second = next(&mut changes).await.unwrap();
    assert_eq!(second.session, "b");
    assert!(
        matches!(second.state, MetadataState::Unreadable(_)),
        "{second:?}"
    );

    bucket
        .put("a", br#"{"permission_mode":"default"}"#.to_vec().into())
        .await
        .unwrap();
    let live = next(&mut changes).await.unwrap();
    assert_eq!(live.session, "a");
    assert!(live.revision > first.revision);
    bucket.delete("a").await.unwrap();
    assert_eq!(
        next(&mut changes).await.unwrap().state,
        MetadataState::Removed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcripts_are_followed_live_from_a_sequence_on() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let publisher =
        TranscriptPublisher::spawn(connection.clone(), &tokio::runtime::Handle::current());
    publisher.publish("s1", "u1", r#"{"n":1}"#);
    publisher.publish("s2", "u2", r#"{"n":2}"#);
    publisher.publish("s1", "u3", r#"{"n":3}"#);
    assert!(publisher.flush(Duration::from_secs(5)).await);

    // One session's lines.
    let mut s1 = Box::pin(
        follow_transcripts(
            &connection,
            Follow {
                session: Some("s1".into()),
                after: 0,
            },
        )
        .await
        .unwrap(),
    );
    let one = next(&mut s1).await.unwrap();
    assert_eq!(
        (one.session.as_str(), one.line.as_str()),
        ("s1", r#"{"n":1}"#)
    );
    let three = next(&mut s1).await.unwrap();
    assert_eq!(three.line, r#"{"n":3}"#);

    // Every session's, after the first: resuming where a reader left off.
    let mut all = Box::pin(
        follow_transcripts(
            &connection,
            Follow {
                session: None,
                after: one.sequence,
            },
        )
        .await
        .unwrap(),
    );
    assert_eq!(next(&mut all).await.unwrap().session, "s2");
    assert_eq!(next(&mut all).await.unwrap().sequence, three.sequence);

    // A line published now arrives on both.
    publisher.publish("s1", "u4", r#"{"n":4}"#);
    assert_eq!(next(&mut s1).await.unwrap().line, r#"{"n":4}"#);
    assert_eq!(next(&mut all).await.unwrap().line, r#"{"n":4}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_request_is_answered_by_the_worker_and_a_forbidden_bypass_is_written_back() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let rec = RecordingPorts::default();
    let state = default_app_state(RuntimeFacts::default());
    let hub = EffectsHub::new(rec.ports(&state.runtime));
    let root = SessionScope::new().create_root(state, hub).unwrap();
    let store = root.store().clone();

    // No document, no request: a mistyped id creates nothing.
    assert!(matches!(
        request_mode(&connection, "w1", ExternalPermissionMode::Plan).await,
        Err(ModeRequestError::NoSession(_))
    ));
    assert!(connection.bucket().await.get("w1").await.unwrap().is_none());

    connection
        .bucket()
        .await
        .put(
            "w1",
            br#"{"permission_mode":"default","cwd":"/p"}"#.to_vec().into(),
        )
        .await
        .unwrap();
    let _watch = watch_own_key(&connection, "w1".into(), store.clone());

    let request = request_mode(&connection, "w1", ExternalPermissionMode::Plan)
        .await
        .unwrap();
    let reply = poll("the reply to plan", async || {
        ModeReply::of(&doc(&connection, "w1").await).filter(|r| r.id == request.id)
    })
    .await;
    assert!(reply.accepted, "{reply:?}");
    assert_eq!(reply.mode, "plan");
    assert_eq!(
        store.store().get().tool_permission_context.mode,
        PermissionMode::Plan
    );

    // A bypass this session may not enter: refused at the gate, and the document says
    // the mode really in force again, with the reason.
    let request = request_mode(&connection, "w1", ExternalPermissionMode::BypassPermissions)
        .await
        .unwrap();
    let reply = poll("the reply to bypass", async || {
        ModeReply::of(&doc(&connection, "w1").await).filter(|r| r.id == request.id)
    })
    .await;
    assert!(!reply.accepted);
    assert_eq!(reply.mode, "plan");
    assert!(reply.reason.as_deref().unwrap().contains("not available"));
    let written = doc(&connection, "w1").await;
    assert_eq!(written["permission_mode"], "plan");
    assert_eq!(written["cwd"], "/p", "the rest of the document is kept");
    assert_eq!(
        store.store().get().tool_permission_context.mode,
        PermissionMode::Plan
    );
    assert!(!rec.sdk.modes().contains(&PermissionMode::BypassPermissions));
}
