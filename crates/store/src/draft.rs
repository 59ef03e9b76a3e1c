//! [`Draft`]: copy-on-write access to the previous state for [`Store::update`].
//!
//! [`Store::update`]: crate::Store::update

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// The previous state, cloned the first time it is written to.
///
/// Reading through a `Draft` reads the committed state itself; the first `&mut` access
/// clones it. An update closure that only reads (because nothing needs to change) costs
/// no clone and commits nothing, which keeps the store's no-change path O(1) (ST-3).
pub struct Draft<'a, T> {
    base: &'a Arc<T>,
    /// The copy, built directly in its own `Arc` so committing it moves no bytes.
    edited: Option<Arc<T>>,
}

impl<'a, T: Clone> Draft<'a, T> {
    /// Runs `f` on a draft of `base` and returns the state to commit: `base` itself when
    /// `f` never wrote.
    pub(crate) fn apply(base: &'a Arc<T>, f: impl FnOnce(&mut Draft<'a, T>)) -> Arc<T> {
        let mut draft = Draft { base, edited: None };
        f(&mut draft);
        draft.edited.unwrap_or_else(|| Arc::clone(base))
    }

    /// True once the draft has been written to (and so will be committed).
    ///
    /// ```
    /// let store = strata_store::Store::new(0u8);
    /// store.update(|d| {
    ///     assert!(!d.is_edited());
    ///     **d += 1;
    ///     assert!(d.is_edited());
    /// });
    /// ```
    pub fn is_edited(&self) -> bool {
        self.edited.is_some()
    }
}

impl<T> Deref for Draft<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.edited {
            Some(edited) => edited,
            None => self.base,
        }
    }
}

impl<T: Clone> DerefMut for Draft<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        let base = self.base;
        // `make_mut` on a second handle to the shared base clones it straight into a new
        // allocation (no temporary on the stack); the copy is never shared before `apply`
        // returns it, so later calls find it unique and clone nothing.
        Arc::make_mut(self.edited.get_or_insert_with(|| Arc::clone(base)))
    }
}

impl<T: fmt::Debug> fmt::Debug for Draft<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Draft")
            .field("state", &**self)
            .field("edited", &self.edited.is_some())
            .finish()
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn st3_a_read_only_draft_returns_the_same_arc() {
        let base = Arc::new(vec![1, 2, 3]);
        let out = Draft::apply(&base, |d| assert_eq!(d.len(), 3));
        assert!(Arc::ptr_eq(&out, &base));
    }

    #[test]
    fn a_written_draft_returns_a_new_arc_and_leaves_the_base_alone() {
        let base = Arc::new(vec![1]);
        let out = Draft::apply(&base, |d| d.push(2));
        assert_eq!(*base, [1]);
        assert_eq!(*out, [1, 2]);
    }
}
