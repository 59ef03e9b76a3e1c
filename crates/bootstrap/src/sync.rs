//! Lock helpers that survive poisoning.
//!
//! Every critical section in this crate either completes its update or leaves the previous
//! value in place (no half-written invariants), so a panic on another thread while it held a
//! lock does not make the data wrong. Recovering the guard keeps the process usable: a
//! panicking tool must not take the session id or the cost counters down with it.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, recovering the guard if another thread panicked while holding it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `lock`, recovering the guard after a poisoning panic.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `lock`, recovering the guard after a poisoning panic.
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// Converts a duration to whole nanoseconds for an `AtomicU64` counter, saturating at
/// `u64::MAX` (about 584 years), which no real session reaches.
pub(crate) fn duration_to_nanos(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
