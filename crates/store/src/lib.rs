//! A small reactive store: one value, functional updates, ordered change delivery.
//!
//! strata keeps the whole application state of a session in one [`Store`] (SPEC AS-3).
//! Tools, the model client, background tasks and the terminal UI all read and update it at
//! once, from many threads and async tasks, and every change must reach the one central
//! side-effect hub (the change hook) and the UI exactly once and in order. This crate is
//! that engine and nothing else: it knows no domain types, does no I/O, and its whole
//! engine stays small enough to read in one sitting (ST-6).
//!
//! # The model
//!
//! - The committed state is an `Arc<T>`. [`Store::get`] returns it without ever waiting
//!   for a writer (an atomically swapped pointer).
//! - [`Store::set`] takes a *function of the previous state* and returns the next state
//!   (ST-1, ST-2). Returning the very same `Arc` (pointer-equal) means "no change":
//!   nothing is committed and nobody is told, checked in O(1), never by deep comparison
//!   (ST-3). [`Store::update`] is the "clone and mutate" convenience: it clones only when
//!   the closure first writes, so its no-change path is O(1) as well.
//! - The change hook, given at construction ([`Store::with_change_hook`]), receives
//!   `(new, old)` after each commit and before the listeners (ST-4). It is the one exit
//!   for side effects.
//! - [`Store::subscribe`] registers a listener and returns a [`Subscription`]; dropping it
//!   unsubscribes. [`Store::setter`] gives a write-only [`Setter`] that subscribes to
//!   nothing (UI-3).
//! - [`Store::select`] and friends return a [`Selection`]: it remembers the last selected
//!   value and reports a change only when the slice differs (UI-2).
//! - [`Store::changed`] is a future that resolves once the store has moved past a given
//!   [`Version`], without polling, for UI loops and tasks.
//! - [`Signal`] is a tiny event channel (subscribe / emit) for events that are not state,
//!   such as "session switched" (BS-5).
//!
//! # The concurrency contract (ST-2, ST-5)
//!
//! These rules hold for any number of threads and async tasks updating one store. They
//! are proven by a model checker (`tests/shuttle.rs`, run with `--features shuttle`),
//! property tests (`tests/ordering.rs`) and a unit test per rule.
//!
//! 1. **No update is lost.** Writers are serialized: each updater runs exactly once, with
//!    the latest committed state, under the store's writer lock. An updater must therefore
//!    be quick and must not update the *same* store (doing so panics with a clear message
//!    instead of deadlocking); it may read it.
//! 2. **Every commit is delivered exactly once, in commit order.** Commits are numbered
//!    ([`Version`]). For each one, the change hook runs, then every listener, before the
//!    next commit is delivered. Delivery is done by one thread at a time (the
//!    *dispatcher*), so callbacks never run concurrently with each other.
//! 3. **No callback runs while a lock is held.** The change hook, listeners and signal
//!    handlers run with no lock of this crate held, so they may read the store, update it,
//!    subscribe and unsubscribe.
//! 4. **Re-entrant updates are queued, not nested.** An update made inside the change hook
//!    or a listener is committed at once (a later `get` sees it) but delivered after the
//!    current commit's round has finished, still in commit order, by the same dispatcher
//!    loop (the semantics of GPUI in Zed). The `set` inside the callback returns before
//!    its own commit is delivered. A callback that keeps updating the store on every
//!    delivery is an endless feedback loop: past [`MAX_REENTRANT_DEPTH`] nested commits
//!    the store panics with a message that says so.
//! 5. **When `set` returns on a thread that is not inside a callback of this store, its
//!    commit has been delivered**: the change hook and every listener have run for it. If
//!    another thread is dispatching at that moment, `set` waits for it to reach this
//!    commit. (Consequently a callback must not block on another thread that updates the
//!    same store: that thread is waiting for the callback to finish.)
//! 6. **Listeners added or dropped during a round.** Each round (the delivery of one
//!    commit) takes its list of listeners before the change hook runs: a listener added
//!    during a round is first called in the next round. A listener is called for every
//!    round that begins after `subscribe` returns — including the rounds of commits made
//!    just before it subscribed whose delivery had not begun yet — so what it sees is an
//!    unbroken, ordered run of commits. A listener whose
//!    [`Subscription`] is dropped during a round is not called again, not even later in
//!    that round. (A drop on another thread takes effect at the dispatcher's next check;
//!    a call already under way on the dispatcher is not interrupted.)
//! 7. **A panicking callback** unwinds through the thread that was delivering. The commit
//!    stays committed and counts as delivered; the remaining listeners of that round are
//!    skipped; commits queued behind it are delivered by the next dispatcher (the next
//!    `set`, or a thread already waiting in `set`).
//!
//! # Example
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use strata_store::Store;
//!
//! #[derive(Clone, Debug, PartialEq)]
//! struct App { verbose: bool, messages: Vec<String> }
//!
//! let log = Arc::new(Mutex::new(Vec::new()));
//! let hook_log = Arc::clone(&log);
//! let store = Store::with_change_hook(
//!     App { verbose: false, messages: vec![] },
//!     move |new: &Arc<App>, old: &Arc<App>| {
//!         if new.verbose != old.verbose {
//!             hook_log.lock().unwrap().push(format!("verbose={}", new.verbose));
//!         }
//!     },
//! );
//!
//! let mut verbose = store.select(|s| s.verbose);
//! store.update(|s| s.verbose = true);
//! assert!(verbose.changed(&store));
//! assert_eq!(*verbose.value(), true);
//!
//! // Returning the previous state is "no change": no hook call, no listener call.
//! let before = store.version();
//! assert!(!store.set(|prev| Arc::clone(prev)).is_committed());
//! assert_eq!(store.version(), before);
//! assert_eq!(*log.lock().unwrap(), ["verbose=true"]);
//! ```

mod context;
mod dispatch;
mod draft;
mod registry;
mod selection;
mod signal;
mod store;
mod sync;
mod wait;

pub use draft::Draft;
pub use registry::Subscription;
pub use selection::{ByFn, ByPtr, ByValue, Equality, Selected, Selection};
pub use signal::Signal;
pub use store::{MAX_REENTRANT_DEPTH, Setter, Store, Update, Version};
pub use wait::Changed;
