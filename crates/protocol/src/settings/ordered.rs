//! Objects with typed known keys that keep unknown keys and the file's key order.
//!
//! Settings and config files belong to the user (and to other versions of strata and of
//! the reference agent): a key this version does not know must survive a read and a write
//! untouched, and keys must not be reshuffled. `#[serde(flatten)]` keeps unknown keys but
//! writes known ones first and buffers the whole object (so errors lose their position).
//! Instead, each such type implements [`KnownKeys`] (through [`known_keys!`]) and gets a
//! streaming visitor that reads known keys typed, unknown keys as [`Value`], and records
//! the order keys appeared in ([`KeyOrder`]). Serializing walks that order, then appends
//! keys that were added since.
//!
//! Because known values are read while the JSON is streamed, an error in one (say an
//! unknown permission mode) is raised at that value, so `serde_json` reports its line and
//! column.

use std::collections::HashSet;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

/// The order in which an object's keys appeared when it was read. New keys are written
/// after these. It never takes part in equality: two objects with the same keys and values
/// are equal whatever their order.
#[derive(Clone, Debug, Default)]
pub struct KeyOrder(pub(crate) Vec<String>);

impl PartialEq for KeyOrder {
    /// Always true: order is presentation, not meaning.
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl KeyOrder {
    /// The keys in the order they were read.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    fn note(&mut self, key: &str) {
        if !self.0.iter().any(|k| k == key) {
            self.0.push(key.to_owned());
        }
    }
}

/// A struct with typed known keys, a map of unknown ones and a [`KeyOrder`].
pub(crate) trait KnownKeys: Default {
    /// What the visitor expects, for type errors ("a settings object").
    const EXPECTING: &'static str;
    /// The known keys, in the order new ones are written.
    const KNOWN: &'static [&'static str];

    /// Reads the value of `key` into its field when `key` is known; returns `false` (and
    /// consumes nothing) when it is not.
    fn read_known<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<bool, A::Error>;

    /// Writes `key` when it is known and set; returns whether `key` is known.
    fn write_known<M: SerializeMap>(&self, key: &str, out: &mut M) -> Result<bool, M::Error>;

    /// Rules between keys, checked once the object is read (inside it, so the error
    /// gets the object's line and column).
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Unknown keys.
    fn extra(&self) -> &Map<String, Value>;
    /// Unknown keys, mutably.
    fn extra_mut(&mut self) -> &mut Map<String, Value>;
    /// The key order.
    fn order(&self) -> &KeyOrder;
    /// The key order, mutably.
    fn order_mut(&mut self) -> &mut KeyOrder;
}

/// Streams a JSON object into a [`KnownKeys`] type.
pub(crate) struct KnownKeysVisitor<T>(pub(crate) PhantomData<T>);

impl<'de, T: KnownKeys> Visitor<'de> for KnownKeysVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut obj = T::default();
        while let Some(key) = map.next_key::<String>()? {
            obj.order_mut().note(&key);
            if !obj.read_known(&key, &mut map)? {
                let value: Value = map.next_value()?;
                obj.extra_mut().insert(key, value);
            }
        }
        obj.check().map_err(serde::de::Error::custom)?;
        Ok(obj)
    }
}

/// Writes a [`KnownKeys`] value: keys in their read order, then known keys set since, then
/// unknown keys added since.
pub(crate) fn serialize_known<T: KnownKeys, S: serde::Serializer>(
    obj: &T,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut out = s.serialize_map(None)?;
    let mut written: HashSet<&str> = HashSet::new();
    for key in obj.order().keys() {
        if !written.insert(key) {
            continue;
        }
        if !obj.write_known(key, &mut out)?
            && let Some(v) = obj.extra().get(key)
        {
            out.serialize_entry(key, v)?;
        }
    }
    for key in T::KNOWN {
        if written.insert(key) {
            obj.write_known(key, &mut out)?;
        }
    }
    for (key, v) in obj.extra() {
        if !written.contains(key.as_str()) {
            out.serialize_entry(key, v)?;
        }
    }
    out.end()
}

/// Implements [`KnownKeys`], `Serialize` and `Deserialize` for a struct whose known fields
/// are all `Option<_>` (absent and `null` both read as `None`; `None` is not written).
///
/// With `check = f`, `f(&value) -> Result<(), String>` runs once the object's keys are
/// read, for rules between keys ([`KnownKeys::check`]).
macro_rules! known_keys {
    ($ty:ident, $expecting:literal, { $($key:literal => $field:ident),* $(,)? }, check = $check:path) => {
        $crate::settings::ordered::known_keys!(@impl $ty, $expecting, { $($key => $field),* }, {
            fn check(&self) -> Result<(), String> {
                $check(self)
            }
        });
    };
    ($ty:ident, $expecting:literal, { $($key:literal => $field:ident),* $(,)? }) => {
        $crate::settings::ordered::known_keys!(@impl $ty, $expecting, { $($key => $field),* }, {});
    };
    (@impl $ty:ident, $expecting:literal, { $($key:literal => $field:ident),* $(,)? }, { $($check:tt)* }) => {
        impl $crate::settings::ordered::KnownKeys for $ty {
            const EXPECTING: &'static str = $expecting;
            const KNOWN: &'static [&'static str] = &[$($key),*];

            fn read_known<'de, A: serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
            ) -> Result<bool, A::Error> {
                match key {
                    $($key => self.$field = map.next_value()?,)*
                    _ => return Ok(false),
                }
                Ok(true)
            }

            fn write_known<M: serde::ser::SerializeMap>(
                &self,
                key: &str,
                out: &mut M,
            ) -> Result<bool, M::Error> {
                match key {
                    $($key => {
                        if let Some(v) = &self.$field {
                            out.serialize_entry(key, v)?;
                        }
                    })*
                    _ => return Ok(false),
                }
                Ok(true)
            }

            $($check)*

            fn extra(&self) -> &serde_json::Map<String, serde_json::Value> {
                &self.extra
            }
            fn extra_mut(&mut self) -> &mut serde_json::Map<String, serde_json::Value> {
                &mut self.extra
            }
            fn order(&self) -> &$crate::settings::ordered::KeyOrder {
                &self.key_order
            }
            fn order_mut(&mut self) -> &mut $crate::settings::ordered::KeyOrder {
                &mut self.key_order
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::settings::ordered::serialize_known(self, s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_map($crate::settings::ordered::KnownKeysVisitor(
                    std::marker::PhantomData,
                ))
            }
        }
    };
}

pub(crate) use known_keys;
