//! [`LogMap`]: a persistent ordered map whose updates cost the same at 10 entries as at
//! 10,000.
//!
//! # Why not just a persistent B-tree
//!
//! A persistent tree (`imbl::OrdMap`) changes one entry by copying the path to it: a few
//! nodes of up to 16 reference-counted pointers each. Every copied pointer is an atomic
//! increment now and an atomic decrement when the old version is dropped, so an update
//! at 10,000 entries costs about three times one at 10 — measurable when background
//! agents report progress many times a second (the store benchmark flips task statuses).
//!
//! # How this map avoids it
//!
//! A `LogMap` is a shared `base` tree plus a short persistent *change log* (newest
//! first) of entries changed since the base was built. An update pushes one log node: one
//! allocation and one reference-count increment, whatever the size of the map; updating
//! the entry already at the head (the common case — one running agent reporting progress
//! again) replaces the head instead of growing the log. Reads look in the log first (at
//! most [`LOG_LIMIT`] nodes, usually hot in cache; the newest change of a key wins), then
//! in the base. When the log holds [`LOG_LIMIT`] changes it is *compacted* into a new
//! base: the first insertion copies a path, the following ones mostly find their nodes
//! already private and change them in place, so compaction costs about one path copy per
//! [`LOG_LIMIT`] updates.
//!
//! Until the next compaction, a superseded value may still be referenced by an older log
//! node or by the base: at most [`LOG_LIMIT`] small values. Changes meant to free memory
//! (dropping an agent's conversation) use [`LogMap::insert_eager`], which unlinks every
//! older change of the key and writes the base at once; removals do the same.
//!
//! Versions share everything: an old version keeps its own base and log head alive, and
//! a log is never longer than [`LOG_LIMIT`], so dropping one never recurses deeply.

use std::fmt;
use std::sync::Arc;

/// How many changes the log holds before it is folded into the base.
pub const LOG_LIMIT: usize = 16;

/// One change: `key` now has `value` (removals go straight to the base).
struct LogNode<K, V> {
    key: K,
    value: V,
    next: Option<Arc<LogNode<K, V>>>,
}

/// A persistent ordered map with constant-cost updates (see the module docs).
pub struct LogMap<K, V> {
    base: imbl::OrdMap<K, V>,
    log: Option<Arc<LogNode<K, V>>>,
    log_len: usize,
    len: usize,
}

impl<K, V> Clone for LogMap<K, V>
where
    K: Ord + Clone,
    V: Clone,
{
    fn clone(&self) -> Self {
        Self {
            base: self.base.clone(),
            log: self.log.clone(),
            log_len: self.log_len,
            len: self.len,
        }
    }
}

impl<K, V> Default for LogMap<K, V>
where
    K: Ord + Clone,
    V: Clone,
{
    fn default() -> Self {
        Self {
            base: imbl::OrdMap::new(),
            log: None,
            log_len: 0,
            len: 0,
        }
    }
}

