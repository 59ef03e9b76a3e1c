//! The supervisor process: the code that runs in the small process between strata and one
//! tool command (see the [module doc](super) for the design).
//!
//! It starts the command, reports its pid and exit status to strata over the control
//! socket it got as stdin, reaps every descendant that is reparented to it, and, when
//! strata asks (by closing or writing to the socket) or dies (the socket reaches end of
//! file because the kernel closed strata's end), kills every descendant and exits once
//! none is left. It also exits by itself when the command and everything it started
//! have ended.

use std::ffi::OsString;
use std::io::{self, Read as _, Write as _};
use std::os::fd::AsFd as _;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::tree;

/// How long the stop loop sleeps between sweeps while killed processes are reaped.
const SWEEP_PAUSE: Duration = Duration::from_millis(5);

/// Runs the supervisor for the command `argv` (program first). Returns only on a setup
/// error: otherwise the process exits from one of its threads once nothing it supervises
/// is left.
pub(super) fn run(argv: Vec<OsString>) -> ExitCode {
    let control = match control_socket() {
        Ok(control) => control,
        Err(err) => {
            #[allow(clippy::print_stderr)] // a person ran the hidden command by hand
            {
                eprintln!(
                    "strata: {} is internal: strata runs tool commands through it with a \
                     control socket on stdin ({err})",
                    super::SUPERVISE_ARG
                );
            }
            return ExitCode::from(2);
        }
    };
    let control = Reporter(Mutex::new(control));
    match start(&argv) {
        Ok(child) => supervise(control, child),
        Err(message) => {
            control.send(&format!("failed {message}"));
            ExitCode::from(1)
        }
    }
}

/// The control socket strata passed as stdin (a duplicate, so stdin itself can be left
/// alone). Anything else on stdin means a person started the supervisor by hand.
fn control_socket() -> io::Result<UnixStream> {
    let fd = io::stdin().as_fd().try_clone_to_owned()?;
    let socket = UnixStream::from(fd);
    socket.local_addr()?; // ENOTSOCK when stdin is not a socket
    Ok(socket)
}

/// Sends status lines to strata; a failed send means strata is gone.
struct Reporter(Mutex<UnixStream>);

impl Reporter {
    fn send(&self, line: &str) -> bool {
        let mut socket = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        socket.write_all(format!("{line}\n").as_bytes()).is_ok()
    }
}

/// The signals that stop the supervisor (and with it everything it supervises). They
/// are blocked and taken by a thread, not left at their default, so that a `kill` of the
/// supervisor still cleans up instead of orphaning the command.
fn stop_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        set.add(signal);
    }
    set
}

/// Becomes a subreaper and starts the command in its own process group, with stdout and
/// stderr the output pipes strata reads, then lets go of those pipes so their end of file
/// means the command's processes closed them.
fn start(argv: &[OsString]) -> Result<i32, String> {
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| format!("cannot become a child subreaper: {e}"))?;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| "no command to run".to_owned())?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
    // Blocked only now, after the spawn: a child inherits the signal mask across exec,
    // and a command with SIGTERM blocked could not be stopped gently (TaskStop). Still
    // before any thread exists, so every thread of the supervisor inherits the mask. A
    // stop signal in the moment between the spawn and this kills the supervisor by
    // default; its command is then adopted by strata and stopped when strata exits.
    stop_signals()
        .thread_block()
        .map_err(|e| format!("cannot block the stop signals: {e}"))?;
    let pid = i32::try_from(child.id()).map_err(|_| "pid out of range".to_owned())?;
    let _ = COMMAND.set(pid);
    // The child is reaped below with waitpid(-1), together with adopted orphans.
    drop(child);
    let null = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(|e| format!("cannot open /dev/null: {e}"))?;
    nix::unistd::dup2_stdout(&null).map_err(|e| format!("cannot release stdout: {e}"))?;
    nix::unistd::dup2_stderr(&null).map_err(|e| format!("cannot release stderr: {e}"))?;
    Ok(pid)
}

fn supervise(control: Reporter, child: i32) -> ExitCode {
    let control: &'static Reporter = Box::leak(Box::new(control));
    if !control.send(&format!("started {child}")) {
        stop_everything();
    }
    let listener = control
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .try_clone();
    match listener {
        Ok(mut socket) => {
            std::thread::spawn(move || {
                // End of file (strata closed its end or died), an error, or any byte:
                // each means stop.
                let mut byte = [0u8; 1];
                let _ = socket.read(&mut byte);
                stop_everything();
            });
        }
        Err(_) => stop_everything(),
    }
    std::thread::spawn(|| {
        let _ = stop_signals().wait();
        stop_everything();
    });
    reap(control, child)
}

/// Reaps children (the command, then orphans adopted as subreaper) until none is left;
/// reports the command's end as `exited <code> <signal> <still running>`.
fn reap(control: &Reporter, child: i32) -> ExitCode {
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid.as_raw() == child => {
                report_end(control, code, 0);
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid.as_raw() == child => {
                report_end(control, -1, signal as i32);
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(Errno::ECHILD) => std::process::exit(0),
            Err(_) => stop_everything(),
        }
    }
}

fn report_end(control: &Reporter, code: i32, signal: i32) {
    let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    let running = tree::descendants(me)
        .into_iter()
        .filter(|&pid| !tree::has_ended(pid))
        .count();
    if !control.send(&format!("exited {code} {signal} {running}")) {
        stop_everything();
    }
}

/// The command's pid, which is also its process group id.
static COMMAND: std::sync::OnceLock<i32> = std::sync::OnceLock::new();

/// Kills every descendant with SIGKILL, again and again (one that forked between the
/// scan and the kill has its children reparented here and found by the next scan),
/// and exits once this process has no child left — then it has no descendant either,
/// since an orphaned descendant is reparented here. The command's process group is
/// killed too, so a missing `/proc` cannot leave the command running.
fn stop_everything() -> ! {
    let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    loop {
        if let Some(&group) = COMMAND.get() {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
        for pid in tree::descendants(me) {
            // ESRCH: it ended between the scan and the kill.
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        // Reap here too: the reaping thread may be the one that called this.
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Err(Errno::ECHILD) => std::process::exit(0),
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => {}
            }
        }
        std::thread::sleep(SWEEP_PAUSE);
    }
}
