//! The HTTP side shared by the streaming providers: send a JSON request, retry transient
//! failures, read the server-sent events, and turn them into [`StreamEvent`]s through a
//! provider-specific [`WireDecoder`].
//!
//! Retrying is transparent only while the consumer has seen nothing of the response. To
//! stretch that window, `message_start` and `ping` events are held back until the first
//! content event (or the end of the response): the Messages API often reports overload as
//! an `error` event right after `message_start`, and such a response is retried like a
//! 529 status. Once content has been released, an error ends the stream.
//!
//! Cancellation is checked while connecting, while waiting between retries and while
//! waiting for each chunk of the body, so a cancelled turn ends within one poll, and
//! dropping the stream closes the connection.

use std::collections::VecDeque;
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

use super::retry::{RetryPolicy, retry_after};
use super::sse::{SseEvent, SseParser};
use super::{EventStream, ProviderError, StreamEvent};

/// Error bodies larger than this are cut (they are read only for their message).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// How long a connection attempt may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the body may stay silent (both APIs send pings well within it).
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// Builds the HTTP client a provider keeps for its lifetime (connections are pooled).
///
/// Kept cheap, since it is built on the way to the first request: no system certificate
/// store is loaded (the bundled web PKI roots are), no DNS resolver is started up front.
pub(crate) fn http_client(provider: &'static str) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .user_agent(concat!("strata/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| ProviderError::Transport {
            provider,
            message: format!("cannot set up the HTTP client: {}", error_chain(&e)),
        })
}

/// Turns one provider's server-sent events into stream events.
pub(crate) trait WireDecoder: Send + 'static {
    /// Decodes one event, appending what it means to `out`.
    fn event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError>;

    /// The body ended: append what is pending, or fail if the response is incomplete.
    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError>;

    /// Whether the response is complete (the rest of the body is not read).
    fn is_done(&self) -> bool;
}

/// Reads an error response: the provider's error shape, status and headers.
pub(crate) type ErrorReader = fn(status: u16, headers: &HeaderMap, body: &[u8]) -> ProviderError;

/// One request to send (and resend on retries).
pub(crate) struct HttpCall {
    /// Which provider, for errors.
    pub(crate) provider: &'static str,
    /// The client (shared connection pool).
    pub(crate) client: reqwest::Client,
    /// Where to POST.
    pub(crate) url: String,
    /// Authentication and protocol headers (content type is added here).
    pub(crate) headers: HeaderMap,
    /// The JSON body. Shared, not copied, by every attempt: a resumed session's request
    /// can be tens of megabytes, and a `Vec` given to each send would be a copy each.
    pub(crate) body: bytes::Bytes,
    /// How to retry.
    pub(crate) policy: RetryPolicy,
    /// How to read an error response.
    pub(crate) read_error: ErrorReader,
}

/// Where one provider sends its requests, and how: everything of an [`HttpCall`] but the
/// body, made once when the provider is set up.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// Which provider, for errors.
    pub(crate) provider: &'static str,
    /// The client (shared connection pool).
    pub(crate) client: reqwest::Client,
    /// Where to POST.
    pub(crate) url: String,
    /// Authentication and protocol headers.
    pub(crate) headers: HeaderMap,
    /// How to retry.
    pub(crate) policy: RetryPolicy,
    /// How to read an error response.
    pub(crate) read_error: ErrorReader,
}

impl Endpoint {
    /// This endpoint with `extra` headers added (credentials fetched per request).
    pub(crate) fn with_headers(mut self, extra: HeaderMap) -> Self {
        self.headers.extend(extra);
        self
    }

    /// Sends `body` (or reports the error that stopped it being built) and streams the
    /// response through a decoder made by `decoder`.
    pub(crate) fn stream<D: WireDecoder>(
        &self,
        body: Result<Vec<u8>, ProviderError>,
        decoder: fn() -> D,
        cancel: CancellationToken,
    ) -> EventStream {
        let body = match body {
            Ok(body) => body,
            Err(e) => return Box::pin(futures::stream::once(async move { Err(e) })),
        };
        let call = HttpCall {
            provider: self.provider,
            client: self.client.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            // Takes the buffer over (no copy).
            body: bytes::Bytes::from(body),
            policy: self.policy,
            read_error: self.read_error,
        };
        sse_stream(call, decoder, cancel)
    }
}

