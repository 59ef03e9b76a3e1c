//! The public handles: [`Store`] (read, update, subscribe, select) and [`Setter`]
//! (update only).

use std::any::{TypeId, type_name};
use std::fmt;
use std::sync::Arc;

use crate::dispatch::Shared;
use crate::draft::Draft;
use crate::registry::Subscription;
use crate::selection::{ByFn, ByPtr, ByValue, Selection};
use crate::sync::Mutex;
use crate::wait::Changed;

/// How many re-entrant updates may follow each other (an update made while delivering an
/// update made while delivering …) before the store calls it a feedback loop and panics.
///
/// A bounded chain is fine; this listener re-enters twice, then stops:
///
/// ```
/// use std::sync::Arc;
/// let store = strata_store::Store::new(0u32);
/// let s = store.clone();
/// let _sub = store.subscribe(move |n: &Arc<u32>| {
///     if **n < 3 {
///         let _ = s.set(|n| Arc::new(**n + 1));
///     }
/// });
/// let _ = store.set(|_| Arc::new(1));
/// assert_eq!(*store.get(), 3);
/// assert!(2 < strata_store::MAX_REENTRANT_DEPTH);
/// ```
pub const MAX_REENTRANT_DEPTH: u32 = 100;

/// The number of commits a store has made; 0 for the initial state.
///
/// Versions increase by one per commit and are delivered in order, so "has the store
/// changed since I last looked" is one comparison.
///
/// ```
/// use std::sync::Arc;
/// let store = strata_store::Store::new(0);
/// let seen = store.version();
/// let _ = store.set(|n| Arc::new(**n + 1));
/// assert!(store.version() > seen);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u64);

/// What [`Store::set`] did.
///
/// ```
/// use std::sync::Arc;
/// use strata_store::{Store, Update, Version};
/// let store = Store::new(0);
/// assert_eq!(store.set(|n| Arc::new(**n + 1)), Update::Committed(Version(1)));
/// assert_eq!(store.set(Arc::clone), Update::Unchanged);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// The updater returned the previous state: nothing was committed or notified.
    Unchanged,
    /// A new state was committed with this version.
    Committed(Version),
}

impl Update {
    /// True when a new state was committed.
    ///
    /// ```
    /// use strata_store::{Update, Version};
    /// assert!(Update::Committed(Version(3)).is_committed());
    /// assert!(!Update::Unchanged.is_committed());
    /// ```
    pub fn is_committed(self) -> bool {
        matches!(self, Update::Committed(_))
    }

    /// The committed version, if any.
    ///
    /// ```
    /// use strata_store::{Update, Version};
    /// assert_eq!(Update::Committed(Version(3)).version(), Some(Version(3)));
    /// assert_eq!(Update::Unchanged.version(), None);
    /// ```
    pub fn version(self) -> Option<Version> {
        match self {
            Update::Committed(v) => Some(v),
            Update::Unchanged => None,
        }
    }
}

