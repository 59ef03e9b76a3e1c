//! The NATS connection: made in the background, its state followed from the client's own
//! events, and the JetStream bucket and stream bound once it is up.
//!
//! [`RemoteConnection::start`] returns at once (async-nats' `retry_on_initial_connect`):
//! a server that is down, slow or far away never holds up a session's start, and the
//! client keeps trying, forever, with a capped back-off. What the connection is doing is
//! a [`ConnectionState`] in a `watch` channel, fed by the client's `event_callback`:
//! `connecting` until the first attempt ends, `connected`, `reconnecting` after a drop,
//! `disconnected` when an attempt failed before any succeeded (the reason kept). Once
//! connected, a task creates or binds the `strata_sessions` bucket and the
//! `STRATA_TRANSCRIPTS` stream ([`Bound`]); users of the connection wait for that.
//!
//! One place opens the connection and binds the bucket and stream, so the port, the
//! watcher and the publisher agree on their names and settings.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use strata_state::RemoteConnectionStatus;
use tokio::sync::watch;

/// The key-value bucket that holds every session's metadata (key = session id).
pub const BUCKET: &str = "strata_sessions";

/// The stream holding every session's transcript lines.
pub const STREAM: &str = "STRATA_TRANSCRIPTS";

/// How long the server remembers message ids to drop a repeated publish. The publisher
/// does not rely on it past an outage: before publishing a line again it asks the stream
/// whether the line is its last (see `transcripts`).
const DUPLICATE_WINDOW: Duration = Duration::from_secs(10 * 60);

/// How long one JetStream request (a publish's acknowledgement, a read) may take before
/// it counts as failed and is tried again.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// What went wrong talking to NATS.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The server could not be reached in the time allowed.
    #[error(
        "cannot connect to the NATS server at {url}: {message} (is nats-server running with JetStream enabled, `nats-server -js`?)"
    )]
    Connect {
        /// The URL(s) tried.
        url: String,
        /// The client's error.
        message: String,
    },
    /// A server URL that is not one.
    #[error(
        "{url:?} is not a NATS server URL: {message} (expected nats://host:port, tls://host:port, or several separated by commas)"
    )]
    BadUrl {
        /// The URL as given.
        url: String,
        /// The parser's error.
        message: String,
    },
    /// A file the connection needs (credentials, certificates) cannot be read.
    #[error("cannot read the {what} {}: {message}", path.display())]
    File {
        /// Which file it is ("credentials file", "CA certificate file", …).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// The error.
        message: String,
    },
    /// A JetStream operation failed.
    #[error("NATS JetStream {operation} failed: {message}")]
    JetStream {
        /// What was being done.
        operation: &'static str,
        /// The client's error.
        message: String,
    },
    /// A stored metadata document is not a JSON object.
    #[error("the remote metadata of session {session} is not a JSON object: {message}")]
    BadDocument {
        /// The session id (the key).
        session: String,
        /// The parse error.
        message: String,
    },
}

impl RemoteError {
    pub(crate) fn js(operation: &'static str, error: impl std::fmt::Display) -> Self {
        Self::JetStream {
            operation,
            message: error.to_string(),
        }
    }
}

/// TLS for the connection (the settings' `remote.tls`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Refuse a connection that is not TLS.
    pub required: bool,
    /// PEM file of the certificate authorities the server's certificate is checked
    /// against (besides the system's).
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate and its private key, for servers that verify clients.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// How to reach the NATS server(s): the settings' `remote` block, or `--remote`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteOptions {
    /// Server URLs (`nats://host:4222`, `tls://host:4222`); several for a cluster.
    pub servers: Vec<String>,
    /// A NATS credentials file (user JWT and NKey seed, `.creds`).
    pub credentials_file: Option<PathBuf>,
    /// TLS.
    pub tls: TlsOptions,
    /// Copies of the bucket and stream when this process creates them; `None`: three
    /// when the server says it is part of a cluster of at least three, else one.
    pub replicas: Option<usize>,
}

impl RemoteOptions {
    /// Options for `url`: one URL or several separated by commas.
    pub fn from_url(url: &str) -> Self {
        Self {
            servers: url
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            ..Self::default()
        }
    }

    /// The servers as one string, for messages.
    pub fn describe(&self) -> String {
        self.servers.join(",")
    }
}

/// Where the connection stands, and why it is not up when it is not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectionState {
    /// The status the app state and the footer show.
    pub status: RemoteConnectionStatus,
    /// The last connection error, while not connected.
    pub error: Option<Arc<str>>,
}

