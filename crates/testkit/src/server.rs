//! [`MockServer`]: a small HTTP/1.1 server on loopback that answers from a script and
//! records every request.
//!
//! Written on tokio's TCP alone (no HTTP framework): it needs only request heads, bodies
//! with `content-length`, keep-alive, and responses with a fixed length or chunked
//! transfer encoding, and owning the bytes on the wire is what lets a test pause a stream,
//! cut it, or split it into odd pieces.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};

use crate::render::{self, Frame};
use crate::script::{Cut, Kind, MockResponse};
use crate::strict::{self, Api, Violation};

/// A request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// The path with its query (`/v1/messages`).
    pub path: String,
    /// Headers in order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body as received.
    pub body: Vec<u8>,
    /// When the request's head had arrived (for latency measurements).
    pub received_at: Instant,
    /// The strict server's refusal, worded as the real API's error message, when the
    /// request broke one of its rules (see [`crate::strict`]); such a request got a 400
    /// and used no scripted response.
    pub refused: Option<String>,
}

impl RecordedRequest {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body's `messages`, with every `cache_control` mark removed from their
    /// content blocks: the conversation as the test built it. (The Anthropic provider
    /// marks the last block of the last message as a prompt-cache breakpoint, and turns
    /// that message's plain-string content into one text block to carry the mark.)
    pub fn messages(&self) -> Vec<Value> {
        let mut body = self.json();
        let Some(Value::Array(messages)) = body.get_mut("messages").map(Value::take) else {
            return Vec::new();
        };
        messages
            .into_iter()
            .map(|mut m| {
                if let Some(Value::Array(blocks)) = m.get_mut("content") {
                    for b in blocks.iter_mut() {
                        if let Value::Object(b) = b {
                            b.remove("cache_control");
                        }
                    }
                }
                m
            })
            .collect()
    }

    /// The system prompt's text: the Anthropic `system` field (a string or text blocks),
    /// or an OpenAI request's `system` message.
    pub fn system_text(&self) -> String {
        let body = self.json();
        let text_of = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        if let Some(system) = body.get("system") {
            return text_of(system);
        }
        body.get("messages")
            .and_then(Value::as_array)
            .and_then(|m| m.iter().find(|m| m["role"] == "system"))
            .map(|m| text_of(&m["content"]))
            .unwrap_or_default()
    }

    /// The body as text.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether this request was in the OpenAI dialect (its path ends in
    /// `/chat/completions`).
    pub fn is_openai(&self) -> bool {
        self.path
            .split('?')
            .next()
            .is_some_and(|p| p.ends_with("/chat/completions"))
    }
}

/// Which requests a routed response answers.
type RoutePredicate = Box<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;

#[derive(Default)]
struct Shared {
    /// Whether requests the real APIs refuse are refused (see [`crate::strict`]).
    lenient: bool,
    script: Mutex<VecDeque<MockResponse>>,
    /// Responses for requests that match a predicate, tried before the script (agents
    /// running side by side make the order of requests unknowable).
    routes: Mutex<Vec<(RoutePredicate, VecDeque<MockResponse>)>>,
    requests: Mutex<Vec<RecordedRequest>>,
    arrived: Notify,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("script", &lock(&self.script).len())
            .field("routes", &lock(&self.routes).len())
            .field("requests", &lock(&self.requests).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock has failed already; the data is
    // still fine to read.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A scripted model server on `127.0.0.1` (see the crate docs). Dropping it stops it and
/// closes every connection.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockServer {
    /// Starts a strict server on a random loopback port, on the current tokio runtime:
    /// a request the real API would refuse (see [`crate::strict`]) is recorded, answered
    /// with the API's 400 error and uses no scripted response.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(false).await
    }

    /// Starts a server that answers every request from the script, even one the real
    /// API would refuse. A test that uses it must say in a comment why it cannot use
    /// [`MockServer::start`] (say, it checks how strata handles a malformed request the
    /// real API would not even get).
    pub async fn start_lenient() -> std::io::Result<Self> {
        Self::start_with(true).await
    }

