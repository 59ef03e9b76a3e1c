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

/// A session's store with the FX-1 port and the watch of its own key, as the binary
/// attaches them.
struct Attached {
    root: strata_state::AppRoot,
    port: std::sync::Arc<KvMetadataPort>,
    _watch: strata_remote::OwnKeyWatch,
}

fn attach(connection: &RemoteConnection, session: &str) -> Attached {
    let rec = RecordingPorts::default();
    let state = default_app_state(RuntimeFacts::default());
    let hub = EffectsHub::new(rec.ports(&state.runtime));
    let root = SessionScope::new().create_root(state, hub).unwrap();
    let port = std::sync::Arc::new(KvMetadataPort::spawn_for_session(
        connection.clone(),
        session.into(),
        Map::new(),
        SessionMetadataPatch {
            permission_mode: ExternalPermissionMode::Default,
            is_ultraplan_mode: None,
        },
        &tokio::runtime::Handle::current(),
    ));
    root.store()
        .effects()
        .set_remote(Some(std::sync::Arc::clone(&port) as _));
    let watch = port.watch_own_key(root.store().clone());
    Attached {
        root,
        port,
        _watch: watch,
    }
}

async fn revision(connection: &RemoteConnection, key: &str) -> u64 {
    connection
        .bucket()
        .await
        .entry(key)
        .await
        .unwrap()
        .unwrap()
        .revision
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fx7_a_change_written_by_a_client_whose_clock_is_far_behind_reaches_the_store() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let s = attach(&connection, "s5");
    let store = s.root.store().clone();

    // This process changes its mode now, and the change is written.
    store.update(|st| st.tool_permission_context.mode = PermissionMode::Plan);
    let mut doc = poll("plan in the bucket", async || {
        stored(&connection, "s5")
            .await
            .filter(|d| d.get("permission_mode") == Some(&json!("plan")))
    })
    .await;

    // Another client, whose clock is decades behind, changes it afterwards.
    doc.insert("permission_mode".into(), json!("acceptEdits"));
    doc.insert("updated_at".into(), json!("2001-01-01T00:00:00Z"));
    doc.insert("written_by".into(), json!("a web server with a slow clock"));
    connection
        .bucket()
        .await
        .put("s5", serde_json::to_vec(&doc).unwrap().into())
        .await
        .unwrap();
    poll("the older-stamped change applied", async || {
        (store.with(|st| st.tool_permission_context.mode) == PermissionMode::AcceptEdits)
            .then_some(())
    })
    .await;
    // And the bucket keeps it: the session did not write its own mode back over it.
    assert!(s.port.flush(Duration::from_secs(5)).await);
    let now = stored(&connection, "s5").await.unwrap();
    assert_eq!(now["permission_mode"], json!("acceptEdits"));
    assert_eq!(now["written_by"], json!("a web server with a slow clock"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fx7_a_mode_chosen_while_the_server_was_away_is_not_reverted_when_it_returns() {
    let mut server = NatsServer::start();
    let url = server.url();
    // An earlier run left the session in plan mode.
    let earlier = connect(&url).await;
    let plan = SessionMetadataPatch {
        permission_mode: ExternalPermissionMode::Plan,
        is_ultraplan_mode: None,
    };
    assert!(
        write_metadata(&earlier.bucket().await, "s8", &Map::new(), &plan)
            .await
            .unwrap()
    );
    drop(earlier);
    server.kill();

    // This run starts while the server is away, and the user picks acceptEdits.
    let connection = RemoteConnection::start(&strata_remote::RemoteOptions::from_url(&url))
        .await
        .unwrap();
    let s = attach(&connection, "s8");
    let store = s.root.store().clone();
    store.update(|st| st.tool_permission_context.mode = PermissionMode::AcceptEdits);
    server.restart();
    poll("acceptEdits written once the server is back", async || {
        stored(&connection, "s8")
            .await
            .filter(|d| d.get("permission_mode") == Some(&json!("acceptEdits")))
    })
    .await;
    assert!(s.port.flush(Duration::from_secs(5)).await);
    // The earlier document, seen on the return, does not take the mode back.
    let settle = Instant::now() + Duration::from_millis(300);
    while Instant::now() < settle {
        assert_eq!(
            store.with(|st| st.tool_permission_context.mode),
            PermissionMode::AcceptEdits
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        stored(&connection, "s8").await.unwrap()["permission_mode"],
        json!("acceptEdits")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_2_a_change_made_elsewhere_is_applied_and_never_echoed_back() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let s = attach(&connection, "s6");
    let store = s.root.store().clone();
    // The session's first document.
    let mut doc = poll("the session's document", async || {
        stored(&connection, "s6").await
    })
    .await;
    assert!(s.port.flush(Duration::from_secs(5)).await);

    // Another client changes the mode (a compare-and-set on what it read).
    let before = revision(&connection, "s6").await;
    doc.insert("permission_mode".into(), json!("plan"));
    doc.insert("written_by".into(), json!("another client"));
    let after = connection
        .bucket()
        .await
        .update("s6", serde_json::to_vec(&doc).unwrap().into(), before)
        .await
        .unwrap();
    poll("plan applied by the watching worker", async || {
        (store.with(|st| st.tool_permission_context.mode) == PermissionMode::Plan).then_some(())
    })
    .await;
    // The change hook ran (FX-1) and the port handled it: nothing to write.
    assert!(s.port.flush(Duration::from_secs(5)).await);
    // The key's revision stays where the other client left it, across a settle.
    let settle = Instant::now() + Duration::from_millis(500);
    while Instant::now() < settle {
        assert_eq!(
            revision(&connection, "s6").await,
            after,
            "the worker wrote the key back (an echo)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        stored(&connection, "s6").await.unwrap()["written_by"],
        json!("another client")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i17_2_concurrent_writers_lose_no_change_through_compare_and_set() {
    let server = NatsServer::start();
    let connection = connect(&server.url()).await;
    let bucket = connection.bucket().await;
    let patch = SessionMetadataPatch {
        permission_mode: ExternalPermissionMode::Plan,
        is_ultraplan_mode: None,
    };
    assert!(
        write_metadata(&bucket, "s7", &Map::new(), &patch)
            .await
            .unwrap()
    );
    // Eight writers at once, each adding a key of its own: a plain put would lose some.
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let bucket = bucket.clone();
            tokio::spawn(async move {
                let mut fields = Map::new();
                fields.insert(format!("w{i}"), json!(i));
                write_metadata(&bucket, "s7", &fields, &patch).await
            })
        })
        .collect();
    for writer in writers {
        assert!(writer.await.unwrap().unwrap(), "each writer wrote");
    }
    let doc = stored(&connection, "s7").await.unwrap();
    for i in 0..8 {
        assert_eq!(doc[&format!("w{i}")], json!(i), "{doc:?}");
    }
    assert_eq!(doc["permission_mode"], json!("plan"));
}