/// The JetStream handles, once the connection is up and they exist.
#[derive(Clone)]
pub struct Bound {
    /// The JetStream context (publish, stream reads).
    pub js: jetstream::Context,
    /// The session-metadata bucket.
    pub bucket: kv::Store,
    /// The transcript stream.
    pub stream: stream::Stream,
}

struct Inner {
    client: async_nats::Client,
    /// Where the connection's tasks run (the port's, the watch's, the publisher's too).
    runtime: tokio::runtime::Handle,
    state: watch::Receiver<ConnectionState>,
    bound: watch::Receiver<Option<Bound>>,
    describe: String,
    binder: tokio::task::JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.binder.abort();
    }
}

/// A connection to NATS (see the module docs). Clones share it.
#[derive(Clone)]
pub struct RemoteConnection {
    inner: Arc<Inner>,
}

/// How much lower the remote's threads are scheduled than the session's (a nice
/// increment: 0 is the process's own, 19 the lowest).
pub(crate) const REMOTE_NICE: i32 = 10;

/// A runtime of the remote's own: one worker thread (`strata-remote`) for the client,
/// the publisher, the metadata port and the watch, so publishing a backlog never takes
/// a worker from the session's turns. Its threads run at a lower scheduling priority
/// (a nice increment of 10): replication is background work, and on a busy machine a
/// turn gets the processor first while the backlog waits (on disk past the bound).
pub struct RemoteRuntime {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl RemoteRuntime {
    /// Starts the runtime's thread.
    pub fn new() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("strata-remote")
            .on_thread_start(|| {
                // Linux keeps a nice value per thread: this lowers the remote's threads
                // only. Failing leaves them at the process's priority, which is only
                // slower for the turns, never wrong.
                if let Err(e) = rustix::process::nice(REMOTE_NICE) {
                    tracing::debug!("the remote's thread keeps its priority: {e}");
                }
            })
            .enable_all()
            .build()?;
        Ok(Self {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
        })
    }

