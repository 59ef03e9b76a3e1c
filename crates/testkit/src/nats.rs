//! A `nats-server -js` of the test's own on a loopback port (issue 17).
//!
//! The remote tests need a real JetStream server, never a fake: each test starts one with
//! its storage in a temporary directory, on a free port of 127.0.0.1, and the server is
//! killed when the handle drops. [`NatsServer::start`] returns once the server's `INFO`
//! greeting says JetStream is on, so a test's first bucket or stream call does not race
//! the server's start-up.
//!
//! Debian's `nats-server` package provides the program (`.ci/run` installs it); a
//! machine without it fails the test with that instruction rather than skipping it.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to start answering.
const START_LIMIT: Duration = Duration::from_secs(10);

/// A running `nats-server -js`, killed on drop.
pub struct NatsServer {
    child: Child,
    port: u16,
    _storage: tempfile::TempDir,
}

impl NatsServer {
    /// Starts a server on a free loopback port and waits until it answers with
    /// JetStream enabled.
    ///
    /// # Panics
    ///
    /// When `nats-server` is not installed or does not come up within ten seconds: the
    /// tests that need it cannot run, and saying so beats a quiet skip.
    pub fn start() -> Self {
        let storage = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary dir: {e}"));
        let port = free_port();
        let child = spawn(port, storage.path());
        let server = Self {
            child,
            port,
            _storage: storage,
        };
        server.wait_until_ready();
        server
    }

    /// The client URL, `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn wait_until_ready(&self) {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if jetstream_greeting(self.port) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nats-server on port {} did not answer within {START_LIMIT:?}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    // Bound and released at once: the server binds it a moment later. A collision with
    // another test in that moment shows as a server that never answers, not a wrong one.
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

fn spawn(port: u16, storage: &Path) -> Child {
    Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(storage)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start nats-server ({e}): it must be installed \
                 (apt-get install nats-server; .ci/run does it)"
            )
        })
}

/// Whether the server on `port` greets a client with an `INFO` line saying JetStream is
/// enabled.
fn jetstream_greeting(port: u16) -> bool {
    let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut line = String::new();
    if BufReader::new(stream).read_line(&mut line).is_err() {
        return false;
    }
    line.starts_with("INFO ") && line.contains("\"jetstream\":true")
}
