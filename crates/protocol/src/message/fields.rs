//! Reading a JSON object as an ordered list of fields, for types that keep unknown fields.
//!
//! serde's `#[serde(flatten)]` would keep unknown fields too, but it buffers the whole
//! object into an intermediate tree first (twice the work on every transcript line) and
//! cannot be combined with borrowed or raw values. The content blocks and messages of a
//! transcript are parsed on the resume hot path, so they read their fields here once, in
//! order, and pick out the ones they know. What is left over is kept in order and written
//! back after the known fields.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde_json::{Map, Value};

/// A key read without copying when the input allows it.
pub(crate) struct CowKey;

impl<'de> DeserializeSeed<'de> for CowKey {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(CowKeyVisitor)
    }
}

struct CowKeyVisitor;

impl<'de> Visitor<'de> for CowKeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// The fields of one JSON object in their original order.
pub(crate) struct Fields<'de>(Vec<(Cow<'de, str>, Value)>);

impl<'de> Fields<'de> {
    /// Reads every remaining field of `map` as a JSON value.
    pub(crate) fn collect<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(4));
        while let Some(key) = map.next_key_seed(CowKey)? {
            let value: Value = map.next_value()?;
            fields.push((key, value));
        }
        Ok(Self(fields))
    }

    /// The fields of an already parsed object, in its order.
    pub(crate) fn from_map(map: Map<String, Value>) -> Self {
        Self(map.into_iter().map(|(k, v)| (Cow::Owned(k), v)).collect())
    }

    /// The value of `key`, if present, without removing it.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Removes and returns the value of `key` (the first one, should a key repeat).
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    /// Removes `key` if it holds a string and returns the string; leaves any other value.
    pub(crate) fn take_string(&mut self, key: &str) -> Option<String> {
        let at = self.0.iter().position(|(k, v)| k == key && v.is_string())?;
        match self.0.remove(at).1 {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether `key` is present and holds a string.
    pub(crate) fn has_string(&self, key: &str) -> bool {
        matches!(self.get(key), Some(Value::String(_)))
    }

    /// The remaining fields, in order.
    pub(crate) fn into_map(self) -> Map<String, Value> {
        self.0
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v))
            .collect()
    }
}

/// Writes `extra` after the known fields of a map being serialized.
pub(crate) fn serialize_extra<M: serde::ser::SerializeMap>(
    map: &mut M,
    extra: &Map<String, Value>,
) -> Result<(), M::Error> {
    for (k, v) in extra {
        map.serialize_entry(k, v)?;
    }
    Ok(())
}