    async fn start_with(lenient: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            lenient,
            ..Shared::default()
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Self { addr, shared, task })
    }

    /// The server's root URL, `http://127.0.0.1:<port>`: the value for
    /// `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:<port>/v1`: the value for `OPENAI_BASE_URL`.
    pub fn openai_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a response for the next request that has none yet.
    pub fn push(&self, response: impl Into<MockResponse>) {
        lock(&self.shared.script).push_back(response.into());
    }

    /// Queues several responses, in order.
    pub fn push_all(&self, responses: impl IntoIterator<Item = MockResponse>) {
        lock(&self.shared.script).extend(responses);
    }

    /// Queues `response` for the next request `when` accepts; such routed responses are
    /// tried before the plain queue (requests of agents running side by side arrive in
    /// no fixed order). Responses of one route are served in the order pushed.
    pub fn push_when(
        &self,
        when: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        response: impl Into<MockResponse>,
    ) {
        lock(&self.shared.routes).push((Box::new(when), VecDeque::from([response.into()])));
    }

    /// Queues `response` for the next request whose system prompt contains `needle`.
    pub fn push_for_system(&self, needle: &str, response: impl Into<MockResponse>) {
        let needle = needle.to_owned();
        self.push_when(move |r| r.system_text().contains(&needle), response);
    }

    /// Queues `response` for the next request whose first user message contains
    /// `needle` (a sub-agent's task).
    pub fn push_for_task(&self, needle: &str, response: impl Into<MockResponse>) {
        let needle = needle.to_owned();
        self.push_when(
            move |r| {
                r.messages()
                    .first()
                    .is_some_and(|m| m.to_string().contains(&needle))
            },
            response,
        );
    }

    /// How many queued responses have not been used.
    pub fn pending(&self) -> usize {
        lock(&self.shared.script).len()
            + lock(&self.shared.routes)
                .iter()
                .map(|(_, q)| q.len())
                .sum::<usize>()
    }

    /// Every request received so far, in arrival order (refused ones included).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// The requests the strict server refused, in arrival order.
    pub fn refused(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.refused.is_some())
            .cloned()
            .collect()
    }

    /// Waits until at least `n` requests arrived (or `timeout` passed) and returns them
    /// all.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.arrived.notified();
            let requests = self.requests();
            if requests.len() >= n {
                return requests;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.requests();
            }
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // Aborting the accept task drops its set of connection tasks, which aborts them.
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, shared.clone()));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Serves requests on one connection until the client closes it.
async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    loop {
        let mut request = match read_request(&mut read).await {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => return,
        };
        let close = request
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let openai = request.is_openai();
        // The rules come before the script: a refused request must not use up the
        // response scripted for the request the real API would have answered.
        let violation = (!shared.lenient && request.method == "POST")
            .then(|| Api::of_path(&request.path))
            .flatten()
            .and_then(|api| strict::check(api, &request.body));
        request.refused = violation.as_ref().map(|v| v.message.clone());
        let routed = if violation.is_some() {
            None
        } else {
            let mut routes = lock(&shared.routes);
            routes
                .iter_mut()
                .find(|(when, queue)| !queue.is_empty() && when(&request))
                .and_then(|(_, queue)| queue.pop_front())
        };
        let number = {
            let mut requests = lock(&shared.requests);
            requests.push(request);
            requests.len()
        };
        shared.arrived.notify_waiters();
        if let Some(violation) = violation {
            report_refusal(number, &violation);
            match refuse(&mut write, &violation, openai).await {
                Ok(()) if !close => continue,
                _ => return,
            }
        }
        let response = routed.or_else(|| lock(&shared.script).pop_front());
        let response = response.unwrap_or_else(|| {
            // Not retryable (400), so a client fails at once with this message.
            MockResponse::error(
                400,
                "invalid_request_error",
                format!("strata-testkit: no scripted response left for request {number}"),
            )
        });
        match respond(&mut read, &mut write, response, openai).await {
            Ok(true) if !close => {}
            _ => return,
        }
    }
}

/// Tells the test's output which request was refused and why: the product may report
/// the 400 in words of its own, and a failing test should point at the rule.
#[allow(clippy::print_stderr)] // test output, captured by the test harness
fn report_refusal(number: usize, violation: &Violation) {
    eprintln!(
        "strata-testkit: strict server refused request {number} (as the real API would): {}",
        violation.message
    );
}

