//! Fuzzy pickers: the `/resume` session picker and `@` path completion.
//!
//! Matching is `nucleo-matcher` (helix's matcher; the synchronous core of `nucleo`,
//! which adds a thread pool a list of a few thousand items does not need). Each item's
//! key is converted to the matcher's form once, when the list is built, so a keystroke
//! costs one scoring pass over the keys.

mod path;
mod session;

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32String};

pub use path::{MAX_PATHS, PathCompleter, at_token};
pub use session::SessionPicker;

/// A list filtered and ordered by a fuzzy query.
pub struct FuzzyList<T> {
    items: Vec<T>,
    keys: Vec<Utf32String>,
    matcher: Matcher,
    query: String,
    matches: Vec<(u32, usize)>,
    selected: usize,
}

impl<T> FuzzyList<T> {
    /// A list of `items` matched on `key(item)`; with no query every item matches, in
    /// the given order.
    pub fn new(items: Vec<T>, key: impl Fn(&T) -> String) -> Self {
        Self::with_config(items, key, Config::DEFAULT)
    }

    /// Like [`FuzzyList::new`] with the matcher tuned for file paths.
    pub fn for_paths(items: Vec<T>, key: impl Fn(&T) -> String) -> Self {
        Self::with_config(items, key, Config::DEFAULT.match_paths())
    }

    fn with_config(items: Vec<T>, key: impl Fn(&T) -> String, config: Config) -> Self {
        let keys = items.iter().map(|i| Utf32String::from(key(i))).collect();
        let matches = (0..items.len()).map(|i| (0, i)).collect();
        Self {
            items,
            keys,
            matcher: Matcher::new(config),
            query: String::new(),
            matches,
            selected: 0,
        }
    }

    /// Filters by `query` (smart case; space-separated words must all match). Best
    /// score first; equal scores keep the items' order.
    pub fn set_query(&mut self, query: &str) {
        self.query = query.to_owned();
        self.selected = 0;
        if query.trim().is_empty() {
            self.matches = (0..self.items.len()).map(|i| (0, i)).collect();
            return;
        }
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let matcher = &mut self.matcher;
        self.matches = self
            .keys
            .iter()
            .enumerate()
            .filter_map(|(i, k)| Some((pattern.score(k.slice(..), matcher)?, i)))
            .collect();
        self.matches
            .sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    }

    /// The current query.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// `(score, index into the items)` of every match, best first.
    pub fn matches(&self) -> &[(u32, usize)] {
        &self.matches
    }

    /// The items.
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// The item of the `n`th match.
    pub fn matched(&self, n: usize) -> Option<&T> {
        self.matches.get(n).and_then(|&(_, i)| self.items.get(i))
    }

    /// The selected match's position in [`FuzzyList::matches`].
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// The selected item.
    pub fn selected_item(&self) -> Option<&T> {
        self.matched(self.selected)
    }

    /// Moves the selection by `delta`, staying within the matches.
    pub fn move_selection(&mut self, delta: isize) {
        let last = self.matches.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(delta).min(last);
    }
}

#[cfg(test)]
mod tests;
