//! File history through the engine (SP-2, SP-3, FX-6) against a mock model server on
//! 127.0.0.1: an Edit puts the file in the app state's file-history domain (the only
//! copy), its backup is on disk before the file changes, rewind restores it from the
//! store, resume rebuilds the domain from the transcript, and a backup that cannot be
//! written stops the edit. Each test opens its sessions one after the other (one root
//! store per process, UI-5).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::json;
use strata_agent::engine::{Engine, EngineHandles, EngineOptions, EventSink, ResumeTarget};
use strata_agent::permissions::PermissionLaunch;
use strata_agent::provider::{ProviderChoice, select_provider};
use strata_protocol::message::Message;
use strata_protocol::permission::PermissionMode;
use strata_protocol::sdk::{ResultSubtype, SdkMessage};
use strata_testkit::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Collect(Mutex<Vec<SdkMessage>>);

impl EventSink for Collect {
    fn emit(&self, message: SdkMessage) {
        self.0.lock().unwrap().push(message);
    }
}

struct Env {
    _dir: tempfile::TempDir,
    config: PathBuf,
    project: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    Env {
        config,
        project: std::fs::canonicalize(&project).unwrap(),
        _dir: dir,
    }
}

fn options(env: &Env, server: &MockServer) -> EngineOptions {
    let url = server.url();
    let lookup = move |k: &str| match k {
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        "ANTHROPIC_API_KEY" => Some("test-key".to_owned()),
        _ => None,
    };
    EngineOptions {
        model: Some("claude-sonnet-4-5".into()),
        permission: PermissionLaunch {
            mode: Some(PermissionMode::AcceptEdits),
            ..PermissionLaunch::default()
        },
        verbose: true,
        ..EngineOptions::new(
            env.project.clone(),
            env.config.clone(),
            EngineHandles::private(),
            select_provider(Some(ProviderChoice::Anthropic), &lookup, None).unwrap(),
            Arc::new(Collect::default()),
        )
    }
}

/// The model reads `file`, edits `before` into `after`, then answers.
fn push_edit_turn(server: &MockServer, file: &std::path::Path, before: &str, after: &str) {
    server.push(Reply::new().tool_use("toolu_r", "Read", json!({"file_path": file})));
    server.push(Reply::new().tool_use(
        "toolu_e",
        "Edit",
        json!({"file_path": file, "old_string": before, "new_string": after}),
    ));
    server.push(Reply::new().text("Edited."));
}

#[tokio::test]
async fn sp2_an_edit_is_tracked_in_the_app_state_and_rewind_restores_it_from_the_store() {
    let env = env();
    let file = env.project.join("notes.txt");
    std::fs::write(&file, "original\n").unwrap();
    let server = MockServer::start().await.unwrap();
    push_edit_turn(&server, &file, "original", "changed");
    let engine = Engine::open(options(&env, &server)).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("change it"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed\n");

    // The app state's file-history domain names the file, with a backup of its
    // previous contents on disk.
    let state = engine.store().get();
    let history = &state.file_history;
    assert_eq!(history.snapshots.len(), 1);
    let prompt = history.snapshots[0].message_id.clone();
    let backup = &history.snapshots[0].tracked_file_backups["notes.txt"];
    assert_eq!(backup.version, 1);
    let name = backup.backup_file_name.clone().unwrap();
    let backups = strata_config::paths::file_history_dir(&env.config, &engine.session_id());
    assert_eq!(
        std::fs::read_to_string(backups.join(&name)).unwrap(),
        "original\n"
    );

    // Rewind reads the store.
    let report = engine.rewind_files(&prompt, false).unwrap();
    assert_eq!(report["filesChanged"], 1, "{report}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original\n");
    let session = engine.session_id();
    engine.close().await.unwrap();

    // SP-3: resume rebuilds the domain from the transcript's snapshot entries.
    let mut opts = options(&env, &server);
    opts.resume = Some(ResumeTarget::Session(session));
    let resumed = Engine::open(opts).await.unwrap();
    let state = resumed.store().get();
    let snapshot = state.file_history.snapshots.back().unwrap();
    assert_eq!(snapshot.message_id, prompt);
    assert_eq!(
        snapshot.tracked_file_backups["notes.txt"]
            .backup_file_name
            .as_deref(),
        Some(name.as_str())
    );
    resumed.close().await.unwrap();
}

#[tokio::test]
async fn an_edit_whose_backup_cannot_be_written_is_refused_and_the_file_is_untouched() {
    let env = env();
    let file = env.project.join("notes.txt");
    std::fs::write(&file, "original\n").unwrap();
    // The backup folder cannot be created: its parent is a regular file.
    let backups_parent = strata_config::paths::file_history_dir(&env.config, "x")
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::create_dir_all(backups_parent.parent().unwrap()).unwrap();
    std::fs::write(&backups_parent, "not a folder").unwrap();
    let server = MockServer::start().await.unwrap();
    push_edit_turn(&server, &file, "original", "changed");
    let engine = Engine::open(options(&env, &server)).await.unwrap();
    let _ = engine
        .run_prompt(Message::user_text("change it"), CancellationToken::new())
        .await;
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "original\n",
        "no backup, no edit"
    );
    let sent = server.requests()[2].json()["messages"].to_string();
    assert!(sent.contains("cannot back up"), "{sent}");
    // The failed backup was withdrawn: the file is not believed saved.
    let state = engine.store().get();
    assert!(!state.file_history.tracks("notes.txt"));
    engine.close().await.unwrap();
}

