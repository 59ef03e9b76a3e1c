//! The Anthropic Messages API, streamed: `POST {base}/v1/messages` with `stream: true`.
//!
//! The request carries the conversation as the protocol crate's [`Message`]s (already the
//! API's shape), the system prompt, the tool schemas and, when asked, an extended
//! thinking budget. The response's server-sent events are the model of [`StreamEvent`],
//! so decoding ([`decode`]) is a near one-to-one mapping.
//!
//! Prompt caching: with [`AnthropicConfig::prompt_caching`] (the default), the system
//! prompt, the last tool and the last block of the last message are marked
//! `cache_control: {"type": "ephemeral"}`, so each turn reads the conversation so far
//! from the cache and writes only what is new (three of the API's four breakpoints; any
//! `cache_control` already in the messages is removed so the limit holds). `caller`
//! fields of tool uses (transcript bookkeeping) are never sent.

mod decode;
mod models;
mod wire;

use std::sync::Arc;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::{Map, Value, json};
use strata_protocol::message::{ContentBlock, Message, MessageContent};
use tokio_util::sync::CancellationToken;

use super::key_helper::ApiKeyHelper;
use super::retry::RetryPolicy;
use super::transport::{Endpoint, http_client};
use super::{EventStream, ModelRequest, Provider, ProviderError, ToolDefinition};

/// Where the Messages API is when `ANTHROPIC_BASE_URL` is not set.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The model used when neither `--model` nor `ANTHROPIC_MODEL` names one: the current
/// Sonnet alias, the balance of quality, speed and price the reference agent defaults to.
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The API version sent in `anthropic-version`.
const API_VERSION: &str = "2023-06-01";
const NAME: &str = "anthropic";

/// How to reach the Messages API.
#[derive(Clone, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// Sent as `x-api-key` (`ANTHROPIC_API_KEY`).
    pub api_key: Option<String>,
    /// Sent as `Authorization: Bearer …` when there is no API key
    /// (`ANTHROPIC_AUTH_TOKEN`, for gateways that take bearer tokens).
    pub auth_token: Option<String>,
    /// The API root, without `/v1` (`ANTHROPIC_BASE_URL`).
    pub base_url: String,
    /// The model when none is given (`ANTHROPIC_MODEL`, else [`ANTHROPIC_DEFAULT_MODEL`]).
    pub default_model: String,
    /// How transient failures are retried.
    pub retry: RetryPolicy,
    /// Whether to mark cache breakpoints (see the module docs).
    pub prompt_caching: bool,
}

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print credentials.
        f.debug_struct("AnthropicConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("auth_token", &self.auth_token.as_ref().map(|_| "<set>"))
            .field("base_url", &self.base_url)
            .field("default_model", &self.default_model)
            .field("retry", &self.retry)
            .field("prompt_caching", &self.prompt_caching)
            .finish()
    }
}

impl AnthropicConfig {
    /// A configuration for `api_key` at the public endpoint, with defaults elsewhere.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            api_key: Some(api_key.into()),
            auth_token: None,
            base_url: ANTHROPIC_DEFAULT_BASE_URL.to_owned(),
            default_model: ANTHROPIC_DEFAULT_MODEL.to_owned(),
            retry: RetryPolicy::default(),
            prompt_caching: true,
        }
    }

    /// Reads `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`), `ANTHROPIC_BASE_URL`,
    /// `ANTHROPIC_MODEL` and `STRATA_MAX_RETRIES` through `env`; `None` without
    /// credentials.
    pub fn from_env(env: &impl Fn(&str) -> Option<String>) -> Option<Self> {
        let config = Self::endpoint_from_env(env);
        (config.api_key.is_some() || config.auth_token.is_some()).then_some(config)
    }

    /// Like [`Self::from_env`], but also without credentials (they then come from an
    /// [`ApiKeyHelper`], see [`AnthropicProvider::with_key_helper`]).
    pub fn endpoint_from_env(env: &impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        Self {
            api_key: non_empty("ANTHROPIC_API_KEY"),
            auth_token: non_empty("ANTHROPIC_AUTH_TOKEN"),
            base_url: non_empty("ANTHROPIC_BASE_URL")
                .unwrap_or_else(|| ANTHROPIC_DEFAULT_BASE_URL.to_owned()),
            default_model: non_empty("ANTHROPIC_MODEL")
                .unwrap_or_else(|| ANTHROPIC_DEFAULT_MODEL.to_owned()),
            retry: RetryPolicy::from_env(env),
            prompt_caching: true,
        }
    }
}

