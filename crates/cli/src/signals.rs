//! The ways a headless run is told to stop (SIGINT, SIGTERM, SIGHUP), and the one thing
//! every exit path does first: stop every process the session's tools started.
//!
//! - The first signal interrupts the running turn through the session's cancellation
//!   token: the running command and everything it started are stopped, the engine records
//!   the interruption (the session stays resumable), and the process exits with
//!   128 + the signal's number (130, 143, 129).
//! - After SIGTERM or SIGHUP the run gets [`TERMINATE_GRACE`] to close; a process manager
//!   that sent SIGTERM expects an exit, and a closed terminal will not send a second one.
//!   After SIGINT it waits for the user (who can press Ctrl-C again).
//! - A second signal, or the grace running out, exits at once — after
//!   [`stop_processes`], like every other exit (`main` calls it after a normal end or a
//!   panic). SIGKILL cannot be handled; the supervisors' watchdog covers it
//!   (`strata_agent::procs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use strata_agent::procs;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::headless::warn;

/// How long a run may take to close after SIGTERM or SIGHUP.
pub(crate) const TERMINATE_GRACE: Duration = Duration::from_secs(5);

/// The signals a run handles, with their names for messages.
const HANDLED: [(SignalKind, i32, &str); 3] = [
    (SignalKind::interrupt(), 2, "interrupted"),
    (SignalKind::terminate(), 15, "terminated (SIGTERM)"),
    (SignalKind::hangup(), 1, "hung up (SIGHUP)"),
];

/// Watches for the stop signals of one run.
pub(crate) struct Interrupts {
    /// Cancelled by the first signal; turns run on child tokens of it.
    pub(crate) session: CancellationToken,
    /// The number of the first signal seen, 0 for none.
    seen: Arc<AtomicI32>,
}

impl Interrupts {
    /// Starts watching (needs a tokio runtime).
    pub(crate) fn watch() -> Self {
        let session = CancellationToken::new();
        let seen = Arc::new(AtomicI32::new(0));
        for (kind, number, name) in HANDLED {
            let mut stream = match signal(kind) {
                Ok(stream) => stream,
                Err(err) => {
                    warn(format_args!("cannot watch for signal {number}: {err}"));
                    continue;
                }
            };
            let (token, seen) = (session.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    let first = seen
                        .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok();
                    if !first {
                        warn(format_args!("{name} again: exiting now"));
                        exit_now(128 + number);
                    }
                    token.cancel();
                    if number != 2 {
                        tokio::spawn(async move {
                            tokio::time::sleep(TERMINATE_GRACE).await;
                            warn(format_args!(
                                "{name}: the session did not close within {} s; exiting now",
                                TERMINATE_GRACE.as_secs()
                            ));
                            exit_now(128 + number);
                        });
                    }
                }
            });
        }
        Self { session, seen }
    }

    /// The exit code the run must end with because of a signal (128 + its number).
    pub(crate) fn exit_code(&self) -> Option<u8> {
        match self.seen.load(Ordering::SeqCst) {
            0 => None,
            n => u8::try_from(128 + n).ok(),
        }
    }
}

/// Stops every process the session's tools started and waits until they are gone (at
/// most [`procs::STOP_WAIT`]); says so on stderr if some did not go.
pub(crate) fn stop_processes() {
    let left = procs::shutdown_all(procs::STOP_WAIT);
    if left > 0 {
        warn(format_args!(
            "{left} tool command(s) had processes that did not exit within {} s of SIGKILL",
            procs::STOP_WAIT.as_secs()
        ));
    }
}

/// Exits now with `code`, after [`stop_processes`].
pub(crate) fn exit_now(code: i32) -> ! {
    stop_processes();
    std::process::exit(code)
}
