//! A transcript line kept as written: its keys in order, each value as the exact JSON
//! text it had. Used to copy a session (fork) with one field changed while every other
//! byte of every value, known or unknown, stays as the original writer put it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use crate::message::fields::CowKey;

/// One transcript line as an ordered list of keys and raw JSON values.
#[derive(Debug, Clone)]
pub struct RawEntry<'a> {
    fields: Vec<(Cow<'a, str>, Cow<'a, RawValue>)>,
}

impl<'a> RawEntry<'a> {
    /// Parses one line (a JSON object), borrowing from it.
    pub fn parse(line: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(line)
    }

    /// The raw JSON text of `key`.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| &**v)
    }

    /// The value of `key` when it is a JSON string.
    pub fn get_str(&self, key: &str) -> Option<String> {
        serde_json::from_str::<String>(self.get(key)?.get()).ok()
    }

    /// Sets `key` to `value`, in place when present, else at the end.
    pub fn set<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        let raw = serde_json::value::to_raw_value(value)?;
        match self.fields.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = Cow::Owned(raw),
            None => self
                .fields
                .push((Cow::Owned(key.to_owned()), Cow::Owned(raw))),
        }
        Ok(())
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(k, _)| &**k)
    }

    /// The line as compact JSON (no trailing newline): the original value texts, in the
    /// original order.
    pub fn to_line(&self) -> String {
        let size = self
            .fields
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .sum::<usize>();
        let mut out = String::with_capacity(size + 2);
        out.push('{');
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_json_string(&mut out, k);
            out.push(':');
            out.push_str(v.get());
        }
        out.push('}');
        out
    }
}

/// Appends `s` as a JSON string literal.
fn push_json_string(out: &mut String, s: &str) {
    // Serializing a str to JSON cannot fail; fall back to a lossless manual escape anyway.
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawEntry<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = RawEntry<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntry<'a>, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(key) = map.next_key_seed(CowKey)? {
                    let value: &'de RawValue = map.next_value()?;
                    fields.push((key, Cow::Borrowed(value)));
                }
                Ok(RawEntry { fields })
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}
