//! `apiKeyHelper`: a settings key naming a shell command whose output is the API key, for
//! keys that rotate (a vault, a short-lived token). As in the reference agent, the
//! command runs in `/bin/sh -c`, its standard output (trimmed) is the key, sent as
//! `x-api-key` and as `Authorization: Bearer`, and it is used only when no key is in the
//! environment (`ANTHROPIC_API_KEY` and `ANTHROPIC_AUTH_TOKEN` come first).
//!
//! The key is cached: the command runs for the first request and again only after the
//! cache was cleared. Two things clear it: new settings (FX-5 clears every registered
//! [`CredentialCache`]; the engine registers the helper), and the API rejecting the key
//! (HTTP 401), so a rotated key is fetched for the next request. [`ApiKeyHelper::attach`]
//! ties the helper to a session's app store: it registers the cache with FX-5, keeps the
//! command in step with the settings (editing `apiKeyHelper` mid-session takes effect at
//! the next request) and runs it with the settings' `env` (FX-5's overlay).
//!
//! A helper that fails (exit status, no output, more than [`HELPER_TIMEOUT`]) fails the
//! request with a message naming the command and its stderr, and nothing is cached.

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use strata_state::{AppState, CredentialCache, EnvOverlay};
use strata_store::{Store, Subscription};

use super::ProviderError;
use crate::secrets::Secrets;
use crate::sync::lock;

/// How a key from the helper reads in a redacted tool result.
const SECRET_LABEL: &str = "apiKeyHelper key";

/// How long the helper may run before the request fails.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(30);

/// The command to run (`None`: the settings no longer name one) and its environment.
#[derive(Clone, Default)]
struct Source {
    command: Option<String>,
    env: Option<EnvOverlay>,
}

/// The `apiKeyHelper` of a session: runs the command, caches the key (see the module
/// docs).
pub struct ApiKeyHelper {
    source: Mutex<Source>,
    /// The cached key, with the epoch it was fetched in.
    cached: Mutex<Option<(u64, String)>>,
    /// Bumped by every clear: a fetch that started before a clear does not cache.
    epoch: AtomicU64,
    /// One fetch at a time (concurrent requests wait for it rather than run it twice).
    fetching: tokio::sync::Mutex<()>,
    /// Where each fetched key is registered as a secret, so tool results that print it
    /// are redacted like a key from the environment (issue 16).
    secrets: Mutex<Option<Secrets>>,
}

impl std::fmt::Debug for ApiKeyHelper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("ApiKeyHelper")
            .field("cached", &lock(&self.cached).is_some())
            .finish()
    }
}

impl ApiKeyHelper {
    /// A helper running `command` (the `apiKeyHelper` the settings had at start).
    pub fn new(command: impl Into<String>) -> Arc<Self> {
        let command = command.into();
        Arc::new(Self {
            source: Mutex::new(Source {
                command: Some(command),
                env: None,
            }),
            cached: Mutex::new(None),
            epoch: AtomicU64::new(0),
            fetching: tokio::sync::Mutex::new(()),
            secrets: Mutex::new(None),
        })
    }

    /// Registers every key this helper fetches (the cached one at once) with `secrets`,
    /// the session's credentials, so the key is redacted from tool results.
    pub fn redact_with(&self, secrets: Secrets) {
        if let Some(key) = self.cached_key() {
            secrets.add_value(SECRET_LABEL, key);
        }
        *lock(&self.secrets) = Some(secrets);
    }

    /// Ties the helper to a session's app store (see the module docs). The returned
    /// subscription keeps the command in step with the settings; keep it for the
    /// session's lifetime. (The store holds the helper, never the reverse, so the two
    /// form no cycle.)
    pub fn attach(self: &Arc<Self>, store: &Store<AppState>) -> Subscription {
        let state = store.get();
        state.runtime.credentials.register(self.clone());
        self.set_source(
            state.settings.api_key_helper.clone(),
            Some(state.runtime.env.clone()),
        );
        let helper = Arc::downgrade(self);
        store.subscribe(move |state: &Arc<AppState>| {
            if let Some(helper) = helper.upgrade() {
                helper.set_source(
                    state.settings.api_key_helper.clone(),
                    Some(state.runtime.env.clone()),
                );
            }
        })
    }

