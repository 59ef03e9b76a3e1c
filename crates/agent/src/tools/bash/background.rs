//! Background shell tasks: a Bash call with `run_in_background: true` starts its command
//! under the process supervisor (`procs::Supervised`, the one tracker of every
//! tool process) and returns at once; the command becomes a local shell task.
//!
//! What this module owns, per session ([`ShellTasks`]):
//! - the live side of each task (its supervisor, output not yet read, how it ended), kept
//!   here because it holds processes and pipes, which app state cannot;
//! - the task's entry in the root store (SA-3): registered and marked running when it
//!   starts, its pid when the supervisor reports it, its exit code and end time when it
//!   ends — recorded by the task's own driver, so it happens even if nobody asks;
//! - the output file `<session>/tasks/<task-id>.output`, which gets every byte (stdout and
//!   stderr interleaved as they arrive), while memory keeps at most
//!   [`MAX_UNREAD_OUTPUT_BYTES`] of output nobody has read yet;
//! - redaction: known secret values are replaced in the output before it is written to
//!   the file or kept in memory (the transcript's rule, [`crate::secrets`]); output is
//!   redacted a line at a time so a secret split across two reads is still recognised;
//! - eviction (SL-3): a finished task is dismissed from the root store, and its
//!   in-memory side dropped, [`ShellTasks::eviction_grace`] after it ended; a later
//!   read of it says where its complete output is;
//! - stopping: SIGTERM to the command's process group, then, after [`STOP_GRACE`], the
//!   supervisor kills everything the command started (other groups and sessions too).
//!
//! When the command's shell exits, whatever it left running is stopped as well: a task
//! ends with all of its processes. At strata's exit [`crate::procs::shutdown_all`] stops
//! every supervisor, so no task outlives strata.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strata_state::AppState;
use strata_state::tasks::{EVICTION_GRACE_MS, LocalShell, TaskId, TaskKind, TaskState, updaters};
use strata_store::Store;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::background::{TaskEnded, TaskObserver, TaskOrigin, TaskStarted, TaskType};
use crate::procs::{CommandEnv, Report, STOP_WAIT, Supervised};
use crate::secrets::Redactor;
use crate::sync::lock;
use crate::tools::TaskOwner;
use strata_protocol::sdk::TaskEndStatus;

/// At most this many background shell tasks run at once in a session; starting one more
/// is refused with an error that names the running ones.
pub const MAX_BACKGROUND_SHELLS: usize = 64;

/// Output of a task not yet read by `TaskOutput` is kept in memory up to this many bytes;
/// older unread bytes are dropped from memory (the output file keeps them).
pub const MAX_UNREAD_OUTPUT_BYTES: usize = 1024 * 1024;

/// How long a stopped task's processes get to exit after SIGTERM before everything the
/// command started is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// A line longer than this is redacted and written without waiting for its end (a
/// secret straddling the cut is the price of bounded memory).
const MAX_PENDING_LINE_BYTES: usize = 64 * 1024;

/// After the shell exits, how long its output may take to drain before leftover
/// processes holding the pipes are stopped.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellEnd {
    /// The shell exited with this code (a signal `N` that killed it counts as `128 + N`).
    Exited(i32),
    /// Stopped by `TaskStop` (or the session closing).
    Killed,
    /// The command could not be started, or its supervisor vanished.
    Failed(String),
}

/// What `TaskOutput` sees of a task.
#[derive(Debug, Clone)]
pub struct ShellSnapshot {
    /// The task id.
    pub id: String,
    /// The command line.
    pub command: String,
    /// The description the call gave (or the command).
    pub description: String,
    /// Output that arrived since the previous read (lossy UTF-8).
    pub new_output: String,
    /// Unread bytes dropped from memory because more than [`MAX_UNREAD_OUTPUT_BYTES`]
    /// arrived between reads (the file has them).
    pub dropped: u64,
    /// How it ended, `None` while it runs.
    pub end: Option<ShellEnd>,
    /// The complete output on disk.
    pub output_path: PathBuf,
}

/// A task that was started.
#[derive(Debug, Clone)]
pub struct StartedShell {
    /// The task id (what `TaskOutput` and `TaskStop` take).
    pub id: String,
    /// Where the complete output goes.
    pub output_path: PathBuf,
}

struct Unread {
    bytes: Vec<u8>,
    dropped: u64,
    file: Option<std::fs::File>,
}

