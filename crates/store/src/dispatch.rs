//! The engine: committing updates and delivering them in order.
//!
//! Everything that the crate's concurrency contract promises is implemented here, in one
//! small state machine guarded by one mutex (`Core`):
//!
//! - A writer takes the lock, runs its updater on the latest state, and — unless the
//!   updater returned the previous `Arc` — commits: the new state becomes visible to
//!   readers, gets the next version, and a [`Commit`] record is queued for delivery.
//! - Delivery is done by at most one thread at a time, the *dispatcher*. A writer that
//!   finds no dispatcher becomes it and delivers the queue (its own commit first, unless
//!   older ones are waiting) until it is empty. A writer that finds a dispatcher at work
//!   queues its commit and waits until that commit has been delivered. A writer that *is*
//!   the dispatcher (an update made inside a callback) queues and returns at once; the
//!   loop it is running delivers the commit after the current round.
//! - Callbacks run after the lock is released; the dispatcher re-takes it only to record
//!   progress and take the next commit.
//!
//! The single-writer fast path takes the lock twice per update: once to commit (and
//! become dispatcher), once after delivery to find the queue empty.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::context::thread_token;
use crate::registry::Registry;
use crate::store::{MAX_REENTRANT_DEPTH, Update, Version};
use crate::sync::{
    AtomicU32, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, StateCell,
    TryLockError, lock, wait,
};
use std::task::Waker;

/// The change hook: `(new, old)`.
pub(crate) type Hook<T> = Box<dyn Fn(&Arc<T>, &Arc<T>) + Send + Sync>;

/// One committed change waiting to be (or being) delivered.
struct Commit<T> {
    new: Arc<T>,
    old: Arc<T>,
    version: u64,
    /// 0 for an update from outside any callback; n + 1 for one made while delivering a
    /// commit of depth n.
    depth: u32,
}

/// The state behind the writer lock.
struct Core<T> {
    /// The committed state (also published in `Shared::cell` for lock-free reads).
    current: Arc<T>,
    /// The version of `current`.
    version: u64,
    /// Every commit up to this version has been delivered.
    delivered: u64,
    /// Commits waiting for delivery, in commit order.
    pending: VecDeque<Commit<T>>,
    /// A thread is running the delivery loop.
    dispatching: bool,
    /// Writers blocked in `set` until their commit is delivered.
    waiting: usize,
    /// Tasks awaiting a newer version ([`crate::Changed`]), by waiter id. Kept under the
    /// lock so a commit and a registration can never miss each other.
    wakers: Vec<(u64, Waker)>,
    /// The next waiter id.
    next_waker: u64,
}

/// Everything a store and its handles share.
pub(crate) struct Shared<T> {
    cell: StateCell<T>,
    /// The committed version, readable without the lock.
    version: AtomicU64,
    core: Mutex<Core<T>>,
    /// Signalled when delivery progresses or the dispatcher leaves.
    progress: Condvar,
    hook: Option<Hook<T>>,
    pub(crate) listeners: Registry<Arc<T>>,
    /// The token of the thread running an updater under the writer lock (0: none).
    updating: AtomicUsize,
    /// The token of the dispatching thread (0: none). Only the dispatcher runs callbacks,
    /// so a `set` from that thread is a `set` from inside a callback. Written only under
    /// the core lock, together with `Core::dispatching`, so a dispatcher that has just
    /// left can never erase the token of the one that took over.
    dispatcher: AtomicUsize,
    /// The nesting depth of the commit being delivered (read by the dispatcher only).
    round_depth: AtomicU32,
}

