//! Several sessions in one process (issue 10, item 4): an engine gets its bootstrap state
//! and session scope as handles, so an SDK host or a sub-agent runtime can keep two
//! sessions open at once, each with its own root store, session id, transcript and
//! cost — while a second root inside one session scope is still refused (UI-5).
//!
//! The sessions talk to scripted mock models on 127.0.0.1 (`strata-testkit`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use strata_agent::engine::{
    BootstrapHandle, Engine, EngineHandles, EngineOptions, EventSink, OpenError,
};
use strata_agent::provider::{ProviderChoice, select_provider};
use strata_protocol::message::Message;
use strata_protocol::sdk::{ResultSubtype, SdkMessage};
use strata_state::{EffectsHub, RecordingPorts, RootError, RuntimeFacts, default_app_state};
use strata_testkit::{Gate, MockResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Collect(Mutex<Vec<SdkMessage>>);

impl EventSink for Collect {
    fn emit(&self, message: SdkMessage) {
        self.0.lock().unwrap().push(message);
    }
}

impl Collect {
    /// The session ids of every message emitted.
    fn session_ids(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap()["session_id"].to_string())
            .collect()
    }
}

/// One config directory shared by the sessions (as in one process), one project each.
struct Env {
    _dir: tempfile::TempDir,
    config: PathBuf,
    projects: [PathBuf; 2],
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let projects = ["alpha", "beta"].map(|name| {
        let project = dir.path().join(name);
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::canonicalize(&project).unwrap()
    });
    Env {
        config,
        projects,
        _dir: dir,
    }
}

fn options(
    config: &Path,
    project: &Path,
    server: &MockServer,
    handles: EngineHandles,
    events: Arc<dyn EventSink>,
) -> EngineOptions {
    let url = server.url();
    let lookup = move |k: &str| match k {
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        "ANTHROPIC_API_KEY" => Some("test-key".to_owned()),
        _ => None,
    };
    EngineOptions {
        model: Some("claude-sonnet-4-5".into()),
        verbose: true,
        ..EngineOptions::new(
            project.to_path_buf(),
            config.to_path_buf(),
            handles,
            select_provider(Some(ProviderChoice::Anthropic), &lookup, None).unwrap(),
            events,
        )
    }
}

/// The transcript lines of `session` in `project`.
fn transcript(config: &Path, project: &Path, session: &str) -> Vec<Value> {
    let dir = strata_config::paths::project_sessions_dir(config, project);
    let text = std::fs::read_to_string(dir.join(format!("{session}.jsonl"))).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The user prompts a transcript records.
fn prompts(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "user")
        .filter_map(|l| {
            let content = &l["message"]["content"];
            content.as_str().or_else(|| content[0]["text"].as_str())
        })
        .map(str::to_owned)
        .collect()
}

/// The texts of the conversation in an engine's store.
fn store_texts(engine: &Engine) -> Vec<String> {
    engine
        .store()
        .get()
        .messages
        .iter()
        .map(|m| serde_json::to_value(&**m).unwrap().to_string())
        .collect()
}

