//! The server's one view of the remote, shared by every page and event stream.
//!
//! One watch of the whole metadata bucket and one consumer of the whole transcript stream
//! per server, not per browser tab: the hub keeps every session's latest document and
//! the title its transcript gives, and broadcasts each change of a row to the event
//! streams that subscribed. A watch that fails (the server went away) is started again
//! with a back-off; the bucket's watch starts over with every key's latest value, the
//! transcript consumer where it left off. The connection's state is polled, so the pages
//! can say when what they show may be out of date.
//!
//! The lock is a plain `RwLock` held for map operations only, never across an await.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use futures::StreamExt;
use serde::Serialize;
use strata_protocol::transcript::Entry;
use strata_remote::{
    Follow, MetadataChange, MetadataState, RemoteConnection, StoredLine, follow_transcripts,
    is_connected, list_sessions, watch_all_metadata,
};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::conversation::TitleParts;
use crate::row::SessionRow;

/// How many row changes a slow event stream may fall behind before it is sent the whole
/// list again.
const CHANGES_CAPACITY: usize = 256;

/// The first pause before a failed watch is started again; it doubles up to
/// [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(250);

/// The longest pause between two attempts.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// How often the connection's state is looked at.
const STATUS_EVERY: Duration = Duration::from_millis(250);

/// A change of the listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// A session's row is new or changed.
    Row(Box<SessionRow>),
    /// A session left the bucket.
    Removed(String),
}

/// Whether the server's view is live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RemoteStatus {
    /// Connected to NATS: changes arrive as they happen.
    Connected,
    /// The connection is lost; the client is reconnecting.
    Reconnecting,
}

/// What one key holds, as last seen.
#[derive(Clone, Debug)]
struct Known {
    revision: u64,
    state: MetadataState,
}

#[derive(Default)]
struct Rows {
    keys: BTreeMap<String, Known>,
    titles: HashMap<String, TitleParts>,
}

impl Rows {
    fn row(&self, id: &str) -> Option<SessionRow> {
        let known = self.keys.get(id)?;
        let title = self.titles.get(id).and_then(TitleParts::title);
        Some(match &known.state {
            MetadataState::Document(doc) => {
                SessionRow::from_document(id, known.revision, doc, title)
            }
            MetadataState::Unreadable(why) => SessionRow::unreadable(id, known.revision, why),
            MetadataState::Removed => return None,
        })
    }
}

struct Shared {
    connection: RemoteConnection,
    rows: RwLock<Rows>,
    changes: broadcast::Sender<Change>,
    status: watch::Sender<RemoteStatus>,
}

