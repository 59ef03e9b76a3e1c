//! Every process a tool starts, tracked in one place, so that none outlives strata.
//!
//! # Design (no privileges, no cgroups)
//!
//! A tool command does not run as strata's child. strata starts a small **supervisor**
//! process (the strata binary re-executed with the hidden argument [`SUPERVISE_ARG`], see
//! [`set_supervisor_program`]) that:
//!
//! - makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): a process of the
//!   command whose parent dies is reparented to the supervisor instead of to init, so
//!   `nohup … &`, `setsid … &` and double forks stay its descendants whatever process
//!   group or session they move to;
//! - starts the command in a process group of its own, reaps it and every adopted
//!   orphan, and reports the command's exit status to strata;
//! - holds a **control socket** (one end of a socket pair, given as its stdin): when the
//!   socket reaches end of file — strata shut it, or strata died by any means, SIGKILL
//!   included, since the kernel closes a dead process's descriptors — it kills every
//!   descendant (found by walking the parent pids in `/proc`, again until none is left)
//!   and exits. That is the watchdog: it acts within milliseconds of strata's death;
//! - takes SIGTERM, SIGINT, SIGHUP and SIGQUIT the same way (blocked and waited for by a
//!   thread), so killing the supervisor cleans up too, and lives in its own process group
//!   so a terminal's Ctrl-C reaches strata only.
//!
//! Why not `PR_SET_PDEATHSIG`: Linux sends it when the *thread* that forked the child
//! ends, not the process (checked on this project's CI kernel: a child whose spawning
//! thread returned got the signal while the parent lived on). strata spawns from tokio
//! threads, and blocking-pool threads end after ten idle seconds, so the signal would
//! kill running commands. A socket reaches end of file only when every copy of strata's
//! end is closed, which happens when the process, not a thread, ends.
//!
//! strata's side is the [tracker](shutdown_all): every supervisor is registered before
//! its command can run; [`shutdown_all`] (called by the binary on every exit path:
//! normal end, SIGINT, SIGTERM, SIGHUP, a panic) closes every control socket and waits
//! until each supervisor has exited, i.e. until every process of every tool command is
//! gone. A command's background processes may run on after the command (a dev server
//! started with `nohup … &`); they are stopped when strata exits.
//!
//! A command running as the same user can kill its supervisor with SIGKILL. The binary
//! therefore makes strata a subreaper too ([`adopt_orphans`]): the processes of a killed
//! supervisor are reparented to strata, and [`shutdown_all`] kills every remaining
//! descendant of strata as well (only a SIGKILL of strata *after* such a supervisor kill
//! lets them escape).
//!
//! Limits, documented rather than hidden: a command can ask another service to start a
//! process for it (`systemd-run --user`, `at`, `ssh localhost`); only a PID namespace or
//! cgroup owned by strata could stop that, and both need privileges this design does
//! without.

mod supervisor;
mod tree;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::net::Shutdown;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdout};

use crate::sync::lock;

/// The hidden first argument that makes the strata binary act as a supervisor.
pub const SUPERVISE_ARG: &str = "__strata-supervise";

/// The name of the helper binary embedders may ship instead of re-executing their own
/// program (this crate builds one for its own tests).
pub const SUPERVISOR_BINARY: &str = "strata-supervise";

/// How long [`shutdown_all`] and a stop wait for supervisors to confirm that everything
/// they supervised is gone.
pub const STOP_WAIT: Duration = Duration::from_secs(3);

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

static ADOPTING: AtomicBool = AtomicBool::new(false);

/// Makes this process a child subreaper, so processes of a supervisor that was killed are
/// reparented here, and makes [`shutdown_all`] kill every descendant of this process.
/// For a program whose only children are tool commands (the strata binary); a library
/// user with children of its own must not call it.
pub fn adopt_orphans() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)?;
    ADOPTING.store(true, Ordering::SeqCst);
    Ok(())
}

/// Whether [`adopt_orphans`] is in force.
pub fn adopting() -> bool {
    ADOPTING.load(Ordering::SeqCst)
}

static TRACKER: Mutex<Tracker> = Mutex::new(Tracker {
    entries: None,
    next_id: 0,
    closing: false,
});

/// Names the program that runs supervisors: it must call [`supervise_main`] when its
/// first argument is [`SUPERVISE_ARG`]. The strata binary passes `/proc/self/exe` (itself,
/// even if the file was replaced since it started). Only the first call has an effect.
pub fn set_supervisor_program(program: impl Into<PathBuf>) {
    let _ = PROGRAM.set(program.into());
}

