//! Remote sessions (issue 17): `--remote <nats-url>` and the settings' `remote` block,
//! wired into a headless or interactive session.
//!
//! Thin wiring of `strata-remote` into the session; what the remote does lives there.
//!
//! - [`options`]: the `remote` block (user, `--settings` and managed settings only; a bad
//!   block is an error naming file, line and column), `--remote` overriding its URL;
//! - [`Link`]: one connection per process, made in the background: a server that is down
//!   or slow never delays the session or a turn;
//! - [`SessionLink`]: one per open session — every transcript line goes through the
//!   engine's `TranscriptMirror` into an outbox (memory, then the session's
//!   `remote-outbox.jsonl` past the bound) and is published in order when the server is
//!   there; the metadata document is kept by the FX-1 port (latest wins, written again
//!   after a reconnect) and watched (FX-7, through the one mode gate); the connection's
//!   status goes into the app state (`remote.connection_status`, which the UI footer shows)
//!   and to a reporter (headless `system/status` lines); a resumed session first catches
//!   the stream up with its transcript, a crashed run's spill file included;
//! - `-r <id> --remote` brings the local transcript level with the stream, line for
//!   line, before the engine resumes it: rebuilt on a machine without the session, the
//!   stream's further lines appended to a stale copy (a session that moved A → B → A),
//!   left alone and said when the two differ, and then its new lines are not published
//!   (the stream never holds two histories of one session) ([`Link::rebuild`],
//!   `rebuild`).
//!
//! Local files stay the source of truth: at the end of a session whose lines could not
//! all be published, they are left in the spill file and published when the session is
//! resumed with the remote.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use strata_agent::engine::{Engine, TranscriptMirror};
use strata_config::{SettingsLocations, remote_config};
use strata_remote::{
    ConnectionState, KvMetadataPort, OwnKeyWatch, RemoteConnection, RemoteOptions, RemoteRuntime,
    TlsOptions, TranscriptPublisher, fetch_lines, last_line,
};
use strata_session::layout::SessionLayout;
use strata_session::listing::TitleScan;
use strata_state::{RemoteConnectionStatus, SessionExternalMetadata, SessionMetadataPatch};

use crate::exit::Failure;
use crate::headless::warn;

mod rebuild;

/// How long the end of a session waits for the last lines to be stored.
const FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// How long `-r <id> --remote` waits for the server to rebuild a session from it.
const REBUILD_LIMIT: Duration = Duration::from_secs(10);

/// How long a session that starts while the server is already there waits for its
/// metadata document, to start in the mode it holds (FX-7).
const RESTORE_LIMIT: Duration = Duration::from_secs(2);

