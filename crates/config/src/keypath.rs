//! Dotted key paths (`permissions.defaultMode`, `env.FOO`) into JSON objects: reading,
//! setting and removing one value without disturbing the keys around it.
//!
//! A path addresses object members only; arrays are values (use [`add_to_array`] and
//! [`remove_from_array`] for their elements). Keys containing a `.` cannot be addressed
//! with the dotted form — [`parse`] splits on every dot — but can with a slice.

use serde_json::{Map, Value};

use crate::document::{JsonObject, kind};

/// A key path that cannot be used on this document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyPathError {
    /// The dotted key is empty or has an empty segment (`a..b`, `.a`).
    #[error("invalid key {0:?}: use dot-separated names such as permissions.defaultMode")]
    Invalid(String),
    /// A prefix of the path holds a value that is not an object.
    #[error("{at} is {found}, not an object, so it has no key {next:?}")]
    NotAnObject {
        /// The dotted prefix that is not an object.
        at: String,
        /// Its kind ("a string", "an array", ...).
        found: &'static str,
        /// The key that was looked for inside it.
        next: String,
    },
    /// The value at the path exists but is not an array.
    #[error("{at} is {found}, not an array")]
    NotAnArray {
        /// The dotted path.
        at: String,
        /// Its kind.
        found: &'static str,
    },
}

/// Splits a dotted key into its segments.
///
/// ```
/// use strata_config::keypath::parse;
/// assert_eq!(parse("env.FOO").unwrap(), ["env", "FOO"]);
/// assert!(parse("env..FOO").is_err());
/// ```
pub fn parse(key: &str) -> Result<Vec<String>, KeyPathError> {
    let parts: Vec<String> = key.split('.').map(str::to_owned).collect();
    if parts.iter().any(String::is_empty) {
        return Err(KeyPathError::Invalid(key.to_owned()));
    }
    Ok(parts)
}

/// The value at `path`, if every step exists.
///
/// ```
/// use serde_json::json;
/// let doc = json!({"env": {"FOO": "1"}});
/// let doc = doc.as_object().unwrap();
/// assert_eq!(strata_config::keypath::get(doc, &["env", "FOO"]), Some(&json!("1")));
/// ```
pub fn get<'a, S: AsRef<str>>(object: &'a JsonObject, path: &[S]) -> Option<&'a Value> {
    let (last, parents) = path.split_last()?;
    let mut cur = object;
    for p in parents {
        cur = cur.get(p.as_ref())?.as_object()?;
    }
    cur.get(last.as_ref())
}

/// Sets the value at `path`, creating missing objects on the way. An existing key keeps
/// its position; a new one goes last in its object.
///
/// ```
/// use serde_json::json;
/// let mut doc = json!({"z": 1}).as_object().unwrap().clone();
/// strata_config::keypath::set(&mut doc, &["env", "FOO"], json!("bar")).unwrap();
/// assert_eq!(serde_json::to_string(&doc).unwrap(), r#"{"z":1,"env":{"FOO":"bar"}}"#);
/// ```
pub fn set<S: AsRef<str>>(
    object: &mut JsonObject,
    path: &[S],
    value: Value,
) -> Result<(), KeyPathError> {
    let Some(last) = path.last() else {
        return Err(KeyPathError::Invalid(String::new()));
    };
    let parent = parent_mut(object, path, true)?.ok_or_else(|| {
        // `create = true` always yields the parent; this arm is unreachable in practice.
        KeyPathError::Invalid(dotted(path))
    })?;
    parent.insert(last.as_ref().to_owned(), value);
    Ok(())
}

/// Removes the value at `path` and returns it. Parent objects stay, even when empty.
pub fn remove<S: AsRef<str>>(
    object: &mut JsonObject,
    path: &[S],
) -> Result<Option<Value>, KeyPathError> {
    let Some(last) = path.last() else {
        return Ok(None);
    };
    Ok(parent_mut(object, path, false)?.and_then(|p| p.shift_remove(last.as_ref())))
}

/// Appends `value` to the array at `path` unless an equal element is already there,
/// creating the array (and parents) when missing. Returns whether it was added.
pub fn add_to_array<S: AsRef<str>>(
    object: &mut JsonObject,
    path: &[S],
    value: Value,
) -> Result<bool, KeyPathError> {
    match get(object, path) {
        None => {
            set(object, path, Value::Array(vec![value]))?;
            Ok(true)
        }
        Some(Value::Array(items)) if items.contains(&value) => Ok(false),
        Some(Value::Array(_)) => {
            if let Some(Value::Array(items)) = get_mut(object, path) {
                items.push(value);
            }
            Ok(true)
        }
        Some(other) => Err(KeyPathError::NotAnArray {
            at: dotted(path),
            found: kind(other),
        }),
    }
}

