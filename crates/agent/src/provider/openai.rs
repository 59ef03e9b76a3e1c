//! OpenAI-compatible chat completions, streamed: `POST {base}/chat/completions` with
//! `stream: true` and `stream_options: {include_usage: true}`.
//!
//! The same protocol is spoken by OpenAI and by local servers (llama.cpp's server,
//! Ollama, vLLM, LM Studio), so this is also how strata runs against a local model:
//! `OPENAI_BASE_URL=http://127.0.0.1:11434/v1` (an API key is then optional).
//!
//! The conversation is converted from the Anthropic-shaped [`Message`]s ([`convert`]) and
//! the streamed chunks are mapped onto the same [`StreamEvent`]s the Messages API yields
//! ([`decode`]), so the query loop cannot tell the two apart. What does not carry over:
//! thinking blocks are not sent back (chat completions has no place for them); a
//! thinking budget is not sent (reasoning effort is model-specific there).
//!
//! [`Message`]: strata_protocol::message::Message
//! [`StreamEvent`]: super::StreamEvent

mod convert;
mod decode;

use reqwest::header::{HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::retry::RetryPolicy;
use super::transport::{Endpoint, http_client};
use super::{EventStream, ModelRequest, Provider, ProviderError};

/// Where the API is when `OPENAI_BASE_URL` is not set.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model used when neither `--model` nor `OPENAI_MODEL` names one. Local servers
/// usually need their own model name (llama.cpp's server ignores it; Ollama does not).
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-4.1";
const NAME: &str = "openai";

/// How to reach a chat-completions API.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Sent as `Authorization: Bearer …` (`OPENAI_API_KEY`); optional for local servers.
    pub api_key: Option<String>,
    /// The API root including its version path, e.g. `https://api.openai.com/v1`
    /// (`OPENAI_BASE_URL`).
    pub base_url: String,
    /// The model when none is given (`OPENAI_MODEL`, else [`OPENAI_DEFAULT_MODEL`]).
    pub default_model: String,
    /// How transient failures are retried.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print credentials.
        f.debug_struct("OpenAiConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("base_url", &self.base_url)
            .field("default_model", &self.default_model)
            .field("retry", &self.retry)
            .finish()
    }
}

impl OpenAiConfig {
    /// A configuration for the server at `base_url`, without a key.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            api_key: None,
            base_url: base_url.into(),
            default_model: OPENAI_DEFAULT_MODEL.to_owned(),
            retry: RetryPolicy::default(),
        }
    }

    /// Reads `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL` and
    /// `STRATA_MAX_RETRIES` through `env`; `None` when neither a key nor a base URL is
    /// set.
    pub fn from_env(env: &impl Fn(&str) -> Option<String>) -> Option<Self> {
        let non_empty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let api_key = non_empty("OPENAI_API_KEY");
        let base_url = non_empty("OPENAI_BASE_URL");
        if api_key.is_none() && base_url.is_none() {
            return None;
        }
        Some(Self {
            api_key,
            base_url: base_url.unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_owned()),
            default_model: non_empty("OPENAI_MODEL")
                .unwrap_or_else(|| OPENAI_DEFAULT_MODEL.to_owned()),
            retry: RetryPolicy::from_env(env),
        })
    }

    /// Whether this is OpenAI's own service, which wants `max_completion_tokens` (its
    /// reasoning models reject `max_tokens`); other servers get the widely understood
    /// `max_tokens`.
    fn is_openai_service(&self) -> bool {
        self.base_url.contains("://api.openai.com")
    }
}

/// The chat-completions provider.
#[derive(Debug)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: Endpoint,
}

impl OpenAiProvider {
    /// A provider for `config`. Fails when the key cannot be sent as a header or the HTTP
    /// client cannot be set up.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                ProviderError::NotConfigured(
                    "OPENAI_API_KEY contains characters that cannot be sent in an HTTP \
                     header; check its value"
                        .into(),
                )
            })?;
            v.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, v);
        }
        let endpoint = Endpoint {
            provider: NAME,
            client: http_client(NAME)?,
            url: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            headers,
            policy: config.retry,
            read_error: decode::read_error,
        };
        Ok(Self { config, endpoint })
    }

    /// The configuration in use.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &'static str {
        NAME
    }

    fn api_key_source(&self) -> &'static str {
        if self.config.api_key.is_some() {
            "OPENAI_API_KEY"
        } else {
            "none"
        }
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let body = convert::request_body(&request, self.config.is_openai_service());
        self.endpoint
            .stream(body, decode::OpenAiDecoder::default, cancel)
    }

    fn default_model(&self) -> Option<&str> {
        Some(&self.config.default_model)
    }
}
