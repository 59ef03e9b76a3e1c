//! The writer thread: the only code that touches a transcript file while a session runs.
//!
//! Its loop is group commit: wait for work, take everything queued (see
//! [`super::queue`]), write the whole records in one `write`, then answer the sync
//! requests of that round after one `fdatasync`. Under load a round carries many records;
//! when idle each record goes out on its own, immediately.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::WriterError;
use super::file::{self, Opened};
use super::queue::Queue;

/// After a failed write, how long to wait before retrying when nothing else arrives.
const RETRY_INTERVAL: Duration = Duration::from_millis(100);

/// Where the outcome of a sync goes.
#[derive(Debug)]
pub(crate) enum Reply {
    Blocking(SyncSender<Result<(), StoredError>>),
    Async(tokio::sync::oneshot::Sender<Result<(), StoredError>>),
}

impl Reply {
    pub(crate) fn send(self, result: Result<(), StoredError>) {
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
    Stopped,
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
    /// `error` is set.
    failing: AtomicBool,
    /// Whether the file exists (the first message has been written).
    pub(crate) created: AtomicBool,
}

impl Shared {
    pub(crate) fn current_error(&self) -> Option<StoredError> {
        // Checked on every append: a plain load in the common case, the lock only when
        // a write has failed.
        if !self.failing.load(Ordering::Acquire) {
            return None;
        }
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_error(&self, error: Option<StoredError>) {
        self.failing.store(error.is_some(), Ordering::Release);
        *self.error.lock().unwrap_or_else(PoisonError::into_inner) = error;
    }
}

/// The open file and what the thread knows about it.
struct Target {
    file: File,
    /// Length of the file as this writer left it (it is the only appender).
    len: u64,
    needs_newline: bool,
    /// Bytes written since the last fsync.
    unsynced: u64,
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
    /// An fsync failed: no later sync may report success.
    fsync_failed: Option<StoredError>,
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
            fsync_failed: None,
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
            unsynced: 0,
            fresh_entries,
        }
    }

    pub(crate) fn run(mut self, queue: Arc<Queue>) {
        // Whatever happens below (even a panic), handles must learn the thread is gone.
        struct Gone(Arc<Queue>);
        impl Drop for Gone {
            fn drop(&mut self) {
                self.0.worker_gone();
            }
        }
        let _gone = Gone(Arc::clone(&queue));
        loop {
            let timeout = self.has_unwritten().then_some(RETRY_INTERVAL);
            let taken = queue.take(&mut self.pending, timeout);
            self.wants_file |= taken.starts;
            let written = self.write_pending();
            if written.is_ok() && !self.has_unwritten() {
                queue.acknowledge(taken.through);
            } else if written.is_err() {
                queue.write_failed();
            }
            if !taken.syncs.is_empty() {
                let result = written.and_then(|()| self.fsync());
                for reply in taken.syncs {
                    reply.send(result.clone());
                }
            }
            if taken.closed {
                return self.finish();
            }
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
        self.shared.set_error(
            result
                .as_ref()
                .err()
                .or(self.fsync_failed.as_ref())
                .cloned(),
        );
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
            t.unsynced += 1;
        }
        match t.file.write_all(&self.pending) {
            Ok(()) => {
                t.len += self.pending.len() as u64;
                t.unsynced += self.pending.len() as u64;
                self.pending.clear();
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
        if let Some(err) = &self.fsync_failed {
            return Err(err.clone());
        }
        let Some(t) = self.target.as_mut() else {
            return Ok(());
        };
        let io = |e: std::io::Error, path: PathBuf| StoredError::Io {
            path,
            kind: e.kind(),
            message: e.to_string(),
        };
        if t.unsynced > 0 {
            if let Err(e) = t.file.sync_data() {
                // After a failed fsync the kernel may have dropped the dirty pages and a
                // later fsync can succeed without them, so success can no longer be
                // promised for anything: the failure is permanent for this writer.
                let stored = StoredError::Io {
                    path: self.path.clone(),
                    kind: e.kind(),
                    message: format!(
                        "{e} (fsync failed: records written since the last successful sync may be lost)"
                    ),
                };
                self.fsync_failed = Some(stored.clone());
                self.shared.set_error(Some(stored.clone()));
                return Err(stored);
            }
            t.unsynced = 0;
        }
        while let Some(entry) = t.fresh_entries.first() {
            file::sync_parent(entry).map_err(|e| io(e, entry.clone()))?;
            t.fresh_entries.remove(0);
        }
        Ok(())
    }

    /// The last handle is gone: write what is left, fsync, and stop.
    fn finish(&mut self) {
        let result = self.write_pending().and_then(|()| self.fsync());
        if let Err(err) = result {
            let err = WriterError::from_stored(&self.path, err);
            tracing::error!(error = %err, "transcript writer closed with unwritten records");
        }
    }
}
