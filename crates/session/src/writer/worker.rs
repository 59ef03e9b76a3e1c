//! The writer thread: the only code that touches a transcript file while a session runs.
//!
//! Its loop is group commit: block for one command, drain whatever else is queued (up to
//! [`MAX_BATCH`] bytes), write the whole records in one `write`, then answer the sync
//! requests of that round after one `fdatasync`. Under load a round carries many records;
//! when idle each record goes out on its own, immediately.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::WriterError;
use super::file::{self, Opened};

/// Stop draining the channel once this many bytes are waiting, and write them.
const MAX_BATCH: usize = 1 << 20;

/// After a failed write, how long to wait before retrying when no command arrives.
const RETRY_INTERVAL: Duration = Duration::from_millis(100);

/// What the handles send to the thread.
#[derive(Debug)]
pub(crate) enum Command {
    /// One whole record, newline included.
    Record {
        /// The record's bytes, ending in `\n`.
        line: Vec<u8>,
        /// Whether it is a `user`/`assistant` entry (which creates the file).
        starts: bool,
    },
    /// Make everything before this durable, then answer.
    Sync(Reply),
}

/// Where the outcome of a sync goes.
#[derive(Debug)]
pub(crate) enum Reply {
    Blocking(SyncSender<Result<(), StoredError>>),
    Async(tokio::sync::oneshot::Sender<Result<(), StoredError>>),
}

impl Reply {
    fn send(self, result: Result<(), StoredError>) {
        // A caller that stopped waiting (dropped its receiver) needs no answer.
        match self {
            Self::Blocking(tx) => drop(tx.send(result)),
            Self::Async(tx) => drop(tx.send(result)),
        }
    }
}

/// An error kept by the thread and reported to every handle until the cause clears.
/// `std::io::Error` is not `Clone`, so its kind and text are kept.
#[derive(Debug, Clone)]
pub(crate) enum StoredError {
    Locked {
        holder: Option<u32>,
    },
    Io {
        path: PathBuf,
        kind: std::io::ErrorKind,
        message: String,
    },
}

impl StoredError {
    fn from_writer(error: WriterError) -> Self {
        match error {
            WriterError::Locked { holder, .. } => Self::Locked { holder },
            WriterError::Io { path, source } => Self::Io {
                path,
                kind: source.kind(),
                message: source.to_string(),
            },
            other => Self::Io {
                path: PathBuf::new(),
                kind: std::io::ErrorKind::Other,
                message: other.to_string(),
            },
        }
    }
}

/// State the handles read without going through the channel.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The error of the last failed write, until a write succeeds again.
    error: Mutex<Option<StoredError>>,
    /// Whether the file exists (the first message has been written).
    pub(crate) created: AtomicBool,
}

impl Shared {
    pub(crate) fn current_error(&self) -> Option<StoredError> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_error(&self, error: Option<StoredError>) {
        *self.error.lock().unwrap_or_else(PoisonError::into_inner) = error;
    }
}

/// The open file and what the thread knows about it.
struct Target {
    file: File,
    /// Length of the file as this writer left it (it is the only appender).
    len: u64,
    needs_newline: bool,
    /// Written since the last fsync.
    dirty: bool,
    /// Folders and the file itself were just created: fsync their parents once.
    fresh_entries: Vec<PathBuf>,
}

pub(crate) struct Worker {
    path: PathBuf,
    target: Option<Target>,
    /// Whole records not written yet: metadata waiting for the first message, records
    /// queued during this round, or records kept after a failed write.
    pending: Vec<u8>,
    /// A message has been queued, so the file must exist.
    wants_file: bool,
    shared: std::sync::Arc<Shared>,
}

impl Worker {
    pub(crate) fn new(
        path: PathBuf,
        opened: Option<Opened>,
        shared: std::sync::Arc<Shared>,
    ) -> Self {
        let wants_file = opened.is_some();
        if wants_file {
            shared.created.store(true, Ordering::Release);
        }
        let target = opened.map(|o| Self::target_from(&path, o));
        Self {
            path,
            target,
            pending: Vec::new(),
            wants_file,
            shared,
        }
    }

    fn target_from(path: &std::path::Path, o: Opened) -> Target {
        let mut fresh_entries = o.created_dirs;
        if o.created {
            fresh_entries.push(path.to_path_buf());
        }
        Target {
            file: o.file,
            len: o.len,
            needs_newline: o.needs_newline,
            dirty: false,
            fresh_entries,
        }
    }

