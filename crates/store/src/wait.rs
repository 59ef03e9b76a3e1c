//! Waiting asynchronously for the store to change: [`Changed`].
//!
//! A UI loop or a task awaits "the store moved past version v". Commits wake the waiting
//! tasks directly (their wakers are kept here), so nothing polls. The store stays free of
//! any async runtime: this is plain `std::future`, usable from tokio or any executor.
//!
//! Lost wake-ups are excluded by ordering: a commit publishes its version, then looks for
//! registered wakers; a waiter registers its waker, then re-reads the version. Both sides
//! use sequentially consistent operations, so at least one of them sees the other.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::dispatch::Shared;
use crate::store::Version;
use crate::sync::{AtomicU64, AtomicUsize, Mutex, Ordering, lock};

/// Wakers of tasks waiting for a commit.
pub(crate) struct Waiters {
    /// Registered wakers, readable without the lock so commits with no waiter cost one load.
    count: AtomicUsize,
    slots: Mutex<Vec<(u64, Waker)>>,
    next_id: AtomicU64,
}

impl Waiters {
    pub(crate) fn new() -> Self {
        Self {
            count: AtomicUsize::new(0),
            slots: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
        }
    }

    /// Wakes every registered task (they re-register if they keep waiting).
    pub(crate) fn wake(&self) {
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        let woken = {
            let mut slots = lock(&self.slots);
            self.count.store(0, Ordering::SeqCst);
            std::mem::take(&mut *slots)
        };
        for (_, waker) in woken {
            waker.wake();
        }
    }

    /// Registers (or refreshes) the waker of waiter `id`.
    fn register(&self, id: u64, waker: &Waker) {
        let mut slots = lock(&self.slots);
        match slots.iter_mut().find(|(slot, _)| *slot == id) {
            Some((_, existing)) => {
                if !existing.will_wake(waker) {
                    existing.clone_from(waker);
                }
            }
            None => {
                slots.push((id, waker.clone()));
                self.count.store(slots.len(), Ordering::SeqCst);
            }
        }
    }

    fn unregister(&self, id: u64) {
        let mut slots = lock(&self.slots);
        slots.retain(|(slot, _)| *slot != id);
        self.count.store(slots.len(), Ordering::SeqCst);
    }

    fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

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
        let id = shared.waiters.new_id();
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
        self.shared.waiters.register(self.id, cx.waker());
        self.registered = true;
        // Re-check after registering: a commit between the first check and the
        // registration would otherwise never wake us.
        let now = self.shared.version();
        if now > self.since {
            Poll::Ready(now)
        } else {
            Poll::Pending
        }
    }
}

impl<T> Drop for Changed<T> {
    fn drop(&mut self) {
        if self.registered {
            self.shared.waiters.unregister(self.id);
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
