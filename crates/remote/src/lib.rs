//! Remote sessions on NATS JetStream (issue 17).
//!
//! strata does not run a home-made server for remote sessions: NATS JetStream is the
//! distributed engine. This crate owns the process's side of it:
//!
//! - [`RemoteConnection`]: the client connection, made in the background and followed
//!   through the client's events ([`ConnectionState`]: connecting, connected,
//!   reconnecting, disconnected), and the `strata_sessions` key-value bucket (session
//!   metadata, one JSON object per session id) and the `STRATA_TRANSCRIPTS` stream, bound
//!   once it is up ([`Bound`]). [`RemoteOptions`] carry the servers, a credentials file and
//!   TLS;
//! - [`KvMetadataPort`]: the FX-1 [`RemoteMetadataPort`](strata_state::effects::RemoteMetadataPort)
//!   writing that object. The port is called inside the store's change delivery, so it never
//!   waits on the network: it hands the patch to a background task (latest wins — metadata is
//!   a state, not a log) and returns; the task writes when the server is there, again
//!   after a reconnect;
//! - [`TranscriptPublisher`]: every transcript line published, in order and off the turn's
//!   path, to subject `strata.session.<id>` with the entry uuid as de-duplication id (within the session),
//!   through the [`Outbox`] (bounded in memory, spilled to `<session dir>/remote-outbox.jsonl`
//!   past the bound) so a server that is away costs nothing but the queue; a resumed
//!   session first catches the stream up with its local transcript (`catch_up`), which
//!   replays a spill file a crashed process left; [`fetch_lines`] reads a session back to
//!   rebuild it on another machine, [`list_sessions`] lists the bucket;
//! - [`watch_own_key`] / [`KvMetadataPort::watch_own_key`]: the worker's watch of its own
//!   key, applying a change made elsewhere through the store's one mode gate (FX-7,
//!   [`AppStore::apply_external_metadata`]).
//! - a mode request ([`request_mode`], the web view's control) is answered by the
//!   worker's own-key watch with the mode the session is really in;
//! - [`watch_all_metadata`] and [`follow_transcripts`]: an observer's view of every
//!   session (`strata serve`), live.
//!
//! Echo suppression: the port reads the stored document (with its revision) before it
//! writes, and writes nothing when the merged document equals it; the write itself is a
//! compare-and-set on that revision, retried on a conflict; the documents it writes name
//! this process, so the watch does not apply them back. So a change applied from the
//! watch, which makes FX-1 run again, does not come back as a second write.
//!
//! [`AppStore::apply_external_metadata`]: strata_state::AppStore::apply_external_metadata

mod catch_up;
mod connection;
mod mode_request;
mod observe;
mod outbox;
mod pipeline;
mod port;
mod transcripts;
mod watch;

pub use catch_up::REPLAY_FILE;
pub use connection::{
    BUCKET, Bound, ConnectionState, RemoteConnection, RemoteError, RemoteOptions, RemoteRuntime,
    STREAM, TlsOptions,
};
pub use mode_request::{
    MODE_REPLY, MODE_REQUEST, ModeReply, ModeRequest, ModeRequestError, request_mode,
};
pub use observe::{
    Follow, MetadataChange, MetadataState, StoredLine, follow_transcripts, is_connected,
    session_of_subject, watch_all_metadata,
};
pub use outbox::{Entry, Outbox, OutboxLimits, OutboxStats, SPILL_FILE, read_spill_file};
pub use pipeline::publishable;
pub use port::{Desired, KvMetadataPort, UPDATED_AT, WRITTEN_BY, merged_document, write_metadata};
pub use transcripts::{
    TranscriptPublisher, fetch_lines, last_line, list_sessions, spill_path, subject,
};
pub use watch::{OwnKeyWatch, watch_own_key};
