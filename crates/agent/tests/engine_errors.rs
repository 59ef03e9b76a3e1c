//! The engine's operations fail with typed errors a host can match on (issue 10, item
//! 5): an unknown or refused permission mode, a rewind to a prompt that is not there or
//! whose backup is gone (with its path), and sessions that cannot be opened (nothing to
//! continue, a `--disallowedTools` rule that does not parse, a launch mode that is not
//! available, a file that is no transcript).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use strata_agent::engine::{
    Engine, EngineHandles, EngineOptions, EventSink, OpenError, ResumeTarget, RewindError,
    SetModeError,
};
use strata_agent::permissions::ModeError;
use strata_agent::provider::{ProviderChoice, select_provider};
use strata_protocol::message::Message;
use strata_protocol::permission::{ParsePermissionModeError, PermissionMode};
use strata_protocol::sdk::{ResultSubtype, SdkMessage};
use strata_session::file_history::FileHistoryError;
use strata_session::resume::ResumeError;
use strata_testkit::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

struct Quiet;

impl EventSink for Quiet {
    fn emit(&self, _: SdkMessage) {}
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
        ..EngineOptions::new(
            env.project.clone(),
            env.config.clone(),
            EngineHandles::private(),
            select_provider(Some(ProviderChoice::Anthropic), &lookup, None).unwrap(),
            Arc::new(Quiet),
        )
    }
}

fn mode(engine: &Engine) -> PermissionMode {
    engine.store().get().tool_permission_context.mode
}

#[tokio::test]
async fn a_host_can_tell_an_unknown_mode_from_a_refused_one() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    let engine = Engine::open(options(&env, &server)).await.unwrap();

    let err = engine.set_permission_mode("yolo").unwrap_err();
    assert!(
        matches!(&err, SetModeError::UnknownMode(ParsePermissionModeError::Unknown(name)) if name == "yolo"),
        "{err:?}"
    );
    let err = engine.set_permission_mode("bypassPermissions").unwrap_err();
    assert_eq!(err, SetModeError::Refused(ModeError::BypassNotLaunched));
    assert!(err.to_string().contains("--dangerously-skip-permissions"));
    assert_eq!(
        mode(&engine),
        PermissionMode::Default,
        "a refused change changes nothing"
    );

    engine.set_permission_mode("plan").unwrap();
    assert_eq!(mode(&engine), PermissionMode::Plan);
    engine.close().await.unwrap();
}

#[tokio::test]
async fn a_rewind_to_an_unknown_prompt_or_a_lost_backup_is_its_own_error() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    let file = env.project.join("notes.txt");
    std::fs::write(&file, "before\n").unwrap();
    // Read first: an existing file is only overwritten once it was read.
    server.push(Reply::new().tool_use("toolu_r", "Read", json!({"file_path": file})));
    server.push(Reply::new().tool_use(
        "toolu_w",
        "Write",
        json!({"file_path": file, "content": "after\n"}),
    ));
    server.push(Reply::new().text("Written."));
    let mut opts = options(&env, &server);
    opts.permission.allowed_tools = vec!["Read".into(), "Write".into()];
    let engine = Engine::open(opts).await.unwrap();
    let prompt = uuid::Uuid::new_v4().to_string();
    let result = engine
        .run_prompt_with_uuid(
            Message::user_text("rewrite the notes"),
            Some(prompt.clone()),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "after\n");

    let err = engine.rewind_files("no-such-message", true).unwrap_err();
    assert!(
        matches!(&err, RewindError::TargetNotFound { uuid, at_cap: false } if uuid == "no-such-message"),
        "{err:?}"
    );
    assert!(err.to_string().contains("no-such-message"), "{err}");

    // The backup of the edited file is lost: the error names it, and nothing changes.
    let backups = strata_config::paths::file_history_dir(&env.config, &engine.session_id());
    std::fs::remove_dir_all(&backups).unwrap();
    let err = engine.rewind_files(&prompt, false).unwrap_err();
    match &err {
        RewindError::Files(FileHistoryError::BackupMissing { backup, .. }) => {
            assert!(backup.starts_with(&backups), "{}", backup.display());
        }
        other => panic!("expected a missing backup, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "after\n");
    engine.close().await.unwrap();
}

/// Opens with `edit` applied to the options and returns the error.
async fn open_error(env: &Env, edit: impl FnOnce(&mut EngineOptions)) -> OpenError {
    let server = MockServer::start().await.unwrap();
    let mut opts = options(env, &server);
    edit(&mut opts);
    Engine::open(opts)
        .await
        .err()
        .expect("the session is not opened")
}

#[tokio::test]
async fn a_host_can_tell_why_a_session_did_not_open() {
    let env = env();
    let err = open_error(&env, |o| o.resume = Some(ResumeTarget::Continue)).await;
    assert!(
        matches!(err, OpenError::NothingToContinue { .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "No conversation found to continue");

    let err = open_error(&env, |o| {
        o.permission.disallowed_tools = vec!["Bash(touch".into()];
    })
    .await;
    match &err {
        OpenError::DisallowedRule(rule) => assert_eq!(rule.rule, "Bash(touch"),
        other => panic!("expected a bad rule, got {other:?}"),
    }
    assert!(err.to_string().contains("--disallowedTools"), "{err}");

    let err = open_error(&env, |o| {
        o.permission.mode = Some(PermissionMode::BypassPermissions);
    })
    .await;
    assert!(
        matches!(err, OpenError::Mode(ModeError::BypassNotLaunched)),
        "{err:?}"
    );

    let not_a_transcript = env.project.join("notes.jsonl");
    std::fs::write(&not_a_transcript, "just some text\n").unwrap();
    let err = open_error(&env, |o| {
        o.resume = Some(ResumeTarget::Session(path_arg(&not_a_transcript)));
    })
    .await;
    assert!(
        matches!(&err, OpenError::Resume(ResumeError::NotATranscript { path, .. }) if path == &not_a_transcript),
        "{err:?}"
    );

    let err = open_error(&env, |o| {
        o.resume = Some(ResumeTarget::Session(
            "0b5e9d2c-0000-4000-8000-000000000000".into(),
        ));
    })
    .await;
    assert!(matches!(err, OpenError::NotFound(_)), "{err:?}");
    assert!(
        !env.config.join("projects").exists()
            || std::fs::read_dir(env.config.join("projects"))
                .unwrap()
                .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
                .all(|e| e.unwrap().path().extension().is_none_or(|x| x != "jsonl")),
        "no refused open left a transcript behind"
    );
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