/// The remote this run uses: `--remote` (`flag`) or the settings' `remote` block, with
/// the block's credentials and TLS either way. `None`: not a remote session.
pub(crate) fn options(
    config_dir: &Path,
    cwd: &Path,
    settings_flag: Option<&str>,
    flag: Option<&str>,
) -> Result<Option<RemoteOptions>, Failure> {
    let mut locations =
        SettingsLocations::new(config_dir, &strata_config::paths::project_root(cwd));
    if let Some(arg) = settings_flag {
        locations = locations.with_flag(strata_config::FlagSettings::from_arg(arg));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let (config, warnings) =
        remote_config(&locations, home.as_deref()).map_err(|e| Failure::usage(e.to_string()))?;
    for warning in warnings {
        warn(format_args!("{warning}"));
    }
    let config = config.unwrap_or_default();
    let Some(url) = flag.map(str::to_owned).or(config.url) else {
        return Ok(None);
    };
    let mut options = RemoteOptions::from_url(&url);
    options.credentials_file = config.credentials_file;
    options.tls = TlsOptions {
        required: config.tls.required,
        ca_file: config.tls.ca_file,
        client_cert: config.tls.client_cert,
    };
    Ok(Some(options))
}

/// The process's connection to the remote, on a runtime of its own.
pub(crate) struct Link {
    connection: RemoteConnection,
    runtime: Arc<RemoteRuntime>,
    /// Sessions whose local copy differs from the stream ([`Link::rebuild`]): their new
    /// lines stay local, so the stream never holds two histories of one session.
    diverged: Diverged,
}

/// The ids of sessions whose lines are not published (see [`Link::diverged`]).
type Diverged = Arc<Mutex<HashSet<String>>>;

impl Link {
    /// Starts connecting (in the background). Fails only for options that cannot work:
    /// a URL that is not one, a credentials or certificate file that cannot be read.
    pub(crate) async fn start(options: &RemoteOptions) -> Result<Self, Failure> {
        let runtime = Arc::new(
            RemoteRuntime::new()
                .map_err(|e| Failure::failed(format!("cannot start the remote's runtime: {e}")))?,
        );
        let connection = RemoteConnection::start_on(options, runtime.handle())
            .await
            .map_err(|e| Failure::usage(format!("--remote: {e}")))?;
        Ok(Self {
            connection,
            runtime,
            diverged: Diverged::default(),
        })
    }

    /// A link for the next session this process opens.
    pub(crate) fn session(&self) -> SessionLink {
        SessionLink {
            connection: self.connection.clone(),
            publisher: Arc::new(TranscriptPublisher::spawn_with(
                self.connection.clone(),
                strata_remote::OutboxLimits::default(),
                true,
                self.runtime.handle(),
            )),
            runtime: Arc::clone(&self.runtime),
            titles: Arc::default(),
            diverged: Arc::clone(&self.diverged),
            attached: None,
        }
    }

    /// `-r <id> --remote`: brings this machine's transcript of `id` level with the
    /// stream before the engine resumes it ([`rebuild`]): written from the stream when
    /// this machine lacks it, the stream's further lines appended when the local copy is
    /// a stale prefix of it (the session went on elsewhere and came back), left as it is
    /// (and said) when the two differ. Nothing on either side: an error naming both
    /// places. With a local copy and a server that cannot be reached, the local copy is
    /// resumed (and that is said). What is to be said is returned, for the caller to
    /// show where its user looks (stderr, or the UI's notice).
    pub(crate) async fn rebuild(
        &self,
        config_dir: &Path,
        cwd: &Path,
        id: &str,
    ) -> Result<Option<String>, Failure> {
        let project_root = strata_config::paths::project_root(cwd);
        let local = strata_session::resume::resolve(config_dir, &project_root, id).ok();
        if !self.reachable(local.is_some()).await {
            let state = self.connection.state().borrow().clone();
            let why = state.error.as_deref().unwrap_or("no answer").to_owned();
            if local.is_some() {
                return Ok(Some(format!(
                    "the remote {} cannot be reached ({why}): session {id} is resumed from \
                     this machine's copy, which lacks anything done with it elsewhere",
                    self.connection.describe()
                )));
            }
            return Err(Failure::failed(format!(
                "no session {id} here, and the remote {} cannot be reached to rebuild it \
                 ({why})",
                self.connection.describe(),
            )));
        }
        let max_payload = self.connection.client().server_info().max_payload;
        if let Some(path) = &local
            && let Ok(Some(last)) = last_line(&self.connection, id).await
        {
            let path = path.clone();
            let level = tokio::task::spawn_blocking(move || {
                rebuild::ends_alike(&path, &last, max_payload).unwrap_or(false)
            })
            .await
            .unwrap_or(false);
            if level {
                return Ok(None);
            }
        }
        let lines = fetch_lines(&self.connection, id)
            .await
            .map_err(|e| Failure::failed(e.to_string()))?;
        if lines.is_empty() && local.is_none() {
            return Err(Failure::failed(format!(
                "no session {id} here nor on the remote (its stream has no line of it)"
            )));
        }
        let path =
            local.unwrap_or_else(|| SessionLayout::new(config_dir, &project_root, id).transcript());
        let outcome =
            tokio::task::spawn_blocking(move || rebuild::bring_level(&path, &lines, max_payload))
                .await
                .map_err(|e| Failure::failed(format!("rebuilding session {id} failed: {e}")))?
                .map_err(|e| Failure::failed(format!("rebuilding session {id}: {e}")))?;
        Ok(match outcome {
            rebuild::Outcome::UpToDate | rebuild::Outcome::Written => None,
            rebuild::Outcome::Diverged {
                path,
                at,
                local,
                remote,
            } => {
                self.diverged
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.to_owned());
                Some(format!(
                    "session {id}: this machine's copy and the remote's differ from line {} on \
                     ({local} lines here, {remote} on the remote {}): the session went on \
                     differently in two places. {} is left as it is and resumed, without the \
                     remote's turns after the difference; new lines of session {id} are kept \
                     here only (not published), so the remote's copy stays whole. To take \
                     the remote's copy instead, move that file away and run \
                     `strata -r {id} --remote {}` again; to keep both, resume this copy with \
                     --fork-session (a new session id, published as its own)",
                    at + 1,
                    self.connection.describe(),
                    path.display(),
                    self.connection.describe(),
                ))
            }
            rebuild::Outcome::Changed(path) => Some(format!(
                "session {id}: {} changed while it was compared with the remote (another \
                 strata process has the session open?); it is left as it is",
                path.display()
            )),
        })
    }

    /// Waits for the bucket and stream with the connection up, at most
    /// [`REBUILD_LIMIT`]; `local`: a copy of the session is here, so a server that is
    /// away (its first attempt failed, or the connection dropped and is being made
    /// again) is not waited for — the copy is resumed at once, and that is said.
    async fn reachable(&self, local: bool) -> bool {
        let away = |s: &ConnectionState| {
            matches!(
                s.status,
                RemoteConnectionStatus::Disconnected | RemoteConnectionStatus::Reconnecting
            )
        };
        let mut state = self.connection.state();
        let up = async {
            let _ = self.connection.ready().await;
            state
                .wait_for(|s| s.status == RemoteConnectionStatus::Connected)
                .await
                .is_ok()
        };
        let mut watched = self.connection.state();
        let given_up = async {
            if local && watched.wait_for(away).await.is_ok() {
                return;
            }
            std::future::pending::<()>().await;
        };
        let ready = async {
            tokio::select! {
                up = up => up,
                () = given_up => false,
            }
        };
        tokio::time::timeout(REBUILD_LIMIT, ready)
            .await
            .unwrap_or(false)
    }
}