/// The supervisor program: the one named by [`set_supervisor_program`], else a
/// [`SUPERVISOR_BINARY`] beside the running executable or one directory up (where cargo
/// puts binaries relative to test executables).
fn supervisor_program() -> io::Result<PathBuf> {
    if let Some(program) = PROGRAM.get() {
        return Ok(program.clone());
    }
    let exe = std::env::current_exe()?;
    exe.ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(SUPERVISOR_BINARY))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            io::Error::other(format!(
                "no process supervisor is configured (the program embedding strata's agent \
                 must call procs::set_supervisor_program, or ship {SUPERVISOR_BINARY} beside \
                 {})",
                exe.display()
            ))
        })
}

/// The entry point of a supervisor process: `args` are the program's arguments after
/// [`SUPERVISE_ARG`] (the command to run, program first).
pub fn supervise_main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    supervisor::run(args.into_iter().collect())
}

/// If the current process was started as a supervisor (its first argument is
/// [`SUPERVISE_ARG`]), runs as one and returns its exit code; otherwise `None`. A binary
/// calls this first thing in `main`.
pub fn run_if_supervisor() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(SUPERVISE_ARG)) {
        return None;
    }
    Some(supervise_main(args))
}

struct Entry {
    pid: i32,
    control: UnixStream,
}

struct Tracker {
    // `None` until the first entry (a `HashMap` cannot be built in a `static`).
    entries: Option<HashMap<u64, Entry>>,
    next_id: u64,
    closing: bool,
}