impl Shared {
    fn read(&self) -> RwLockReadGuard<'_, Rows> {
        // A panic while the lock was held leaves maps that are still whole (every write
        // is one insert), so a poisoned lock is used as it is.
        self.rows
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Rows> {
        self.rows
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes in a change of the bucket; an older revision than the one known (a watch
    /// started again replays every key) changes nothing.
    fn metadata(&self, change: MetadataChange) {
        let id = change.session;
        let event = {
            let mut rows = self.write();
            if rows
                .keys
                .get(&id)
                .is_some_and(|known| known.revision >= change.revision && known.revision > 0)
            {
                return;
            }
            let removed = change.state == MetadataState::Removed;
            rows.keys.insert(
                id.clone(),
                Known {
                    revision: change.revision,
                    state: change.state,
                },
            );
            match rows.row(&id) {
                Some(row) => Change::Row(Box::new(row)),
                None if removed => Change::Removed(id),
                None => return,
            }
        };
        // No subscriber is no error: nobody is looking.
        let _ = self.changes.send(event);
    }

    /// Takes in a transcript line: a changed title changes the session's row.
    fn line(&self, line: &StoredLine) {
        let Ok(entry) = Entry::parse(&line.line) else {
            return;
        };
        let row = {
            let mut rows = self.write();
            let changed = rows
                .titles
                .entry(line.session.clone())
                .or_default()
                .observe(&entry);
            if !changed {
                return;
            }
            rows.row(&line.session)
        };
        if let Some(row) = row {
            let _ = self.changes.send(Change::Row(Box::new(row)));
        }
    }
}

/// The server's live view of the remote (see the module docs). Dropping it stops the
/// watches.
pub(crate) struct Hub {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Hub {
    /// Reads the bucket once (so the first page is complete) and starts the watches.
    pub(crate) async fn start(connection: RemoteConnection) -> Self {
        let (changes, _) = broadcast::channel(CHANGES_CAPACITY);
        let (status, _) = watch::channel(RemoteStatus::Connected);
        let shared = Arc::new(Shared {
            connection,
            rows: RwLock::new(Rows::default()),
            changes,
            status,
        });
        // Revision 0: the watch's values, which carry their revisions, replace these.
        match list_sessions(&shared.connection).await {
            Ok(sessions) => {
                let mut rows = shared.write();
                for (id, doc) in sessions {
                    rows.keys.insert(
                        id,
                        Known {
                            revision: 0,
                            state: MetadataState::Document(doc),
                        },
                    );
                }
            }
            Err(error) => {
                tracing::warn!(%error, "the sessions could not be listed at start; the watch will fill the list")
            }
        }
        let tasks = vec![
            tokio::spawn(watch_metadata(Arc::clone(&shared))),
            tokio::spawn(follow_titles(Arc::clone(&shared))),
            tokio::spawn(watch_status(Arc::clone(&shared))),
        ];
        Self { shared, tasks }
    }

    /// The connection to NATS.
    pub(crate) fn connection(&self) -> &RemoteConnection {
        &self.shared.connection
    }

    /// Every session, most recently updated first.
    pub(crate) fn rows(&self) -> Vec<SessionRow> {
        let rows = self.shared.read();
        let mut list: Vec<SessionRow> = rows.keys.keys().filter_map(|id| rows.row(id)).collect();
        list.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        list
    }

    /// One session's row.
    pub(crate) fn row(&self, id: &str) -> Option<SessionRow> {
        self.shared.read().row(id)
    }

    /// The changes from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.shared.changes.subscribe()
    }

    /// The connection's state, now and as it changes.
    pub(crate) fn status(&self) -> watch::Receiver<RemoteStatus> {
        self.shared.status.subscribe()
    }
}

async fn watch_metadata(shared: Arc<Shared>) {
    let mut pause = RETRY_FIRST;
    loop {
        match watch_all_metadata(&shared.connection).await {
            Ok(changes) => {
                let mut changes = Box::pin(changes);
                while let Some(change) = changes.next().await {
                    match change {
                        Ok(change) => {
                            pause = RETRY_FIRST;
                            shared.metadata(change);
                        }
                        Err(error) => {
                            tracing::warn!(%error, "the sessions' metadata watch failed; starting it again");
                            break;
                        }
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "the sessions' metadata cannot be watched yet"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RETRY_MAX);
    }
}

async fn follow_titles(shared: Arc<Shared>) {
    let mut pause = RETRY_FIRST;
    let mut after = 0;
    loop {
        let follow = Follow {
            session: None,
            after,
        };
        match follow_transcripts(&shared.connection, follow).await {
            Ok(lines) => {
                let mut lines = Box::pin(lines);
                while let Some(line) = lines.next().await {
                    match line {
                        Ok(line) => {
                            pause = RETRY_FIRST;
                            after = line.sequence;
                            shared.line(&line);
                        }
                        Err(error) => {
                            tracing::warn!(%error, "following the transcripts failed; starting again");
                            break;
                        }
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "the transcripts cannot be followed yet"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RETRY_MAX);
    }
}

async fn watch_status(shared: Arc<Shared>) {
    loop {
        let now = if is_connected(&shared.connection) {
            RemoteStatus::Connected
        } else {
            RemoteStatus::Reconnecting
        };
        shared.status.send_if_modified(|status| {
            let changed = *status != now;
            *status = now;
            changed
        });
        tokio::time::sleep(STATUS_EVERY).await;
    }
}
