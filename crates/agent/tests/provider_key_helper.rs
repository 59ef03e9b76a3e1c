#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `apiKeyHelper` against the mock Messages API: the helper's output is the key, it runs
//! once and is cached, FX-5 (new settings) and a 401 clear the cache, a changed command
//! is used from the next request, and a failing helper is a clear error.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use strata_agent::provider::{
    AnthropicConfig, AnthropicProvider, ApiKeyHelper, MessageAccumulator, ModelRequest, Provider,
    ProviderError, RetryPolicy,
};
use strata_config::{GlobalConfigFile, SettingsFiles, SettingsLocations, SettingsSource};
use strata_protocol::message::Message;
use strata_state::{
    AppStore, EffectsHub, Ports, RuntimeFacts, SessionScope, apply_settings_change,
    default_app_state,
};
use strata_testkit::{MockResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

fn request() -> ModelRequest {
    ModelRequest {
        model: "claude-test".into(),
        system: String::new(),
        messages: vec![Arc::new(Message::user_text("hi"))],
        tools: Vec::new(),
        max_tokens: 100,
        thinking_budget: None,
    }
}

async fn call(p: &dyn Provider) -> Result<(), ProviderError> {
    let mut stream = p.stream(request(), CancellationToken::new());
    let mut acc = MessageAccumulator::new();
    while let Some(event) = stream.next().await {
        acc.push(&event?)?;
    }
    acc.finish()?;
    Ok(())
}

fn provider(server: &MockServer, helper: Arc<ApiKeyHelper>) -> AnthropicProvider {
    let env = |k: &str| (k == "ANTHROPIC_BASE_URL").then(|| server.url());
    let mut config = AnthropicConfig::endpoint_from_env(&env);
    config.retry = RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    };
    AnthropicProvider::with_key_helper(config, helper).unwrap()
}

/// A helper that counts its runs in `runs` and prints the content of `key`.
fn counting_helper(dir: &Path) -> (String, PathBuf, PathBuf) {
    let key = dir.join("key");
    let runs = dir.join("runs");
    fs::write(&key, "key-1\n").unwrap();
    let command = format!("echo run >> '{}'; cat '{}'", runs.display(), key.display());
    (command, key, runs)
}

fn runs(path: &Path) -> usize {
    fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

fn keys(server: &MockServer) -> Vec<(String, String)> {
    server
        .requests()
        .iter()
        .map(|r| {
            (
                r.header("x-api-key").unwrap_or("").to_owned(),
                r.header("authorization").unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn api_key_helper_output_is_the_key_and_runs_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (command, _, count) = counting_helper(tmp.path());
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("one"));
    server.push(Reply::new().text("two"));
    let p = provider(&server, ApiKeyHelper::new(command));
    call(&p).await.unwrap();
    call(&p).await.unwrap();
    assert_eq!(
        keys(&server),
        vec![
            ("key-1".to_owned(), "Bearer key-1".to_owned()),
            ("key-1".to_owned(), "Bearer key-1".to_owned())
        ]
    );
    assert_eq!(runs(&count), 1, "the key is cached");
}

#[tokio::test]
async fn api_key_helper_is_asked_again_after_the_api_rejects_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (command, key, count) = counting_helper(tmp.path());
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::error(
        401,
        "authentication_error",
        "invalid x-api-key",
    ));
    server.push(Reply::new().text("ok"));
    let p = provider(&server, ApiKeyHelper::new(command));
    let err = call(&p).await.unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::Api {
                status: Some(401),
                ..
            }
        ),
        "{err:?}"
    );
    fs::write(&key, "key-2").unwrap(); // rotated
    call(&p).await.unwrap();
    assert_eq!(keys(&server)[1].0, "key-2");
    assert_eq!(runs(&count), 2);
}

#[tokio::test]
async fn a_failing_api_key_helper_is_a_clear_error_and_nothing_is_sent() {
    let server = MockServer::start().await.unwrap();
    let p = provider(
        &server,
        ApiKeyHelper::new("echo 'vault is sealed' >&2; exit 3"),
    );
    let err = call(&p).await.unwrap_err().to_string();
    assert!(
        err.contains("apiKeyHelper") && err.contains("vault is sealed") && err.contains('3'),
        "{err}"
    );
    let p = provider(&server, ApiKeyHelper::new("true"));
    let err = call(&p).await.unwrap_err().to_string();
    assert!(err.contains("printed nothing"), "{err}");
    assert!(server.requests().is_empty());
}

/// A session's store with the real effects hub over settings files in `dir`.
fn session_store(dir: &Path) -> (AppStore, SettingsFiles) {
    let files = SettingsFiles::new(SettingsLocations::new(&dir.join("cfg"), &dir.join("proj")));
    let global = GlobalConfigFile::new(&dir.join("cfg"));
    let initial = default_app_state(RuntimeFacts::from_config(
        &files.load(),
        global.read().unwrap(),
    ));
    let ports = Ports::from_files(
        files.clone(),
        global,
        strata_bootstrap::global(),
        &initial.runtime,
    );
    let root = SessionScope::new()
        .create_root(initial, EffectsHub::new(ports))
        .unwrap();
    (root.store().clone(), files)
}

/// FX-5: new settings clear the cached key, and the command the settings name now is the
/// one that runs (with the settings' `env`).
#[tokio::test]
async fn fx5_new_settings_clear_the_api_key_helper_cache_and_change_its_command() {
    let tmp = tempfile::tempdir().unwrap();
    let (command, key, count) = counting_helper(tmp.path());
    fs::create_dir_all(tmp.path().join("cfg")).unwrap();
    let user = tmp.path().join("cfg/settings.json");
    fs::write(
        &user,
        serde_json::json!({"apiKeyHelper": command}).to_string(),
    )
    .unwrap();
    let (store, files) = session_store(tmp.path());
    let helper = ApiKeyHelper::new(command.clone());
    let _attached = helper.attach(&store);

    let server = MockServer::start().await.unwrap();
    for _ in 0..4 {
        server.push(Reply::new().text("ok"));
    }
    let p = provider(&server, helper);
    call(&p).await.unwrap();
    fs::write(&key, "key-2").unwrap();
    call(&p).await.unwrap();
    assert_eq!(runs(&count), 1, "cached until the settings change");

    // The user edits their settings (a new model): FX-5 clears the cache.
    fs::write(
        &user,
        serde_json::json!({"apiKeyHelper": command, "model": "opus"}).to_string(),
    )
    .unwrap();
    store.set(apply_settings_change(SettingsSource::User, &files.load()));
    call(&p).await.unwrap();
    assert_eq!(runs(&count), 2);

    // A new command, with a variable from the settings' env.
    fs::write(
        &user,
        serde_json::json!({
            "apiKeyHelper": "printf %s \"$VAULT_KEY\"",
            "env": {"VAULT_KEY": "key-from-env"}
        })
        .to_string(),
    )
    .unwrap();
    store.set(apply_settings_change(SettingsSource::User, &files.load()));
    call(&p).await.unwrap();
    let sent: Vec<String> = keys(&server).into_iter().map(|(k, _)| k).collect();
    assert_eq!(sent, ["key-1", "key-1", "key-2", "key-from-env"]);
    assert_eq!(runs(&count), 2);
}
