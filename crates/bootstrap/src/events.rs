//! "Cwd changed" and "session switched" notifications (BS-3, BS-5).
//!
//! Why a listener facility lives here instead of using `strata-store`'s `Signal`: bootstrap
//! is a leaf (BS-1, DESIGN.md "Layers and crates") and may not depend on any crate of ours,
//! not even the store. So this module carries the smallest facility that gives the same
//! guarantees the rest of the system relies on:
//!
//! - **RAII subscriptions.** [`Subscription`] unsubscribes when dropped; a subscription
//!   dropped while an event is being delivered is not called again, not even later in that
//!   delivery.
//! - **No callback runs while a lock is held**, so a listener may call any getter or setter
//!   of the same [`Bootstrap`](crate::Bootstrap) (even `set_cwd` again) without deadlock.
//! - **Every event is delivered exactly once, in the order the state changed.** The event is
//!   queued inside the same critical section that changes the state, and one thread at a
//!   time (the outermost dispatcher) drains the queue. An event raised by a listener, or by
//!   another thread while a delivery is running, is delivered after the current one by the
//!   thread already dispatching; that caller's setter can therefore return before its
//!   listeners ran. A listener added during a delivery first hears the next event.
//! - **Feedback loops end with a clear error** instead of spinning forever: after
//!   [`MAX_EVENTS_PER_DISPATCH`] events in one drain the queue is dropped and the overflow is
//!   written to the error log.
//!
//! A listener that panics propagates the panic to the caller whose drain delivered it; the
//! dispatcher resets itself on unwind, and events still queued are delivered by the next
//! setter that raises one.

use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use uuid::Uuid;

use crate::sync::lock;

/// The most events one drain delivers before it concludes that listeners are feeding each
/// other forever (a listener that sets the cwd on every cwd change, say).
pub const MAX_EVENTS_PER_DISPATCH: usize = 10_000;

/// The working directory changed (BS-3). Both paths are in their stored (resolved, NFC)
/// form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CwdChanged {
    /// The cwd before the change.
    pub old: Arc<Path>,
    /// The cwd now stored.
    pub new: Arc<Path>,
}

/// The session id changed (BS-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSwitched {
    /// The id of the session that was current before.
    pub old_id: Uuid,
    /// The id now current.
    pub new_id: Uuid,
    /// The directory holding the new session's transcript, if one was given (`None`: derive
    /// it from the original cwd).
    pub project_dir: Option<Arc<Path>>,
    /// Why the id changed.
    pub cause: SwitchCause,
}

/// What made the session id change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchCause {
    /// [`Bootstrap::switch_session`](crate::Bootstrap::switch_session): resume, fork, or an
    /// explicit `--session-id`.
    Switched,
    /// [`Bootstrap::regenerate_session_id`](crate::Bootstrap::regenerate_session_id): a fresh
    /// id, e.g. when leaving plan mode with a cleared context.
    Regenerated {
        /// Whether the old id was recorded as the new session's parent.
        parent_recorded: bool,
    },
}

/// A listener registration. Dropping it unsubscribes; [`Subscription::detach`] keeps the
/// listener for the life of the [`Bootstrap`](crate::Bootstrap) instead.
#[must_use = "dropping a Subscription unsubscribes the listener immediately"]
pub struct Subscription {
    active: Arc<AtomicBool>,
    unsubscribe: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Subscription {
    /// Keeps the listener registered until the bootstrap state itself is dropped.
    pub fn detach(mut self) {
        self.unsubscribe = None;
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(unsubscribe) = self.unsubscribe.take() {
            // Cleared first so a delivery that already copied the listener list skips it.
            self.active.store(false, Ordering::Release);
            unsubscribe();
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("active", &self.active.load(Ordering::Relaxed))
            .field("detached", &self.unsubscribe.is_none())
            .finish()
    }
}

type Callback<E> = Arc<dyn Fn(&E) + Send + Sync>;

struct Entry<E> {
    id: u64,
    active: Arc<AtomicBool>,
    callback: Callback<E>,
}

/// The registered listeners for one event type.
struct Listeners<E> {
    entries: Mutex<Vec<Entry<E>>>,
    next_id: AtomicU64,
}

impl<E: 'static> Listeners<E> {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            entries: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
        })
    }

    fn subscribe(self: &Arc<Self>, callback: Callback<E>) -> Subscription {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let active = Arc::new(AtomicBool::new(true));
        lock(&self.entries).push(Entry {
            id,
            active: Arc::clone(&active),
            callback,
        });
        // Weak: a subscription outliving its bootstrap instance unsubscribes from nothing.
        let weak: Weak<Self> = Arc::downgrade(self);
        Subscription {
            active,
            unsubscribe: Some(Box::new(move || {
                if let Some(listeners) = weak.upgrade() {
                    lock(&listeners.entries).retain(|entry| entry.id != id);
                }
            })),
        }
    }

    fn deliver(&self, event: &E) {
        // Copy the list so no lock is held while callbacks run.
        let current: Vec<(Arc<AtomicBool>, Callback<E>)> = lock(&self.entries)
            .iter()
            .map(|entry| (Arc::clone(&entry.active), Arc::clone(&entry.callback)))
            .collect();
        for (active, callback) in current {
            if active.load(Ordering::Acquire) {
                callback(event);
            }
        }
    }

    fn len(&self) -> usize {
        lock(&self.entries).len()
    }
}