/// Answers a refused request with the real API's 400 body.
async fn refuse(
    write: &mut OwnedWriteHalf,
    violation: &Violation,
    openai: bool,
) -> std::io::Result<()> {
    let body = if openai {
        render::openai_invalid_request_body(
            &violation.message,
            violation.param.as_deref(),
            violation.code.as_deref(),
        )
    } else {
        render::anthropic_error_body("invalid_request_error", &violation.message)
    };
    let head = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    write.write_all(head.as_bytes()).await?;
    write.write_all(body.as_bytes()).await?;
    write.flush().await
}

/// Reads one request; `None` when the client closed the connection before one started.
async fn read_request(
    read: &mut BufReader<OwnedReadHalf>,
) -> std::io::Result<Option<RecordedRequest>> {
    let mut line = String::new();
    // Skip stray blank lines between requests.
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let received_at = Instant::now();
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    read.read_exact(&mut body).await?;
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
        received_at,
        refused: None,
    }))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Writes one response. `Ok(true)` when the connection can serve another request.
async fn respond(
    read: &mut BufReader<OwnedReadHalf>,
    write: &mut OwnedWriteHalf,
    response: MockResponse,
    openai: bool,
) -> std::io::Result<bool> {
    if let Some(delay) = response.delay {
        tokio::time::sleep(delay).await;
    }
    let extra: String = response
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let frames: Vec<String> = match response.kind {
        Kind::Status {
            status,
            kind,
            message,
        } => {
            let body = if openai {
                render::openai_error_body(&kind, &message)
            } else {
                render::anthropic_error_body(&kind, &message)
            };
            let head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n",
                reason(status),
                body.len()
            );
            write.write_all(head.as_bytes()).await?;
            write.write_all(body.as_bytes()).await?;
            write.flush().await?;
            return Ok(true);
        }
        Kind::RawSse(body) => vec![body],
        Kind::Message(message) => {
            let frames = if openai {
                render::openai_frames(&message)
            } else {
                render::anthropic_frames(&message)
            };
            frames.iter().map(Frame::to_sse).collect()
        }
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n{extra}\r\n"
    );
    write.write_all(head.as_bytes()).await?;
    write.flush().await?;
    for (i, frame) in frames.iter().enumerate() {
        if let Some((_, gate)) = response.pause.as_ref().filter(|(at, _)| *at == i) {
            gate.mark_reached();
            // Wait for the test, noticing a client that hangs up meanwhile (it sends
            // nothing more on this connection, so a read returns only at close).
            let mut probe = [0u8; 1];
            tokio::select! {
                () = gate.released() => {}
                n = read.read(&mut probe) => {
                    if matches!(n, Ok(0) | Err(_)) {
                        gate.mark_client_gone();
                        return Ok(false);
                    }
                    // A client does not send while a response streams; should one, the
                    // stream still waits for the test.
                    gate.released().await;
                }
            }
        }
        match &response.cut {
            Some(Cut::Error {
                after,
                kind,
                message,
            }) if *after == i => {
                let frame = if openai {
                    render::openai_error_frame(kind, message)
                } else {
                    render::anthropic_error_frame(kind, message)
                };
                write_chunked(write, frame.to_sse().as_bytes(), response.write_size).await?;
                write.write_all(b"0\r\n\r\n").await?;
                write.flush().await?;
                return Ok(true);
            }
            Some(Cut::Disconnect { after }) if *after == i => {
                write.shutdown().await?;
                return Ok(false);
            }
            _ => {}
        }
        write_chunked(write, frame.as_bytes(), response.write_size).await?;
    }
    write.write_all(b"0\r\n\r\n").await?;
    write.flush().await?;
    Ok(true)
}

/// Writes `data` as HTTP chunks of at most `size` bytes, each flushed.
async fn write_chunked(
    write: &mut OwnedWriteHalf,
    data: &[u8],
    size: Option<usize>,
) -> std::io::Result<()> {
    for piece in data.chunks(size.unwrap_or(data.len().max(1))) {
        write
            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await?;
        write.write_all(piece).await?;
        write.write_all(b"\r\n").await?;
        write.flush().await?;
    }
    Ok(())
}
