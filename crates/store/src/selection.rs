//! Selections: a slice of the state plus the last value seen, reporting real changes only
//! (UI-2).
//!
//! A selection is pull-based: whoever renders asks it, once per frame or per commit,
//! whether its slice changed. That keeps the cost of one selection to one call of the
//! selector and one comparison, with no allocation and no lock, so a UI can hold hundreds
//! of them. For push-style reactions to a slice, see
//! [`Store::subscribe_select`](crate::Store::subscribe_select).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::store::Store;

/// How a selection decides that a newly selected value differs from the last one.
///
/// ```
/// use strata_store::{ByFn, ByPtr, ByValue, Equality};
/// use std::sync::Arc;
/// assert!(ByValue.same(&1, &1));
/// let a = Arc::new(5);
/// assert!(ByPtr.same(&a, &Arc::clone(&a)));
/// assert!(!ByPtr.same(&a, &Arc::new(5))); // equal value, other allocation
/// let same_len = ByFn(|a: &String, b: &String| a.len() == b.len());
/// assert!(same_len.same(&"ab".to_string(), &"cd".to_string()));
/// ```
pub trait Equality<V> {
    /// True when `a` and `b` count as the same slice.
    fn same(&self, a: &V, b: &V) -> bool;
}

/// Compare by value (`PartialEq`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ByValue;

impl<V: PartialEq> Equality<V> for ByValue {
    fn same(&self, a: &V, b: &V) -> bool {
        a == b
    }
}

/// Compare `Arc`s by pointer: O(1) for slices of any size.
#[derive(Clone, Copy, Debug, Default)]
pub struct ByPtr;

impl<U: ?Sized> Equality<Arc<U>> for ByPtr {
    fn same(&self, a: &Arc<U>, b: &Arc<U>) -> bool {
        Arc::ptr_eq(a, b)
    }
}

/// Compare with a function, e.g. a persistent collection's `ptr_eq`.
#[derive(Clone, Copy, Debug)]
pub struct ByFn<E>(pub E);

impl<V, E: Fn(&V, &V) -> bool> Equality<V> for ByFn<E> {
    fn same(&self, a: &V, b: &V) -> bool {
        (self.0)(a, b)
    }
}

/// A slice of a state of type `T`, selected by `F`, compared with `E`.
///
/// Made by [`Store::select`], [`Store::select_arc`] and [`Store::select_by`].
pub struct Selection<T, V, F, E> {
    selector: F,
    equality: E,
    last: V,
    _state: PhantomData<fn(&T)>,
}

impl<T, V, F, E> Selection<T, V, F, E>
where
    F: Fn(&T) -> V,
    E: Equality<V>,
{
    pub(crate) fn new(state: &T, selector: F, equality: E) -> Self {
        let last = selector(state);
        Self {
            selector,
            equality,
            last,
            _state: PhantomData,
        }
    }

    /// The last selected value.
    ///
    /// ```
    /// let store = strata_store::Store::new((1, 2));
    /// let first = store.select(|s| s.0);
    /// assert_eq!(*first.value(), 1);
    /// ```
    pub fn value(&self) -> &V {
        &self.last
    }

    /// Re-selects from `state`; true (and the value updated) when the slice differs.
    ///
    /// ```
    /// let mut sel = strata_store::Store::new((1, 2)).select(|s| s.1);
    /// assert!(!sel.update(&(5, 2)));
    /// assert!(sel.update(&(5, 3)));
    /// assert_eq!(*sel.value(), 3);
    /// ```
    pub fn update(&mut self, state: &T) -> bool {
        let next = (self.selector)(state);
        if self.equality.same(&self.last, &next) {
            false
        } else {
            self.last = next;
            true
        }
    }

    /// Re-selects from the store's committed state; true when the slice differs.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let store = strata_store::Store::new((1, 2));
    /// let mut sel = store.select(|s| s.0);
    /// store.set(|s| Arc::new((s.0 + 1, s.1)));
    /// assert!(sel.changed(&store));
    /// assert!(!sel.changed(&store));
    /// ```
    pub fn changed(&mut self, store: &Store<T>) -> bool
    where
        T: Send + Sync + 'static,
    {
        store.with(|state| self.update(state))
    }
}

impl<T, V: fmt::Debug, F, E> fmt::Debug for Selection<T, V, F, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selection")
            .field("value", &self.last)
            .finish_non_exhaustive()
    }
}

/// Any selection over a state `T`, type-erased, so a view can keep a list of the slices
/// it renders: `Vec<Box<dyn Selected<AppState>>>`.
///
/// ```
/// use strata_store::{Selected, Store};
/// #[derive(Clone)]
/// struct S { a: u8, b: &'static str }
/// let store = Store::new(S { a: 1, b: "x" });
/// let mut view: Vec<Box<dyn Selected<S>>> =
///     vec![Box::new(store.select(|s| s.a)), Box::new(store.select(|s| s.b))];
/// let _ = store.update(|s| s.b = "y");
/// let changed: Vec<bool> = store.with(|s| view.iter_mut().map(|sel| sel.refresh(s)).collect());
/// assert_eq!(changed, [false, true]);
/// ```
pub trait Selected<T> {
    /// Re-selects from `state`; true when the slice changed.
    fn refresh(&mut self, state: &T) -> bool;
}

impl<T, V, F, E> Selected<T> for Selection<T, V, F, E>
where
    F: Fn(&T) -> V,
    E: Equality<V>,
{
    fn refresh(&mut self, state: &T) -> bool {
        self.update(state)
    }
}
