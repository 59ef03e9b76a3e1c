//! Where headless output goes: one writer thread owns stdout.
//!
//! The engine emits messages from inside its query loop and must not wait on a slow
//! reader, control responses are written by the input loop, permission prompts by the
//! prompter: all of them send whole lines to one thread, which writes and flushes each
//! line on its own. One writer keeps lines whole and in the order they were produced,
//! and flushing per line is what lets a client react to a message as soon as it exists.

use std::io::Write as _;
use std::sync::mpsc;
use std::thread::JoinHandle;

use serde::Serialize;
use strata_agent::engine::EventSink;
use strata_protocol::sdk::SdkMessage;

enum Command {
    Line(String),
    Close,
}

/// The stdout writer thread (see the module docs).
pub(crate) struct LineWriter {
    tx: mpsc::Sender<Command>,
    thread: Option<JoinHandle<()>>,
}

/// A cheap handle that sends lines to the [`LineWriter`]; lines sent after it closed are
/// dropped.
#[derive(Clone)]
pub(crate) struct Lines {
    tx: mpsc::Sender<Command>,
}

impl LineWriter {
    /// Starts the writer thread.
    pub(crate) fn start() -> anyhow::Result<Self> {
        let (tx, rx) = mpsc::channel::<Command>();
        let thread = std::thread::Builder::new()
            .name("strata-stdout".into())
            .spawn(move || {
                let stdout = std::io::stdout();
                let mut broken = false;
                while let Ok(Command::Line(line)) = rx.recv() {
                    if broken {
                        continue; // keep draining so senders never block or fail
                    }
                    let mut out = stdout.lock();
                    let written = out
                        .write_all(line.as_bytes())
                        .and_then(|()| out.write_all(b"\n"))
                        .and_then(|()| out.flush());
                    // The reader went away (a closed pipe): nothing more can be shown, and
                    // the session itself still ends cleanly.
                    broken = written.is_err();
                }
            })?;
        Ok(Self {
            tx,
            thread: Some(thread),
        })
    }

    /// A handle for sending lines.
    pub(crate) fn lines(&self) -> Lines {
        Lines {
            tx: self.tx.clone(),
        }
    }

    /// Writes everything sent so far, then stops the thread.
    pub(crate) fn finish(mut self) {
        self.close();
    }

    fn close(&mut self) {
        let _ = self.tx.send(Command::Close);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        self.close();
    }
}

impl Lines {
    /// Sends one line (without its newline).
    pub(crate) fn send_line(&self, line: String) {
        let _ = self.tx.send(Command::Line(line));
    }

    /// Sends `value` as one JSON line.
    pub(crate) fn send_json(&self, value: &impl Serialize) {
        match serde_json::to_string(value) {
            Ok(line) => self.send_line(line),
            // Our own message types always serialize; should one not, say so rather than
            // leave a silent gap in the stream.
            Err(err) => super::warn(format_args!("could not write an output message: {err}")),
        }
    }
}

/// The engine's [`EventSink`] for `--output-format stream-json`: every message becomes a
/// line.
pub(crate) struct StreamSink {
    lines: Lines,
}

impl StreamSink {
    pub(crate) fn new(lines: Lines) -> Self {
        Self { lines }
    }
}

impl EventSink for StreamSink {
    fn emit(&self, message: SdkMessage) {
        self.lines.send_json(&message);
    }
}

/// The engine's [`EventSink`] for `text` and `json` output, which print only the final
/// result (returned by the engine, so nothing needs to be kept here).
pub(crate) struct QuietSink;

impl EventSink for QuietSink {
    fn emit(&self, _message: SdkMessage) {}
}

#[cfg(test)]
impl Lines {
    /// Lines that go to a channel instead of stdout, and a function returning those sent
    /// so far.
    pub(crate) fn capture() -> (Self, impl Fn() -> Vec<String>) {
        let (tx, rx) = mpsc::channel();
        let drain = move || {
            rx.try_iter()
                .filter_map(|c| match c {
                    Command::Line(l) => Some(l),
                    Command::Close => None,
                })
                .collect()
        };
        (Self { tx }, drain)
    }
}
