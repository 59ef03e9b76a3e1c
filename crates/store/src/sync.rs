//! The synchronisation primitives the engine uses, in one place.
//!
//! Normal builds use `std` and `arc-swap`. With the `shuttle` feature every primitive is
//! shuttle's, so the model checker in `tests/shuttle.rs` controls each interleaving of
//! the dispatch protocol. Poisoning is ignored on purpose: the engine never leaves its
//! protected data half-updated across a call that can panic (updaters and callbacks run
//! before anything is changed, or with no lock held).

#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard, TryLockError};

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::{Condvar, Mutex, MutexGuard};
#[cfg(feature = "shuttle")]
pub(crate) use std::sync::TryLockError;

use std::sync::Arc;

/// Locks `mutex`, ignoring poisoning (see the module docs for why that is sound here).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `condvar`, ignoring poisoning.
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar
        .wait(guard)
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The cell holding the committed state: readers load it without waiting for writers.
#[cfg(not(feature = "shuttle"))]
pub(crate) struct StateCell<T>(arc_swap::ArcSwap<T>);

#[cfg(not(feature = "shuttle"))]
impl<T> StateCell<T> {
    pub(crate) fn new(value: Arc<T>) -> Self {
        Self(arc_swap::ArcSwap::new(value))
    }

    pub(crate) fn load_full(&self) -> Arc<T> {
        self.0.load_full()
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.0.load())
    }

    pub(crate) fn store(&self, value: Arc<T>) {
        self.0.store(value);
    }
}

/// Under shuttle the cell is a mutex, so reads are scheduling points of the model.
#[cfg(feature = "shuttle")]
pub(crate) struct StateCell<T>(Mutex<Arc<T>>);

#[cfg(feature = "shuttle")]
impl<T> StateCell<T> {
    pub(crate) fn new(value: Arc<T>) -> Self {
        Self(Mutex::new(value))
    }

    pub(crate) fn load_full(&self) -> Arc<T> {
        Arc::clone(&lock(&self.0))
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        let state = self.load_full();
        f(&state)
    }

    pub(crate) fn store(&self, value: Arc<T>) {
        *lock(&self.0) = value;
    }
}