/// The Messages API provider.
#[derive(Debug)]
pub struct AnthropicProvider {
    config: AnthropicConfig,
    endpoint: Endpoint,
    /// Where the key comes from when the configuration has none (`apiKeyHelper`).
    key_helper: Option<Arc<ApiKeyHelper>>,
}

impl AnthropicProvider {
    /// A provider for `config`. Fails when a credential cannot be sent as a header or the
    /// HTTP client cannot be set up.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let mut headers = HeaderMap::new();
        let header = |value: &str, var: &str| {
            HeaderValue::from_str(value.trim()).map_err(|_| {
                ProviderError::NotConfigured(format!(
                    "{var} contains characters that cannot be sent in an HTTP header; \
                     check its value"
                ))
            })
        };
        if let Some(key) = &config.api_key {
            let mut v = header(key, "ANTHROPIC_API_KEY")?;
            v.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), v);
        } else if let Some(token) = &config.auth_token {
            let mut v = header(&format!("Bearer {}", token.trim()), "ANTHROPIC_AUTH_TOKEN")?;
            v.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, v);
        }
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        let endpoint = Endpoint {
            provider: NAME,
            client: http_client(NAME)?,
            url: format!("{}/v1/messages", config.base_url.trim_end_matches('/')),
            headers,
            policy: config.retry,
            read_error: decode::read_error,
        };
        Ok(Self {
            config,
            endpoint,
            key_helper: None,
        })
    }

    /// A provider for `config` that takes its key from `helper` (`apiKeyHelper`) for every
    /// request, unless `config` has a key or token of its own (those come first, as in
    /// the reference agent).
    pub fn with_key_helper(
        config: AnthropicConfig,
        helper: Arc<ApiKeyHelper>,
    ) -> Result<Self, ProviderError> {
        let has_own = config.api_key.is_some() || config.auth_token.is_some();
        let mut provider = Self::new(config)?;
        if !has_own {
            provider.key_helper = Some(helper);
        }
        Ok(provider)
    }

    /// The configuration in use.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &'static str {
        NAME
    }

    fn api_key_source(&self) -> &'static str {
        if self.config.api_key.is_some() {
            "ANTHROPIC_API_KEY"
        } else if self.config.auth_token.is_some() {
            "ANTHROPIC_AUTH_TOKEN"
        } else if self.key_helper.is_some() {
            "apiKeyHelper"
        } else {
            "none"
        }
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let body = request_body(request, self.config.prompt_caching);
        let Some(helper) = self.key_helper.clone() else {
            return self
                .endpoint
                .stream(body, decode::AnthropicDecoder::default, cancel);
        };
        // The key first (cached, or the helper's output), then the request with it.
        let endpoint = self.endpoint.clone();
        let stream = futures::stream::once(async move {
            match helper.headers(&cancel).await {
                Ok(auth) => {
                    let rejected = helper.clone();
                    endpoint
                        .with_headers(auth)
                        .stream(body, decode::AnthropicDecoder::default, cancel)
                        .inspect(move |event| {
                            // A rotated or revoked key: fetch a new one for the next request.
                            if let Err(ProviderError::Api {
                                status: Some(401), ..
                            }) = event
                            {
                                rejected.clear_cache();
                            }
                        })
                        .boxed()
                }
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten();
        Box::pin(stream)
    }

    fn default_model(&self) -> Option<&str> {
        Some(&self.config.default_model)
    }
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Value>,
    messages: wire::Messages<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    stream: bool,
}

/// The JSON body of a streamed Messages API request.
///
/// `max_tokens` counts thinking tokens too (the API's rule): when it does not exceed the
/// thinking budget, the budget is added to it so the answer has room. The model alias,
/// `max_tokens` and thinking are fitted to what the model accepts (`models`).
pub(crate) fn request_body(
    mut request: ModelRequest,
    caching: bool,
) -> Result<Vec<u8>, ProviderError> {
    // Messages are shared with the app state, and a resumed conversation is tens of
    // megabytes: the ones that need cleaning (a tool use's `caller`, someone else's
    // `cache_control`) are cleaned while they are written (`wire`), not copied. Only the
    // last message, which gets the breakpoint, is cleaned in place (and so copied).
    if let Some(last) = request.messages.last_mut()
        && needs_cleaning(last, caching)
        && let MessageContent::Blocks(blocks) = &mut Arc::make_mut(last).content
    {
        for block in blocks {
            if let ContentBlock::ToolUse(t) = block {
                t.caller = None;
            }
            if caching && let Some(extra) = block_extra(block) {
                extra.remove("cache_control");
            }
        }
    }
    let ephemeral = || json!({"type": "ephemeral"});
    if caching {
        mark_last_block(&mut request.messages, ephemeral());
    }
    let system = (!request.system.is_empty()).then(|| {
        let mut block = json!({"type": "text", "text": request.system});
        if caching {
            block["cache_control"] = ephemeral();
        }
        Value::Array(vec![block])
    });
    let mut tools: Vec<Value> = request.tools.iter().map(tool_json).collect();
    if caching && let Some(last) = tools.last_mut() {
        last["cache_control"] = ephemeral();
    }
    // Fitted to the model: an alias becomes its model, and a model that cannot think or
    // has a lower output limit gets a request it accepts (see `models`).
    let model = models::resolve_alias(&request.model);
    let limits = models::limits(&model);
    let mut max_tokens = request.max_tokens.min(limits.max_output_tokens);
    let budget = request.thinking_budget.filter(|_| limits.thinking);
    let thinking = budget.map(|budget| {
        if max_tokens <= budget {
            max_tokens = budget.saturating_add(max_tokens);
        }
        json!({"type": "enabled", "budget_tokens": budget})
    });
    let body = Body {
        model: &model,
        max_tokens,
        system,
        messages: wire::Messages {
            messages: &request.messages,
            caching,
        },
        tools,
        thinking,
        stream: true,
    };
    super::transport::json_body(&body).map_err(|e| ProviderError::Protocol {
        provider: NAME,
        message: format!("cannot encode the request: {e}"),
    })
}

fn tool_json(tool: &ToolDefinition) -> Value {
    if let Some(server) = &tool.server {
        return server_tool_json(server);
    }
    json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
    })
}

