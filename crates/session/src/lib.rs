//! Event-sourced session persistence (SPEC SP-1 … SP-5).
//!
//! A session is not saved as a snapshot: every event that matters (a message, a
//! file-history snapshot, a title, a mode change) is appended as one JSON line to the
//! session's transcript, in the reference agent's format, and resuming replays those lines.
//! This crate owns those files and nothing above them: it produces plain data (the live
//! conversation, metadata, usage) that the agent applies to the store; it never touches
//! app state.
//!
//! - [`layout`]: where a session's files are.
//! - [`reader`]: streaming, loss-tolerant line reading.
//! - [`chain`]: rebuilding the live conversation by the rules of `COMPAT.md`.
//! - [`resume`]: loading a session (resume, continue, fork).
//! - [`listing`]: listing sessions fast.
//! - [`usage`]: token usage and cost from transcripts, and the price table.
//! - [`model_messages`]: turning the live conversation into model messages.
//! - [`writer`]: the one owner of a transcript file: appends, flushes, fsyncs, locks.
//! - [`history`]: the input history (`history.jsonl`, paste cache).
//! - [`file_history`]: the disk side of file history: pre-edit backups, snapshot
//!   entries and rewind (the history itself is app state).
//! - [`cleanup`]: deleting sessions older than `cleanupPeriodDays`.

pub mod chain;
pub mod cleanup;
pub mod file_history;
pub mod history;
pub mod layout;
pub mod lines_from_end;
pub mod listing;
pub mod model_messages;
pub mod reader;
pub mod resume;
pub mod usage;
pub mod writer;
