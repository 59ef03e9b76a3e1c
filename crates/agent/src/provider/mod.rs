//! Model providers behind one streaming trait.
//!
//! The query loop does not care which service answers: it sends a [`ModelRequest`] and
//! consumes a stream of [`StreamEvent`]s shaped like the Anthropic Messages API's
//! server-sent events (the richest of the supported protocols: text, thinking with
//! signatures, tool use, usage). Each provider maps its wire protocol onto these events;
//! [`MessageAccumulator`] turns the events into the final [`AssistantMessage`], and hands
//! out each content block as it completes (the transcript gets one line per block).
//!
//! - [`AnthropicProvider`]: the Messages API over SSE (`ANTHROPIC_API_KEY`,
//!   `ANTHROPIC_BASE_URL`).
//! - [`OpenAiProvider`]: OpenAI-compatible chat completions over SSE (`OPENAI_API_KEY`,
//!   `OPENAI_BASE_URL`), which llama.cpp, Ollama and vLLM also speak.
//! - [`ReplayProvider`]: plays back the responses recorded in a transcript, offline.
//! - [`FallbackProvider`]: `--fallback-model`, another model once when the first is
//!   overloaded or unavailable.
//! - [`select_provider`]: which of them `--provider` and the environment ask for
//!   ([`select_provider_with_key_helper`] adds the settings' `apiKeyHelper`,
//!   [`ApiKeyHelper`]).
//!
//! Providers own retries of transient failures (429, 5xx, `overloaded_error`) before any
//! content is yielded ([`RetryPolicy`]); once content has streamed, an error ends the
//! stream and the query loop decides what to do.
//!
//! Using it (the query loop):
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use futures::StreamExt;
//! # use strata_agent::provider::*;
//! # async fn turn(provider: Arc<dyn Provider>, request: ModelRequest) -> Result<(), Box<dyn std::error::Error>> {
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let mut events = provider.stream(request, cancel.child_token());
//! let mut acc = MessageAccumulator::new();
//! while let Some(event) = events.next().await {
//!     let event = event?; // Cancelled, Api, Transport, Protocol, Replay
//!     // (forward text deltas to the UI here)
//!     if let Some(done) = acc.push(&event)? {
//!         let line = acc.line_message(&done.block); // one transcript line per block
//!         # let _ = line;
//!     }
//! }
//! let message: AssistantMessage = acc.finish()?; // all blocks, stop reason, final usage
//! # let _ = message; Ok(()) }
//! ```

mod accumulator;
mod anthropic;
mod fallback;
mod key_helper;
mod openai;
mod replay;
mod retry;
mod select;
pub mod sse;
mod transport;

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use serde_json::Value;
use strata_protocol::message::{ContentBlock, Message, StopReason, Usage};
use tokio_util::sync::CancellationToken;

pub use accumulator::{AccumulatorError, CompletedBlock, MessageAccumulator};
pub use anthropic::{
    ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MODEL, AnthropicConfig, AnthropicProvider,
};
pub use fallback::{FallbackProvider, model_unavailable};
pub use key_helper::{ApiKeyHelper, HELPER_TIMEOUT};
pub use openai::{OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_MODEL, OpenAiConfig, OpenAiProvider};
pub use replay::ReplayProvider;
pub use retry::RetryPolicy;
pub use select::{ProviderChoice, select_provider, select_provider_with_key_helper};
pub use strata_protocol::message::AssistantMessage;

/// One request to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The model name as the provider knows it.
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The conversation so far, alternating user and assistant messages. Shared with the
    /// app state: building a request copies pointers, not a long conversation.
    pub messages: Vec<Arc<Message>>,
    /// The tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// The maximum number of tokens to generate.
    pub max_tokens: u32,
    /// Extended thinking budget in tokens, when thinking is enabled.
    pub thinking_budget: Option<u32>,
}

/// A tool as the model sees it.
///
/// Most tools are strata's own: the model calls them by `name` with an input matching
/// `input_schema`, and strata runs them. A tool with [`ToolDefinition::server`] set is
/// run by the model service itself (the Anthropic API's web search): the provider that
/// has it sends its own spec, a provider that has not leaves it out.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool's name (`Bash`, `Read`, …; `web_search` for the server tool).
    pub name: String,
    /// What it does and how to use it (empty for a server tool: the service knows).
    pub description: String,
    /// The JSON schema of its input object (empty for a server tool).
    pub input_schema: Value,
    /// `Some` for a tool the model service runs; `None` for ours.
    pub server: Option<ServerTool>,
}

impl ToolDefinition {
    /// One of strata's tools.
    pub fn function(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            server: None,
        }
    }

    /// A tool the model service runs itself.
    pub fn server_tool(tool: ServerTool) -> Self {
        Self {
            name: tool.name().to_owned(),
            description: String::new(),
            input_schema: Value::Null,
            server: Some(tool),
        }
    }
}