struct Shell {
    id: TaskId,
    redactor: Arc<Redactor>,
    command: String,
    description: String,
    output_path: PathBuf,
    unread: Mutex<Unread>,
    /// `Some` once the task ended (and its output is complete).
    end: watch::Sender<Option<ShellEnd>>,
    /// Cancelled by `TaskStop` — and, being a child of its owner's lifetime, when the
    /// agent that started it is stopped (cancelling a parent cancels the child, SA-5).
    stop: CancellationToken,
    /// Who started it (for the task messages).
    origin: TaskOrigin,
}

/// What is left of an evicted task: enough to tell a late reader what happened.
#[derive(Debug, Clone)]
struct Evicted {
    end: ShellEnd,
    output_path: PathBuf,
}

/// The background shell tasks of one session.
pub struct ShellTasks {
    store: Option<Store<AppState>>,
    dir: PathBuf,
    shells: Mutex<HashMap<String, Arc<Shell>>>,
    evicted: Arc<Mutex<HashMap<String, Evicted>>>,
    grace: Duration,
    /// Told when a task starts and ends (the SDK stream, the model's notifications).
    observer: Option<Arc<dyn TaskObserver>>,
}

impl std::fmt::Debug for ShellTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellTasks")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl ShellTasks {
    /// Tasks whose output files go to `dir` (`<session>/tasks/`) and, when `store` is
    /// given, whose entries live in that root store's task map.
    pub fn new(store: Option<Store<AppState>>, dir: impl Into<PathBuf>) -> Self {
        Self {
            store,
            dir: dir.into(),
            shells: Mutex::new(HashMap::new()),
            evicted: Arc::default(),
            grace: Duration::from_millis(EVICTION_GRACE_MS),
            observer: None,
        }
    }

    /// The same tasks, reporting their starts and ends to `observer`.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn TaskObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The same tasks with finished ones evicted `grace` after they end instead of
    /// SL-3's 30 s (tests, benches).
    #[must_use]
    pub fn with_eviction_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How long a finished task stays before it is evicted (SL-3: 30 s).
    pub fn eviction_grace(&self) -> Duration {
        self.grace
    }

    /// How many tasks this session holds in memory (running or not yet evicted).
    pub fn held(&self) -> usize {
        lock(&self.shells).len()
    }

    /// Where task output files go.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn running_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.shells)
            .values()
            .filter(|s| s.end.borrow().is_none())
            .map(|s| s.id.to_string())
            .collect();
        ids.sort();
        ids
    }

    /// Starts `command` with bash in `cwd` with `env` as a background task; its output
    /// is passed through `redactor` before it is stored. It belongs to `owner`: stopping
    /// the owner stops it. `tool_use_id` is the Bash call that started it. Must be called
    /// inside a tokio runtime (the task's driver runs on it).
    #[allow(clippy::too_many_arguments)] // one call site, each argument a distinct fact
    pub(crate) fn start(
        self: &Arc<Self>,
        command: &str,
        description: Option<&str>,
        cwd: &Path,
        env: &CommandEnv,
        redactor: Arc<Redactor>,
        owner: &TaskOwner,
        tool_use_id: Option<&str>,
    ) -> Result<StartedShell, String> {
        let running = self.running_ids();
        if running.len() >= MAX_BACKGROUND_SHELLS {
            return Err(format!(
                "Too many background tasks: {} are running ({}), the limit is \
                 {MAX_BACKGROUND_SHELLS}. Stop one with TaskStop or wait for one to finish \
                 (TaskOutput with block: true), then start this command again.",
                running.len(),
                running.join(", ")
            ));
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            format!(
                "Could not create the task output folder {}: {e}",
                self.dir.display()
            )
        })?;
        let id = TaskId::generate('b');
        let output_path = self.dir.join(format!("{id}.output"));
        let file = std::fs::File::create(&output_path).map_err(|e| {
            format!(
                "Could not create the task output file {}: {e}",
                output_path.display()
            )
        })?;
        let argv = [OsStr::new("bash"), OsStr::new("-c"), OsStr::new(command)];
        let mut supervised = Supervised::spawn(&argv, cwd, env)
            .map_err(|e| format!("Could not start bash in {}: {e}", cwd.display()))?;
        let description = description
            .filter(|d| !d.trim().is_empty())
            .unwrap_or(command)
            .to_owned();
        let (end, _) = watch::channel(None);
        let shell = Arc::new(Shell {
            id: id.clone(),
            redactor,
            command: command.to_owned(),
            description: description.clone(),
            output_path: output_path.clone(),
            unread: Mutex::new(Unread {
                bytes: Vec::new(),
                dropped: 0,
                file: Some(file),
            }),
            end,
            stop: owner.lifetime.child_token(),
            origin: TaskOrigin {
                tool_use_id: tool_use_id.map(str::to_owned),
                parent_task_id: owner.agent_task_id.clone(),
                depth: owner.depth,
            },
        });
        lock(&self.shells).insert(id.to_string(), Arc::clone(&shell));
        if let Some(store) = &self.store {
            let task = TaskState::new(
                id.clone(),
                description,
                now_ms(),
                TaskKind::LocalShell(LocalShell {
                    command: command.into(),
                    pid: None,
                    exit_code: None,
                    output_file: Some(Arc::from(output_path.as_path())),
                }),
            );
            let _ = store.set(updaters::register(task));
            let _ = store.set(updaters::start(id.clone()));
        }
        let readers = [
            supervised
                .stdout
                .take()
                .map(|r| spawn_reader(r, Arc::clone(&shell))),
            supervised
                .stderr
                .take()
                .map(|r| spawn_reader(r, Arc::clone(&shell))),
        ];
        if let Some(observer) = &self.observer {
            observer.started(TaskStarted {
                id: id.to_string(),
                task_type: TaskType::LocalBash,
                description: shell.description.clone(),
                origin: shell.origin.clone(),
                agent_type: None,
                prompt: None,
            });
        }
        let tasks = Arc::downgrade(self);
        let observer = self.observer.clone();
        tokio::spawn(async move {
            let end = drive(Arc::clone(&shell), supervised, readers, store_of(&tasks)).await;
            if let Some(observer) = observer {
                observer.ended(ended_event(&shell, &end));
            }
            evict_later(tasks, shell, end).await;
        });
        Ok(StartedShell {
            id: id.to_string(),
            output_path,
        })
    }

    fn get(&self, id: &str) -> Result<Arc<Shell>, ShellTaskError> {
        let shells = lock(&self.shells);
        if let Some(shell) = shells.get(id) {
            return Ok(Arc::clone(shell));
        }
        if let Some(gone) = lock(&self.evicted).get(id) {
            return Err(ShellTaskError::Evicted {
                id: id.to_owned(),
                end: gone.end.clone(),
                output_path: gone.output_path.clone(),
            });
        }
        let mut known: Vec<String> = shells.keys().cloned().collect();
        drop(shells);
        known.sort();
        Err(ShellTaskError::Unknown {
            id: id.to_owned(),
            known,
        })
    }

    /// Takes the output that arrived since the last read of task `id`, after waiting up
    /// to `wait` for the task to end (no wait when `None`).
    pub async fn read(
        &self,
        id: &str,
        wait: Option<Duration>,
    ) -> Result<ShellSnapshot, ShellTaskError> {
        let shell = self.get(id)?;
        if let Some(wait) = wait {
            let mut rx = shell.end.subscribe();
            let _ = tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await;
        }
        let end = shell.end.borrow().clone();
        let (bytes, dropped) = {
            let mut unread = lock(&shell.unread);
            let dropped = std::mem::take(&mut unread.dropped);
            (std::mem::take(&mut unread.bytes), dropped)
        };
        Ok(ShellSnapshot {
            id: shell.id.to_string(),
            command: shell.command.clone(),
            description: shell.description.clone(),
            new_output: String::from_utf8_lossy(&bytes).into_owned(),
            dropped,
            end,
            output_path: shell.output_path.clone(),
        })
    }

    /// Stops task `id` (SIGTERM to its process group, everything killed after
    /// [`STOP_GRACE`]) and waits until its processes are gone. Returns how it ended; an
    /// error for an unknown task or one that had already ended.
    pub async fn stop(&self, id: &str) -> Result<ShellEnd, ShellTaskError> {
        let shell = self.get(id)?;
        if let Some(end) = shell.end.borrow().clone() {
            return Err(ShellTaskError::NotRunning {
                id: id.to_owned(),
                end,
            });
        }
        shell.stop.cancel();
        let mut rx = shell.end.subscribe();
        let limit = STOP_GRACE + STOP_WAIT + PIPE_GRACE + Duration::from_secs(1);
        match tokio::time::timeout(limit, rx.wait_for(Option::is_some)).await {
            Ok(Ok(end)) => Ok(end.clone().unwrap_or(ShellEnd::Killed)),
            _ => Err(ShellTaskError::StillRunning {
                id: id.to_owned(),
                waited: limit,
            }),
        }
    }
}