/// Removes every element equal to `value` from the array at `path`. Returns how many were
/// removed (0 when the array or the path does not exist).
pub fn remove_from_array<S: AsRef<str>>(
    object: &mut JsonObject,
    path: &[S],
    value: &Value,
) -> Result<usize, KeyPathError> {
    match get_mut(object, path) {
        None => Ok(0),
        Some(Value::Array(items)) => {
            let before = items.len();
            items.retain(|v| v != value);
            Ok(before - items.len())
        }
        Some(other) => Err(KeyPathError::NotAnArray {
            at: dotted(path),
            found: kind(other),
        }),
    }
}

/// Joins a path with dots.
pub fn dotted<S: AsRef<str>>(path: &[S]) -> String {
    path.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(".")
}

fn get_mut<'a, S: AsRef<str>>(object: &'a mut JsonObject, path: &[S]) -> Option<&'a mut Value> {
    let (last, parents) = path.split_last()?;
    let mut cur = object;
    for p in parents {
        cur = cur.get_mut(p.as_ref())?.as_object_mut()?;
    }
    cur.get_mut(last.as_ref())
}

/// The object that holds the last segment of `path`: walks the segments before it,
/// creating empty objects when `create` (else returns `None` at the first missing step).
fn parent_mut<'a, S: AsRef<str>>(
    object: &'a mut JsonObject,
    path: &[S],
    create: bool,
) -> Result<Option<&'a mut JsonObject>, KeyPathError> {
    let parents = &path[..path.len().saturating_sub(1)];
    let mut cur = object;
    for (i, p) in parents.iter().enumerate() {
        let key = p.as_ref();
        if !cur.contains_key(key) {
            if !create {
                return Ok(None);
            }
            cur.insert(key.to_owned(), Value::Object(Map::new()));
        }
        let next_name = path.get(i + 1).map_or("", AsRef::as_ref).to_owned();
        cur = match cur.get_mut(key) {
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(KeyPathError::NotAnObject {
                    at: dotted(&parents[..=i]),
                    found: kind(other),
                    next: next_name,
                });
            }
            None => return Ok(None),
        };
    }
    Ok(Some(cur))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn set_keeps_position_of_existing_keys() {
        let mut o = obj(json!({"a": 1, "b": {"x": 1, "y": 2}, "c": 3}));
        set(&mut o, &["b", "x"], json!(9)).unwrap();
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"a":1,"b":{"x":9,"y":2},"c":3}"#
        );
    }

    #[test]
    fn set_through_a_scalar_is_an_error() {
        let mut o = obj(json!({"env": "oops"}));
        let e = set(&mut o, &["env", "FOO"], json!("1")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "env is a string, not an object, so it has no key \"FOO\""
        );
        let mut o = obj(json!({"a": {"b": 1}}));
        let e = set(&mut o, &["a", "b", "c", "d"], json!(1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.b is a number, not an object, so it has no key \"c\""
        );
    }

    #[test]
    fn remove_keeps_order_of_the_rest() {
        let mut o = obj(json!({"a": 1, "b": 2, "c": 3}));
        assert_eq!(remove(&mut o, &["b"]).unwrap(), Some(json!(2)));
        assert_eq!(remove(&mut o, &["x", "y"]).unwrap(), None);
        assert_eq!(serde_json::to_string(&o).unwrap(), r#"{"a":1,"c":3}"#);
    }

    #[test]
    fn arrays_add_once_and_remove_all_equal() {
        let mut o = JsonObject::new();
        assert!(add_to_array(&mut o, &["permissions", "allow"], json!("Read")).unwrap());
        assert!(!add_to_array(&mut o, &["permissions", "allow"], json!("Read")).unwrap());
        assert!(add_to_array(&mut o, &["permissions", "allow"], json!("Edit")).unwrap());
        assert_eq!(o["permissions"]["allow"], json!(["Read", "Edit"]));
        assert_eq!(
            remove_from_array(&mut o, &["permissions", "allow"], &json!("Read")).unwrap(),
            1
        );
        assert_eq!(
            remove_from_array(&mut o, &["permissions", "nope"], &json!("Read")).unwrap(),
            0
        );
        let e = add_to_array(&mut o, &["permissions"], json!(1)).unwrap_err();
        assert_eq!(e.to_string(), "permissions is an object, not an array");
    }
}
