//! The legacy HTTP+SSE transport of MCP (protocol version 2024-11-05), as an `rmcp`
//! [`Transport`]: `rmcp` 3 has a client for streamable HTTP only, and servers configured
//! with `"type": "sse"` (many older ones, and the reference agent's configs) speak this.
//!
//! The client opens the server-sent events stream with a GET of the configured URL. The
//! server's first event, `endpoint`, gives the URL (usually relative, with a session id)
//! to which every client message is POSTed as JSON; the server answers a POST with
//! `202 Accepted` and sends responses, requests and notifications as `message` events on
//! the stream. A reader task turns those events into messages for the SDK; when the
//! stream ends the transport's [`Transport::receive`] returns `None`, the SDK's service
//! stops, and the connection manager reconnects as it does for every transport.
//!
//! The POST endpoint must be on the server's own origin (scheme, host and port): a
//! stream that names another host is refused, so a server cannot make the client send
//! the configured headers (credentials) elsewhere.

use std::borrow::Cow;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use reqwest::{StatusCode, Url};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use sse_stream::SseStream;
use tokio::sync::mpsc;

/// How many messages from the server wait for the SDK before the reader waits too.
const INCOMING_BUFFER: usize = 64;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// The configured URL is not a URL.
    #[error("{url:?} is not a valid URL: {reason}")]
    BadUrl {
        /// The URL as configured.
        url: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The request could not be made or its response read.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with an error status.
    #[error("the server answered {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Status {
        /// The status.
        status: StatusCode,
        /// The start of the body.
        body: String,
    },
    /// The stream ended or failed before the server named its message endpoint.
    #[error("the event stream ended before the server sent its `endpoint` event")]
    NoEndpoint,
    /// The endpoint event named a URL that cannot be used.
    #[error("the server's message endpoint {endpoint:?} {reason}")]
    BadEndpoint {
        /// The endpoint as sent.
        endpoint: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl SseError {
    /// True when the server asks for authorization (401).
    pub fn needs_auth(&self) -> bool {
        matches!(self, Self::Status { status, .. } if *status == StatusCode::UNAUTHORIZED)
    }
}

/// A client connection over HTTP+SSE.
pub struct SseTransport {
    client: reqwest::Client,
    post_url: Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport")
            .field("post_url", &self.post_url.as_str())
            .finish_non_exhaustive()
    }
}

impl SseTransport {
    /// Opens the event stream at `url` with `headers` (sent with every request) and waits
    /// for the server's `endpoint` event, at most `timeout`.
    pub async fn connect(
        url: &str,
        headers: HeaderMap,
        timeout: Duration,
    ) -> Result<Self, SseError> {
        let base = Url::parse(url).map_err(|e| SseError::BadUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        // No overall timeout: the stream lives as long as the connection.
        let client = reqwest::Client::builder()
            .connect_timeout(timeout)
            .build()?;
        let response = client
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await?;
        let response = check_status(response).await?;
        let mut events = SseStream::from_bytes_stream(response.bytes_stream());
        let endpoint = tokio::time::timeout(timeout, async {
            while let Some(event) = events.next().await {
                let Ok(event) = event else {
                    return None;
                };
                if event.event.as_deref() == Some("endpoint") {
                    return Some(event.data.unwrap_or_default());
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .ok_or(SseError::NoEndpoint)?;
        let post_url = endpoint_url(&base, endpoint.trim())?;
        let (tx, incoming) = mpsc::channel(INCOMING_BUFFER);
        let reader = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        tracing::debug!("MCP SSE stream failed: {e}");
                        break;
                    }
                };
                if !matches!(event.event.as_deref(), None | Some("message")) {
                    continue;
                }
                let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                    continue;
                };
                match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!("an MCP server sent a message that is not JSON-RPC: {e}")
                    }
                }
            }
        });
        Ok(Self {
            client,
            post_url,
            headers,
            incoming,
            reader,
        })
    }

    /// Where client messages are POSTed.
    pub fn post_url(&self) -> &Url {
        &self.post_url
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The endpoint event's URL resolved against the stream's, on the same origin.
fn endpoint_url(base: &Url, endpoint: &str) -> Result<Url, SseError> {
    let bad = |reason| SseError::BadEndpoint {
        endpoint: endpoint.to_owned(),
        reason,
    };
    if endpoint.is_empty() {
        return Err(bad("is empty"));
    }
    let url = base.join(endpoint).map_err(|_| bad("is not a URL"))?;
    if url.origin() != base.origin() {
        return Err(bad(
            "is on another origin than the event stream; messages are only sent to the server \
             that was configured",
        ));
    }
    Ok(url)
}

/// The response, or its status as an error (with the body's start).
async fn check_status(response: reqwest::Response) -> Result<reqwest::Response, SseError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = response.text().await.unwrap_or_default();
    let body: String = body.trim().chars().take(300).collect();
    Err(SseError::Status { status, body })
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("sse")
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.post_url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .json(&item);
        async move {
            check_status(request.send().await?).await?;
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_resolves_against_the_stream_url_on_its_origin_only() {
        let base = Url::parse("http://127.0.0.1:3001/sse").unwrap_or_else(|e| panic!("{e}"));
        let url = endpoint_url(&base, "/message?sessionId=abc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(url.as_str(), "http://127.0.0.1:3001/message?sessionId=abc");
        let url = endpoint_url(&base, "messages/1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(url.as_str(), "http://127.0.0.1:3001/messages/1");
        for other in [
            "http://evil.example/message",
            "http://127.0.0.1:3002/m",
            "https://127.0.0.1:3001/m",
        ] {
            let e = endpoint_url(&base, other).unwrap_err();
            assert!(e.to_string().contains("another origin"), "{other}: {e}");
        }
        assert!(endpoint_url(&base, "").is_err());
    }
}