/// What the observer hears when `shell` ended with `end`.
fn ended_event(shell: &Shell, end: &ShellEnd) -> TaskEnded {
    let (status, how) = match end {
        ShellEnd::Exited(0) => (
            TaskEndStatus::Completed,
            "completed (exit code 0)".to_owned(),
        ),
        ShellEnd::Exited(code) => (
            TaskEndStatus::Failed,
            format!("failed with exit code {code}"),
        ),
        ShellEnd::Killed => (TaskEndStatus::Stopped, "was stopped".to_owned()),
        ShellEnd::Failed(why) => (TaskEndStatus::Failed, format!("could not run: {why}")),
    };
    TaskEnded {
        id: shell.id.to_string(),
        task_type: TaskType::LocalBash,
        description: shell.description.clone(),
        origin: shell.origin.clone(),
        status,
        output_file: shell.output_path.clone(),
        summary: format!("Background command \"{}\" {how}", shell.description),
        usage: None,
        result: None,
    }
}

/// The store of the tasks `tasks`, while they exist.
fn store_of(tasks: &std::sync::Weak<ShellTasks>) -> Option<Store<AppState>> {
    tasks.upgrade().and_then(|t| t.store.clone())
}

/// Waits out the eviction grace of a task that ended, then dismisses it from the root
/// store (SL-3) and drops its in-memory side, keeping only how it ended and where its
/// output is. Nothing happens if the session's tasks are gone by then.
async fn evict_later(tasks: std::sync::Weak<ShellTasks>, shell: Arc<Shell>, end: ShellEnd) {
    let Some(grace) = tasks.upgrade().map(|t| t.grace) else {
        return;
    };
    tokio::time::sleep(grace).await;
    let Some(tasks) = tasks.upgrade() else {
        return;
    };
    let key = shell.id.to_string();
    lock(&tasks.evicted).insert(
        key.clone(),
        Evicted {
            end,
            output_path: shell.output_path.clone(),
        },
    );
    lock(&tasks.shells).remove(&key);
    if let Some(store) = &tasks.store {
        let _ = store.set(updaters::dismiss(shell.id.clone()));
    }
}