/// Told of every change of the connection's state (headless: a `system/status` line).
pub(crate) type Reporter = Arc<dyn Fn(&ConnectionState) + Send + Sync>;

/// One session's side of the remote.
pub(crate) struct SessionLink {
    connection: RemoteConnection,
    publisher: Arc<TranscriptPublisher>,
    runtime: Arc<RemoteRuntime>,
    titles: Arc<Titles>,
    diverged: Diverged,
    attached: Option<Attached>,
}

struct Attached {
    port: Arc<KvMetadataPort>,
    _watch: OwnKeyWatch,
    /// Keeps the document's `model` on the session's model.
    _model: strata_store::Subscription,
    status: Option<tokio::task::JoinHandle<()>>,
    spill: PathBuf,
}

impl SessionLink {
    /// The engine's mirror: every transcript line to the outbox.
    pub(crate) fn mirror(&self) -> Arc<dyn TranscriptMirror> {
        Arc::new(Mirror {
            publisher: Arc::clone(&self.publisher),
            titles: Arc::clone(&self.titles),
            diverged: Arc::clone(&self.diverged),
        })
    }

    /// Attaches the open session: the metadata (restored from the remote when it is
    /// there already and has a document), the FX-1 port, the watch of its own key, and
    /// publishing (after the catch-up). The status follows with [`SessionLink::follow`].
    pub(crate) async fn attach(&mut self, engine: &Engine, config_dir: &Path) {
        let session = engine.session_id();
        let store = engine.app_store().clone();
        // The server is already there (a session rebuilt from it, or a fast start): a
        // document made elsewhere wins over this process's start-up mode (FX-7), before
        // anything is shown. Otherwise the watch applies it once connected.
        if let Some(bound) = self.connection.bound()
            && let Ok(Ok(Some(bytes))) =
                tokio::time::timeout(RESTORE_LIMIT, bound.bucket.get(&session)).await
        {
            match serde_json::from_slice::<SessionExternalMetadata>(&bytes) {
                Ok(doc) => {
                    store.apply_external_metadata(&doc);
                }
                Err(e) => warn(format_args!(
                    "the remote metadata of session {session} is not a JSON object ({e}); \
                     it is replaced"
                )),
            }
        }
        let transcript = engine.transcript_path();
        let mut fields = Map::new();
        fields.insert("cwd".into(), Value::from(engine.init_message().cwd));
        fields.insert("model".into(), Value::from(engine.model()));
        fields.insert("status".into(), Value::from("active"));
        let initial = SessionMetadataPatch {
            permission_mode: store.store().get().tool_permission_context.mode.external(),
            is_ultraplan_mode: None,
        };
        let port = Arc::new(KvMetadataPort::spawn_for_session(
            self.connection.clone(),
            session.clone(),
            fields,
            initial,
            self.runtime.handle(),
        ));
        store.effects().set_remote(Some(Arc::clone(&port) as _));
        self.titles.attach(Arc::clone(&port));
        // The title of the lines written before this process (a resumed session) is read
        // in the background: a long transcript must not hold up the session's start. The
        // document gets its title once it is known.
        let (read, titles) = (transcript.clone(), Arc::clone(&self.titles));
        tokio::task::spawn_blocking(move || {
            let mut scan = TitleScan::default();
            if let Ok(bytes) = std::fs::read(&read) {
                scan.feed(&bytes);
            }
            titles.start(scan);
        });
        let model = follow_model(engine, Arc::clone(&port));
        let watch = port.watch_own_key(store.clone());
        let session_dir = SessionLayout::from_transcript_path(config_dir, &transcript).map_or_else(
            || transcript.with_extension(""),
            |layout| layout.session_dir(),
        );
        self.publisher.attach(&session, &transcript, &session_dir);
        self.attached = Some(Attached {
            port,
            _watch: watch,
            _model: model,
            status: None,
            spill: strata_remote::spill_path(&session_dir),
        });
    }