/// Address space reserved for a request body before it is written.
///
/// A resumed session's first request can be tens of megabytes (28 MB for a 100 MB
/// transcript). A buffer that starts small doubles as it fills; once the allocator
/// serves such sizes from its heap (glibc does after large blocks were freed, e.g. the
/// resume scratch, which raises its mmap threshold up to 32 MiB), each doubling copies,
/// and the old half stays resident beside the new buffer: 45 MB of peak for a 28 MB
/// body. A reservation above every mmap threshold is mapped on its own: its pages cost
/// memory only once written, and growing past it is a remap, not a copy. (Measured with
/// `strata-bench headless --only resume`.)
const BODY_RESERVE: usize = 64 << 20;

/// `value` as a JSON request body (see [`BODY_RESERVE`]).
pub(crate) fn json_body<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(BODY_RESERVE);
    serde_json::to_writer(&mut out, value)?;
    Ok(out)
}

/// Sends `call` and streams its response through a decoder made by `decoder`.
pub(crate) fn sse_stream<D: WireDecoder>(
    call: HttpCall,
    decoder: fn() -> D,
    cancel: CancellationToken,
) -> EventStream {
    let driver = Driver {
        call,
        make_decoder: decoder,
        cancel,
        retries: 0,
        phase: Phase::Connect,
        ready: VecDeque::new(),
        held: Vec::new(),
        committed: false,
        failure: None,
    };
    Box::pin(futures::stream::unfold(driver, |mut d| async move {
        d.next().await.map(|item| (item, d))
    }))
}

enum Phase<D> {
    Connect,
    // Boxed: a driver lives in every stream, mostly in the small states.
    Body(Box<Body<D>>),
    Done,
}

struct Body<D> {
    response: reqwest::Response,
    parser: SseParser,
    decoder: D,
}

struct Driver<D> {
    call: HttpCall,
    make_decoder: fn() -> D,
    cancel: CancellationToken,
    /// Retries made so far.
    retries: u32,
    phase: Phase<D>,
    /// Events released to the consumer, not yet taken.
    ready: VecDeque<StreamEvent>,
    /// `message_start` and pings decoded before any content (see the module docs).
    held: Vec<StreamEvent>,
    /// Whether content was released (no transparent retry after that).
    committed: bool,
    /// The error that ended the stream, reported once `ready` is drained.
    failure: Option<ProviderError>,
}

/// What to do after a failure.
enum Next {
    Retry,
    Fail(ProviderError),
}

