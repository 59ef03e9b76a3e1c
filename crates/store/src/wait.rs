//! Waiting asynchronously for the store to change: [`Changed`].
//!
//! A UI loop or a task awaits "the store moved past version v". Commits wake the waiting
//! tasks directly (their wakers are kept beside the state, under the writer lock), so
//! nothing polls. The store stays free of any async runtime: this is plain
//! `std::future`, usable from tokio or any executor.
//!
//! Lost wake-ups are excluded by the lock: a waiter registers its waker under the same
//! lock a commit takes, checking the version there, so either the commit came first (the
//! waiter sees it) or the registration did (the commit wakes it).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::dispatch::Shared;
use crate::store::Version;

/// Resolves with the store's version once it is newer than the version it was made with.
///
/// Made by [`Store::changed`](crate::Store::changed). Cancel-safe: dropping it
/// unregisters it.
///
/// A render loop waits for changes, then re-reads only what it shows:
///
/// ```
/// use std::sync::Arc;
/// use strata_store::Store;
/// # futures::executor::block_on(async {
/// let store = Store::new(0u64);
/// let writer = store.clone();
/// let t = std::thread::spawn(move || for _ in 0..3 { let _ = writer.set(|n| Arc::new(**n + 1)); });
/// let mut seen = store.version();
/// while *store.get() < 3 {
///     seen = store.changed(seen).await; // no polling: woken by the commit
/// }
/// t.join().unwrap();
/// # });
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Changed<T> {
    shared: Arc<Shared<T>>,
    since: Version,
    id: u64,
    registered: bool,
}

impl<T> Changed<T> {
    pub(crate) fn new(shared: Arc<Shared<T>>, since: Version) -> Self {
        let id = shared.new_waiter();
        Self {
            shared,
            since,
            id,
            registered: false,
        }
    }
}

impl<T: Send + Sync + 'static> Future for Changed<T> {
    type Output = Version;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Version> {
        let now = self.shared.version();
        if now > self.since {
            return Poll::Ready(now);
        }
        match self.shared.wait_past(self.id, self.since, cx.waker()) {
            Some(now) => Poll::Ready(now),
            None => {
                self.registered = true;
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Changed<T> {
    fn drop(&mut self) {
        if self.registered {
            self.shared.stop_waiting(self.id);
        }
    }
}

impl<T> fmt::Debug for Changed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Changed")
            .field("since", &self.since)
            .finish_non_exhaustive()
    }
}
