//! [`Signal`]: a tiny event channel for things that happen rather than state that is,
//! such as "session switched" (BS-5).

use std::fmt;

use crate::registry::{Registry, Subscription};

/// Subscribe to events of type `E`; emit them to every subscriber, in subscription order.
///
/// Handlers run synchronously on the emitting thread with no lock held, so a handler may
/// emit again (that nested emit is delivered at once, inside the outer one) or
/// unsubscribe. A handler subscribed during an emit is first called by the next emit.
/// Cloning a `Signal` clones the handle.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use strata_store::Signal;
///
/// let switched: Signal<String> = Signal::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&seen);
/// let sub = switched.subscribe(move |id: &String| log.lock().unwrap().push(id.clone()));
/// switched.emit(&"session-2".to_string());
/// drop(sub);
/// switched.emit(&"session-3".to_string());
/// assert_eq!(*seen.lock().unwrap(), ["session-2"]);
/// ```
pub struct Signal<E: ?Sized> {
    handlers: Registry<E>,
}

impl<E: ?Sized + 'static> Signal<E> {
    /// A signal with no subscribers.
    ///
    /// ```
    /// let signal: strata_store::Signal<u8> = strata_store::Signal::new();
    /// assert_eq!(signal.subscriber_count(), 0);
    /// ```
    pub fn new() -> Self {
        Self {
            handlers: Registry::new(),
        }
    }

    /// Calls `handler` on every later emit until the returned handle is dropped.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
    /// let signal = strata_store::Signal::new();
    /// let total = Arc::new(AtomicU32::new(0));
    /// let t = Arc::clone(&total);
    /// let _sub = signal.subscribe(move |n: &u32| { t.fetch_add(*n, Ordering::SeqCst); });
    /// signal.emit(&2);
    /// signal.emit(&3);
    /// assert_eq!(total.load(Ordering::SeqCst), 5);
    /// ```
    pub fn subscribe(&self, handler: impl Fn(&E) + Send + Sync + 'static) -> Subscription {
        self.handlers.add(Box::new(handler))
    }

    /// Calls every subscribed handler with `event` (nobody: nothing happens).
    ///
    /// ```
    /// let signal: strata_store::Signal<str> = strata_store::Signal::new();
    /// signal.emit("no one is listening");
    /// ```
    pub fn emit(&self, event: &E) {
        self.handlers.emit(event);
    }

    /// The number of subscribed handlers.
    ///
    /// ```
    /// let signal: strata_store::Signal<()> = strata_store::Signal::new();
    /// let sub = signal.subscribe(|_| {});
    /// assert_eq!(signal.subscriber_count(), 1);
    /// drop(sub);
    /// assert_eq!(signal.subscriber_count(), 0);
    /// ```
    pub fn subscriber_count(&self) -> usize {
        self.handlers.len()
    }
}

impl<E: ?Sized + 'static> Default for Signal<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: ?Sized> Clone for Signal<E> {
    fn clone(&self) -> Self {
        Self {
            handlers: self.handlers.clone(),
        }
    }
}

impl<E: ?Sized + 'static> fmt::Debug for Signal<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("subscribers", &self.subscriber_count())
            .finish()
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn bs5_a_handler_added_during_emit_is_first_called_by_the_next_emit() {
        let signal: Signal<u32> = Signal::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let late = Arc::new(Mutex::new(None));
        let (s, l, sig) = (Arc::clone(&seen), Arc::clone(&late), signal.clone());
        signal
            .subscribe(move |n| {
                s.lock().unwrap().push(("first", *n));
                let mut late = l.lock().unwrap();
                if late.is_none() {
                    let s2 = Arc::clone(&s);
                    *late = Some(sig.subscribe(move |n| s2.lock().unwrap().push(("late", *n))));
                }
            })
            .detach();
        signal.emit(&1);
        signal.emit(&2);
        assert_eq!(
            *seen.lock().unwrap(),
            [("first", 1), ("first", 2), ("late", 2)]
        );
    }

    #[test]
    fn a_handler_may_emit_again() {
        let signal: Signal<u32> = Signal::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s, sig) = (Arc::clone(&seen), signal.clone());
        signal
            .subscribe(move |n| {
                s.lock().unwrap().push(*n);
                if *n == 1 {
                    sig.emit(&2);
                }
            })
            .detach();
        signal.emit(&1);
        assert_eq!(*seen.lock().unwrap(), [1, 2]);
    }
}
