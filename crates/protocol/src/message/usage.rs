//! Token usage of one model response, as the API reports it and transcripts record it.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::fields::{Fields, serialize_extra};

/// Token counts of one response.
///
/// Written back in the reference order (`input_tokens`, `cache_creation_input_tokens`,
/// `cache_read_input_tokens`, `cache_creation`, `output_tokens`, `service_tier`, then any
/// other field such as `server_tool_use` or `inference_geo` in the order read).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Input tokens written to the prompt cache (all lifetimes together).
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: Option<u64>,
    /// Cache writes split by lifetime, when the API reports it.
    pub cache_creation: Option<CacheCreation>,
    /// Output tokens.
    pub output_tokens: u64,
    /// `standard`, `priority`, `batch`.
    pub service_tier: Option<String>,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

/// Cache writes by lifetime: 5-minute writes cost 1.25× input, 1-hour writes 2×.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CacheCreation {
    /// Tokens written with the 5-minute lifetime.
    pub ephemeral_5m_input_tokens: u64,
    /// Tokens written with the 1-hour lifetime.
    pub ephemeral_1h_input_tokens: u64,
    /// Fields strata does not model, in order.
    pub extra: Map<String, Value>,
}

impl Usage {
    /// Tokens written to the cache with the 5-minute lifetime: the breakdown when present,
    /// else all of `cache_creation_input_tokens` (the API's default lifetime).
    pub fn cache_write_5m_tokens(&self) -> u64 {
        match &self.cache_creation {
            Some(c) => c.ephemeral_5m_input_tokens,
            None => self.cache_creation_input_tokens.unwrap_or(0),
        }
    }

    /// Tokens written to the cache with the 1-hour lifetime (0 without a breakdown).
    pub fn cache_write_1h_tokens(&self) -> u64 {
        self.cache_creation
            .as_ref()
            .map_or(0, |c| c.ephemeral_1h_input_tokens)
    }

    /// All cache-write tokens.
    pub fn cache_write_tokens(&self) -> u64 {
        self.cache_creation_input_tokens
            .unwrap_or_else(|| self.cache_write_5m_tokens() + self.cache_write_1h_tokens())
    }

    /// Cache-read tokens (0 when absent).
    pub fn cache_read_tokens(&self) -> u64 {
        self.cache_read_input_tokens.unwrap_or(0)
    }

    /// Every token the response counted: input, cache writes and reads, and output. Used
    /// to pick the most complete of several records of one response.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            + self.cache_write_tokens()
            + self.cache_read_tokens()
            + self.output_tokens
    }
}

fn take_u64(f: &mut Fields<'_>, key: &str) -> Option<u64> {
    match f.get(key) {
        Some(Value::Number(n)) if n.as_u64().is_some() => f.take(key).and_then(|v| v.as_u64()),
        // A null is the same as absent; anything else stays in `extra` untouched.
        Some(Value::Null) => {
            f.take(key);
            None
        }
        _ => None,
    }
}

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Usage;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a usage object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Usage, A::Error> {
                let mut f = Fields::collect(map)?;
                let input_tokens = take_u64(&mut f, "input_tokens").unwrap_or(0);
                let cache_creation_input_tokens = take_u64(&mut f, "cache_creation_input_tokens");
                let cache_read_input_tokens = take_u64(&mut f, "cache_read_input_tokens");
                let cache_creation = match f.get("cache_creation") {
                    Some(Value::Object(_)) => match f.take("cache_creation") {
                        Some(Value::Object(m)) => Some(cache_creation_from(m)),
                        _ => None,
                    },
                    _ => None,
                };
                let output_tokens = take_u64(&mut f, "output_tokens").unwrap_or(0);
                let service_tier = f.take_string("service_tier");
                Ok(Usage {
                    input_tokens,
                    cache_creation_input_tokens,
                    cache_read_input_tokens,
                    cache_creation,
                    output_tokens,
                    service_tier,
                    extra: f.into_map(),
                })
            }
        }
        d.deserialize_map(V)
    }
}

fn cache_creation_from(m: Map<String, Value>) -> CacheCreation {
    let mut f = Fields::from_map(m);
    CacheCreation {
        ephemeral_5m_input_tokens: take_u64(&mut f, "ephemeral_5m_input_tokens").unwrap_or(0),
        ephemeral_1h_input_tokens: take_u64(&mut f, "ephemeral_1h_input_tokens").unwrap_or(0),
        extra: f.into_map(),
    }
}

impl<'de> Deserialize<'de> for CacheCreation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(d).map(cache_creation_from)
    }
}

impl Serialize for Usage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("input_tokens", &self.input_tokens)?;
        if let Some(v) = self.cache_creation_input_tokens {
            m.serialize_entry("cache_creation_input_tokens", &v)?;
        }
        if let Some(v) = self.cache_read_input_tokens {
            m.serialize_entry("cache_read_input_tokens", &v)?;
        }
        if let Some(v) = &self.cache_creation {
            m.serialize_entry("cache_creation", v)?;
        }
        m.serialize_entry("output_tokens", &self.output_tokens)?;
        if let Some(v) = &self.service_tier {
            m.serialize_entry("service_tier", v)?;
        }
        serialize_extra(&mut m, &self.extra)?;
        m.end()
    }
}

impl Serialize for CacheCreation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("ephemeral_5m_input_tokens", &self.ephemeral_5m_input_tokens)?;
        m.serialize_entry("ephemeral_1h_input_tokens", &self.ephemeral_1h_input_tokens)?;
        serialize_extra(&mut m, &self.extra)?;
        m.end()
    }
}
