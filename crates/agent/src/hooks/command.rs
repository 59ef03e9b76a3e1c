//! Running one command hook: `sh -c <command>` in the session's directory, the event as
//! JSON on stdin, stdout and stderr captured, bounded by the hook's timeout and the
//! turn's cancellation (the process group is killed either way, so a hook that starts
//! children cannot keep the turn waiting).
//!
//! Credential variables do not reach a hook (as for tool processes: `crate::secrets`);
//! `CLAUDE_PROJECT_DIR` names the project, as the reference agent sets it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

use super::{Ran, outcome, seconds};

/// Output kept per stream; more is cut (a hook that floods its output is still read to
/// the end, so it never blocks on a full pipe).
const OUTPUT_LIMIT: usize = 64 * 1024;

/// Runs `command` (see the module docs).
pub(super) async fn run(
    command: &str,
    input: &Value,
    timeout: Duration,
    cwd: &Path,
    stdout_is_context: bool,
    name: &str,
    cancel: &CancellationToken,
) -> Ran {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for var in crate::secrets::CREDENTIAL_VARS {
        cmd.env_remove(var);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return Ran::error(format!("{name} hook {command:?} could not start: {e}")),
    };
    let pid = child.id();
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let payload = input.to_string();
    let work = async {
        // A hook that does not read its stdin must not fail the write: ignore EPIPE.
        if let Some(mut stdin) = stdin.take() {
            let _ = stdin.write_all(payload.as_bytes()).await;
            drop(stdin);
        }
        let (out, err, status) = tokio::join!(
            read_all(stdout.as_mut()),
            read_all(stderr.as_mut()),
            child.wait()
        );
        (out, err, status)
    };
    let finished = tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        done = tokio::time::timeout(timeout, work) => Some(done),
    };
    let kill_group = || {
        if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
            // The hook's own process group (process_group(0)): its children go too.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    };
    match finished {
        None => {
            kill_group();
            Ran::cancelled()
        }
        Some(Err(_)) => {
            kill_group();
            Ran::timeout(format!(
                "{name} hook {command:?} timed out after {} and was stopped",
                seconds(timeout)
            ))
        }
        Some(Ok((out, err, status))) => {
            // Children it left behind are not waited for.
            kill_group();
            let code = match status {
                Ok(status) => status.code(),
                Err(e) => {
                    return Ran::error(format!(
                        "{name} hook {command:?} could not be waited for: {e}"
                    ));
                }
            };
            let Some(code) = code else {
                return Ran::error(format!("{name} hook {command:?} was killed by a signal"));
            };
            Ran {
                outcome: outcome::from_command(code, &out, &err, stdout_is_context, name),
                stdout: out,
                stderr: err,
                exit_code: Some(code),
                status: if code == 0 || code == 2 {
                    "success"
                } else {
                    "error"
                },
            }
        }
    }
}

/// Reads a pipe to its end, keeping the first [`OUTPUT_LIMIT`] bytes.
async fn read_all<R: tokio::io::AsyncRead + Unpin>(pipe: Option<&mut R>) -> String {
    let Some(pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