/// One queued notification.
pub(crate) enum Event {
    Cwd(CwdChanged),
    Session(SessionSwitched),
}

#[derive(Default)]
struct Dispatch {
    queue: VecDeque<Event>,
    running: bool,
}

/// The event hub of one bootstrap instance: listener lists plus the ordered delivery queue.
pub(crate) struct Hub {
    cwd: Arc<Listeners<CwdChanged>>,
    session: Arc<Listeners<SessionSwitched>>,
    dispatch: Mutex<Dispatch>,
}

/// Resets the dispatcher if a listener panics, so later events are still delivered.
struct RunningGuard<'a> {
    dispatch: &'a Mutex<Dispatch>,
    armed: bool,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            lock(self.dispatch).running = false;
        }
    }
}

/// The outcome of a drain that hit [`MAX_EVENTS_PER_DISPATCH`].
pub(crate) struct Overflow {
    pub(crate) dropped: usize,
}

impl Hub {
    pub(crate) fn new() -> Self {
        Self {
            cwd: Listeners::new(),
            session: Listeners::new(),
            dispatch: Mutex::new(Dispatch::default()),
        }
    }

    pub(crate) fn on_cwd_changed(&self, callback: Callback<CwdChanged>) -> Subscription {
        self.cwd.subscribe(callback)
    }

    pub(crate) fn on_session_switched(&self, callback: Callback<SessionSwitched>) -> Subscription {
        self.session.subscribe(callback)
    }

    pub(crate) fn listener_counts(&self) -> (usize, usize) {
        (self.cwd.len(), self.session.len())
    }

    /// Queues an event. Call it inside the critical section that made the change, so the
    /// queue order is the order of the changes; then call [`Hub::drain`] after releasing it.
    pub(crate) fn enqueue(&self, event: Event) {
        lock(&self.dispatch).queue.push_back(event);
    }