    pub(crate) fn run(mut self, rx: Receiver<Command>) {
        loop {
            let first = if self.has_unwritten() {
                match rx.recv_timeout(RETRY_INTERVAL) {
                    Ok(c) => Some(c),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return self.finish(),
                }
            } else {
                match rx.recv() {
                    Ok(c) => Some(c),
                    Err(_) => return self.finish(),
                }
            };
            let mut replies = Vec::new();
            let mut disconnected = false;
            if let Some(command) = first {
                self.take(command, &mut replies);
                while self.pending.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(command) => self.take(command, &mut replies),
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            disconnected = true;
                            break;
                        }
                    }
                }
            }
            let written = self.write_pending();
            if !replies.is_empty() {
                let result = written.and_then(|()| self.fsync());
                for reply in replies {
                    reply.send(result.clone());
                }
            }
            if disconnected {
                return self.finish();
            }
        }
    }

    fn take(&mut self, command: Command, replies: &mut Vec<Reply>) {
        match command {
            Command::Record { line, starts } => {
                self.wants_file |= starts;
                self.pending.extend_from_slice(&line);
            }
            Command::Sync(reply) => replies.push(reply),
        }
    }

    /// Records are waiting that should already be in the file (a write failed).
    fn has_unwritten(&self) -> bool {
        self.wants_file && !self.pending.is_empty()
    }

    /// Writes the pending records, creating the file first when a message is among them.
    fn write_pending(&mut self) -> Result<(), StoredError> {
        if self.pending.is_empty() || !self.wants_file {
            // Nothing to write, or only metadata of a session without messages, which
            // waits in memory (and leaves no file if no message ever comes).
            return Ok(());
        }
        let result = self.try_write();
        self.shared.set_error(result.as_ref().err().cloned());
        result
    }

    fn try_write(&mut self) -> Result<(), StoredError> {
        if self.target.is_none() {
            let opened = file::open_or_create(&self.path).map_err(StoredError::from_writer)?;
            self.target = Some(Self::target_from(&self.path, opened));
            self.shared.created.store(true, Ordering::Release);
        }
        let Some(t) = self.target.as_mut() else {
            return Ok(());
        };
        let io = |e: std::io::Error, path: &PathBuf| StoredError::Io {
            path: path.clone(),
            kind: e.kind(),
            message: e.to_string(),
        };
        if t.needs_newline {
            t.file.write_all(b"\n").map_err(|e| io(e, &self.path))?;
            t.len += 1;
            t.needs_newline = false;
            t.dirty = true;
        }
        match t.file.write_all(&self.pending) {
            Ok(()) => {
                t.len += self.pending.len() as u64;
                t.dirty = true;
                self.pending.clear();
                // Keep a moderately sized buffer, drop a huge one.
                if self.pending.capacity() > 4 * MAX_BATCH {
                    self.pending = Vec::new();
                }
                Ok(())
            }
            Err(e) => {
                // Part of the batch may have reached the file. Cut it off, so the records
                // are retried whole; if even that fails, the next write starts on a new
                // line so the fragment stays a lone malformed line.
                if t.file.set_len(t.len).is_err() {
                    t.needs_newline = true;
                    t.len = t.file.metadata().map_or(t.len, |m| m.len());
                }
                Err(io(e, &self.path))
            }
        }
    }

    fn fsync(&mut self) -> Result<(), StoredError> {
        if let Some(err) = self.shared.current_error() {
            return Err(err);
        }
        let Some(t) = self.target.as_mut() else {
            return Ok(());
        };
        let io = |e: std::io::Error, path: PathBuf| StoredError::Io {
            path,
            kind: e.kind(),
            message: e.to_string(),
        };
        if t.dirty {
            t.file.sync_data().map_err(|e| io(e, self.path.clone()))?;
            t.dirty = false;
        }
        while let Some(entry) = t.fresh_entries.first() {
            file::sync_parent(entry).map_err(|e| io(e, entry.clone()))?;
            t.fresh_entries.remove(0);
        }
        Ok(())
    }

    /// The last handle is gone: write what is left, fsync, and stop.
    fn finish(mut self) {
        let result = self.write_pending().and_then(|()| self.fsync());
        if let Err(err) = result {
            let err = WriterError::from_stored(&self.path, err);
            tracing::error!(error = %err, "transcript writer closed with unwritten records");
        }
    }
}