    /// Runs `command` from now on (`None`: requests fail saying no helper is set), with
    /// `env` applied; a different command drops the cached key.
    pub fn set_source(&self, command: Option<String>, env: Option<EnvOverlay>) {
        let mut source = lock(&self.source);
        if source.command != command {
            self.clear_cache();
        }
        *source = Source { command, env };
    }

    /// The authentication headers for the next request: the cached key, or the
    /// command's output. Cancelling stops a running command.
    pub async fn headers(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<HeaderMap, ProviderError> {
        let key = tokio::select! {
            key = self.key() => key?,
            () = cancel.cancelled() => return Err(ProviderError::Cancelled),
        };
        let mut headers = HeaderMap::new();
        let value = |v: &str| {
            HeaderValue::from_str(v).map_err(|_| {
                ProviderError::NotConfigured(
                    "the apiKeyHelper output contains characters that cannot be sent in an \
                     HTTP header; it must print the key alone"
                        .into(),
                )
            })
        };
        let mut api_key = value(&key)?;
        api_key.set_sensitive(true);
        let mut bearer = value(&format!("Bearer {key}"))?;
        bearer.set_sensitive(true);
        headers.insert(HeaderName::from_static("x-api-key"), api_key);
        headers.insert(AUTHORIZATION, bearer);
        Ok(headers)
    }

    /// The key: cached, or fetched now.
    pub async fn key(&self) -> Result<String, ProviderError> {
        if let Some(key) = self.cached_key() {
            return Ok(key);
        }
        let _one = self.fetching.lock().await;
        // Another request may have fetched it while this one waited.
        if let Some(key) = self.cached_key() {
            return Ok(key);
        }
        let epoch = self.epoch.load(Ordering::SeqCst);
        let Source { command, env } = lock(&self.source).clone();
        let command = command.filter(|c| !c.trim().is_empty()).ok_or_else(|| {
            ProviderError::NotConfigured(
                "the settings no longer name an apiKeyHelper and no API key is set: set \
                 apiKeyHelper or ANTHROPIC_API_KEY"
                    .into(),
            )
        })?;
        let key = run(&command, env.as_ref()).await?;
        if let Some(secrets) = lock(&self.secrets).as_ref() {
            secrets.add_value(SECRET_LABEL, key.clone());
        }
        let mut cached = lock(&self.cached);
        if self.epoch.load(Ordering::SeqCst) == epoch {
            *cached = Some((epoch, key.clone()));
        }
        Ok(key)
    }

    fn cached_key(&self) -> Option<String> {
        let epoch = self.epoch.load(Ordering::SeqCst);
        lock(&self.cached)
            .as_ref()
            .filter(|(e, _)| *e == epoch)
            .map(|(_, k)| k.clone())
    }

    /// Drops the cached key: the next request runs the command again.
    pub fn clear_cache(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        *lock(&self.cached) = None;
    }
}

impl CredentialCache for ApiKeyHelper {
    fn name(&self) -> &str {
        "apiKeyHelper"
    }

    fn clear(&self) -> Result<(), strata_state::CredentialCacheError> {
        self.clear_cache();
        Ok(())
    }
}

/// Runs `command` in `/bin/sh -c` and returns its trimmed output.
async fn run(command: &str, env: Option<&EnvOverlay>) -> Result<String, ProviderError> {
    let fail = |why: String| {
        ProviderError::NotConfigured(format!(
            "apiKeyHelper `{command}` {why}; fix the command in your settings or set \
             ANTHROPIC_API_KEY"
        ))
    };
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(env) = env {
        env.apply_to(&mut cmd);
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| fail(format!("could not be started: {e}")))?;
    let output = match tokio::time::timeout(HELPER_TIMEOUT, child.wait_with_output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(fail(format!("failed: {e}"))),
        Err(_) => {
            return Err(fail(format!(
                "did not finish within {} s",
                HELPER_TIMEOUT.as_secs()
            )));
        }
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(fail(format!(
            "exited with {}{}",
            output.status,
            if first.is_empty() {
                String::new()
            } else {
                format!(": {}", first.trim())
            }
        )));
    }
    let key = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if key.is_empty() {
        return Err(fail("printed nothing".into()));
    }
    Ok(key)
}