    /// Where to spawn.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

impl Drop for RemoteRuntime {
    fn drop(&mut self) {
        // Dropping a runtime may happen inside another one's task: never block there.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The reconnect back-off: 0, 100, 200, 400 ms … up to 2 s between attempts.
fn reconnect_delay(attempts: usize) -> Duration {
    if attempts <= 1 {
        return Duration::ZERO;
    }
    let exp = u32::try_from(attempts - 2).unwrap_or(u32::MAX).min(5);
    Duration::from_millis(100 * 2u64.pow(exp)).min(Duration::from_secs(2))
}

fn readable(what: &'static str, path: &PathBuf) -> Result<(), RemoteError> {
    std::fs::metadata(path)
        .and_then(|m| {
            if m.is_file() {
                Ok(())
            } else {
                Err(std::io::Error::other("not a regular file"))
            }
        })
        .map_err(|error| RemoteError::File {
            what,
            path: path.clone(),
            message: error.to_string(),
        })
}

impl RemoteConnection {
    /// Starts connecting to the servers of `options` in the background and returns at
    /// once. Fails only for options that can never work (a URL that is not one, a
    /// credentials or certificate file that cannot be read).
    pub async fn start(options: &RemoteOptions) -> Result<Self, RemoteError> {
        let describe = options.describe();
        let servers: Vec<async_nats::ServerAddr> = options
            .servers
            .iter()
            .map(|url| {
                url.parse()
                    .map_err(|error: std::io::Error| RemoteError::BadUrl {
                        url: url.clone(),
                        message: error.to_string(),
                    })
            })
            .collect::<Result<_, _>>()?;
        if servers.is_empty() {
            return Err(RemoteError::BadUrl {
                url: String::new(),
                message: "no server given".into(),
            });
        }
        let (state_tx, state) = watch::channel(ConnectionState {
            status: RemoteConnectionStatus::Connecting,
            error: None,
        });
        let state_tx = Arc::new(state_tx);
        let events = Arc::clone(&state_tx);
        let mut connect = async_nats::ConnectOptions::new()
            .name("strata")
            .retry_on_initial_connect()
            .max_reconnects(None)
            .reconnect_delay_callback(reconnect_delay)
            .connection_timeout(Duration::from_secs(5))
            .request_timeout(Some(REQUEST_TIMEOUT))
            .event_callback(move |event| {
                let events = Arc::clone(&events);
                async move { follow(&events, event) }
            });
        if let Some(path) = &options.credentials_file {
            readable("credentials file", path)?;
            connect = connect
                .credentials_file(path)
                .await
                .map_err(|error| RemoteError::File {
                    what: "credentials file",
                    path: path.clone(),
                    message: error.to_string(),
                })?;
        }
        let tls = &options.tls;
        if tls.required {
            connect = connect.require_tls(true);
        }
        if let Some(ca) = &tls.ca_file {
            readable("CA certificate file", ca)?;
            connect = connect.add_root_certificates(ca.clone());
        }
        if let Some((cert, key)) = &tls.client_cert {
            readable("client certificate file", cert)?;
            readable("client key file", key)?;
            connect = connect.add_client_certificate(cert.clone(), key.clone());
        }
        let client = connect
            .connect(servers)
            .await
            .map_err(|error| RemoteError::Connect {
                url: describe.clone(),
                message: error.to_string(),
            })?;
        let (bound_tx, bound) = watch::channel(None);
        let binder = tokio::spawn(bind(
            client.clone(),
            state.clone(),
            bound_tx,
            options.replicas,
        ));
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                runtime: tokio::runtime::Handle::current(),
                state,
                bound,
                describe,
                binder,
            }),
        })
    }

    /// [`RemoteConnection::start`] on `runtime` (a [`RemoteRuntime`]'s): the client's
    /// tasks run there, away from the session's.
    pub async fn start_on(
        options: &RemoteOptions,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self, RemoteError> {
        let options = options.clone();
        runtime
            .spawn(async move { Self::start(&options).await })
            .await
            .map_err(|error| RemoteError::Connect {
                url: String::new(),
                message: format!("the remote's runtime stopped: {error}"),
            })?
    }

    /// The runtime the connection's tasks run on.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.inner.runtime
    }

    /// Connects and waits until the bucket and stream are bound, for at most `limit`:
    /// for commands that need the server now (`sessions list --remote`, rebuilding a
    /// session from the stream).
    pub async fn connect(options: &RemoteOptions, limit: Duration) -> Result<Self, RemoteError> {
        let connection = Self::start(options).await?;
        match tokio::time::timeout(limit, connection.ready()).await {
            Ok(_) => Ok(connection),
            Err(_) => Err(RemoteError::Connect {
                url: connection.describe().to_owned(),
                message: connection.state().borrow().error.as_deref().map_or_else(
                    || format!("no answer within {} s", limit.as_secs()),
                    str::to_owned,
                ),
            }),
        }
    }

    /// Connects to `url` (one URL or several separated by commas) and waits up to ten
    /// seconds for it.
    pub async fn connect_url(url: &str) -> Result<Self, RemoteError> {
        Self::connect(&RemoteOptions::from_url(url), Duration::from_secs(10)).await
    }

    /// Where the connection stands; changes as the client reports them.
    pub fn state(&self) -> watch::Receiver<ConnectionState> {
        self.inner.state.clone()
    }

    /// The bucket and stream, once bound.
    pub fn bound(&self) -> Option<Bound> {
        self.inner.bound.borrow().clone()
    }

    /// Waits until the bucket and stream are bound (forever, if the server never
    /// comes: callers that must not wait that long add a timeout).
    pub async fn ready(&self) -> Bound {
        let mut bound = self.inner.bound.clone();
        loop {
            if let Some(b) = bound.borrow_and_update().clone() {
                return b;
            }
            if bound.changed().await.is_err() {
                // The binder is gone only when the connection is dropped; nothing will
                // come.
                std::future::pending::<()>().await;
            }
        }
    }

    /// The session-metadata bucket (waits until bound).
    pub async fn bucket(&self) -> kv::Store {
        self.ready().await.bucket
    }

    /// The servers, for messages.
    pub fn describe(&self) -> &str {
        &self.inner.describe
    }

    /// The underlying client.
    pub fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }
}

/// Turns one client event into the connection's state.
fn follow(state: &watch::Sender<ConnectionState>, event: async_nats::Event) {
    use async_nats::Event;
    state.send_if_modified(|s| {
        let before = s.clone();
        match event {
            Event::Connected => {
                s.status = RemoteConnectionStatus::Connected;
                s.error = None;
            }
            Event::Disconnected => s.status = RemoteConnectionStatus::Reconnecting,
            Event::Closed => s.status = RemoteConnectionStatus::Disconnected,
            Event::ClientError(error) => {
                // A failed attempt before any succeeded: not connected, still trying.
                if s.status == RemoteConnectionStatus::Connecting {
                    s.status = RemoteConnectionStatus::Disconnected;
                }
                s.error = Some(error.to_string().into());
            }
            Event::ServerError(error) => {
                tracing::warn!(%error, "the NATS server reported an error");
                s.error = Some(error.to_string().into());
            }
            Event::LameDuckMode | Event::Draining | Event::SlowConsumer(_) => {}
        }
        *s != before
    });
}