/// Why a background task could not be read or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ShellTaskError {
    /// The task ended and was evicted after its grace period (SL-3).
    #[error(
        "Task {id} {} and was removed from the task list afterwards; its complete output \
         is in {}.",
        describe_end(end),
        output_path.display()
    )]
    Evicted {
        /// The task's id.
        id: String,
        /// How it ended.
        end: ShellEnd,
        /// Its complete output.
        output_path: PathBuf,
    },
    /// No task of this session has that id.
    #[error("{}", unknown_message(id, known))]
    Unknown {
        /// The id asked for.
        id: String,
        /// The ids this session has started, sorted.
        known: Vec<String>,
    },
    /// The task had already ended.
    #[error("Task {id} is not running: it {}.", describe_end(end))]
    NotRunning {
        /// The task's id.
        id: String,
        /// How it ended.
        end: ShellEnd,
    },
    /// A stop was sent but the task's processes had not all exited in time.
    #[error(
        "Task {id} was sent SIGTERM and then SIGKILL, but its processes had not all exited \
         {} s later.",
        waited.as_secs()
    )]
    StillRunning {
        /// The task's id.
        id: String,
        /// How long the stop waited.
        waited: Duration,
    },
}

fn unknown_message(id: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!("No background task with id {id}: this session has started none.")
    } else {
        format!(
            "No background task with id {id}. This session's tasks: {}.",
            known.join(", ")
        )
    }
}

/// How an ended task ended, for messages ("exited with code 0").
pub fn describe_end(end: &ShellEnd) -> String {
    match end {
        ShellEnd::Exited(code) => format!("exited with code {code}"),
        ShellEnd::Killed => "was stopped".to_owned(),
        ShellEnd::Failed(why) => format!("failed: {why}"),
    }
}

fn spawn_reader<R>(mut reader: R, shell: Arc<Shell>) -> tokio::task::JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        // Bytes after the last newline, held until their line ends so that a secret
        // split across two reads is redacted whole.
        let mut pending: Vec<u8> = Vec::new();
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    pending.extend_from_slice(&buf[..n]);
                    let cut = match pending.iter().rposition(|b| *b == b'\n') {
                        Some(at) => at + 1,
                        None if pending.len() > MAX_PENDING_LINE_BYTES => pending.len(),
                        None => continue,
                    };
                    let rest = pending.split_off(cut);
                    store_output(&shell, &pending);
                    pending = rest;
                }
            }
        }
        store_output(&shell, &pending);
    })
}

/// Redacts `chunk` and appends it to the task's file and unread output.
fn store_output(shell: &Shell, chunk: &[u8]) {
    if chunk.is_empty() {
        return;
    }
    let chunk = shell.redactor.redact_bytes(chunk);
    let mut unread = lock(&shell.unread);
    // The file is complete; a failed write stops writing it (the in-memory copy still
    // works) rather than failing the task.
    if let Some(file) = unread.file.as_mut()
        && file.write_all(&chunk).is_err()
    {
        unread.file = None;
    }
    unread.bytes.extend_from_slice(&chunk);
    let over = unread.bytes.len().saturating_sub(MAX_UNREAD_OUTPUT_BYTES);
    if over > 0 {
        unread.bytes.drain(..over);
        unread.dropped += over as u64;
    }
}

