//! The one lock helper of the crate.
//!
//! Every mutex in this crate guards a value that is replaced or changed by a single
//! operation (a path, a map insert, a counter, a leaf uuid), so a panic in another
//! thread while it held the lock cannot leave the value half-updated: poisoning carries
//! no information here and is ignored rather than turned into a second panic.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, ignoring poisoning (see the module docs).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