/// Two sessions open at once in one process, one turn in flight in each at the same
/// time: each has its own session id, transcript, store, cost counters and cost slot.
#[tokio::test]
async fn two_sessions_in_one_process_each_keep_their_own_state() {
    let env = env();
    let server_a = MockServer::start().await.unwrap();
    let server_b = MockServer::start().await.unwrap();
    // A's answer pauses mid-stream, so B's whole turn runs while A's is in flight.
    let gate = Gate::new();
    let reply_a = Reply::new()
        .text("alpha one")
        .text("alpha two")
        .usage(1_000, 200)
        .build();
    let frames = strata_testkit::render::anthropic_frames(&reply_a);
    let first_stop = frames
        .iter()
        .position(|f| f.event.as_deref() == Some("content_block_stop"))
        .unwrap();
    server_a.push(MockResponse::message(reply_a).pause_after(first_stop + 1, &gate));
    server_b.push(Reply::new().text("beta answer").usage(30, 4));

    let (handles_a, handles_b) = (EngineHandles::private(), EngineHandles::private());
    let (events_a, events_b) = (Arc::new(Collect::default()), Arc::new(Collect::default()));
    let [project_a, project_b] = &env.projects;
    let a = Engine::open(options(
        &env.config,
        project_a,
        &server_a,
        handles_a.clone(),
        events_a.clone(),
    ))
    .await
    .unwrap();
    let b = Engine::open(options(
        &env.config,
        project_b,
        &server_b,
        handles_b.clone(),
        events_b.clone(),
    ))
    .await
    .expect("a second session opens beside the first");
    assert_ne!(a.session_id(), b.session_id());

    let a = Arc::new(a);
    let running = {
        let a = Arc::clone(&a);
        tokio::spawn(async move {
            a.run_prompt(Message::user_text("prompt alpha"), CancellationToken::new())
                .await
        })
    };
    tokio::time::timeout(Duration::from_secs(10), gate.reached())
        .await
        .expect("A's response starts");
    let result_b = b
        .run_prompt(Message::user_text("prompt beta"), CancellationToken::new())
        .await;
    gate.release();
    let result_a = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("A's turn ends once its response goes on")
        .unwrap();
    assert_eq!(result_a.subtype, ResultSubtype::Success, "{result_a:?}");
    assert_eq!(result_b.subtype, ResultSubtype::Success, "{result_b:?}");
    assert_eq!(result_a.result.as_deref(), Some("alpha onealpha two"));
    assert_eq!(result_b.result.as_deref(), Some("beta answer"));

    // Session ids: each result, each event and each bootstrap names its own session.
    let (id_a, id_b) = (a.session_id(), b.session_id());
    assert_eq!(result_a.session_id, id_a);
    assert_eq!(result_b.session_id, id_b);
    assert!(events_a.session_ids().iter().all(|s| s.contains(&id_a)));
    assert!(events_b.session_ids().iter().all(|s| s.contains(&id_b)));
    assert_eq!(handles_a.bootstrap.session_id().to_string(), id_a);
    assert_eq!(handles_b.bootstrap.session_id().to_string(), id_b);
    assert_eq!(&*handles_a.bootstrap.cwd(), project_a.as_path());
    assert_eq!(&*handles_b.bootstrap.cwd(), project_b.as_path());

    // Stores: each holds its own conversation only (prompt and answer).
    let (texts_a, texts_b) = (store_texts(&a), store_texts(&b));
    assert_eq!((texts_a.len(), texts_b.len()), (2, 2));
    assert!(texts_a.iter().all(|t| !t.contains("beta")), "{texts_a:?}");
    assert!(texts_b.iter().all(|t| !t.contains("alpha")), "{texts_b:?}");

    // Cost: each bootstrap counted its own response, as its result reported.
    assert!(result_a.total_cost_usd > result_b.total_cost_usd);
    assert!((handles_a.bootstrap.total_cost_usd() - result_a.total_cost_usd).abs() < 1e-9);
    assert!((handles_b.bootstrap.total_cost_usd() - result_b.total_cost_usd).abs() < 1e-9);

    let a = Arc::try_unwrap(a).ok().expect("the turn's task has ended");
    a.close().await.unwrap();
    b.close().await.unwrap();

    // Transcripts: one file each, with its own prompt and session id.
    let lines_a = transcript(&env.config, project_a, &id_a);
    let lines_b = transcript(&env.config, project_b, &id_b);
    assert_eq!(prompts(&lines_a), ["prompt alpha"]);
    assert_eq!(prompts(&lines_b), ["prompt beta"]);
    assert!(
        lines_a
            .iter()
            .all(|l| l["sessionId"].is_null() || l["sessionId"] == id_a.as_str())
    );
    assert!(
        lines_b
            .iter()
            .all(|l| l["sessionId"].is_null() || l["sessionId"] == id_b.as_str())
    );

    // SP-4: each project's cost slot has its own session and cost.
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(env.config.join("config.json")).unwrap())
            .unwrap();
    for (project, id, cost) in [
        (project_a, &id_a, result_a.total_cost_usd),
        (project_b, &id_b, result_b.total_cost_usd),
    ] {
        let slot = &config["projects"][project.to_str().unwrap()];
        assert_eq!(slot["lastSessionId"], id.as_str(), "{slot}");
        assert!(
            (slot["lastCost"].as_f64().unwrap() - cost).abs() < 1e-9,
            "{slot}"
        );
    }
}

/// UI-5: while a session is open, its scope admits no second root — neither a second
/// engine nor a root created directly — and the refused open changes nothing of the
/// open session's bootstrap. Once the session closes, the scope admits a new one.
#[tokio::test]
async fn ui_5_a_second_root_in_one_session_scope_is_refused() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    let handles = EngineHandles::private();
    let [project_a, project_b] = &env.projects;
    let first = Engine::open(options(
        &env.config,
        project_a,
        &server,
        handles.clone(),
        Arc::new(Collect::default()),
    ))
    .await
    .unwrap();

    // A second engine on the very same handles.
    let refused = Engine::open(options(
        &env.config,
        project_b,
        &server,
        handles.clone(),
        Arc::new(Collect::default()),
    ))
    .await
    .err()
    .expect("a second session in one scope is refused");
    assert!(
        matches!(refused, OpenError::Root(RootError::AlreadyExists { .. })),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("already exists"), "{refused}");
    assert_eq!(
        handles.bootstrap.session_id().to_string(),
        first.session_id(),
        "the refused open did not switch the open session's bootstrap"
    );
    assert_eq!(&*handles.bootstrap.cwd(), project_a.as_path());

    // Its own bootstrap does not help: the scope is what admits a root.
    let same_scope = EngineHandles {
        bootstrap: BootstrapHandle::private(),
        scope: handles.scope.clone(),
    };
    let refused = Engine::open(options(
        &env.config,
        project_b,
        &server,
        same_scope.clone(),
        Arc::new(Collect::default()),
    ))
    .await
    .err()
    .expect("refused");
    assert!(matches!(refused, OpenError::Root(_)), "{refused:?}");

    // Nor can code inside the session create a root of its own.
    let state = default_app_state(RuntimeFacts::default());
    let hub = EffectsHub::new(RecordingPorts::default().ports(&state.runtime));
    assert!(matches!(
        handles.scope.create_root(state, hub),
        Err(RootError::AlreadyExists { .. })
    ));
    // The session's store is the scope's current root.
    assert!(handles.scope.current().is_some());
    first.store().update(|s| s.verbose = false);
    assert_eq!(
        handles.scope.current().unwrap().store().version(),
        first.store().version()
    );

    // Closed, the scope admits a new session.
    first.close().await.unwrap();
    let next = Engine::open(options(
        &env.config,
        project_b,
        &server,
        same_scope,
        Arc::new(Collect::default()),
    ))
    .await
    .expect("the scope is free once the session closed");
    next.close().await.unwrap();
}