/// Once connected, creates or binds the bucket and the stream, retrying until it works
/// (a cluster may still be electing its leaders).
async fn bind(
    client: async_nats::Client,
    mut state: watch::Receiver<ConnectionState>,
    bound: watch::Sender<Option<Bound>>,
    replicas: Option<usize>,
) {
    let mut js = jetstream::new(client.clone());
    js.set_timeout(REQUEST_TIMEOUT);
    let mut pause = Duration::from_millis(100);
    loop {
        while state.borrow_and_update().status != RemoteConnectionStatus::Connected {
            if state.changed().await.is_err() {
                return;
            }
        }
        let replicas = replicas.unwrap_or_else(|| {
            // A server of a cluster names the others' client URLs.
            if client.server_info().connect_urls.len() >= 3 {
                3
            } else {
                1
            }
        });
        match bind_once(&js, replicas).await {
            Ok((bucket, stream)) => {
                bound.send_replace(Some(Bound {
                    js: js.clone(),
                    bucket,
                    stream,
                }));
                return;
            }
            Err(error) => {
                tracing::debug!(%error, "binding the strata bucket and stream; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
    }
}

async fn bind_once(
    js: &jetstream::Context,
    replicas: usize,
) -> Result<(kv::Store, stream::Stream), RemoteError> {
    let bucket = match js.get_key_value(BUCKET).await {
        Ok(bucket) => bucket,
        Err(_) => js
            .create_key_value(kv::Config {
                bucket: BUCKET.to_owned(),
                history: 1,
                num_replicas: replicas,
                ..Default::default()
            })
            .await
            .map_err(|error| RemoteError::js("creating the strata_sessions bucket", error))?,
    };
    let stream = js
        .get_or_create_stream(stream::Config {
            name: STREAM.to_owned(),
            subjects: vec!["strata.session.*".to_owned()],
            num_replicas: replicas,
            duplicate_window: DUPLICATE_WINDOW,
            ..Default::default()
        })
        .await
        .map_err(|error| RemoteError::js("creating the STRATA_TRANSCRIPTS stream", error))?;
    Ok((bucket, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_urls_are_separated_by_commas() {
        let o = RemoteOptions::from_url("nats://a:1, nats://b:2,");
        assert_eq!(o.servers, ["nats://a:1", "nats://b:2"]);
        assert_eq!(o.describe(), "nats://a:1,nats://b:2");
    }

    #[test]
    fn the_back_off_is_capped() {
        assert_eq!(reconnect_delay(1), Duration::ZERO);
        assert_eq!(reconnect_delay(2), Duration::from_millis(100));
        assert_eq!(reconnect_delay(3), Duration::from_millis(200));
        assert_eq!(reconnect_delay(50), Duration::from_secs(2));
    }

    #[test]
    fn client_events_make_the_status() {
        let (tx, rx) = watch::channel(ConnectionState {
            status: RemoteConnectionStatus::Connecting,
            error: None,
        });
        let status = || rx.borrow().status;
        follow(
            &tx,
            async_nats::Event::ClientError(async_nats::ClientError::Other("refused".into())),
        );
        assert_eq!(status(), RemoteConnectionStatus::Disconnected);
        assert!(rx.borrow().error.as_deref().unwrap().contains("refused"));
        follow(&tx, async_nats::Event::Connected);
        assert_eq!(status(), RemoteConnectionStatus::Connected);
        assert!(rx.borrow().error.is_none());
        follow(&tx, async_nats::Event::Disconnected);
        assert_eq!(status(), RemoteConnectionStatus::Reconnecting);
        // Failed attempts while reconnecting stay "reconnecting".
        follow(
            &tx,
            async_nats::Event::ClientError(async_nats::ClientError::Other("refused".into())),
        );
        assert_eq!(status(), RemoteConnectionStatus::Reconnecting);
        follow(&tx, async_nats::Event::Closed);
        assert_eq!(status(), RemoteConnectionStatus::Disconnected);
    }
}
