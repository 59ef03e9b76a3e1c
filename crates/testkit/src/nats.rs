//! NATS JetStream servers for tests: one node or a three-node cluster, on loopback ports,
//! with file storage in a temporary directory, that a test can kill and start again.
//!
//! The remote-session tests (issue 17) need real servers — JetStream's de-duplication,
//! replication and reconnects are what they prove — so this starts Debian's
//! `nats-server` (`.ci/run` installs it; a missing binary panics with the command to run,
//! it never skips). Readiness is the server's own `/healthz` on its monitoring port
//! (JetStream up, and in a cluster a meta leader elected), polled with a deadline.
//!
//! ```no_run
//! let mut server = strata_testkit::nats::NatsServer::start();
//! let url = server.url(); // nats://127.0.0.1:PORT
//! server.kill();          // SIGKILL: a crash, not a clean shutdown
//! server.restart();       // same port, same store directory
//! ```
//!
//! Kills are `SIGKILL` so a test sees what a crash leaves (the file store as it was).
//! Every process is killed when its value drops.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to report itself healthy.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// A free loopback port (bound, then released for the server to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|error| panic!("no free loopback port: {error}"))
}

/// One `nats-server` process with its ports and store directory.
struct Node {
    name: String,
    port: u16,
    monitor: u16,
    cluster_port: Option<u16>,
    routes: Vec<u16>,
    store: PathBuf,
    /// A configuration file (`-c`), for settings with no command-line flag.
    config: Option<PathBuf>,
    child: Option<Child>,
}

impl Node {
    fn spawn(&mut self) {
        let mut command = Command::new("nats-server");
        command
            .args(["-js", "-a", "127.0.0.1", "-n", &self.name])
            .args(["-p", &self.port.to_string()])
            .args(["-m", &self.monitor.to_string()])
            .arg("-sd")
            .arg(&self.store);
        if let Some(config) = &self.config {
            command.arg("-c").arg(config);
        }
        if let Some(cluster_port) = self.cluster_port {
            let routes: Vec<String> = self
                .routes
                .iter()
                .map(|port| format!("nats://127.0.0.1:{port}"))
                .collect();
            command
                .args(["--cluster_name", "strata-test"])
                .args(["--cluster", &format!("nats://127.0.0.1:{cluster_port}")])
                .args(["--routes", &routes.join(",")]);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot start nats-server ({error}): it must be installed \
                     (apt-get install nats-server; scripts/test does it)"
                )
            });
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Whether `/healthz` answers 200.
    fn healthy(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.monitor)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request = format!(
            "GET /healthz HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n",
            self.monitor
        );
        if stream.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits until every running node of `nodes` answers `/healthz` with 200.
fn wait_healthy(nodes: &[&Node]) {
    let deadline = Instant::now() + READY_WITHIN;
    while !nodes
        .iter()
        .filter(|node| node.child.is_some())
        .all(|node| node.healthy())
    {
        assert!(
            Instant::now() < deadline,
            "nats-server did not report healthy within {READY_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A single `nats-server -js` on a loopback port.
pub struct NatsServer {
    node: Node,
    _dir: tempfile::TempDir,
}

impl NatsServer {
    /// Starts a server and waits until it is healthy.
    pub fn start() -> Self {
        let server = Self::start_unready();
        wait_healthy(&[&server.node]);
        server
    }

    /// Starts a server without waiting for it (a test of a client that starts first).
    pub fn start_unready() -> Self {
        let mut server = Self::stopped();
        server.node.spawn();
        server
    }

    /// A server with its ports and store chosen but not running: [`NatsServer::url`]
    /// refuses connections until [`NatsServer::restart`].
    pub fn stopped() -> Self {
        let dir = tempfile::tempdir()
            .unwrap_or_else(|error| panic!("no temporary directory for nats-server: {error}"));
        let node = Node {
            name: "strata-test".into(),
            port: free_port(),
            monitor: free_port(),
            cluster_port: None,
            routes: Vec::new(),
            store: dir.path().join("store"),
            config: None,
            child: None,
        };
        Self { node, _dir: dir }
    }

    /// Starts a server that takes messages of at most `bytes` (its `max_payload`), and
    /// waits until it is healthy.
    pub fn start_with_max_payload(bytes: usize) -> Self {
        let mut server = Self::stopped();
        let config = server._dir.path().join("server.conf");
        std::fs::write(&config, format!("max_payload: {bytes}\n"))
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", config.display()));
        server.node.config = Some(config);
        server.node.spawn();
        wait_healthy(&[&server.node]);
        server
    }

    /// The client URL (`nats://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        self.node.url()
    }

    /// The JetStream store directory (kept across [`NatsServer::restart`]).
    pub fn store_dir(&self) -> &Path {
        &self.node.store
    }

    /// Kills the server (`SIGKILL`) and waits for it to be gone.
    pub fn kill(&mut self) {
        self.node.kill();
    }

    /// Starts the server again on the same port and store directory, and waits until it
    /// is healthy.
    pub fn restart(&mut self) {
        self.node.kill();
        self.node.spawn();
        wait_healthy(&[&self.node]);
    }

    /// Whether the server process is running.
    pub fn is_running(&self) -> bool {
        self.node.child.is_some()
    }
}

/// A three-node JetStream cluster on loopback ports (R3 streams and buckets can live
/// on it).
pub struct NatsCluster {
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

impl NatsCluster {
    /// The number of nodes.
    pub const SIZE: usize = 3;

    /// Starts three routed nodes and waits until each is healthy (JetStream meta leader
    /// elected).
    pub fn start() -> Self {
        let dir = tempfile::tempdir()
            .unwrap_or_else(|error| panic!("no temporary directory for nats-server: {error}"));
        let cluster_ports: Vec<u16> = (0..Self::SIZE).map(|_| free_port()).collect();
        let mut nodes: Vec<Node> = (0..Self::SIZE)
            .map(|i| Node {
                name: format!("strata-test-{i}"),
                port: free_port(),
                monitor: free_port(),
                cluster_port: Some(cluster_ports[i]),
                routes: cluster_ports
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, port)| *port)
                    .collect(),
                store: dir.path().join(format!("store-{i}")),
                config: None,
                child: None,
            })
            .collect();
        for node in &mut nodes {
            node.spawn();
        }
        wait_healthy(&nodes.iter().collect::<Vec<_>>());
        Self { nodes, _dir: dir }
    }

    /// Every node's client URL.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Node::url).collect()
    }

    /// The client URLs joined by commas, as `--remote` takes several servers.
    pub fn url(&self) -> String {
        self.urls().join(",")
    }

    /// Kills node `index` (`SIGKILL`).
    pub fn kill(&mut self, index: usize) {
        self.nodes[index].kill();
    }

    /// Starts node `index` again (same ports and store) and waits until the cluster is
    /// healthy.
    pub fn restart(&mut self, index: usize) {
        self.nodes[index].kill();
        self.nodes[index].spawn();
        wait_healthy(&self.nodes.iter().collect::<Vec<_>>());
    }
}
