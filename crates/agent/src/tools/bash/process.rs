//! Running one shell command: its own process group, bounded output capture, timeout and
//! cancellation that kill the whole group, and the directory the shell ended in.
//!
//! Why a process group: `bash -c 'make test'` starts grandchildren; killing only bash
//! would leave them running (and holding the output pipes open). The command runs as the
//! leader of a fresh group and every stop path signals the group. A guard kills the
//! group if the future is dropped mid-run (the turn was abandoned), so no path leaks
//! processes.
//!
//! How `cd` persists: the user's command runs through `eval` inside a small wrapper that
//! afterwards writes `pwd -P` to a private temp file; the tool moves the shared working
//! directory there. `eval` keeps syntax errors, heredocs and `exit` behaving as in a
//! plain `bash -c` (an `exit` ends the shell before the wrapper records the directory,
//! so the directory stays where it was).

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::tools::lock;

/// At most this many bytes of each stream are kept in memory; the rest is counted and
/// dropped (the inline cap is far smaller; this bounds a runaway `yes`).
pub(crate) const MAX_CAPTURE_BYTES: usize = 8 * 1024 * 1024;

/// After the shell exits, how long background processes may keep the output pipes open
/// before the group is killed so the call can return.
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
    /// The timeout passed; the group was killed.
    TimedOut,
    /// The turn was cancelled; the group was killed.
    Cancelled,
}

/// What a run produced.
#[derive(Debug)]
pub(crate) struct RunOutcome {
    pub(crate) stdout: Capture,
    pub(crate) stderr: Capture,
    pub(crate) ended: Ended,
    /// The shell's directory at the end (absent if it exited early or was killed).
    pub(crate) final_cwd: Option<PathBuf>,
    /// Background processes held the output open after the shell exited and were killed.
    pub(crate) stopped_leftovers: bool,
}

/// One captured stream.
#[derive(Debug, Default, Clone)]
pub(crate) struct Capture {
    pub(crate) bytes: Vec<u8>,
    /// Bytes read beyond [`MAX_CAPTURE_BYTES`] and dropped.
    pub(crate) dropped: u64,
}

/// Kills the process group when dropped, unless disarmed after a clean end.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (already gone) is the normal case after a clean exit.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `command` with bash in `cwd` with `env` added, until it ends, `timeout` passes
/// or `cancel` fires.
pub(crate) async fn run(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
    cancel: &CancellationToken,
) -> io::Result<RunOutcome> {
    let cwd_file = tempfile::Builder::new()
        .prefix("strata-bash-cwd-")
        .tempfile()?;
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(WRAPPER)
        .arg("strata-bash")
        .arg(command)
        .arg(cwd_file.path())
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let mut guard = GroupGuard { pgid };

    let stdout = Arc::new(Mutex::new(Capture::default()));
    let stderr = Arc::new(Mutex::new(Capture::default()));
    let mut readers = [
        child.stdout.take().map(|r| spawn_reader(r, stdout.clone())),
        child.stderr.take().map(|r| spawn_reader(r, stderr.clone())),
    ];

    let waited = tokio::select! {
        status = child.wait() => Some(status?),
        () = tokio::time::sleep(timeout) => None,
        () = cancel.cancelled() => None,
    };

    let mut stopped_leftovers = false;
    let ended = match waited {
        Some(status) => {
            // The shell is done; give its output a moment to drain, then stop whatever
            // still holds the pipes so the call can return.
            if !join_readers(&mut readers, PIPE_GRACE).await {
                stopped_leftovers = true;
                guard.kill();
                join_readers(&mut readers, PIPE_GRACE).await;
            }
            exit_of(status)
        }
        None => {
            guard.kill();
            let _ = child.wait().await;
            join_readers(&mut readers, PIPE_GRACE).await;
            if cancel.is_cancelled() {
                Ended::Cancelled
            } else {
                Ended::TimedOut
            }
        }
    };
    // Readers still running now hold pipes of processes that escaped the group; stop
    // waiting for them (what they captured so far is kept).
    for handle in readers.iter().flatten() {
        handle.abort();
    }
    // A clean end needs no kill; a leftover-free group is already gone.
    guard.pgid = None;

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
        stopped_leftovers,
    })
}

fn exit_of(status: std::process::ExitStatus) -> Ended {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
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
