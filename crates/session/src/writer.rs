//! The one owner of a transcript file: appends, flushes, fsyncs, locks (DESIGN.md
//! "Sessions", SP-1, SP-5).
//!
//! The reference agent's users lose history when two writes interleave or a crash tears a
//! line and the next record fuses with it. This module makes that impossible by giving
//! every transcript exactly one owner:
//!
//! - A dedicated thread owns the file and is fed by a channel (a queue of whole
//!   serialized records, `queue.rs`), so any number of handles (cloned
//!   [`TranscriptWriter`]s, sync code and tokio tasks alike) can append without ever
//!   interleaving bytes.
//! - Callers serialize their entry into one complete line before it is sent; the thread
//!   writes whole lines only — one `write` per batch of whole records — and never a
//!   partial record followed by another record.
//! - Records reach the operating system as soon as the thread has drained the channel
//!   (group commit: under load, everything that queued up during the previous write goes
//!   out in the next one), which is well within the required 100 ms. A process crash
//!   therefore loses at most the records being written (SP-5).
//! - [`TranscriptWriter::append_written`] returns once its record has been handed to the
//!   kernel (`write` returned): the *written* acknowledgement, distinct from the fsync
//!   one. A record shown to anyone (printed on stdout, sent to a client) must have it
//!   first, so that a kill -9 right after the showing still finds the record in the file
//!   (the kernel keeps what `write` accepted when the process dies; only a crash of the
//!   machine needs the fsync). Plain [`TranscriptWriter::append`] does not wait.
//! - [`TranscriptWriter::turn_end`] / [`TranscriptWriter::sync`] return only after every
//!   record appended before them is on disk (`fdatasync`, plus the parent directory when
//!   the file was just created). That return is the acknowledgement: a record
//!   acknowledged this way is never lost. The last handle's drop, and
//!   [`TranscriptWriter::close`], fsync too. [`TranscriptWriter::request_sync`] asks for
//!   the same acknowledgement without waiting for it at once; `sync_async` awaits it.
//! - The file is locked exclusively (`flock` on the transcript itself, released by the
//!   kernel when the process dies, even by `SIGKILL`), so two strata processes never
//!   append to the same transcript; the second gets [`WriterError::Locked`] naming the
//!   file and, on Linux, the process holding it.
//! - The file is created lazily, when the first `user` or `assistant` entry arrives:
//!   metadata entries appended before that wait in memory, and a session that never gets
//!   a message leaves no file. Files are created `0600`, missing folders `0700`.
//! - If an existing file does not end in a newline (a torn last line), a newline is
//!   written as soon as the file is locked (or, if that fails, at the start of the first
//!   write), so the torn fragment stays a lone malformed line that readers skip and can
//!   never fuse with the next record. The same repair follows a failed write.
//! - Errors reach the caller: a failed write (disk full) keeps the unwritten records in
//!   memory and retries them, `append` reports the outstanding error, and `sync` fails
//!   until the records are durable. Nothing is dropped silently. A failed fsync is
//!   permanent for the writer (the kernel may have dropped the unwritten pages, so no
//!   later sync could honestly succeed).
//!
//! Large tool outputs are kept out of the transcript by [`tool_results`].

mod file;
mod queue;
mod worker;

pub mod tool_results;

pub(crate) use file::{create_private_dirs as private_dirs, sync_parent};

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use serde::Serialize;

use crate::layout::SessionLayout;
use queue::Queue;
use worker::{Reply, Shared, StoredError};

/// An entry that can be appended to a transcript.
///
/// The writer needs one fact about an entry besides its JSON: whether it is a
/// conversation message (`user` or `assistant`). The first such entry creates the file;
/// metadata entries before it are held back so that metadata-only sessions leave no file.
pub trait TranscriptRecord: Serialize {
    /// Whether this entry is a `user` or `assistant` message, which makes the session
    /// worth a file.
    fn starts_transcript(&self) -> bool;
}

