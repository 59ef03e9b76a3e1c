//! What the mock server answers: [`MockResponse`], and [`Gate`] for pausing a stream.

use std::sync::Arc;
use std::time::Duration;

use strata_protocol::message::AssistantMessage;
use tokio::sync::watch;

use crate::reply::Reply;

/// One scripted answer, used by the next request that arrives.
///
/// The body is written in the dialect of the request's path (`…/chat/completions` →
/// OpenAI, anything else → Anthropic), so the same script works for both providers.
#[derive(Debug, Clone)]
pub struct MockResponse {
    pub(crate) kind: Kind,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) pause: Option<(usize, Gate)>,
    pub(crate) cut: Option<Cut>,
    pub(crate) write_size: Option<usize>,
    pub(crate) delay: Option<Duration>,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// Stream this message as SSE.
    Message(Box<AssistantMessage>),
    /// An error status with the dialect's error body.
    Status {
        status: u16,
        kind: String,
        message: String,
    },
    /// Exactly this SSE body, status 200.
    RawSse(String),
}

/// How a stream ends early.
#[derive(Debug, Clone)]
pub(crate) enum Cut {
    /// After `after` events, an error event, then the body ends.
    Error {
        after: usize,
        kind: String,
        message: String,
    },
    /// After `after` events, the connection closes without ending the body.
    Disconnect { after: usize },
}

impl MockResponse {
    fn with_kind(kind: Kind) -> Self {
        Self {
            kind,
            headers: Vec::new(),
            pause: None,
            cut: None,
            write_size: None,
            delay: None,
        }
    }

    /// Streams `message` (see [`crate::render`] for the exact events).
    pub fn message(message: impl Into<AssistantMessage>) -> Self {
        Self::with_kind(Kind::Message(Box::new(message.into())))
    }

    /// Streams a reply holding one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::message(Reply::new().text(text))
    }

    /// Answers with `status` and an error body of the dialect: Anthropic
    /// `{"type":"error","error":{"type":kind,"message":…}}`, OpenAI
    /// `{"error":{"message":…,"type":kind}}`.
    pub fn error(status: u16, kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self::with_kind(Kind::Status {
            status,
            kind: kind.into(),
            message: message.into(),
        })
    }

    /// HTTP 529 `overloaded_error`, as the Messages API answers when overloaded.
    pub fn overloaded() -> Self {
        Self::error(529, "overloaded_error", "Overloaded")
    }

    /// HTTP 429 `rate_limit_error` with `retry-after: <seconds>`.
    pub fn rate_limited(retry_after_secs: u32) -> Self {
        Self::error(429, "rate_limit_error", "Rate limited")
            .header("retry-after", retry_after_secs.to_string())
    }

    /// Sends `body` as the SSE body, byte for byte (for protocol edge cases).
    pub fn raw_sse(body: impl Into<String>) -> Self {
        Self::with_kind(Kind::RawSse(body.into()))
    }

    /// Adds a response header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Stops after `events` events until `gate` is released ([`Gate::reached`] tells the
    /// test the server got there).
    pub fn pause_after(mut self, events: usize, gate: &Gate) -> Self {
        self.pause = Some((events, gate.clone()));
        self
    }

    /// Sends an error event after `events` events and ends the body (a failure
    /// mid-stream): Anthropic `event: error`, OpenAI a `{"error":…}` chunk.
    pub fn error_after(
        mut self,
        events: usize,
        kind: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        self.cut = Some(Cut::Error {
            after: events,
            kind: kind.into(),
            message: message.into(),
        });
        self
    }

    /// Closes the connection after `events` events without ending the body.
    pub fn disconnect_after(mut self, events: usize) -> Self {
        self.cut = Some(Cut::Disconnect { after: events });
        self
    }

    /// Writes the body in pieces of at most `bytes` bytes, each flushed on its own, so
    /// events and even UTF-8 characters are split across reads.
    pub fn write_size(mut self, bytes: usize) -> Self {
        self.write_size = Some(bytes.max(1));
        self
    }

    /// Waits this long before answering.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

/// A point where a scripted stream waits for the test (see [`MockResponse::pause_after`]).
///
/// Clones share the gate.
#[derive(Debug, Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

#[derive(Debug)]
struct GateInner {
    reached: watch::Sender<bool>,
    released: watch::Sender<bool>,
    client_gone: watch::Sender<bool>,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(GateInner {
                reached: watch::Sender::new(false),
                released: watch::Sender::new(false),
                client_gone: watch::Sender::new(false),
            }),
        }
    }

    /// Waits until a stream stopped at this gate.
    pub async fn reached(&self) {
        let mut rx = self.inner.reached.subscribe();
        // The sender lives in `self`, so waiting cannot fail.
        let _ = rx.wait_for(|v| *v).await;
    }

    /// Lets the stream go on.
    pub fn release(&self) {
        self.inner.released.send_replace(true);
    }

    /// Waits until the client closed the connection while the stream was stopped here
    /// (what a cancelled request does).
    pub async fn client_gone(&self) {
        let mut rx = self.inner.client_gone.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }

    /// Whether the client closed the connection while the stream was stopped here.
    pub fn is_client_gone(&self) -> bool {
        *self.inner.client_gone.borrow()
    }

    pub(crate) fn mark_reached(&self) {
        self.inner.reached.send_replace(true);
    }

    pub(crate) fn mark_client_gone(&self) {
        self.inner.client_gone.send_replace(true);
    }

    pub(crate) async fn released(&self) {
        let mut rx = self.inner.released.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }
}