/// Waits up to `grace` for the readers to reach end of file; true if they did.
async fn join_readers(
    readers: &mut [Option<tokio::task::JoinHandle<()>>; 2],
    grace: Duration,
) -> bool {
    let deadline = tokio::time::Instant::now() + grace;
    for slot in readers.iter_mut() {
        if let Some(handle) = slot {
            if tokio::time::timeout_at(deadline, handle).await.is_err() {
                return false;
            }
            *slot = None;
        }
    }
    true
}

/// Runs one task to its end: follows the supervisor's reports, stops on request, and
/// records the end in the store and for readers. Returns how it ended.
async fn drive(
    shell: Arc<Shell>,
    mut supervised: Supervised,
    mut readers: [Option<tokio::task::JoinHandle<()>>; 2],
    store: Option<Store<AppState>>,
) -> ShellEnd {
    let mut group: Option<i32> = None;
    let end = loop {
        tokio::select! {
            report = supervised.next() => match report {
                Report::Started(pid) => {
                    group = Some(pid);
                    if let Some(store) = &store {
                        let pid = u32::try_from(pid).ok();
                        let _ = store.set(updaters::progress(shell.id.clone(), move |t| {
                            match &mut t.kind {
                                TaskKind::LocalShell(s) if s.pid != pid => {
                                    s.pid = pid;
                                    true
                                }
                                _ => false,
                            }
                        }));
                    }
                }
                Report::Exited { code, signal, .. } => {
                    // Output first, then whatever the shell left running goes: a task
                    // ends with all of its processes.
                    join_readers(&mut readers, PIPE_GRACE).await;
                    supervised.stop_and_wait(STOP_WAIT).await;
                    break ShellEnd::Exited(match (code, signal) {
                        (Some(code), _) => code,
                        (None, Some(sig)) => 128 + sig,
                        (None, None) => -1,
                    });
                }
                Report::Failed(message) => break ShellEnd::Failed(message),
                Report::Gone => break ShellEnd::Failed(
                    "the task's supervisor process was killed before the command ended"
                        .to_owned(),
                ),
            },
            () = shell.stop.cancelled() => {
                terminate(group, &mut supervised).await;
                break ShellEnd::Killed;
            }
        }
    };
    join_readers(&mut readers, PIPE_GRACE).await;
    for handle in readers.iter().flatten() {
        handle.abort();
    }
    if let Some(file) = lock(&shell.unread).file.as_mut() {
        let _ = file.flush();
    }
    if let Some(store) = &store {
        let now = now_ms();
        let id = shell.id.clone();
        let _ = match &end {
            ShellEnd::Exited(code) => {
                let code = *code;
                let _ = store.set(updaters::progress(id.clone(), move |t| match &mut t.kind {
                    TaskKind::LocalShell(s) => {
                        s.exit_code = Some(code);
                        true
                    }
                    _ => false,
                }));
                if code == 0 {
                    store.set(updaters::complete(id, now))
                } else {
                    store.set(updaters::fail(id, format!("Exit code {code}"), now))
                }
            }
            ShellEnd::Killed => store.set(updaters::kill(id, now)),
            ShellEnd::Failed(why) => store.set(updaters::fail(id, why.as_str(), now)),
        };
    }
    shell.end.send_replace(Some(end.clone()));
    end
}

/// SIGTERM to the command's process group, a grace period for it to exit, then the
/// supervisor kills everything the command started.
async fn terminate(mut group: Option<i32>, supervised: &mut Supervised) {
    use nix::sys::signal::{Signal, killpg};
    // A stop that comes before the supervisor reported the command's pid (the command
    // may already be running) waits for the report, so the command still gets its
    // SIGTERM and grace period rather than being killed at once.
    if group.is_none() {
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        if let Ok(Report::Started(pid)) = tokio::time::timeout_at(deadline, supervised.next()).await
        {
            group = Some(pid);
        }
    }
    if let Some(group) = group {
        // ESRCH: the group is already empty.
        let _ = killpg(nix::unistd::Pid::from_raw(group), Signal::SIGTERM);
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        loop {
            match tokio::time::timeout_at(deadline, supervised.next()).await {
                Ok(Report::Gone) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
    supervised.stop_and_wait(STOP_WAIT).await;
}