/// Stops every tracked command and everything it started, and waits up to `wait` until
/// all of them are gone (with [`adopt_orphans`], every other descendant of this process
/// is killed too). Once called, no new command starts. Returns how many supervisors (or
/// adopted processes) had not ended by then: 0 means nothing strata started is left.
///
/// Blocking (it polls `/proc`); safe to call from any thread, also more than once.
pub fn shutdown_all(wait: Duration) -> usize {
    let entries: Vec<Entry> = {
        let mut tracker = lock(&TRACKER);
        tracker.closing = true;
        tracker
            .entries
            .take()
            .map(|m| m.into_values().collect())
            .unwrap_or_default()
    };
    for entry in &entries {
        // ENOTCONN: the supervisor is already gone.
        let _ = entry.control.shutdown(Shutdown::Write);
    }
    let deadline = Instant::now() + wait;
    let mut left: Vec<i32> = entries.iter().map(|e| e.pid).collect();
    loop {
        left.retain(|&pid| !tree::has_ended(pid));
        if left.is_empty() || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if adopting() {
        return left.len().max(kill_adopted(deadline));
    }
    left.len()
}

/// Kills every descendant of this process that is still running (orphans of killed
/// supervisors, adopted as subreaper) and reaps them, until none is left or `deadline`.
/// Returns how many were left.
fn kill_adopted(deadline: Instant) -> usize {
    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    loop {
        let running: Vec<i32> = tree::descendants(me)
            .into_iter()
            .filter(|&pid| !tree::has_ended(pid))
            .collect();
        if running.is_empty() || Instant::now() >= deadline {
            return running.len();
        }
        for pid in running {
            let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
        while let Ok(status) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How many supervised commands (finished ones with background processes included) are
/// still tracked.
pub fn tracked() -> usize {
    lock(&TRACKER).entries.as_ref().map_or(0, HashMap::len)
}

fn untrack(id: u64) {
    if let Some(entries) = lock(&TRACKER).entries.as_mut() {
        entries.remove(&id);
    }
}

/// What a supervisor reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Report {
    /// The command started with this pid.
    Started(i32),
    /// The command could not be started.
    Failed(String),
    /// The command ended: its exit code (or `None`), the signal that killed it (or
    /// `None`), and how many of its descendants were still running then.
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
        running: usize,
    },
    /// The supervisor is gone: the command and everything it started have ended (or
    /// the supervisor itself was killed).
    Gone,
}

fn parse_report(line: &str) -> Option<Report> {
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    match word {
        "started" => rest.trim().parse().ok().map(Report::Started),
        "failed" => Some(Report::Failed(rest.to_owned())),
        "exited" => {
            let mut n = rest.split_ascii_whitespace().map(str::parse::<i64>);
            let (code, signal, running) = (n.next()?.ok()?, n.next()?.ok()?, n.next()?.ok()?);
            Some(Report::Exited {
                code: (code >= 0).then(|| i32::try_from(code).ok()).flatten(),
                signal: (signal > 0).then(|| i32::try_from(signal).ok()).flatten(),
                running: usize::try_from(running).unwrap_or(0),
            })
        }
        _ => None,
    }
}

/// The environment a supervised command gets: strata's own minus `remove`, plus `set`.
#[derive(Debug, Default, Clone)]
pub(crate) struct CommandEnv {
    /// Variables added or overwritten.
    pub(crate) set: Vec<(String, String)>,
    /// Variables removed (credentials).
    pub(crate) remove: Vec<String>,
}

/// One supervised command, from strata's side. Dropping it before [`Self::release`]
/// stops the command and everything it started.
pub(crate) struct Supervised {
    control: BufReader<tokio::net::UnixStream>,
    /// The same socket, for shutting it from synchronous code (`Drop`).
    own: UnixStream,
    pending: String,
    /// The command's stdout and stderr (taken by the caller).
    pub(crate) stdout: Option<ChildStdout>,
    pub(crate) stderr: Option<ChildStderr>,
    released: bool,
    gone: bool,
}

impl Supervised {
    /// Starts `argv` (program first) under a supervisor in `cwd` with `env`; stdin is
    /// empty, stdout and stderr are pipes.
    pub(crate) fn spawn(argv: &[&OsStr], cwd: &Path, env: &CommandEnv) -> io::Result<Self> {
        let program = supervisor_program()?;
        let (ours, theirs) = UnixStream::pair()?;
        let mut cmd = tokio::process::Command::new(&program);
        cmd.arg0(SUPERVISOR_BINARY)
            .arg(SUPERVISE_ARG)
            .args(argv)
            .current_dir(cwd)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: a terminal's Ctrl-C goes to strata, which stops commands
            // through the socket instead of the signal killing supervisors half-way.
            .process_group(0);
        for name in &env.remove {
            cmd.env_remove(name);
        }
        cmd.envs(env.set.iter().map(|(k, v)| (k, v)));
        let tracked = ours.try_clone()?;
        let own = ours.try_clone()?;
        let (id, mut child) = {
            let mut tracker = lock(&TRACKER);
            if tracker.closing {
                return Err(io::Error::other(
                    "strata is exiting: no new command is started",
                ));
            }
            // Spawned under the lock so a concurrent shutdown cannot miss it.
            let child = cmd.spawn()?;
            let pid = child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .ok_or_else(|| io::Error::other("the supervisor has no pid"))?;
            tracker.next_id += 1;
            let id = tracker.next_id;
            tracker.entries.get_or_insert_with(HashMap::new).insert(
                id,
                Entry {
                    pid,
                    control: tracked,
                },
            );
            (id, child)
        };
        // The supervisor's end must not stay open here: its end of file is its own.
        drop(cmd);
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        tokio::spawn(async move {
            let _ = child.wait().await;
            untrack(id);
        });
        ours.set_nonblocking(true)?;
        let control = BufReader::new(tokio::net::UnixStream::from_std(ours)?);
        Ok(Self {
            control,
            own,
            pending: String::new(),
            stdout,
            stderr,
            released: false,
            gone: false,
        })
    }

    /// The next report. Cancel-safe: a partly read line is kept for the next call.
    pub(crate) async fn next(&mut self) -> Report {
        loop {
            if self.gone {
                return Report::Gone;
            }
            match self.control.read_line(&mut self.pending).await {
                Ok(0) | Err(_) => self.gone = true,
                Ok(_) if self.pending.ends_with('\n') => {
                    let report = parse_report(self.pending.trim_end());
                    self.pending.clear();
                    if let Some(report) = report {
                        return report;
                    }
                }
                Ok(_) => {}
            }
        }
    }

    /// Asks the supervisor to kill everything it supervises and exit. Only the writing
    /// direction is shut: its end of file is the request, and reading on until the
    /// supervisor closes its end is how the stop is confirmed.
    pub(crate) fn stop(&self) {
        let _ = self.own.shutdown(Shutdown::Write);
    }

    /// Stops everything and waits up to `wait` for the supervisor to confirm (by exiting
    /// after the last process it supervised was gone). True when confirmed.
    pub(crate) async fn stop_and_wait(&mut self, wait: Duration) -> bool {
        self.stop();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.next()).await {
                Ok(Report::Gone) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    }

    /// Lets the command's background processes run on (tracked until they end or
    /// strata exits).
    pub(crate) fn release(mut self) {
        self.released = true;
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if !self.released {
            self.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_parsed_and_junk_is_ignored() {
        assert_eq!(parse_report("started 42"), Some(Report::Started(42)));
        assert_eq!(
            parse_report("exited 3 0 1"),
            Some(Report::Exited {
                code: Some(3),
                signal: None,
                running: 1
            })
        );
        assert_eq!(
            parse_report("exited -1 9 0"),
            Some(Report::Exited {
                code: None,
                signal: Some(9),
                running: 0
            })
        );
        assert_eq!(
            parse_report("failed cannot start x: no such file"),
            Some(Report::Failed("cannot start x: no such file".into()))
        );
        assert_eq!(parse_report("exited x"), None);
        assert_eq!(parse_report("hello"), None);
    }
}