/// A reactive store holding one value of type `T`.
///
/// Cloning a `Store` clones the handle, not the state: every clone reads and updates the
/// same value. See the [crate docs](crate) for the concurrency contract.
pub struct Store<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Store<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: Send + Sync + 'static> Store<T> {
    /// A store holding `initial`, with no change hook.
    ///
    /// ```
    /// let store = strata_store::Store::new(41);
    /// assert_eq!(*store.get(), 41);
    /// ```
    pub fn new(initial: T) -> Self {
        Self::from_arc(Arc::new(initial), None)
    }

    /// A store whose change hook `hook(new, old)` runs after every commit, before the
    /// listeners (ST-4). The hook is the one place side effects belong.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// let store = strata_store::Store::with_change_hook(0, move |new: &Arc<i32>, old: &Arc<i32>| {
    ///     log.lock().unwrap().push((**old, **new));
    /// });
    /// store.set(|n| Arc::new(**n + 1));
    /// store.set(|n| Arc::new(**n + 1));
    /// assert_eq!(*seen.lock().unwrap(), [(0, 1), (1, 2)]);
    /// ```
    pub fn with_change_hook(
        initial: T,
        hook: impl Fn(&Arc<T>, &Arc<T>) + Send + Sync + 'static,
    ) -> Self {
        Self::from_arc(Arc::new(initial), Some(Box::new(hook)))
    }

    /// A store starting from an existing `Arc`, with an optional change hook.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let initial = Arc::new(String::from("hi"));
    /// let store = strata_store::Store::from_arc(Arc::clone(&initial), None);
    /// assert!(Arc::ptr_eq(&store.get(), &initial));
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn from_arc(
        initial: Arc<T>,
        hook: Option<Box<dyn Fn(&Arc<T>, &Arc<T>) + Send + Sync>>,
    ) -> Self {
        Self {
            shared: Arc::new(Shared::new(initial, hook)),
        }
    }

    /// The committed state. Cheap (one atomic load and a reference count), and never waits
    /// for a writer.
    ///
    /// ```
    /// let store = strata_store::Store::new(vec![1, 2]);
    /// assert_eq!(store.get().len(), 2);
    /// ```
    pub fn get(&self) -> Arc<T> {
        self.shared.get()
    }

    /// Runs `f` on the committed state without taking a reference count; for hot reads.
    ///
    /// ```
    /// let store = strata_store::Store::new(vec![1, 2]);
    /// assert_eq!(store.with(|v| v.len()), 2);
    /// ```
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        self.shared.with(f)
    }

    /// The version of the committed state.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let store = strata_store::Store::new(0);
    /// assert_eq!(store.version().0, 0);
    /// store.set(|n| Arc::new(**n + 1));
    /// assert_eq!(store.version().0, 1);
    /// ```
    pub fn version(&self) -> Version {
        self.shared.version()
    }

    /// Updates the state with a function of the previous state (ST-1, ST-2).
    ///
    /// `updater` runs exactly once, with the latest committed state, while other writers
    /// wait; keep it quick and free of side effects. Returning the previous `Arc` itself
    /// means "no change": nothing is committed and nobody is notified (ST-3).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let store = strata_store::Store::new(1);
    /// assert!(store.set(|n| Arc::new(**n * 10)).is_committed());
    /// assert!(!store.set(|n| Arc::clone(n)).is_committed());
    /// assert_eq!(*store.get(), 10);
    /// ```
    ///
    /// # Panics
    ///
    /// If called from inside an updater of the same store, or when callbacks keep
    /// updating the store past [`MAX_REENTRANT_DEPTH`] (a feedback loop).
    pub fn set(&self, updater: impl FnOnce(&Arc<T>) -> Arc<T>) -> Update {
        self.shared.set(updater)
    }

    /// "Clone and mutate": `f` gets a [`Draft`] that clones the state only when first
    /// written to. If `f` never writes, nothing is cloned or committed, so the no-change
    /// path stays O(1).
    ///
    /// ```
    /// #[derive(Clone)]
    /// struct S { verbose: bool }
    /// let store = strata_store::Store::new(S { verbose: false });
    /// let want = true;
    /// let update = store.update(|s| if s.verbose != want { s.verbose = want });
    /// assert!(update.is_committed());
    /// assert!(!store.update(|s| if s.verbose != want { s.verbose = want }).is_committed());
    /// ```
    pub fn update(&self, f: impl FnOnce(&mut Draft<'_, T>)) -> Update
    where
        T: Clone,
    {
        self.shared.set(|prev| Draft::apply(prev, f))
    }

    /// Registers a listener called with the new state after every commit, after the
    /// change hook. Dropping the returned [`Subscription`] unsubscribes.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// let store = strata_store::Store::new(0);
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// let _sub = store.subscribe(move |n: &Arc<i32>| log.lock().unwrap().push(**n));
    /// store.set(|n| Arc::new(**n + 1));
    /// assert_eq!(*seen.lock().unwrap(), [1]);
    /// ```
    pub fn subscribe(&self, listener: impl Fn(&Arc<T>) + Send + Sync + 'static) -> Subscription {
        self.shared.listeners.add(Box::new(listener))
    }

    /// The number of listeners currently subscribed (selections are not listeners).
    ///
    /// ```
    /// let store = strata_store::Store::new(0);
    /// let sub = store.subscribe(|_| {});
    /// assert_eq!(store.listener_count(), 1);
    /// drop(sub);
    /// assert_eq!(store.listener_count(), 0);
    /// ```
    pub fn listener_count(&self) -> usize {
        self.shared.listeners.len()
    }

    /// A write-only handle: it can update the store and subscribes to nothing (UI-3).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let store = strata_store::Store::new(0);
    /// let setter = store.setter();
    /// setter.set(|n| Arc::new(**n + 1));
    /// assert_eq!(*store.get(), 1);
    /// ```
    pub fn setter(&self) -> Setter<T> {
        Setter {
            shared: Arc::clone(&self.shared),
        }
    }

    /// A future that resolves with the store's version once it is newer than `since`
    /// (at once if it already is). It is woken by the commit itself; nothing polls.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let store = strata_store::Store::new(0);
    /// let seen = store.version();
    /// store.set(|n| Arc::new(**n + 1));
    /// let now = futures::executor::block_on(store.changed(seen));
    /// assert!(now > seen);
    /// ```
    pub fn changed(&self, since: Version) -> Changed<T> {
        Changed::new(Arc::clone(&self.shared), since)
    }

    /// A selection of one slice of the state, compared by value (`PartialEq`) (UI-2).
    ///
    /// Rust's value equality removes the classic trap of selectors that build a fresh
    /// composite value on each call: a tuple of fields compares equal when the fields do.
    ///
    /// ```
    /// use std::sync::Arc;
    /// #[derive(Clone)]
    /// struct S { verbose: bool, count: u32 }
    /// let store = strata_store::Store::new(S { verbose: false, count: 0 });
    /// let mut verbose = store.select(|s| s.verbose);
    /// store.update(|s| s.count += 1);
    /// assert!(!verbose.changed(&store)); // another slice changed
    /// store.update(|s| s.verbose = true);
    /// assert!(verbose.changed(&store));
    /// ```
    ///
    /// # Panics
    ///
    /// In debug builds, if the selector returns the whole state (`T` or `Arc<T>`): that
    /// would redraw on every change, which selections exist to avoid.
    pub fn select<V, F>(&self, selector: F) -> Selection<T, V, F, ByValue>
    where
        V: PartialEq + 'static,
        F: Fn(&T) -> V,
    {
        reject_whole_state::<T, V>();
        self.with(|state| Selection::new(state, selector, ByValue))
    }

    /// A selection of an `Arc` the state holds (a shared slice, a persistent map's root),
    /// compared by pointer: O(1) however large the slice.
    ///
    /// ```
    /// use std::sync::Arc;
    /// #[derive(Clone)]
    /// struct S { items: Arc<[u32]>, other: u32 }
    /// let store = strata_store::Store::new(S { items: Arc::from(vec![1, 2]), other: 0 });
    /// let mut items = store.select_arc(|s| Arc::clone(&s.items));
    /// store.update(|s| s.other += 1);
    /// assert!(!items.changed(&store));
    /// store.update(|s| s.items = Arc::from(vec![3]));
    /// assert!(items.changed(&store));
    /// ```
    ///
    /// # Panics
    ///
    /// In debug builds, if the selector returns the whole state, or builds a new `Arc` on
    /// every call (it would report a change after every commit).
    pub fn select_arc<U, F>(&self, selector: F) -> Selection<T, Arc<U>, F, ByPtr>
    where
        U: ?Sized + 'static,
        F: Fn(&T) -> Arc<U>,
    {
        reject_whole_state::<T, Arc<U>>();
        self.with(|state| {
            if cfg!(debug_assertions) {
                let (a, b) = (selector(state), selector(state));
                assert!(
                    Arc::ptr_eq(&a, &b),
                    "strata-store: this `select_arc` selector builds a new Arc on every call \
                     (selecting {}), so it would report a change after every commit. Select \
                     an Arc the state already holds, or use `select` to compare by value.",
                    type_name::<U>()
                );
            }
            Selection::new(state, selector, ByPtr)
        })
    }

    /// A selection compared by a custom equality, e.g. a persistent map's `ptr_eq`.
    ///
    /// ```
    /// #[derive(Clone)]
    /// struct S { names: Vec<String> }
    /// let store = strata_store::Store::new(S { names: vec!["a".into()] });
    /// let mut count = store.select_by(|s| s.names.len(), |a, b| a == b);
    /// store.update(|s| s.names.push("b".into()));
    /// assert!(count.changed(&store));
    /// ```
    pub fn select_by<V, F, E>(&self, selector: F, eq: E) -> Selection<T, V, F, ByFn<E>>
    where
        V: 'static,
        F: Fn(&T) -> V,
        E: Fn(&V, &V) -> bool,
    {
        reject_whole_state::<T, V>();
        self.with(|state| Selection::new(state, selector, ByFn(eq)))
    }

    /// Calls `on_change` with the selected slice after each commit that changed it
    /// (`PartialEq`), as part of the delivery round. For code that reacts to one slice
    /// outside a render loop.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// #[derive(Clone)]
    /// struct S { mode: &'static str, ticks: u32 }
    /// let store = strata_store::Store::new(S { mode: "default", ticks: 0 });
    /// let modes = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&modes);
    /// let _sub = store.subscribe_select(|s| s.mode, move |m| log.lock().unwrap().push(*m));
    /// store.update(|s| s.ticks += 1);
    /// store.update(|s| s.mode = "plan");
    /// assert_eq!(*modes.lock().unwrap(), ["plan"]);
    /// ```
    pub fn subscribe_select<V, F>(
        &self,
        selector: F,
        on_change: impl Fn(&V) + Send + Sync + 'static,
    ) -> Subscription
    where
        V: PartialEq + Send + 'static,
        F: Fn(&T) -> V + Send + Sync + 'static,
    {
        reject_whole_state::<T, V>();
        let last = Mutex::new(self.with(&selector));
        self.subscribe(move |state| {
            let next = selector(state);
            let mut last = crate::sync::lock(&last);
            if *last != next {
                *last = next;
                // Only the dispatcher calls listeners, one at a time, and an update made
                // by `on_change` is queued rather than delivered inline, so this listener
                // is never re-entered while its private lock is held.
                on_change(&last);
            }
        })
    }
}

/// UI-2's debug check: a selector must not return the whole root state.
fn reject_whole_state<T: 'static, V: 'static>() {
    if cfg!(debug_assertions) {
        let v = TypeId::of::<V>();
        assert!(
            v != TypeId::of::<T>() && v != TypeId::of::<Arc<T>>(),
            "strata-store: this selector returns the whole state ({}), so everything that \
             uses it would redraw after every change. Select only the fields it renders.",
            type_name::<T>()
        );
    }
}

impl<T> fmt::Debug for Store<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("state", &type_name::<T>())
            .finish_non_exhaustive()
    }
}

/// A write-only handle to a [`Store`]: it updates and subscribes to nothing (UI-3).
pub struct Setter<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Setter<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: Send + Sync + 'static> Setter<T> {
    /// Same as [`Store::set`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let store = strata_store::Store::new(1);
    /// let setter = store.setter();
    /// assert!(!setter.set(|n| Arc::clone(n)).is_committed());
    /// ```
    pub fn set(&self, updater: impl FnOnce(&Arc<T>) -> Arc<T>) -> Update {
        self.shared.set(updater)
    }

    /// Same as [`Store::update`].
    ///
    /// ```
    /// let store = strata_store::Store::new(vec![1]);
    /// store.setter().update(|v| v.push(2));
    /// assert_eq!(*store.get(), [1, 2]);
    /// ```
    pub fn update(&self, f: impl FnOnce(&mut Draft<'_, T>)) -> Update
    where
        T: Clone,
    {
        self.shared.set(|prev| Draft::apply(prev, f))
    }
}

impl<T> fmt::Debug for Setter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Setter")
            .field("state", &type_name::<T>())
            .finish_non_exhaustive()
    }
}