    /// Delivers queued events unless another call is already doing so (that call will
    /// deliver them). Must be called with no lock of the bootstrap state held.
    pub(crate) fn drain(&self) -> Result<(), Overflow> {
        {
            let mut dispatch = lock(&self.dispatch);
            if dispatch.running || dispatch.queue.is_empty() {
                return Ok(());
            }
            dispatch.running = true;
        }
        let mut guard = RunningGuard {
            dispatch: &self.dispatch,
            armed: true,
        };
        let mut delivered = 0usize;
        loop {
            let event = {
                let mut dispatch = lock(&self.dispatch);
                if delivered >= MAX_EVENTS_PER_DISPATCH {
                    let dropped = dispatch.queue.len();
                    dispatch.queue.clear();
                    dispatch.running = false;
                    guard.armed = false;
                    return if dropped == 0 {
                        Ok(())
                    } else {
                        Err(Overflow { dropped })
                    };
                }
                match dispatch.queue.pop_front() {
                    Some(event) => event,
                    None => {
                        // Cleared under the same lock that saw the queue empty, so an event
                        // queued by another thread right now is drained by that thread.
                        dispatch.running = false;
                        guard.armed = false;
                        return Ok(());
                    }
                }
            };
            delivered += 1;
            match &event {
                Event::Cwd(change) => self.cwd.deliver(change),
                Event::Session(switch) => self.session.deliver(switch),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn cwd_event(n: usize) -> Event {
        Event::Cwd(CwdChanged {
            old: Arc::from(PathBuf::from(format!("/old{n}"))),
            new: Arc::from(PathBuf::from(format!("/new{n}"))),
        })
    }

    #[test]
    fn bs3_dropped_subscription_is_not_called() {
        let hub = Hub::new();
        let calls = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&calls);
        let sub = hub.on_cwd_changed(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        hub.enqueue(cwd_event(0));
        assert!(hub.drain().is_ok());
        drop(sub);
        hub.enqueue(cwd_event(1));
        assert!(hub.drain().is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(hub.listener_counts(), (0, 0));
    }

    #[test]
    fn bs3_subscription_dropped_during_delivery_is_skipped_in_that_delivery() {
        let hub = Hub::new();
        let second_calls = Arc::new(AtomicU64::new(0));
        let slot: Arc<Mutex<Option<Subscription>>> = Arc::new(Mutex::new(None));
        let slot_in_first = Arc::clone(&slot);
        let first = hub.on_cwd_changed(Arc::new(move |_| {
            // Unsubscribe the second listener before it is reached in this delivery.
            drop(lock(&slot_in_first).take());
        }));
        let counter = Arc::clone(&second_calls);
        let second = hub.on_cwd_changed(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        *lock(&slot) = Some(second);
        hub.enqueue(cwd_event(0));
        assert!(hub.drain().is_ok());
        assert_eq!(second_calls.load(Ordering::SeqCst), 0);
        drop(first);
    }

    #[test]
    fn bs3_listener_added_during_delivery_first_hears_the_next_event() {
        let hub = Arc::new(Hub::new());
        let late_calls = Arc::new(AtomicU64::new(0));
        let late_sub: Arc<Mutex<Option<Subscription>>> = Arc::new(Mutex::new(None));
        let (weak, counter, slot) = (
            Arc::downgrade(&hub),
            Arc::clone(&late_calls),
            Arc::clone(&late_sub),
        );
        let _first = hub.on_cwd_changed(Arc::new(move |_| {
            let mut slot = lock(&slot);
            if slot.is_none()
                && let Some(hub) = weak.upgrade()
            {
                let counter = Arc::clone(&counter);
                *slot = Some(hub.on_cwd_changed(Arc::new(move |_| {
                    counter.fetch_add(1, Ordering::SeqCst);
                })));
            }
        }));
        hub.enqueue(cwd_event(0));
        assert!(hub.drain().is_ok());
        assert_eq!(late_calls.load(Ordering::SeqCst), 0);
        hub.enqueue(cwd_event(1));
        assert!(hub.drain().is_ok());
        assert_eq!(late_calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn bs3_detached_subscription_keeps_listening() {
        let hub = Hub::new();
        let calls = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&calls);
        hub.on_cwd_changed(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        }))
        .detach();
        hub.enqueue(cwd_event(0));
        assert!(hub.drain().is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(hub.listener_counts(), (1, 0));
    }

    #[test]
    fn bs3_feedback_loop_is_cut_off_with_overflow() {
        let hub = Arc::new(Hub::new());
        let weak = Arc::downgrade(&hub);
        let _sub = hub.on_cwd_changed(Arc::new(move |_| {
            if let Some(hub) = weak.upgrade() {
                hub.enqueue(cwd_event(0));
                // Re-entrant drain: a no-op, the outer dispatcher delivers.
                assert!(hub.drain().is_ok());
            }
        }));
        hub.enqueue(cwd_event(0));
        let overflow = hub.drain().err().map(|o| o.dropped);
        assert_eq!(overflow, Some(1));
        // The dispatcher is usable again afterwards.
        let _ = hub.drain();
    }

    #[test]
    fn bs3_listener_panic_does_not_wedge_the_dispatcher() {
        let hub = Hub::new();
        let calls = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&calls);
        let _sub = hub.on_cwd_changed(Arc::new(move |change| {
            counter.fetch_add(1, Ordering::SeqCst);
            assert!(!change.new.ends_with("new0"), "first event panics");
        }));
        hub.enqueue(cwd_event(0));
        hub.enqueue(cwd_event(1));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hub.drain()));
        assert!(result.is_err());
        // The event queued behind the panicking one is still delivered.
        assert!(hub.drain().is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
