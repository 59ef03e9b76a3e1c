//! The metadata bucket against a real `nats-server -js` on a loopback port (issue 17
//! items 1 and 2). Each test starts its own server; readiness is polled with a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use strata_protocol::permission::{ExternalPermissionMode, PermissionMode};
use strata_remote::{BUCKET, KvMetadataPort, RemoteConnection, watch_own_key, write_metadata};
use strata_state::{
    EffectsHub, RecordingPorts, RuntimeFacts, SessionMetadataPatch, SessionScope, default_app_state,
};
use strata_testkit::nats::NatsServer;

async fn connect(url: &str) -> RemoteConnection {
    RemoteConnection::connect_url(url).await.unwrap()
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

async fn stored(connection: &RemoteConnection, key: &str) -> Option<Map<String, Value>> {
    let value = connection.bucket().await.get(key).await.unwrap()?;
    Some(serde_json::from_slice(&value).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fx1_mode_change_reaches_the_bucket_as_one_json_object() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let rec = RecordingPorts::default();
    let state = default_app_state(RuntimeFacts::default());
    let hub = EffectsHub::new(rec.ports(&state.runtime));
    let root = SessionScope::new().create_root(state, hub).unwrap();
    let mut fields = Map::new();
    fields.insert("cwd".into(), json!("/project"));
    let port = KvMetadataPort::spawn(
        connection.clone(),
        "s1".into(),
        fields,
        &tokio::runtime::Handle::current(),
    );
    root.store()
        .effects()
        .set_remote(Some(std::sync::Arc::new(port)));

    let started = Instant::now();
    root.store()
        .update(|s| s.tool_permission_context.mode = PermissionMode::Plan);
    // The store's update returned without waiting for the network.
    let doc = poll("the plan mode in the bucket", async || {
        stored(&connection, "s1")
            .await
            .filter(|d| d.get("permission_mode") == Some(&json!("plan")))
    })
    .await;
    eprintln!("mode reached {BUCKET} in {:?}", started.elapsed());
    assert_eq!(doc["cwd"], json!("/project"));
    assert!(doc["updated_at"].is_string());
    assert!(!doc.contains_key("is_ultraplan_mode"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_metadata_is_not_written_again_so_no_echo() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let patch = SessionMetadataPatch {
        permission_mode: ExternalPermissionMode::Plan,
        is_ultraplan_mode: Some(true),
    };
    let fields = Map::new();
    assert!(
        write_metadata(&connection.bucket().await, "s2", &fields, &patch)
            .await
            .unwrap()
    );
    let revision = connection
        .bucket()
        .await
        .entry("s2")
        .await
        .unwrap()
        .unwrap()
        .revision;
    assert!(
        !write_metadata(&connection.bucket().await, "s2", &fields, &patch)
            .await
            .unwrap()
    );
    let after = connection
        .bucket()
        .await
        .entry("s2")
        .await
        .unwrap()
        .unwrap()
        .revision;
    assert_eq!(revision, after, "an unchanged document must not be written");
    let doc = stored(&connection, "s2").await.unwrap();
    assert_eq!(doc["is_ultraplan_mode"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fx7_change_made_elsewhere_is_applied_and_forbidden_bypass_is_refused() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let rec = RecordingPorts::default();
    let state = default_app_state(RuntimeFacts::default());
    assert!(
        !state
            .tool_permission_context
            .is_bypass_permissions_mode_available
    );
    let hub = EffectsHub::new(rec.ports(&state.runtime));
    let root = SessionScope::new().create_root(state, hub).unwrap();
    let _watch = watch_own_key(&connection, "s3".into(), root.store().clone());
    let bucket = connection.bucket().await;

    bucket
        .put(
            "s3",
            br#"{"permission_mode":"acceptEdits"}"#.to_vec().into(),
        )
        .await
        .unwrap();
    let store = root.store().clone();
    poll("acceptEdits applied", async || {
        (store.with(|s| s.tool_permission_context.mode) == PermissionMode::AcceptEdits)
            .then_some(())
    })
    .await;

    // The gate refuses a bypass this session may not enter; a later change still applies,
    // and the session never passed through bypass (the recorder sees every mode change).
    bucket
        .put(
            "s3",
            br#"{"permission_mode":"bypassPermissions"}"#.to_vec().into(),
        )
        .await
        .unwrap();
    bucket
        .put("s3", br#"{"permission_mode":"plan"}"#.to_vec().into())
        .await
        .unwrap();
    poll("plan applied", async || {
        (store.with(|s| s.tool_permission_context.mode) == PermissionMode::Plan).then_some(())
    })
    .await;
    assert!(
        !rec.sdk.modes().contains(&PermissionMode::BypassPermissions),
        "modes seen: {:?}",
        rec.sdk.modes()
    );
}