/// A server tool as the Messages API takes it (`{"type": "web_search_20250305",
/// "name": "web_search", …}`); empty lists are left out.
fn server_tool_json(tool: &super::ServerTool) -> Value {
    match tool {
        super::ServerTool::WebSearch(spec) => {
            let mut v = json!({"type": "web_search_20250305", "name": tool.name()});
            if let Some(max) = spec.max_uses {
                v["max_uses"] = json!(max);
            }
            if !spec.allowed_domains.is_empty() {
                v["allowed_domains"] = json!(spec.allowed_domains);
            }
            if !spec.blocked_domains.is_empty() {
                v["blocked_domains"] = json!(spec.blocked_domains);
            }
            v
        }
    }
}

/// The unknown-field map of a block that accepts `cache_control`.
/// Whether `message` holds a tool use's `caller` (never sent to the model) or, when
/// strata places its own cache breakpoints, a `cache_control` from elsewhere.
pub(super) fn needs_cleaning(message: &Message, caching: bool) -> bool {
    let MessageContent::Blocks(blocks) = &message.content else {
        return false;
    };
    blocks.iter().any(|block| {
        let extra = match block {
            ContentBlock::ToolUse(t) if t.caller.is_some() => return true,
            ContentBlock::Text(b) => &b.extra,
            ContentBlock::ToolUse(b) => &b.extra,
            ContentBlock::ToolResult(b) => &b.extra,
            ContentBlock::Image(b) => &b.extra,
            ContentBlock::Thinking(_)
            | ContentBlock::RedactedThinking(_)
            | ContentBlock::Unknown(_) => {
                return false;
            }
        };
        caching && extra.contains_key("cache_control")
    })
}

pub(super) fn block_extra(block: &mut ContentBlock) -> Option<&mut Map<String, Value>> {
    match block {
        ContentBlock::Text(b) => Some(&mut b.extra),
        ContentBlock::ToolUse(b) => Some(&mut b.extra),
        ContentBlock::ToolResult(b) => Some(&mut b.extra),
        ContentBlock::Image(b) => Some(&mut b.extra),
        // Thinking blocks cannot carry a breakpoint; unknown blocks are sent as read.
        ContentBlock::Thinking(_)
        | ContentBlock::RedactedThinking(_)
        | ContentBlock::Unknown(_) => None,
    }
}

/// Marks the last cacheable block of the last message as a cache breakpoint.
fn mark_last_block(messages: &mut [Arc<Message>], marker: Value) {
    let Some(last) = messages.last_mut() else {
        return;
    };
    let last = Arc::make_mut(last);
    if let MessageContent::Text(text) = &last.content {
        if text.is_empty() {
            return;
        }
        last.content = MessageContent::Blocks(vec![ContentBlock::text(text.clone())]);
    }
    if let MessageContent::Blocks(blocks) = &mut last.content
        && let Some(extra) = blocks.iter_mut().rev().find_map(block_extra)
    {
        extra.insert("cache_control".into(), marker);
    }
}

#[cfg(test)]
mod tests;