    /// Keeps the app state's `remote` domain on the connection's state from now on, and
    /// tells `report` of every change (the current state first). Started once the
    /// client has been told the session started (`system/init` comes first).
    pub(crate) fn follow(&mut self, engine: &Engine, report: Reporter) {
        if let Some(attached) = &mut self.attached {
            attached.status = Some(tokio::spawn(follow_status(
                self.connection.clone(),
                engine.app_store().clone(),
                report,
            )));
        }
    }

    /// The end of the session: the document marked ended, the last lines stored — or,
    /// when the server is away, left in the spill file for the next resume.
    pub(crate) async fn finish(self) {
        let deadline = Instant::now() + FLUSH_LIMIT;
        let left = || deadline.saturating_duration_since(Instant::now());
        if let Some(attached) = &self.attached {
            attached.port.set_field("status", Value::from("ended"));
        }
        // A first attempt still under way (a session shorter than a connect) gets the
        // time it needs; a server known to be away gets none.
        let mut state = self.connection.state();
        let _ = tokio::time::timeout(
            left(),
            state.wait_for(|s| s.status != RemoteConnectionStatus::Connecting),
        )
        .await;
        let status = state.borrow().status;
        if status == RemoteConnectionStatus::Connected {
            self.publisher.flush(left()).await;
            if let Some(attached) = &self.attached {
                attached.port.flush(left()).await;
            }
        }
        let pending = self.publisher.stats().pending;
        if let Some(attached) = &self.attached {
            if let Some(status) = &attached.status {
                status.abort();
            }
            if pending > 0 {
                match self.publisher.persist() {
                    Ok(0) => {}
                    Ok(n) => warn(format_args!(
                        "{n} transcript line(s) did not reach the remote {} ({status}: the \
                         session runs locally); they are kept in {} and published when this \
                         session is resumed with the remote",
                        self.connection.describe(),
                        attached.spill.display()
                    )),
                    Err(e) => warn(format_args!(
                        "{pending} transcript line(s) did not reach the remote and could not \
                         be kept in {} ({e}); the local transcript has them",
                        attached.spill.display()
                    )),
                }
            }
        }
    }
}