impl<T: Send + Sync + 'static> Shared<T> {
    pub(crate) fn new(initial: Arc<T>, hook: Option<Hook<T>>) -> Self {
        Self {
            cell: StateCell::new(Arc::clone(&initial)),
            version: AtomicU64::new(0),
            core: Mutex::new(Core {
                current: initial,
                version: 0,
                delivered: 0,
                pending: VecDeque::new(),
                dispatching: false,
                waiting: 0,
                wakers: Vec::new(),
                next_waker: 0,
            }),
            progress: Condvar::new(),
            hook,
            listeners: Registry::new(),
            updating: AtomicUsize::new(0),
            dispatcher: AtomicUsize::new(0),
            round_depth: AtomicU32::new(0),
        }
    }

    pub(crate) fn get(&self) -> Arc<T> {
        self.cell.load_full()
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        self.cell.with(f)
    }

    pub(crate) fn version(&self) -> Version {
        Version(self.version.load(Ordering::Acquire))
    }

    /// Runs `updater` on the latest state and commits and delivers its result.
    pub(crate) fn set(&self, updater: impl FnOnce(&Arc<T>) -> Arc<T>) -> Update {
        let me = thread_token();
        // Only this thread ever stores its own token, so relaxed loads see our own
        // writes and can never mistake another thread's value for ours.
        let in_callback = self.dispatcher.load(Ordering::Relaxed) == me;
        let depth = if in_callback {
            self.round_depth.load(Ordering::Relaxed) + 1
        } else {
            0
        };

        let mut core = match self.core.try_lock() {
            Ok(core) => core,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                if self.updating.load(Ordering::Relaxed) == me {
                    panic!(
                        "strata-store: `set` was called from inside an updater of the same \
                         store. An updater must be a pure function of the previous state; \
                         make the second update after this one returns, or return both \
                         changes from one updater."
                    );
                }
                lock(&self.core)
            }
        };
        let next = {
            let _updating = Role::take(&self.updating, me);
            updater(&core.current)
        };
        if Arc::ptr_eq(&next, &core.current) {
            return Update::Unchanged;
        }
        if depth > MAX_REENTRANT_DEPTH {
            drop(core);
            panic!(
                "strata-store: update feedback loop: a change hook or listener updated the \
                 store {MAX_REENTRANT_DEPTH} times in a row from its own deliveries. Make the \
                 callback return the previous state when nothing needs to change."
            );
        }

        let old = std::mem::replace(&mut core.current, next);
        core.version += 1;
        let version = core.version;
        self.cell.store(Arc::clone(&core.current));
        self.version.store(version, Ordering::Release);
        let wakers = if core.wakers.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut core.wakers)
        };

        if !in_callback
            && !core.dispatching
            && core.pending.is_empty()
            && self.hook.is_none()
            && self.listeners.len() == 0
        {
            // Nobody is told about commits: delivering this one is a no-op, done here in
            // the commit's critical section (a listener subscribing right now counts as
            // added after this round began, rule 6).
            core.delivered = version;
            drop(core);
            wake_all(wakers);
            drop(old);
            return Update::Committed(Version(version));
        }

        let commit = Commit {
            new: Arc::clone(&core.current),
            old,
            version,
            depth,
        };
        if in_callback {
            // This thread is the dispatcher, inside a callback: the loop it is running
            // delivers this commit after the current round.
            core.pending.push_back(commit);
            drop(core);
            wake_all(wakers);
            return Update::Committed(Version(version));
        }

        if core.dispatching {
            core.pending.push_back(commit);
            drop(core);
            wake_all(wakers);
            self.wait_for_delivery(version);
            return Update::Committed(Version(version));
        }

        // No dispatcher: this thread becomes it. Older commits left behind by a panicking
        // callback go first, to keep commit order.
        core.dispatching = true;
        self.dispatcher.store(me, Ordering::Relaxed);
        let first = if core.pending.is_empty() {
            commit
        } else {
            core.pending.push_back(commit);
            match core.pending.pop_front() {
                Some(oldest) => oldest,
                // Unreachable: the queue was just given an element.
                None => return Update::Committed(Version(version)),
            }
        };
        drop(core);
        wake_all(wakers);
        self.dispatch(first);
        Update::Committed(Version(version))
    }

    /// Blocks until `version` is delivered, taking over as dispatcher if the current one
    /// leaves before getting there (it panicked).
    fn wait_for_delivery(&self, version: u64) {
        let mut core = lock(&self.core);
        core.waiting += 1;
        loop {
            if core.delivered >= version {
                core.waiting -= 1;
                return;
            }
            if !core.dispatching {
                core.waiting -= 1;
                match core.pending.pop_front() {
                    Some(first) => {
                        core.dispatching = true;
                        self.dispatcher.store(thread_token(), Ordering::Relaxed);
                        drop(core);
                        self.dispatch(first);
                    }
                    // Nothing queued yet not delivered cannot happen (delivery is in
                    // order and our commit was queued); treat it as delivered.
                    None => drop(core),
                }
                return;
            }
            core = wait(&self.progress, core);
        }
    }

    /// The delivery loop: delivers `first`, then everything queued, in order.
    fn dispatch(&self, first: Commit<T>) {
        let mut guard = DispatchGuard {
            shared: self,
            in_flight: first.version,
            armed: true,
        };
        let mut commit = first;
        loop {
            guard.in_flight = commit.version;
            self.deliver(&commit);
            let mut core = lock(&self.core);
            core.delivered = commit.version;
            let notify = core.waiting > 0;
            let next = core.pending.pop_front();
            if next.is_none() {
                core.dispatching = false;
                self.dispatcher.store(0, Ordering::Relaxed);
                guard.armed = false;
            }
            drop(core);
            if notify {
                self.progress.notify_all();
            }
            // The old state is freed here, outside the lock.
            drop(commit);
            match next {
                Some(c) => commit = c,
                None => return,
            }
        }
    }

    /// One round: the change hook, then every listener registered before the round began.
    fn deliver(&self, commit: &Commit<T>) {
        self.round_depth.store(commit.depth, Ordering::Relaxed);
        let listeners = self.listeners.snapshot();
        if let Some(hook) = &self.hook {
            hook(&commit.new, &commit.old);
        }
        if let Some(listeners) = listeners {
            for listener in listeners.iter() {
                listener.call(&commit.new);
            }
        }
    }
}