impl<D: WireDecoder> Driver<D> {
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            if let Some(e) = self.failure.take() {
                return Some(Err(e));
            }
            if matches!(self.phase, Phase::Done) {
                return None;
            }
            if self.cancel.is_cancelled() {
                self.phase = Phase::Done;
                return Some(Err(ProviderError::Cancelled));
            }
            let step = match &mut self.phase {
                Phase::Done => return None,
                Phase::Connect => match self.connect().await {
                    Ok(response) => {
                        self.phase = Phase::Body(Box::new(Body {
                            response,
                            parser: SseParser::new(),
                            decoder: (self.make_decoder)(),
                        }));
                        Ok(())
                    }
                    Err(e) => Err(Next::Fail(e)),
                },
                Phase::Body(body) => {
                    let Body {
                        response,
                        parser,
                        decoder,
                    } = &mut **body;
                    let chunk = tokio::select! {
                        biased;
                        () = self.cancel.cancelled() => Err(ProviderError::Cancelled),
                        chunk = response.chunk() => chunk.map_err(|e| ProviderError::Transport {
                            provider: self.call.provider,
                            message: format!("the response broke off: {}", error_chain(&e)),
                        }),
                    };
                    let mut sse = Vec::new();
                    let mut decoded = Vec::new();
                    let result = match chunk {
                        Ok(Some(bytes)) => {
                            parser.feed(&bytes, &mut sse);
                            decode_all(decoder, sse, &mut decoded).map(|()| false)
                        }
                        Ok(None) => {
                            parser.finish(&mut sse);
                            decode_all(decoder, sse, &mut decoded)
                                .and_then(|()| decoder.end(&mut decoded))
                                .map(|()| true)
                        }
                        Err(e) => Err(e),
                    };
                    match result {
                        Ok(ended) => {
                            let done = ended || decoder.is_done();
                            self.release(decoded, done);
                            if done {
                                self.phase = Phase::Done;
                            }
                            Ok(())
                        }
                        Err(e) => {
                            // Whatever decoded before the error in this chunk is content
                            // the consumer may act on; release it, then report.
                            self.release(decoded, false);
                            Err(self.after_failure(e))
                        }
                    }
                }
            };
            match step {
                Ok(()) => {}
                Err(Next::Retry) => {
                    if let Err(e) = self.wait_before_retry(None).await {
                        self.phase = Phase::Done;
                        return Some(Err(e));
                    }
                    self.held.clear();
                    self.phase = Phase::Connect;
                }
                Err(Next::Fail(e)) => {
                    // Events released before the failure go out first, then the error.
                    self.phase = Phase::Done;
                    self.failure = Some(e);
                }
            }
        }
    }

    /// Moves decoded events to the consumer, holding back `message_start` and pings
    /// until content arrives or the response is `done`.
    fn release(&mut self, decoded: Vec<StreamEvent>, done: bool) {
        for event in decoded {
            if !self.committed
                && matches!(event, StreamEvent::MessageStart { .. } | StreamEvent::Ping)
            {
                self.held.push(event);
                continue;
            }
            if !self.committed {
                self.committed = true;
                self.ready.extend(self.held.drain(..));
            }
            self.ready.push_back(event);
        }
        if done {
            self.committed = true;
            self.ready.extend(self.held.drain(..));
        }
    }

    /// Whether a failure while reading the body is retried.
    fn after_failure(&mut self, error: ProviderError) -> Next {
        if !self.committed
            && error.is_retryable()
            && self.retries < self.call.policy.max_retries
            && !matches!(error, ProviderError::Cancelled)
        {
            tracing::warn!(
                provider = self.call.provider,
                "{error}; retrying (retry {} of {})",
                self.retries + 1,
                self.call.policy.max_retries
            );
            Next::Retry
        } else {
            Next::Fail(error)
        }
    }

    /// Sends the request until a success status, retrying what is retryable.
    async fn connect(&mut self) -> Result<reqwest::Response, ProviderError> {
        loop {
            let request = self
                .call
                .client
                .post(&self.call.url)
                .headers(self.call.headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .body(self.call.body.clone());
            let sent = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Err(ProviderError::Cancelled),
                sent = request.send() => sent,
            };
            let (error, wait) = match sent {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let headers = response.headers().clone();
                    let body = tokio::select! {
                        biased;
                        () = self.cancel.cancelled() => return Err(ProviderError::Cancelled),
                        body = read_capped(response) => body,
                    };
                    let error = (self.call.read_error)(status, &headers, &body);
                    (error, retry_after(&headers))
                }
                Err(e) => (
                    ProviderError::Transport {
                        provider: self.call.provider,
                        message: error_chain(&e),
                    },
                    None,
                ),
            };
            if !error.is_retryable() || self.retries >= self.call.policy.max_retries {
                return Err(error);
            }
            tracing::warn!(
                provider = self.call.provider,
                "{error}; retrying (retry {} of {})",
                self.retries + 1,
                self.call.policy.max_retries
            );
            self.wait_before_retry(wait).await?;
        }
    }

    /// Counts a retry and sleeps its delay; cancellation ends the wait at once.
    async fn wait_before_retry(
        &mut self,
        retry_after: Option<Duration>,
    ) -> Result<(), ProviderError> {
        self.retries += 1;
        let delay = self.call.policy.delay(self.retries, retry_after);
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(ProviderError::Cancelled),
            () = tokio::time::sleep(delay) => Ok(()),
        }
    }
}

fn decode_all<D: WireDecoder>(
    decoder: &mut D,
    events: Vec<SseEvent>,
    out: &mut Vec<StreamEvent>,
) -> Result<(), ProviderError> {
    for event in events {
        if decoder.is_done() {
            break;
        }
        decoder.event(event, out)?;
    }
    Ok(())
}

/// Reads an error body, keeping at most [`MAX_ERROR_BODY`] bytes.
async fn read_capped(mut response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            break;
        }
    }
    body
}

/// An error with its causes, `outer: inner: innermost` (reqwest's own message names the
/// URL but not why, e.g. "connection refused").
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// The text of an error body for a message: trimmed, cut to 500 characters.
pub(crate) fn body_excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.chars().count() > 500 {
        let cut: String = text.chars().take(500).collect();
        format!("{cut}…")
    } else {
        text.to_owned()
    }
}
