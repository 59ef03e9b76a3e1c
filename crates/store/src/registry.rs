//! A list of callbacks with RAII removal, shared by store listeners and [`Signal`]s.
//!
//! Delivery iterates a *snapshot*: an `Arc` of the list taken under a short lock, so
//! callbacks run with no lock held and may subscribe or unsubscribe freely. Adding or
//! removing a callback builds a new list (copy on write); lists are short and change far
//! less often than they are read. Each entry carries a `live` flag so a callback removed
//! while a snapshot is being delivered is skipped for the rest of that delivery.
//!
//! [`Signal`]: crate::Signal

use std::fmt;
use std::sync::{Arc, Weak};

use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering, lock};

/// A callback taking `&A`.
type Callback<A> = Box<dyn Fn(&A) + Send + Sync>;

/// One registered callback.
pub(crate) struct Entry<A: ?Sized> {
    id: u64,
    live: AtomicBool,
    callback: Callback<A>,
}

impl<A: ?Sized> Entry<A> {
    /// Calls the callback unless it was removed.
    pub(crate) fn call(&self, arg: &A) {
        if self.live.load(Ordering::Acquire) {
            (self.callback)(arg);
        }
    }
}

/// The snapshot type: an immutable list of entries.
pub(crate) type Snapshot<A> = Arc<[Arc<Entry<A>>]>;

struct Inner<A: ?Sized> {
    entries: Mutex<Snapshot<A>>,
    /// The list's length, readable without the lock so an empty list costs one load.
    len: AtomicUsize,
    next_id: AtomicU64,
}

/// A registry of callbacks taking `&A`.
pub(crate) struct Registry<A: ?Sized> {
    inner: Arc<Inner<A>>,
}

impl<A: ?Sized + 'static> Registry<A> {
    pub(crate) fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                entries: Mutex::new(Arc::from(Vec::new())),
                len: AtomicUsize::new(0),
                next_id: AtomicU64::new(0),
            }),
        }
    }

    /// Registers `callback`; it stays registered until the returned handle is dropped.
    pub(crate) fn add(&self, callback: Callback<A>) -> Subscription {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Entry {
            id,
            live: AtomicBool::new(true),
            callback,
        });
        {
            let mut entries = lock(&self.inner.entries);
            let mut next: Vec<Arc<Entry<A>>> = entries.iter().cloned().collect();
            next.push(Arc::clone(&entry));
            self.inner.len.store(next.len(), Ordering::Release);
            *entries = Arc::from(next);
        }
        Subscription {
            detach: Some(Box::new(Attached {
                registry: Arc::downgrade(&self.inner),
                entry,
            })),
        }
    }

    /// The current list, or `None` when it is empty (the common case costs one load).
    pub(crate) fn snapshot(&self) -> Option<Snapshot<A>> {
        if self.inner.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        Some(Arc::clone(&lock(&self.inner.entries)))
    }

    /// Calls every live callback of the current list.
    pub(crate) fn emit(&self, arg: &A) {
        if let Some(entries) = self.snapshot() {
            for entry in entries.iter() {
                entry.call(arg);
            }
        }
    }

    /// The number of registered callbacks.
    pub(crate) fn len(&self) -> usize {
        self.inner.len.load(Ordering::Acquire)
    }
}

impl<A: ?Sized> Clone for Registry<A> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// Removes one entry from its registry; type-erased so [`Subscription`] is not generic.
trait Detach: Send + Sync {
    fn detach(&self);
}

struct Attached<A: ?Sized> {
    registry: Weak<Inner<A>>,
    entry: Arc<Entry<A>>,
}

impl<A: ?Sized + 'static> Detach for Attached<A> {
    fn detach(&self) {
        // Mark first: a delivery already holding a snapshot skips this entry from now on.
        self.entry.live.store(false, Ordering::Release);
        if let Some(inner) = self.registry.upgrade() {
            let mut entries = lock(&inner.entries);
            let next: Vec<Arc<Entry<A>>> = entries
                .iter()
                .filter(|e| e.id != self.entry.id)
                .cloned()
                .collect();
            inner.len.store(next.len(), Ordering::Release);
            *entries = Arc::from(next);
        }
    }
}

/// A registered callback; dropping it unsubscribes.
///
/// Returned by [`Store::subscribe`](crate::Store::subscribe),
/// [`Store::subscribe_select`](crate::Store::subscribe_select) and
/// [`Signal::subscribe`](crate::Signal::subscribe). The callback is never called again
/// once the drop has returned on the delivering thread (see rule 6 of the crate's
/// concurrency contract for drops on other threads).
///
/// ```
/// use strata_store::Store;
/// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
///
/// let store = Store::new(0u32);
/// let calls = Arc::new(AtomicUsize::new(0));
/// let counted = Arc::clone(&calls);
/// let sub = store.subscribe(move |_| { counted.fetch_add(1, Ordering::SeqCst); });
/// store.set(|n| Arc::new(**n + 1));
/// drop(sub);
/// store.set(|n| Arc::new(**n + 1));
/// assert_eq!(calls.load(Ordering::SeqCst), 1);
/// ```
#[must_use = "dropping a Subscription unsubscribes at once; keep it, or call `detach`"]
pub struct Subscription {
    detach: Option<Box<dyn Detach>>,
}

impl Subscription {
    /// Keeps the callback registered for as long as its store or signal lives.
    ///
    /// ```
    /// let signal: strata_store::Signal<u8> = strata_store::Signal::new();
    /// signal.subscribe(|_| {}).detach();
    /// assert_eq!(signal.subscriber_count(), 1);
    /// ```
    pub fn detach(mut self) {
        self.detach = None;
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(detach) = self.detach.take() {
            detach.detach();
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("attached", &self.detach.is_some())
            .finish()
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    #[test]
    fn dropping_the_handle_removes_the_callback() {
        let registry: Registry<u32> = Registry::new();
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let sub = registry.add(Box::new(move |n| s.lock().unwrap().push(*n)));
        registry.emit(&1);
        drop(sub);
        registry.emit(&2);
        assert_eq!(*seen.lock().unwrap(), [1]);
        assert_eq!(registry.len(), 0);
    }

    #[test]
    fn detached_callbacks_stay_until_the_registry_is_gone() {
        let registry: Registry<u32> = Registry::new();
        let seen = Arc::new(AtomicUsize::new(0));
        let s = Arc::clone(&seen);
        registry
            .add(Box::new(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            }))
            .detach();
        registry.emit(&1);
        registry.emit(&2);
        assert_eq!(seen.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_handle_outliving_its_registry_drops_quietly() {
        let registry: Registry<u32> = Registry::new();
        let sub = registry.add(Box::new(|_| {}));
        drop(registry);
        drop(sub);
    }
}
