//! Merging settings sources, remembering where every value came from.
//!
//! Rules (applied source by source, lowest precedence first):
//! - two objects merge key by key, recursively;
//! - two arrays concatenate, dropping elements equal to one already present (the first
//!   occurrence keeps its place), so `permissions.allow` from every source applies;
//! - anything else: the later source's value replaces the earlier one.
//!
//! Beside the merged JSON, a [`Provenance`] tree records which source set each value (for
//! arrays, each element), which is what `strata config list` shows.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::document::JsonObject;

/// Where one merged value came from. Source numbers index the list of files that
/// contributed (see [`crate::MergedSettings::files`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Provenance {
    /// A scalar, or a value that replaced whatever was there, set by this source.
    Value(usize),
    /// An array: the source of each element, in order.
    Elements(Vec<usize>),
    /// An object: the provenance of each member, and the last source that touched it
    /// (what an empty object is attributed to).
    Object(usize, IndexMap<String, Provenance>),
}

/// The running merge.
#[derive(Clone, Debug, Default)]
pub(crate) struct Merged {
    pub(crate) value: JsonObject,
    pub(crate) provenance: IndexMap<String, Provenance>,
}

impl Merged {
    /// Merges one source's object on top of what is there.
    pub(crate) fn apply(&mut self, source: usize, object: &JsonObject) {
        merge_object(&mut self.value, &mut self.provenance, object, source);
    }
}

fn merge_object(
    dst: &mut JsonObject,
    prov: &mut IndexMap<String, Provenance>,
    src: &JsonObject,
    source: usize,
) {
    for (key, incoming) in src {
        match (dst.get_mut(key), incoming) {
            (Some(Value::Object(d)), Value::Object(s)) => {
                let entry = prov
                    .entry(key.clone())
                    .or_insert_with(|| Provenance::Object(source, IndexMap::new()));
                if !matches!(entry, Provenance::Object(..)) {
                    *entry = Provenance::Object(source, IndexMap::new());
                }
                if let Provenance::Object(last, children) = entry {
                    *last = source;
                    merge_object(d, children, s, source);
                }
            }
            (Some(Value::Array(d)), Value::Array(s)) => {
                let entry = prov
                    .entry(key.clone())
                    .or_insert_with(|| Provenance::Elements(Vec::new()));
                if !matches!(entry, Provenance::Elements(_)) {
                    *entry = Provenance::Elements(vec![source; d.len()]);
                }
                if let Provenance::Elements(origins) = entry {
                    append_unique(d, origins, s, source);
                }
            }
            _ => {
                let (value, p) = fresh(incoming, source);
                dst.insert(key.clone(), value);
                prov.insert(key.clone(), p);
            }
        }
    }
}

/// A value entering the merge where nothing mergeable was: objects and arrays are rebuilt
/// through the merge rules so that duplicates inside one source are dropped too.
fn fresh(incoming: &Value, source: usize) -> (Value, Provenance) {
    match incoming {
        Value::Object(s) => {
            let mut d = Map::new();
            let mut children = IndexMap::new();
            merge_object(&mut d, &mut children, s, source);
            (Value::Object(d), Provenance::Object(source, children))
        }
        Value::Array(s) => {
            let mut d = Vec::new();
            let mut origins = Vec::new();
            append_unique(&mut d, &mut origins, s, source);
            (Value::Array(d), Provenance::Elements(origins))
        }
        other => (other.clone(), Provenance::Value(source)),
    }
}

fn append_unique(dst: &mut Vec<Value>, origins: &mut Vec<usize>, src: &[Value], source: usize) {
    for item in src {
        if !dst.contains(item) {
            dst.push(item.clone());
            origins.push(source);
        }
    }
}

/// One leaf of the merged settings with its origins: `(path, value, sources)` where
/// `sources` has one entry per array element, or exactly one for any other value.
pub(crate) fn leaves(merged: &Merged) -> Vec<(Vec<String>, Value, Vec<usize>)> {
    let mut out = Vec::new();
    walk(&merged.value, &merged.provenance, &mut Vec::new(), &mut out);
    out
}

fn walk(
    value: &JsonObject,
    prov: &IndexMap<String, Provenance>,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Value, Vec<usize>)>,
) {
    for (key, v) in value {
        path.push(key.clone());
        match (v, prov.get(key)) {
            (Value::Object(o), Some(Provenance::Object(last, children))) => {
                if o.is_empty() {
                    out.push((path.clone(), v.clone(), vec![*last]));
                } else {
                    walk(o, children, path, out);
                }
            }
            (Value::Array(_), Some(Provenance::Elements(origins))) => {
                out.push((path.clone(), v.clone(), origins.clone()));
            }
            (_, Some(Provenance::Value(s))) => out.push((path.clone(), v.clone(), vec![*s])),
            // The provenance tree mirrors the value by construction; a mismatch would be a
            // bug in this module, and attributing nothing is the honest answer.
            _ => out.push((path.clone(), v.clone(), Vec::new())),
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn objects_deep_merge_scalars_later_wins_arrays_concatenate_unique() {
        let mut m = Merged::default();
        m.apply(0, &obj(json!({"model": "a", "permissions": {"allow": ["x", "y"], "defaultMode": "plan"}, "env": {"A": "1"}})));
        m.apply(
            1,
            &obj(
                json!({"model": "b", "permissions": {"allow": ["y", "z", "z"]}, "env": {"B": "2"}}),
            ),
        );
        assert_eq!(
            Value::Object(m.value.clone()),
            json!({"model": "b", "permissions": {"allow": ["x", "y", "z"], "defaultMode": "plan"}, "env": {"A": "1", "B": "2"}})
        );
        let leaves = leaves(&m);
        let find = |k: &str| {
            leaves
                .iter()
                .find(|(p, _, _)| p.join(".") == k)
                .unwrap()
                .2
                .clone()
        };
        assert_eq!(find("model"), [1]);
        assert_eq!(find("permissions.allow"), [0, 0, 1]);
        assert_eq!(find("permissions.defaultMode"), [0]);
        assert_eq!(find("env.A"), [0]);
        assert_eq!(find("env.B"), [1]);
    }

    #[test]
    fn a_value_of_another_kind_replaces_wholesale() {
        let mut m = Merged::default();
        m.apply(0, &obj(json!({"x": {"a": 1}, "y": [1], "z": 1})));
        m.apply(1, &obj(json!({"x": 5, "y": {"b": [2, 2]}, "z": [3]})));
        assert_eq!(
            Value::Object(m.value.clone()),
            json!({"x": 5, "y": {"b": [2]}, "z": [3]})
        );
        m.apply(2, &obj(json!({"x": {"c": 1}})));
        assert_eq!(m.value["x"], json!({"c": 1}));
        let l = leaves(&m);
        assert_eq!(l[0], (vec!["x".into(), "c".into()], json!(1), vec![2]));
    }

    #[test]
    fn empty_objects_are_leaves_attributed_to_the_last_source() {
        let mut m = Merged::default();
        m.apply(0, &obj(json!({"hooks": {}})));
        m.apply(3, &obj(json!({"hooks": {}})));
        assert_eq!(leaves(&m), [(vec!["hooks".to_owned()], json!({}), vec![3])]);
    }
}