impl<K, V> LogMap<K, V>
where
    K: Ord + Clone,
    V: Clone,
{
    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        let mut node = self.log.as_deref();
        while let Some(n) = node {
            if n.key == *key {
                return Some(&n.value);
            }
            node = n.next.as_deref();
        }
        self.base.get(key)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when both are the same version (O(1)).
    pub fn ptr_eq(&self, other: &Self) -> bool {
        let same_log = match (&self.log, &other.log) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_log && self.base.ptr_eq(&other.base)
    }

    /// A new version with `key` set to `value`, recorded in the log (constant cost).
    pub fn insert(&self, key: K, value: V) -> Self {
        let len = if self.get(&key).is_none() {
            self.len + 1
        } else {
            self.len
        };
        self.logged(key, value, len)
    }

    /// [`insert`](Self::insert) with the resulting length known.
    fn logged(&self, key: K, value: V, len: usize) -> Self {
        let (rest, log_len) = match &self.log {
            // The same key changed again: replace the head rather than grow the log.
            Some(head) if head.key == key => (head.next.clone(), self.log_len - 1),
            _ => (self.log.clone(), self.log_len),
        };
        let log = Some(Arc::new(LogNode {
            key,
            value,
            next: rest,
        }));
        let next = Self {
            base: self.base.clone(),
            log,
            log_len: log_len + 1,
            len,
        };
        if next.log_len >= LOG_LIMIT {
            next.compacted()
        } else {
            next
        }
    }

    /// A new version with `key` — already in the map — set to `value`, recorded in the
    /// log. Saves the lookup [`insert`](Self::insert) makes to keep the length right.
    pub fn replace(&self, key: K, value: V) -> Self {
        debug_assert!(self.get(&key).is_some(), "replace of a key not in the map");
        self.logged(key, value, self.len)
    }

    /// A new version with `key` set to `value` written straight into the base, with
    /// every older change of `key` unlinked from the log, so the values it replaces are
    /// released as soon as older versions are gone. For changes that free memory
    /// (dropping a conversation); costs a path copy.
    pub fn insert_eager(&self, key: K, value: V) -> Self {
        let len = if self.get(&key).is_none() {
            self.len + 1
        } else {
            self.len
        };
        let (log, log_len) = self.log_without(&key);
        let mut base = self.base.clone();
        base.insert(key, value);
        Self {
            base,
            log,
            log_len,
            len,
        }
    }

    /// A new version without `key` (applied to the base at once, like
    /// [`insert_eager`](Self::insert_eager)); `None` when it was not there.
    pub fn remove(&self, key: &K) -> Option<Self> {
        self.get(key)?;
        let (log, log_len) = self.log_without(key);
        let mut base = self.base.clone();
        base.remove(key);
        Some(Self {
            base,
            log,
            log_len,
            len: self.len - 1,
        })
    }

    /// The log without any change of `key`, and its length: the nodes above the deepest
    /// change of `key` are copied (at most [`LOG_LIMIT`]), the rest is shared.
    fn log_without(&self, key: &K) -> (Option<Arc<LogNode<K, V>>>, usize) {
        let mut nodes: Vec<&LogNode<K, V>> = Vec::with_capacity(self.log_len);
        let mut node = self.log.as_deref();
        while let Some(n) = node {
            nodes.push(n);
            node = n.next.as_deref();
        }
        let Some(deepest) = nodes.iter().rposition(|n| n.key == *key) else {
            return (self.log.clone(), self.log_len);
        };
        let mut rest = nodes[deepest].next.clone();
        let mut len = self.log_len - deepest - 1;
        for n in nodes[..deepest].iter().rev().filter(|n| n.key != *key) {
            let (key, value) = (n.key.clone(), n.value.clone());
            rest = Some(Arc::new(LogNode {
                key,
                value,
                next: rest,
            }));
            len += 1;
        }
        (rest, len)
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        // The newest change of each logged key, in key order (at most LOG_LIMIT).
        let mut changes: Vec<(&K, &V)> = Vec::with_capacity(self.log_len);
        let mut node = self.log.as_deref();
        while let Some(n) = node {
            if !changes.iter().any(|(k, _)| *k == &n.key) {
                changes.push((&n.key, &n.value));
            }
            node = n.next.as_deref();
        }
        changes.sort_by(|a, b| a.0.cmp(b.0));
        Iter {
            base: self.base.iter().peekable(),
            changes: changes.into_iter().peekable(),
        }
    }

    /// Folds the log into a new base.
    fn compacted(&self) -> Self {
        let mut base = self.base.clone();
        let mut seen: Vec<&K> = Vec::with_capacity(self.log_len);
        let mut node = self.log.as_deref();
        while let Some(n) = node {
            // Newest first: the first change of a key wins.
            if !seen.contains(&&n.key) {
                seen.push(&n.key);
                base.insert(n.key.clone(), n.value.clone());
            }
            node = n.next.as_deref();
        }
        Self {
            len: base.len(),
            base,
            log: None,
            log_len: 0,
        }
    }
}

impl<K, V> FromIterator<(K, V)> for LogMap<K, V>
where
    K: Ord + Clone,
    V: Clone,
{
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let base: imbl::OrdMap<K, V> = iter.into_iter().collect();
        Self {
            len: base.len(),
            base,
            log: None,
            log_len: 0,
        }
    }
}

/// The entries of a [`LogMap`] in key order: the base merged with the log's changes.
pub struct Iter<'a, K, V> {
    base: std::iter::Peekable<imbl::ordmap::Iter<'a, K, V, imbl::shared_ptr::DefaultSharedPtr>>,
    changes: std::iter::Peekable<std::vec::IntoIter<(&'a K, &'a V)>>,
}

impl<'a, K: Ord, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let order = match (self.base.peek(), self.changes.peek()) {
                (None, None) => return None,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((bk, _)), Some((ck, _))) => (*bk).cmp(*ck),
            };
            if order == std::cmp::Ordering::Equal {
                // The change replaces the base entry.
                self.base.next();
            }
            let take_change = order != std::cmp::Ordering::Less;
            let next = if take_change {
                self.changes.next()
            } else {
                self.base.next()
            };
            if next.is_some() {
                return next;
            }
        }
    }
}

impl<K, V> PartialEq for LogMap<K, V>
where
    K: Ord + Clone,
    V: Clone + PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || (self.len == other.len && self.iter().eq(other.iter()))
    }
}