impl<T> Shared<T> {
    /// A new id for a [`crate::Changed`] waiter.
    pub(crate) fn new_waiter(&self) -> u64 {
        let mut core = lock(&self.core);
        core.next_waker += 1;
        core.next_waker
    }

    /// Registers (or refreshes) waiter `id`'s waker unless the store is already past
    /// `since`; returns the version in that case.
    pub(crate) fn wait_past(&self, id: u64, since: Version, waker: &Waker) -> Option<Version> {
        let mut core = lock(&self.core);
        if core.version > since.0 {
            return Some(Version(core.version));
        }
        match core.wakers.iter_mut().find(|(slot, _)| *slot == id) {
            Some((_, existing)) => existing.clone_from(waker),
            None => core.wakers.push((id, waker.clone())),
        }
        None
    }

    /// Forgets waiter `id`.
    pub(crate) fn stop_waiting(&self, id: u64) {
        lock(&self.core).wakers.retain(|(slot, _)| *slot != id);
    }
}

/// Wakes the tasks that waited for a commit (outside the lock: a waker may run code).
fn wake_all(wakers: Vec<(u64, Waker)>) {
    for (_, waker) in wakers {
        waker.wake();
    }
}

/// A thread's token in one of a store's role fields (writer, dispatcher) for as long as
/// the guard lives; cleared on drop, also when unwinding.
struct Role<'a>(&'a AtomicUsize);

impl<'a> Role<'a> {
    fn take(field: &'a AtomicUsize, token: usize) -> Self {
        field.store(token, Ordering::Relaxed);
        Role(field)
    }
}

impl Drop for Role<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// Leaves the dispatcher role consistent if a callback panics: the in-flight commit
/// counts as delivered, the role is released, and waiting writers are woken so one of
/// them can deliver what is still queued.
struct DispatchGuard<'a, T> {
    shared: &'a Shared<T>,
    in_flight: u64,
    armed: bool,
}

impl<T> Drop for DispatchGuard<'_, T> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut core: MutexGuard<'_, Core<T>> = lock(&self.shared.core);
        core.delivered = core.delivered.max(self.in_flight);
        core.dispatching = false;
        self.shared.dispatcher.store(0, Ordering::Relaxed);
        drop(core);
        self.shared.progress.notify_all();
    }
}
