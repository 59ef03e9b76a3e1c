//! Running one shell command: under a supervisor (see [`crate::procs`]) that catches
//! every process it starts, bounded output capture, timeout and cancellation that stop
//! all of them, and the directory the shell ended in.
//!
//! Why a supervisor and not only a process group: `bash -c 'make test'` starts
//! grandchildren, and `setsid`/`nohup … &` move them out of any group. The supervisor is
//! their subreaper, so every stop path (timeout, cancellation, the call being dropped,
//! strata exiting or dying) ends all of them, and a result says "killed" only once the
//! supervisor confirmed that nothing is left.
//!
//! How `cd` persists: the user's command runs through `eval` inside a small wrapper that
//! afterwards writes `pwd -P` to a private temp file; the tool moves the shared working
//! directory there. `eval` keeps syntax errors, heredocs and `exit` behaving as in a
//! plain `bash -c` (an `exit` ends the shell before the wrapper records the directory,
//! so the directory stays where it was).

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::procs::{CommandEnv, Report, STOP_WAIT, Supervised};
use crate::tools::lock;

/// At most this many bytes of each stream are kept in memory; the rest is counted and
/// dropped (the inline cap is far smaller; this bounds a runaway `yes`).
pub(crate) const MAX_CAPTURE_BYTES: usize = 8 * 1024 * 1024;

/// After the shell exits, how long background processes may keep the output pipes open
/// before they are stopped so the call can return.
const PIPE_GRACE: Duration = Duration::from_millis(1000);

/// The wrapper around the user's command (`$1`); `$2` is the file for the final directory.
const WRAPPER: &str = r#"__strata_cmd=$1
__strata_cwd_file=$2
shift 2
eval "$__strata_cmd"
__strata_status=$?
pwd -P >| "$__strata_cwd_file" 2>/dev/null
exit $__strata_status"#;

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The shell exited with this code.
    Exited(i32),
    /// The shell was killed by this signal (not by us).
    Signaled(i32),
    /// The timeout passed and everything was stopped; `confirmed` when the supervisor
    /// reported every process gone within [`STOP_WAIT`].
    TimedOut { confirmed: bool },
    /// The turn was cancelled and everything was stopped (`confirmed` as above).
    Cancelled { confirmed: bool },
    /// The supervisor vanished before the shell's end was known (something killed it):
    /// processes of the command may still run.
    Lost,
}

/// What happened to processes still running after the shell exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leftovers {
    /// None were left.
    None,
    /// They held the output pipes and were stopped; `confirmed` as in [`Ended`].
    Stopped { confirmed: bool },
    /// This many run on in the background (their output is not captured); they are
    /// stopped when strata exits.
    Running(usize),
}

/// What a run produced.
#[derive(Debug)]
pub(crate) struct RunOutcome {
    pub(crate) stdout: Capture,
    pub(crate) stderr: Capture,
    pub(crate) ended: Ended,
    /// The shell's directory at the end (absent if it exited early or was killed).
    pub(crate) final_cwd: Option<PathBuf>,
    /// Processes that outlived the shell.
    pub(crate) leftovers: Leftovers,
}

/// One captured stream.
#[derive(Debug, Default, Clone)]
pub(crate) struct Capture {
    pub(crate) bytes: Vec<u8>,
    /// Bytes read beyond [`MAX_CAPTURE_BYTES`] and dropped.
    pub(crate) dropped: u64,
}

/// Runs `command` with bash in `cwd` with `env`, until it ends, `timeout` passes or
/// `cancel` fires.
pub(crate) async fn run(
    command: &str,
    cwd: &Path,
    env: &CommandEnv,
    timeout: Duration,
    cancel: &CancellationToken,
) -> io::Result<RunOutcome> {
    let cwd_file = tempfile::Builder::new()
        .prefix("strata-bash-cwd-")
        .tempfile()?;
    let argv: [&OsStr; 6] = [
        OsStr::new("bash"),
        OsStr::new("-c"),
        OsStr::new(WRAPPER),
        OsStr::new("strata-bash"),
        OsStr::new(command),
        cwd_file.path().as_os_str(),
    ];
    let mut supervised = Supervised::spawn(&argv, cwd, env)?;

    let stdout = Arc::new(Mutex::new(Capture::default()));
    let stderr = Arc::new(Mutex::new(Capture::default()));
    let mut readers = [
        supervised
            .stdout
            .take()
            .map(|r| spawn_reader(r, stdout.clone())),
        supervised
            .stderr
            .take()
            .map(|r| spawn_reader(r, stderr.clone())),
    ];

    let deadline = tokio::time::Instant::now() + timeout;
    let finished = loop {
        tokio::select! {
            report = supervised.next() => match report {
                Report::Started(_) => {}
                Report::Exited { code, signal, running } => {
                    break Some((exit_of(code, signal), running));
                }
                Report::Failed(message) => return Err(io::Error::other(message)),
                Report::Gone => break None,
            },
            () = tokio::time::sleep_until(deadline) => break None,
            () = cancel.cancelled() => break None,
        }
    };

    let mut leftovers = Leftovers::None;
    let ended = match finished {
        Some((ended, running)) => {
            // The shell is done; give its output a moment to drain, then stop whatever
            // still holds the pipes so the call can return.
            if join_readers(&mut readers, PIPE_GRACE).await {
                if running > 0 {
                    leftovers = Leftovers::Running(running);
                }
                supervised.release();
            } else {
                let confirmed = supervised.stop_and_wait(STOP_WAIT).await;
                leftovers = Leftovers::Stopped { confirmed };
                join_readers(&mut readers, PIPE_GRACE).await;
            }
            ended
        }
        None if cancel.is_cancelled() || tokio::time::Instant::now() >= deadline => {
            let confirmed = supervised.stop_and_wait(STOP_WAIT).await;
            join_readers(&mut readers, PIPE_GRACE).await;
            if cancel.is_cancelled() {
                Ended::Cancelled { confirmed }
            } else {
                Ended::TimedOut { confirmed }
            }
        }
        None => {
            join_readers(&mut readers, PIPE_GRACE).await;
            Ended::Lost
        }
    };
    // Readers still running now hold pipes of processes that could not be stopped;
    // stop waiting for them (what they captured so far is kept).
    for handle in readers.iter().flatten() {
        handle.abort();
    }

    let final_cwd = match ended {
        Ended::Exited(_) => std::fs::read_to_string(cwd_file.path())
            .ok()
            .map(|s| PathBuf::from(s.trim_end_matches('\n')))
            .filter(|p| p.is_absolute() && p.is_dir()),
        _ => None,
    };
    let take = |c: &Arc<Mutex<Capture>>| std::mem::take(&mut *lock(c));
    Ok(RunOutcome {
        stdout: take(&stdout),
        stderr: take(&stderr),
        ended,
        final_cwd,
        leftovers,
    })
}

fn exit_of(code: Option<i32>, signal: Option<i32>) -> Ended {
    match (code, signal) {
        (Some(code), _) => Ended::Exited(code),
        (None, Some(sig)) => Ended::Signaled(sig),
        (None, None) => Ended::Exited(-1),
    }
}

fn spawn_reader<R>(mut reader: R, into: Arc<Mutex<Capture>>) -> tokio::task::JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut c = lock(&into);
                    let room = MAX_CAPTURE_BYTES.saturating_sub(c.bytes.len());
                    let keep = n.min(room);
                    c.bytes.extend_from_slice(&buf[..keep]);
                    c.dropped += (n - keep) as u64;
                }
            }
        }
    })
}

/// Waits up to `grace` for both readers to reach end of file; true if they did.
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