impl<K, V> fmt::Debug for LogMap<K, V>
where
    K: Ord + Clone + fmt::Debug,
    V: Clone + fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u32),
        InsertEager(u8, u32),
        Remove(u8),
        Snapshot,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..40, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            1 => (0u8..40, any::<u32>()).prop_map(|(k, v)| Op::InsertEager(k, v)),
            2 => (0u8..40).prop_map(Op::Remove),
            1 => Just(Op::Snapshot),
        ]
    }

    fn check(map: &LogMap<u8, u32>, model: &BTreeMap<u8, u32>) -> Result<(), TestCaseError> {
        prop_assert_eq!(map.len(), model.len());
        let entries: Vec<(u8, u32)> = map.iter().map(|(k, v)| (*k, *v)).collect();
        let expected: Vec<(u8, u32)> = model.iter().map(|(k, v)| (*k, *v)).collect();
        prop_assert_eq!(entries, expected);
        for k in 0..40 {
            prop_assert_eq!(map.get(&k), model.get(&k));
        }
        Ok(())
    }

    proptest! {
        /// Any sequence of inserts and removals behaves like a `BTreeMap`, and every
        /// version kept along the way still reads as it did (persistence).
        #[test]
        fn behaves_like_an_ordered_map_and_old_versions_never_change(ops in prop::collection::vec(op(), 0..200)) {
            let mut map = LogMap::default();
            let mut model = BTreeMap::new();
            let mut snapshots = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        // Exercise `replace` whenever the key is already there.
                        map = if model.contains_key(&k) { map.replace(k, v) } else { map.insert(k, v) };
                        model.insert(k, v);
                    }
                    Op::InsertEager(k, v) => {
                        map = map.insert_eager(k, v);
                        model.insert(k, v);
                    }
                    Op::Remove(k) => {
                        match map.remove(&k) {
                            Some(next) => map = next,
                            None => prop_assert!(!model.contains_key(&k)),
                        }
                        model.remove(&k);
                    }
                    Op::Snapshot => snapshots.push((map.clone(), model.clone())),
                }
                check(&map, &model)?;
            }
            for (map, model) in &snapshots {
                check(map, model)?;
            }
        }
    }

    #[test]
    fn updates_never_touch_the_base_until_the_log_is_full() {
        let map: LogMap<u32, u32> = (0..1000).map(|k| (k, k)).collect();
        let mut next = map.clone();
        // Keys 0..4 in turn: never the head key, so every update is logged.
        for k in 0..(LOG_LIMIT - 1) as u32 {
            next = next.insert(k % 4, k + 1);
            assert!(
                next.base.ptr_eq(&map.base),
                "update of key {k} copied the base"
            );
        }
        assert_eq!(next.log_len, LOG_LIMIT - 1);
        next = next.insert(500, 0);
        assert!(!next.base.ptr_eq(&map.base), "the log was folded in");
        assert_eq!(next.log_len, 0);
        assert_eq!(
            next.get(&2),
            Some(&(LOG_LIMIT as u32 - 1)),
            "newest change of key 2"
        );
        assert_eq!(map.get(&2), Some(&2), "the old version is unchanged");
    }

    #[test]
    fn repeated_updates_of_one_key_keep_one_log_node_and_release_old_values() {
        let first = Arc::new(0u32);
        let map: LogMap<u32, Arc<u32>> = LogMap::default()
            .insert(2, Arc::new(2))
            .insert(1, Arc::clone(&first));
        let mut next = map.insert(1, Arc::new(1));
        drop(map);
        assert_eq!(
            Arc::strong_count(&first),
            1,
            "the superseded head is not kept"
        );
        for i in 0..100 {
            next = next.insert(1, Arc::new(i));
        }
        assert_eq!(
            next.log_len, 2,
            "updates of the head key do not grow the log"
        );
        assert_eq!(*next.get(&1).unwrap().as_ref(), 99);
    }

    #[test]
    fn an_eager_insert_releases_the_base_value_at_once() {
        let big = Arc::new(7u32);
        let map: LogMap<u32, Arc<u32>> = [(1, Arc::clone(&big)), (2, Arc::new(2))]
            .into_iter()
            .collect();
        let next = map.insert_eager(1, Arc::new(8));
        drop(map);
        assert_eq!(Arc::strong_count(&big), 1);
        assert_eq!(**next.get(&1).unwrap(), 8);
        assert_eq!(next.len(), 2);
    }

    #[test]
    fn equal_contents_compare_equal_whatever_the_shape() {
        let a: LogMap<u32, u32> = (0..20).map(|k| (k, k)).collect();
        let b = (0..20).fold(LogMap::default(), |m, k| m.insert(k, k));
        assert_eq!(a, b);
        assert_ne!(a, b.insert(3, 4));
    }
}
