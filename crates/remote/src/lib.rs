//! Remote sessions on NATS JetStream (issue 17).
//!
//! strata does not run a home-made server for remote sessions: NATS JetStream is the
//! distributed engine. This crate owns the process's side of it:
//!
//! - [`RemoteConnection`]: the client connection and the `strata_sessions` key-value bucket
//!   (session metadata, one JSON object per session id);
//! - [`KvMetadataPort`]: the FX-1 [`RemoteMetadataPort`](strata_state::effects::RemoteMetadataPort)
//!   writing that object. The port is called inside the store's change delivery, so it never
//!   waits on the network: it hands the patch to a background task (latest wins — metadata is
//!   a state, not a log) and returns;
//! - [`TranscriptPublisher`]: every transcript line published, in order and off the turn's
//!   path, to stream `STRATA_TRANSCRIPTS` (subject `strata.session.<id>`, the entry uuid as
//!   de-duplication id); [`fetch_lines`] reads a session back to rebuild it on another
//!   machine, [`list_sessions`] lists the bucket;
//! - [`watch_own_key`]: the worker's watch of its own key, applying a change made elsewhere
//!   through the store's one mode gate (FX-7, [`AppStore::apply_external_metadata`]), and
//!   answering a mode request ([`request_mode`], the web view's control) with the mode the
//!   session is really in;
//! - [`watch_all_metadata`] and [`follow_transcripts`]: an observer's view of every
//!   session (`strata serve`), live.
//!
//! Echo suppression: the port reads the stored document (with its revision) before it
//! writes, and writes nothing when the merged document equals it; the write itself is a
//! compare-and-set on that revision, retried on a conflict. So a change applied from the
//! watch, which makes FX-1 run again, does not come back as a second write.
//!
//! [`AppStore::apply_external_metadata`]: strata_state::AppStore::apply_external_metadata

mod connection;
mod mode_request;
mod observe;
mod port;
mod transcripts;
mod watch;

pub use connection::{BUCKET, RemoteConnection, RemoteError};
pub use mode_request::{
    MODE_REPLY, MODE_REQUEST, ModeReply, ModeRequest, ModeRequestError, request_mode,
};
pub use observe::{
    Follow, MetadataChange, MetadataState, StoredLine, follow_transcripts, is_connected,
    session_of_subject, watch_all_metadata,
};
pub use port::{KvMetadataPort, merged_document, write_metadata};
pub use transcripts::{
    STREAM, TranscriptPublisher, ensure_stream, fetch_lines, list_sessions, subject,
};
pub use watch::{OwnKeyWatch, watch_own_key};