/// A tool the model service runs itself. Only the Anthropic Messages API has them; the
/// OpenAI-compatible provider leaves them out of its requests (chat-completions servers
/// have no such tool; strata's own callers refuse before they ask for one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTool {
    /// The Anthropic API's web search (`web_search_20250305`).
    WebSearch(WebSearchSpec),
}

impl ServerTool {
    /// The name the model calls it by.
    pub fn name(&self) -> &'static str {
        match self {
            Self::WebSearch(_) => "web_search",
        }
    }
}

/// The settings of the server-side web search, as the API takes them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WebSearchSpec {
    /// The most searches the model may run in the request.
    pub max_uses: Option<u32>,
    /// Only results from these domains (empty: any).
    pub allowed_domains: Vec<String>,
    /// Never results from these domains.
    pub blocked_domains: Vec<String>,
}

/// One event of a streamed model response (the Messages API's SSE events).
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The response began: its id, model and initial usage.
    MessageStart {
        /// The response id (`msg_…`).
        id: String,
        /// The model that answers.
        model: String,
        /// Usage known at the start (input and cache tokens).
        usage: Usage,
    },
    /// A content block began at `index` (text and thinking start empty; tool use starts
    /// with an empty input that deltas fill).
    ContentBlockStart {
        /// The block's position in the response.
        index: usize,
        /// The block as it starts.
        block: ContentBlock,
    },
    /// More of the block at `index`.
    ContentBlockDelta {
        /// The block's position.
        index: usize,
        /// What to append.
        delta: BlockDelta,
    },
    /// The block at `index` is complete.
    ContentBlockStop {
        /// The block's position.
        index: usize,
    },
    /// Response-level changes: why it stopped, final usage.
    MessageDelta {
        /// Why generation stopped.
        stop_reason: Option<StopReason>,
        /// Usage reported at the end (output tokens are final here).
        usage: Option<Usage>,
    },
    /// The response is complete.
    MessageStop,
    /// Keep-alive; carries nothing.
    Ping,
}

/// An addition to a content block.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockDelta {
    /// Text to append to a text block.
    Text(String),
    /// Text to append to a thinking block.
    Thinking(String),
    /// The thinking block's signature.
    Signature(String),
    /// A fragment of a tool use's input JSON.
    InputJson(String),
    /// A citation to add to a text block's `citations`.
    Citation(Value),
}

/// Why a provider could not produce a (complete) response.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The provider is not configured (no key, no base URL); the message says how to
    /// configure it.
    #[error("{0}")]
    NotConfigured(String),
    /// The API answered with an error status or an `error` event.
    #[error("{provider} API error{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Api {
        /// Which provider.
        provider: &'static str,
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// The error type the API named (`overloaded_error`, `rate_limit_error`, …).
        kind: Option<String>,
        /// The API's message.
        message: String,
        /// Whether retrying could help (429, 5xx, overloaded).
        retryable: bool,
    },
    /// The connection failed or broke.
    #[error("{provider}: connection failed: {message}")]
    Transport {
        /// Which provider.
        provider: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The stream did not follow the protocol (bad JSON, events out of order).
    #[error("{provider}: malformed response: {message}")]
    Protocol {
        /// Which provider.
        provider: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The request was cancelled.
    #[error("request cancelled")]
    Cancelled,
    /// A replayed session ran out of recorded responses, or could not be read.
    #[error("replay: {0}")]
    Replay(String),
    /// The events did not make a valid message (a tool call's input is not JSON, a
    /// block never ended); raised by [`MessageAccumulator`].
    #[error(transparent)]
    InvalidResponse(#[from] AccumulatorError),
}

impl ProviderError {
    /// Whether trying the same request again could succeed (rate limits, overload,
    /// server errors, broken connections). Providers already retried these up to their
    /// [`RetryPolicy`] before any content streamed; the query loop may use this to decide
    /// whether to offer a retry after a stream broke mid-way.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Api { retryable, .. } => *retryable,
            Self::Transport { .. } => true,
            Self::NotConfigured(_)
            | Self::Protocol { .. }
            | Self::Cancelled
            | Self::Replay(_)
            | Self::InvalidResponse(_) => false,
        }
    }
}

/// A stream of response events.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// A model provider.
pub trait Provider: Send + Sync + fmt::Debug {
    /// A short name for messages and the headless `init` line (`anthropic`, `openai`,
    /// `replay`).
    fn name(&self) -> &'static str;

    /// Starts one streamed response. The stream ends after `MessageStop` or with an
    /// error; cancelling `cancel` ends it with [`ProviderError::Cancelled`] promptly,
    /// also while waiting between retries.
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream;

    /// Where the credentials come from, as the headless `init` line's `apiKeySource`
    /// names it (`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, `apiKeyHelper`,
    /// `OPENAI_API_KEY`, or `none`).
    fn api_key_source(&self) -> &'static str {
        "none"
    }

    /// The model used when the user names none (`--model` overrides it): see
    /// [`ANTHROPIC_DEFAULT_MODEL`], [`OPENAI_DEFAULT_MODEL`]; a replay answers with the
    /// model of its first recorded response.
    fn default_model(&self) -> Option<&str> {
        None
    }
}
