//! [`PageServer`]: a tiny web server on `127.0.0.1` serving fixed pages, for the tests
//! of tools that fetch URLs (WebFetch). Each path answers with a scripted [`Page`]:
//! status, headers, body, and an optional delay before the answer (time caps). Every
//! request's path is recorded, so a test can tell whether a page was fetched again.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Page {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    delay: Duration,
}

impl Page {
    /// A 200 answer with `content_type` and `body`.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    /// An HTML page.
    pub fn html(body: &str) -> Self {
        Self::ok("text/html; charset=utf-8", body)
    }

    /// A redirect (`status`, e.g. 301 or 302) to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self {
            status,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// An answer with `status` and a text body.
    pub fn status(status: u16, body: &str) -> Self {
        Self {
            status,
            ..Self::ok("text/plain", body)
        }
    }

    /// Waits `delay` before answering.
    #[must_use]
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

#[derive(Default)]
struct Shared {
    pages: HashMap<String, Page>,
    hits: Vec<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A web server on `127.0.0.1` with scripted pages; stopped when dropped.
pub struct PageServer {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    task: JoinHandle<()>,
}

impl PageServer {
    /// Starts a server on a random port of `127.0.0.1`.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let task = tokio::spawn(accept(listener, Arc::clone(&shared)));
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:<port>` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Serves `page` at `path` (a request's path without its query).
    pub fn page(&self, path: &str, page: Page) {
        lock(&self.shared).pages.insert(path.to_owned(), page);
    }

    /// The paths requested so far, in order.
    pub fn hits(&self) -> Vec<String> {
        lock(&self.shared).hits.clone()
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept(listener: TcpListener, shared: Arc<Mutex<Shared>>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(serve(stream, Arc::clone(&shared)));
    }
}

/// Answers one request, then closes the connection.
async fn serve(stream: TcpStream, shared: Arc<Mutex<Shared>>) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut line = String::new();
    if read.read_line(&mut line).await.unwrap_or(0) == 0 {
        return;
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let path = target.split('?').next().unwrap_or("/").to_owned();
    // The headers end at a blank line; a GET has no body.
    loop {
        let mut header = String::new();
        if read.read_line(&mut header).await.unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
    }
    let page = {
        let mut shared = lock(&shared);
        shared.hits.push(path.clone());
        shared.pages.get(&path).cloned()
    };
    let page = page.unwrap_or_else(|| Page::status(404, "no such page"));
    if !page.delay.is_zero() {
        tokio::time::sleep(page.delay).await;
    }
    let mut head = format!("HTTP/1.1 {} Scripted\r\n", page.status);
    for (k, v) in &page.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        page.body.len()
    ));
    let _ = write.write_all(head.as_bytes()).await;
    let _ = write.write_all(&page.body).await;
    let _ = write.shutdown().await;
}