impl TranscriptRecord for serde_json::Value {
    fn starts_transcript(&self) -> bool {
        matches!(
            self.get("type").and_then(serde_json::Value::as_str),
            Some("user" | "assistant")
        )
    }
}

impl TranscriptRecord for strata_protocol::transcript::Entry {
    fn starts_transcript(&self) -> bool {
        matches!(self, Self::User(_) | Self::Assistant(_))
    }
}

impl<T: TranscriptRecord + ?Sized> TranscriptRecord for &T {
    fn starts_transcript(&self) -> bool {
        (**self).starts_transcript()
    }
}

/// Errors of the transcript writer. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum WriterError {
    /// Another open writer — normally another strata process — holds the transcript.
    #[error(
        "transcript {path} is already being written by {}; close that session first or start a new one",
        holder.map_or_else(|| "another strata process".to_owned(), |pid| format!("process {pid}"))
    )]
    Locked {
        /// The transcript.
        path: PathBuf,
        /// The process holding the lock, when the operating system tells (Linux).
        holder: Option<u32>,
    },
    /// Reading, creating, writing or syncing the file failed. Unwritten records are kept
    /// and retried; none of them is durable until a `sync` succeeds.
    #[error("cannot write transcript {path}: {source}")]
    Io {
        /// The transcript (or the folder that could not be created).
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The entry could not be turned into JSON (a map with non-string keys, a failing
    /// `Serialize` impl). Nothing was queued.
    #[error("cannot serialize an entry for transcript {path}: {source}")]
    Serialize {
        /// The transcript.
        path: PathBuf,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A pre-serialized line holds a newline, so it would not be one record.
    #[error("a line for transcript {path} contains a newline; a record must be one line")]
    NotOneLine {
        /// The transcript.
        path: PathBuf,
    },
    /// The writer thread is gone (it panicked, or could not be started).
    #[error("the writer of transcript {path} has stopped; its unsynced records may be lost")]
    Stopped {
        /// The transcript.
        path: PathBuf,
    },
}

impl WriterError {
    fn from_stored(path: &Path, stored: StoredError) -> Self {
        match stored {
            StoredError::Locked { holder } => Self::Locked {
                path: path.to_path_buf(),
                holder,
            },
            StoredError::Stopped => Self::Stopped {
                path: path.to_path_buf(),
            },
            StoredError::Io {
                path: at,
                kind,
                message,
            } => Self::Io {
                path: at,
                source: std::io::Error::new(kind, message),
            },
        }
    }
}

/// A sync requested with [`TranscriptWriter::request_sync`], to be waited for later.
#[derive(Debug)]
#[must_use = "a sync is only acknowledged by waiting for its ticket"]
pub struct SyncTicket {
    rx: mpsc::Receiver<Result<(), StoredError>>,
    path: PathBuf,
}

impl SyncTicket {
    /// Returns once the entries appended before the request are durable, or why they
    /// are not.
    pub fn wait(self) -> Result<(), WriterError> {
        match self.rx.recv() {
            Ok(result) => result.map_err(|e| WriterError::from_stored(&self.path, e)),
            Err(_) => Err(WriterError::Stopped { path: self.path }),
        }
    }
}

/// A handle to the one writer of a transcript file. Cheap to clone; every clone appends
/// to the same ordered stream. When the last handle is dropped the thread writes what is
/// left, fsyncs and stops (prefer [`TranscriptWriter::close`], which reports errors).
#[derive(Debug, Clone)]
pub struct TranscriptWriter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    queue: Arc<Queue>,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl TranscriptWriter {
    /// Opens the writer of the transcript at `path`.
    ///
    /// An existing file is opened and locked at once (so resuming a session that another
    /// process is writing fails here, with [`WriterError::Locked`]), and a torn last line
    /// is terminated. A missing file is created, with its folders, when the first `user`
    /// or `assistant` entry is appended.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, WriterError> {
        let path = path.into();
        let opened = file::open_existing(&path)?;
        let shared = Arc::new(Shared::default());
        let queue = Arc::new(Queue::default());
        let worker = worker::Worker::new(path.clone(), opened, Arc::clone(&shared));
        let for_thread = Arc::clone(&queue);
        let thread = std::thread::Builder::new()
            .name("strata-transcript".to_owned())
            .spawn(move || worker.run(for_thread))
            .map_err(|source| WriterError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                queue,
                shared,
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// The writer of a session's main transcript (`<project>/<session-id>.jsonl`).
    pub fn for_session(layout: &SessionLayout) -> Result<Self, WriterError> {
        Self::open(layout.transcript())
    }

    /// The writer of a sub-agent's transcript
    /// (`<project>/<session-id>/subagents/agent-<agent id>.jsonl`). Its entries are the
    /// caller's, with `isSidechain: true` and `agentId` set as in the reference format.
    pub fn for_subagent(layout: &SessionLayout, agent_id: &str) -> Result<Self, WriterError> {
        Self::open(layout.subagent_transcript(agent_id))
    }

    /// The transcript this writer owns.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Whether the transcript file exists yet (it is created by the first message).
    pub fn file_exists(&self) -> bool {
        self.inner
            .shared
            .created
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Queues one entry. It is serialized here, on the caller's thread, into one line;
    /// the writer thread appends it within milliseconds.
    ///
    /// Returns an error when the entry cannot be serialized (nothing is queued), or when
    /// an earlier write failed and has not been retried successfully yet — in that case
    /// this entry *is* queued behind the unwritten ones, and none of them is durable
    /// until [`sync`](Self::sync) succeeds.
    ///
    /// Never waits for the disk, except when 16 MiB are queued and not yet written (a
    /// disk far slower than the agent): then it waits for room rather than grow memory.
    pub fn append<R: TranscriptRecord + ?Sized>(&self, entry: &R) -> Result<(), WriterError> {
        self.append_at(entry, None).map(|_| ())
    }

    /// Appends one entry and returns once its line has been handed to the kernel (the
    /// writer thread's `write` returned): from then on the record survives the death of
    /// this process, even by `SIGKILL` (not a crash of the machine: that needs
    /// [`sync`](Self::sync)). Call it for every record that is shown to anyone — printed,
    /// sent to a client — before it is shown, so that what was seen is what a resume
    /// finds.
    ///
    /// Costs one round trip to the writer thread (a few microseconds when idle); under
    /// load the record rides in the thread's next batch like any other, so group commit
    /// is kept. Errors as [`append`](Self::append), and also when the write of this
    /// record fails (it stays queued and is retried, but it is not in the file now).
    ///
    /// A metadata entry appended before the session's first message is held in memory
    /// (no file exists until a message arrives); this then returns once the thread holds
    /// it, since no file could be missing it yet.
    pub fn append_written<R: TranscriptRecord + ?Sized>(
        &self,
        entry: &R,
    ) -> Result<(), WriterError> {
        let position = self.append_at(entry, None)?;
        self.wait_written(position)
    }

    /// [`append`](Self::append), also returning the line as written (without its
    /// newline), for a copy of the transcript kept elsewhere (a remote replica): the
    /// entry is serialized once.
    pub fn append_line<R: TranscriptRecord + ?Sized>(
        &self,
        entry: &R,
    ) -> Result<String, WriterError> {
        let mut line = String::new();
        self.append_at(entry, Some(&mut line))?;
        Ok(line)
    }

    /// [`append_written`](Self::append_written), also returning the line as written
    /// (see [`append_line`](Self::append_line)).
    pub fn append_written_line<R: TranscriptRecord + ?Sized>(
        &self,
        entry: &R,
    ) -> Result<String, WriterError> {
        let mut line = String::new();
        let position = self.append_at(entry, Some(&mut line))?;
        self.wait_written(position)?;
        Ok(line)
    }

    /// Waits until the record ending at `position` was handed to the kernel.
    fn wait_written(&self, position: u64) -> Result<(), WriterError> {
        let shared = &self.inner.shared;
        self.inner
            .queue
            .wait_written(position, || shared.current_error())
            .map_err(|e| WriterError::from_stored(&self.inner.path, e))
    }

    /// [`append`](Self::append), returning the record's end position in the queue;
    /// `copy` gets the line (without its newline) when it is given.
    fn append_at<R: TranscriptRecord + ?Sized>(
        &self,
        entry: &R,
        copy: Option<&mut String>,
    ) -> Result<u64, WriterError> {
        thread_local! {
            // Reused across appends so serializing does not allocate in the steady state.
            static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        LINE.with_borrow_mut(|line| {
            line.clear();
            let serialized = serde_json::to_writer(&mut *line, entry);
            if let Err(source) = serialized {
                line.clear();
                return Err(WriterError::Serialize {
                    path: self.inner.path.clone(),
                    source,
                });
            }
            if let Some(copy) = copy {
                // serde_json writes UTF-8; a failure here would be a serde_json bug, and
                // then the copy is made lossily rather than lost.
                copy.push_str(&String::from_utf8_lossy(line));
            }
            // Compact serde_json output never holds a raw newline (they are escaped in
            // strings), so the line is exactly one record.
            line.push(b'\n');
            let result = self.send(line, entry.starts_transcript());
            if line.capacity() > 1 << 20 {
                *line = Vec::new(); // do not keep a huge buffer per thread
            }
            result
        })
    }

    /// Queues one already serialized JSON line (without its trailing newline), for
    /// callers that copy entries verbatim (fork keeps unknown fields byte for byte).
    /// `starts` tells whether it is a `user` or `assistant` entry.
    pub fn append_raw_line(&self, json: &str, starts: bool) -> Result<(), WriterError> {
        if memchr::memchr2(b'\n', b'\r', json.as_bytes()).is_some() {
            return Err(WriterError::NotOneLine {
                path: self.inner.path.clone(),
            });
        }
        let mut line = Vec::with_capacity(json.len() + 1);
        line.extend_from_slice(json.as_bytes());
        line.push(b'\n');
        self.send(&line, starts).map(|_| ())
    }

    /// Ends a turn: returns once every entry appended before this call is durable.
    /// Same as [`sync`](Self::sync); named for the call site in the query loop.
    pub fn turn_end(&self) -> Result<(), WriterError> {
        self.sync()
    }

    /// Returns once every entry appended before this call (from any handle on this
    /// thread's order) is written and fsynced. This return is the acknowledgement callers
    /// rely on. When no message has been appended yet the file does not exist and held
    /// metadata stays in memory; `Ok` then means there was nothing to make durable.
    ///
    /// Blocks the calling thread for the duration of an fsync (typically a few ms); from
    /// async code use [`sync_async`](Self::sync_async).
    pub fn sync(&self) -> Result<(), WriterError> {
        self.request_sync()?.wait()
    }

    /// Asks for a sync without waiting for it: every entry appended before this call will
    /// be durable when the returned ticket's [`wait`](SyncTicket::wait) returns `Ok`.
    /// Entries appended meanwhile keep flowing (and may be covered by the same fsync).
    /// For a turn end whose acknowledgement is needed later (before the next prompt is
    /// accepted, say) rather than right now.
    pub fn request_sync(&self) -> Result<SyncTicket, WriterError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send_sync(Reply::Blocking(tx))?;
        Ok(SyncTicket {
            rx,
            path: self.inner.path.clone(),
        })
    }

    /// [`sync`](Self::sync) for async code: awaits the acknowledgement without blocking
    /// the runtime's thread.
    pub async fn sync_async(&self) -> Result<(), WriterError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send_sync(Reply::Async(tx))?;
        match rx.await {
            Ok(result) => result.map_err(|e| WriterError::from_stored(&self.inner.path, e)),
            Err(_) => Err(self.stopped()),
        }
    }

    /// Syncs and drops this handle, reporting whether everything appended is durable.
    /// When it is the last handle the thread stops.
    pub fn close(self) -> Result<(), WriterError> {
        self.sync()
    }

    /// Stops the writer for every handle: what was appended is written and fsynced, the
    /// file is closed (its lock released) and the thread has ended when this returns.
    /// Appending through any handle afterwards fails with [`WriterError::Stopped`].
    ///
    /// For the end of a session. [`close`](Self::close) stops the thread only with the
    /// last handle, and work still winding down after a session ended (a cancelled
    /// background task holding a clone to record its last line) would keep the file
    /// locked for a moment after the session "closed": resuming it right away (`strata
    /// -c` just after, or a host reopening it) then failed with [`WriterError::Locked`].
    pub fn shutdown(&self) -> Result<(), WriterError> {
        let synced = self.sync();
        if !self.inner.stop() {
            return Err(self.stopped());
        }
        match synced {
            // Nothing was appended after the sync above could see it: a failure of
            // the last write would have failed the sync.
            Ok(()) => Ok(()),
            // A handle's sync after another handle's shutdown: the thread is gone and
            // what it had was made durable by that shutdown (or reported there).
            Err(WriterError::Stopped { .. }) => match self.inner.shared.current_error() {
                Some(stored) => Err(WriterError::from_stored(&self.inner.path, stored)),
                None => Ok(()),
            },
            Err(e) => Err(e),
        }
    }

    /// Queues a whole line; returns its end position (for the written acknowledgement).
    fn send(&self, line: &[u8], starts: bool) -> Result<u64, WriterError> {
        let position = self
            .inner
            .queue
            .push(line, starts)
            .map_err(|_| self.stopped())?;
        match self.inner.shared.current_error() {
            Some(stored) => Err(WriterError::from_stored(&self.inner.path, stored)),
            None => Ok(position),
        }
    }

    fn send_sync(&self, reply: Reply) -> Result<(), WriterError> {
        self.inner.queue.sync(reply).map_err(|_| self.stopped())
    }

    fn stopped(&self) -> WriterError {
        WriterError::Stopped {
            path: self.inner.path.clone(),
        }
    }
}

impl Inner {
    /// Closes the queue, which tells the thread to write what is left, fsync and stop,
    /// and waits for it (once: later calls find no thread). `false` if it panicked.
    fn stop(&self) -> bool {
        self.queue.close();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        thread.is_none_or(|thread| thread.join().is_ok())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Waiting for the thread makes "dropped" mean "durable" (DESIGN: fsync on exit).
        if !self.stop() {
            tracing::error!(path = %self.path.display(), "the transcript writer thread panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_user_and_assistant_entries_start_a_transcript() {
        assert!(json!({"type": "user"}).starts_transcript());
        assert!(json!({"type": "assistant"}).starts_transcript());
        assert!(!json!({"type": "summary"}).starts_transcript());
        assert!(!json!({"type": "file-history-snapshot"}).starts_transcript());
        assert!(!json!({"no": "type"}).starts_transcript());
    }

    #[test]
    fn locked_error_names_file_and_holder() {
        let e = WriterError::Locked {
            path: PathBuf::from("/x/s.jsonl"),
            holder: Some(42),
        };
        let text = e.to_string();
        assert!(
            text.contains("/x/s.jsonl") && text.contains("process 42"),
            "{text}"
        );
    }

    #[test]
    fn the_line_handed_back_is_the_line_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let w = TranscriptWriter::open(&path).unwrap();
        let user = json!({"type": "user", "uuid": "u1", "message": {"content": "é \"q\"\nx"}});
        let meta = json!({"type": "permission-mode", "permissionMode": "plan"});
        let first = w.append_written_line(&user).unwrap();
        let second = w.append_line(&meta).unwrap();
        w.close().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{first}\n{second}\n")
        );
    }

    #[test]
    fn raw_lines_with_newlines_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let w = TranscriptWriter::open(dir.path().join("s.jsonl")).unwrap();
        assert!(matches!(
            w.append_raw_line("{\"type\":\"user\"}\n{}", true),
            Err(WriterError::NotOneLine { .. })
        ));
    }
}