/// A notebook cell as nbformat 4.5 writes it.
fn notebook(source: &str) -> String {
    let nb = json!({
        "cells": [{"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, "outputs": [], "source": [source]}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5
    });
    serde_json::to_string_pretty(&nb).unwrap() + "\n"
}

/// Issue 18 item 7: NotebookEdit is a file edit like Edit: accept-edits lets it run, its
/// notebook is checkpointed before it changes, and rewind restores it.
#[tokio::test]
async fn sp2_a_notebook_edit_is_checkpointed_and_rewind_restores_the_notebook() {
    let env = env();
    let file = env.project.join("analysis.ipynb");
    let original = notebook("x = 1");
    std::fs::write(&file, &original).unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_r", "Read", json!({"file_path": file})));
    server.push(Reply::new().tool_use(
        "toolu_n",
        "NotebookEdit",
        json!({"notebook_path": file, "cell_id": "c1", "new_source": "x = 2"}),
    ));
    server.push(Reply::new().text("Changed the cell."));
    let engine = Engine::open(options(&env, &server)).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("set x to 2"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    let changed = std::fs::read_to_string(&file).unwrap();
    assert!(changed.contains("x = 2"), "{changed}");
    let sent = server.requests()[2].json()["messages"].to_string();
    assert!(sent.contains("Updated cell c1"), "{sent}");

    let state = engine.store().get();
    let prompt = state.file_history.snapshots[0].message_id.clone();
    assert!(state.file_history.tracks("analysis.ipynb"));
    let report = engine.rewind_files(&prompt, false).unwrap();
    assert_eq!(report["filesChanged"], 1, "{report}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    engine.close().await.unwrap();
}

/// NotebookEdit is decided by the `Edit` rules: without one (and nobody to ask) it is
/// denied and the notebook is untouched; an `Edit` allow rule lets it run.
#[tokio::test]
async fn notebook_edit_is_decided_by_the_edit_rules() {
    let env = env();
    let file = env.project.join("n.ipynb");
    let original = notebook("a");
    std::fs::write(&file, &original).unwrap();
    let server = MockServer::start().await.unwrap();
    let turn = |server: &MockServer| {
        server.push(Reply::new().tool_use("toolu_r", "Read", json!({"file_path": file})));
        server.push(Reply::new().tool_use(
            "toolu_n",
            "NotebookEdit",
            json!({"notebook_path": file, "cell_id": "c1", "new_source": "b"}),
        ));
        server.push(Reply::new().text("Done."));
    };
    turn(&server);
    let mut opts = options(&env, &server);
    opts.permission.mode = Some(PermissionMode::Default);
    let engine = Engine::open(opts).await.unwrap();
    let _ = engine
        .run_prompt(Message::user_text("edit"), CancellationToken::new())
        .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "denied");
    engine.close().await.unwrap();

    turn(&server);
    let mut opts = options(&env, &server);
    opts.permission.mode = Some(PermissionMode::Default);
    opts.permission.allowed_tools = vec!["Edit".into()];
    let engine = Engine::open(opts).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("edit"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    assert!(std::fs::read_to_string(&file).unwrap().contains("\"b\""));
    engine.close().await.unwrap();
}