/// Keeps the app state's `remote` domain on the connection's state and tells `report`.
async fn follow_status(
    connection: RemoteConnection,
    store: strata_state::AppStore,
    report: Reporter,
) {
    let server: Arc<str> = connection.describe().into();
    let mut state = connection.state();
    let mut told = None;
    loop {
        let now = state.borrow_and_update().clone();
        let _ = store.store().update(|s| {
            if s.remote.server.as_deref() != Some(&*server) {
                s.remote.server = Some(Arc::clone(&server));
            }
            if s.remote.connection_status != now.status {
                s.remote.connection_status = now.status;
            }
        });
        // The state also changes when only its error does: told once per status.
        if told != Some(now.status) {
            told = Some(now.status);
            report(&now);
        }
        if state.changed().await.is_err() {
            return;
        }
    }
}

/// Keeps the document's `model` on the model the session's next request uses: after a
/// `/model`, a `set_model` control request or a settings edit (the app state's
/// `main_loop_model`, else the settings' `model`, else the provider's default).
fn follow_model(engine: &Engine, port: Arc<KvMetadataPort>) -> strata_store::Subscription {
    let default = engine.default_model().map(str::to_owned);
    engine.app_store().store().subscribe_select(
        |s| (s.main_loop_model.clone(), s.settings.model.clone()),
        move |(chosen, configured)| {
            let model = chosen
                .as_ref()
                .map(ToString::to_string)
                .or_else(|| configured.clone())
                .or_else(|| default.clone())
                .unwrap_or_default();
            port.set_field("model", Value::from(model));
        },
    )
}

/// The session's title as `strata sessions list` shows it (a custom or AI title, else
/// the first prompt), followed through the mirrored lines and written into the metadata
/// document's `title` whenever it changes.
#[derive(Default)]
struct Titles(Mutex<TitleState>);

#[derive(Default)]
struct TitleState {
    /// The lines read so far: until attach only those this process mirrored, then the
    /// transcript's earlier lines followed by them, and every line after.
    scan: TitleScan,
    /// The title the port was given last.
    told: Option<String>,
    /// Whether the lines from before this process were read: until then no title is
    /// told (the first prompt may be among them).
    history_read: bool,
    /// Set at attach; until then the title only accumulates.
    port: Option<Arc<KvMetadataPort>>,
}

impl Titles {
    fn lock(&self) -> std::sync::MutexGuard<'_, TitleState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts the lines from before this process first, and tells the title.
    fn start(&self, history: TitleScan) {
        let mut state = self.lock();
        state.scan = history.then(&state.scan);
        state.history_read = true;
        state.tell();
    }

    /// From now on a new title goes to `port`.
    fn attach(&self, port: Arc<KvMetadataPort>) {
        let mut state = self.lock();
        state.port = Some(port);
        state.tell();
    }

    /// One mirrored line.
    fn line(&self, json: &str) {
        let mut state = self.lock();
        state.scan.feed_line(json);
        state.tell();
    }
}

impl TitleState {
    fn tell(&mut self) {
        let Some(port) = self.port.as_ref().filter(|_| self.history_read) else {
            return;
        };
        if let Some(title) = self.scan.title()
            && self.told.as_ref() != Some(&title)
        {
            port.set_field("title", Value::from(title.clone()));
            self.told = Some(title);
        }
    }
}

/// The engine's [`TranscriptMirror`] over the publisher.
struct Mirror {
    publisher: Arc<TranscriptPublisher>,
    titles: Arc<Titles>,
    diverged: Diverged,
}

impl TranscriptMirror for Mirror {
    fn line(&self, session_id: &str, uuid: Option<&str>, json: &str) {
        self.titles.line(json);
        if self
            .diverged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(session_id)
        {
            return;
        }
        // A line without a uuid of its own (metadata) gets one now: the id only has to
        // stay the same across retries of the line, which the outbox (and its spill
        // file) keeps.
        let id = uuid.map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
        self.publisher.publish(session_id, &id, json);
    }

    fn turn(&self, running: bool) {
        self.publisher.turn(running);
    }
}
