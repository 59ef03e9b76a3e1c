//! Token usage and cost, computed from transcripts, and the price table (SP-4).
//!
//! Cost is recomputed from what the transcript records rather than carried in a counter,
//! so it survives a crash or a resume (the reference agent's `/cost` resets on resume).
//! The rules, from `COMPAT.md`:
//!
//! - One API response is written as several assistant lines sharing `message.id` and
//!   `requestId`, and older writers left placeholder `output_tokens` on all but the last:
//!   lines are de-duplicated by `(message.id, requestId)`, keeping the largest usage.
//! - Lines with model `<synthetic>` and API-error lines are not API calls: skipped.
//! - Sub-agent transcripts are API calls of the same session: callers add them.
//!
//! Prices are per million tokens. Cache reads cost 0.1× the input price, 5-minute cache
//! writes 1.25× and 1-hour cache writes 2×.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

use crate::chain::PassHasher;
use crate::reader::Transcript;
use crate::reader::line::{LineKind, UsageCounts, flag};

/// USD per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPrice {
    /// Input tokens.
    pub input_per_mtok: f64,
    /// Output tokens.
    pub output_per_mtok: f64,
}

/// Cache reads cost this multiple of the input price.
pub const CACHE_READ_FACTOR: f64 = 0.1;
/// 5-minute cache writes cost this multiple of the input price.
pub const CACHE_WRITE_5M_FACTOR: f64 = 1.25;
/// 1-hour cache writes cost this multiple of the input price.
pub const CACHE_WRITE_1H_FACTOR: f64 = 2.0;

/// The price used for a model the table does not know: Sonnet's, the middle of the
/// range, so an unknown model is neither free nor priced as the most expensive one.
/// [`price_for`] says when it was used.
pub const FALLBACK_PRICE: ModelPrice = ModelPrice {
    input_per_mtok: 3.0,
    output_per_mtok: 15.0,
};

/// Where a model's price came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriceSource {
    /// The built-in table (the family and version found in the model id).
    Table,
    /// [`FALLBACK_PRICE`]: the model id names no known family.
    Fallback,
}

/// The price of `model`.
///
/// Model ids come in several spellings: `claude-opus-4-6`, `claude-sonnet-4-5-20250929`,
/// `claude-3-5-haiku-20241022`, Bedrock `us.anthropic.claude-haiku-4-5-20251001-v1:0`,
/// Vertex `claude-opus-4-1@20250805`. The family (`opus`, `sonnet`, `haiku`) and its
/// version are found anywhere in the id; the table:
///
/// | family | version | input | output |
/// |---|---|---|---|
/// | opus | ≥ 4.5 | 5 | 25 |
/// | opus | 4, 4.1, 3 | 15 | 75 |
/// | sonnet | any | 3 | 15 |
/// | haiku | ≥ 4.5 | 1 | 5 |
/// | haiku | 3.5 | 0.80 | 4 |
/// | haiku | 3 | 0.25 | 1.25 |
pub fn price_for(model: &str) -> (ModelPrice, PriceSource) {
    let m = model.to_ascii_lowercase();
    let p = |i, o| {
        (
            ModelPrice {
                input_per_mtok: i,
                output_per_mtok: o,
            },
            PriceSource::Table,
        )
    };
    for family in ["opus", "sonnet", "haiku"] {
        let Some(at) = m.find(family) else { continue };
        let version = version_near(&m, at, family.len());
        return match family {
            "opus" if version >= (4, 5) => p(5.0, 25.0),
            "opus" => p(15.0, 75.0),
            "sonnet" => p(3.0, 15.0),
            _ if version >= (4, 5) || version == (0, 0) => p(1.0, 5.0),
            _ if version >= (3, 5) => p(0.8, 4.0),
            _ => p(0.25, 1.25),
        };
    }
    (FALLBACK_PRICE, PriceSource::Fallback)
}

/// The `(major, minor)` version next to the family name: after it in new-style ids
/// (`opus-4-5-2025…`), before it in old-style ones (`claude-3-5-sonnet`). A date (eight
/// digits) is not a version. `(0, 0)` when there is none.
fn version_near(m: &str, at: usize, len: usize) -> (u32, u32) {
    let small = |s: &str| {
        s.parse::<u32>()
            .ok()
            .filter(|_| !s.is_empty() && s.len() <= 2)
    };
    let after: Vec<&str> = m[at + len..]
        .split(['-', '.', '@', ':', '_'])
        .filter(|s| !s.is_empty())
        .collect();
    if let Some(major) = after.first().and_then(|s| small(s)) {
        return (major, after.get(1).and_then(|s| small(s)).unwrap_or(0));
    }
    let before: Vec<&str> = m[..at]
        .split(['-', '.', '@', ':', '_'])
        .filter(|s| !s.is_empty())
        .collect();
    match before.as_slice() {
        [.., a, b] if small(a).is_some() && small(b).is_some() => {
            (small(a).unwrap_or(0), small(b).unwrap_or(0))
        }
        [.., b] if small(b).is_some() => (small(b).unwrap_or(0), 0),
        _ => (0, 0),
    }
}

/// Tokens and cost of one model.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModelUsage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// Tokens written to the cache (both lifetimes).
    pub cache_creation_input_tokens: u64,
    /// Of those, written with the 1-hour lifetime.
    pub cache_creation_1h_input_tokens: u64,
    /// API responses counted.
    pub requests: u64,
    /// Cost in USD.
    pub cost_usd: f64,
}

/// Usage of a session by model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UsageReport {
    /// By model id.
    pub by_model: BTreeMap<String, ModelUsage>,
    /// The sum of every model's cost.
    pub total_cost_usd: f64,
    /// Models priced with [`FALLBACK_PRICE`].
    pub fallback_priced: Vec<String>,
}

/// Collects usage over one or more transcripts, de-duplicating responses.
#[derive(Debug, Default)]
pub struct UsageCollector {
    /// Hash of `(message.id, requestId)` → (model, largest usage seen). The ids are
    /// hashed with 64 bits: a collision between two responses of one session is
    /// vanishingly unlikely and would only merge two usage records.
    responses: HashMap<u64, (String, UsageCounts), BuildHasherDefault<PassHasher>>,
    /// Responses without a `message.id`, counted as they come.
    anonymous: Vec<(String, UsageCounts)>,
}

impl UsageCollector {
    /// A collector with nothing counted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts the assistant lines of `t` (those before a skipped compact boundary too).
    pub fn add(&mut self, t: &Transcript) {
        for l in t.pre_boundary.iter().chain(t.lines.iter()) {
            // Everything decided here was read while the line was scanned: the store (and
            // the model's name) is only touched for a response not seen before.
            if l.kind != LineKind::Assistant || l.has(flag::API_ERROR) || l.has(flag::SYNTHETIC) {
                continue;
            }
            let Some(usage) = l.usage.as_deref() else {
                continue;
            };
            let model = || t.text(l, l.model).unwrap_or_default().into_owned();
            if l.msg_h == 0 {
                self.anonymous.push((model(), *usage));
                continue;
            }
            let key = l.msg_h ^ l.req_h.rotate_left(29);
            match self.responses.get_mut(&key) {
                Some((_, kept)) => {
                    if usage.total() > kept.total() {
                        *kept = *usage;
                    }
                }
                None => {
                    self.responses.insert(key, (model(), *usage));
                }
            }
        }
    }

    /// Sums and prices what was collected.
    pub fn report(&self) -> UsageReport {
        let mut by_model: BTreeMap<String, ModelUsage> = BTreeMap::new();
        let all = self
            .responses
            .values()
            .map(|(m, u)| (m, u))
            .chain(self.anonymous.iter().map(|(m, u)| (m, u)));
        for (model, u) in all {
            let e = by_model.entry(model.clone()).or_default();
            let (w5, w1) = u.cache_writes();
            e.input_tokens += u.input;
            e.output_tokens += u.output;
            e.cache_read_input_tokens += u.cache_read;
            e.cache_creation_input_tokens += u.cache_creation.unwrap_or(w5 + w1);
            e.cache_creation_1h_input_tokens += w1;
            e.requests += 1;
        }
        let mut report = UsageReport::default();
        for (model, u) in &mut by_model {
            let (price, source) = price_for(model);
            if source == PriceSource::Fallback {
                report.fallback_priced.push(model.clone());
            }
            u.cost_usd = cost(price, u);
            report.total_cost_usd += u.cost_usd;
        }
        report.by_model = by_model;
        report
    }
}

/// The usage and cost of the session whose transcript is `path`, its sub-agents
/// included (both layouts): what the agent restores as the session's cost when the
/// project's saved cost slot belongs to another session (SP-4), so cost never silently
/// resets on resume. Unreadable sub-agent transcripts are left out.
pub fn session_usage(path: &std::path::Path) -> Result<UsageReport, crate::reader::ReadError> {
    let mut c = UsageCollector::new();
    c.add(&Transcript::read_for_resume(path)?);
    let session_id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    for (_, sub) in crate::resume::subagent_transcripts(path, &session_id) {
        if let Ok(t) = Transcript::read_for_resume(&sub) {
            c.add(&t);
        }
    }
    Ok(c.report())
}

/// The cost of `u` at `price`.
pub fn cost(price: ModelPrice, u: &ModelUsage) -> f64 {
    let w1 = u.cache_creation_1h_input_tokens;
    let w5 = u.cache_creation_input_tokens.saturating_sub(w1);
    let input_equivalent = u.input_tokens as f64
        + u.cache_read_input_tokens as f64 * CACHE_READ_FACTOR
        + w5 as f64 * CACHE_WRITE_5M_FACTOR
        + w1 as f64 * CACHE_WRITE_1H_FACTOR;
    (input_equivalent * price.input_per_mtok + u.output_tokens as f64 * price.output_per_mtok) / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sp4_models_are_priced_by_family_and_version() {
        let input = |m: &str| price_for(m).0.input_per_mtok;
        assert_eq!(input("claude-opus-4-6"), 5.0);
        assert_eq!(input("claude-opus-4-5-20251101"), 5.0);
        assert_eq!(input("claude-opus-4-1-20250805"), 15.0);
        assert_eq!(input("claude-opus-4-20250514"), 15.0);
        assert_eq!(input("claude-3-opus-20240229"), 15.0);
        assert_eq!(input("claude-sonnet-4-5-20250929"), 3.0);
        assert_eq!(input("claude-3-7-sonnet-latest"), 3.0);
        assert_eq!(input("claude-haiku-4-5-20251001"), 1.0);
        assert_eq!(
            input("converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0"),
            1.0
        );
        assert_eq!(input("claude-3-5-haiku-20241022"), 0.8);
        assert_eq!(input("claude-3-haiku-20240307"), 0.25);
        assert_eq!(input("claude-opus-4-1@20250805"), 15.0);
        assert_eq!(price_for("gpt-5").1, PriceSource::Fallback);
        assert_eq!(price_for("gpt-5").0, FALLBACK_PRICE);
    }

    #[test]
    fn sp4_cache_reads_and_writes_are_priced_relative_to_input() {
        let price = ModelPrice {
            input_per_mtok: 10.0,
            output_per_mtok: 100.0,
        };
        let u = ModelUsage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_input_tokens: 1_000_000,
            cache_creation_input_tokens: 3_000_000,
            cache_creation_1h_input_tokens: 1_000_000,
            ..ModelUsage::default()
        };
        // 10 input + 100 output + 1 read + 2×12.5 (5 min) + 20 (1 h)
        assert!((cost(price, &u) - 156.0).abs() < 1e-9);
    }

    #[test]
    fn sp4_split_responses_count_once_with_their_largest_usage_and_synthetic_lines_not_at_all() {
        let line = |uuid: &str, msg: &str, req: &str, model: &str, out: u32, extra: &str| {
            format!(
                r#"{{"parentUuid":null,"message":{{"model":"{model}","id":"{msg}","type":"message","role":"assistant","content":[],"usage":{{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"cache_creation":{{"ephemeral_5m_input_tokens":60,"ephemeral_1h_input_tokens":40}},"output_tokens":{out}}}}},"requestId":"{req}","type":"assistant","uuid":"{uuid}","timestamp":"t"{extra}}}"#
            )
        };
        let text = [
            line("a", "m1", "r1", "claude-sonnet-4-5", 1, ""),
            line("b", "m1", "r1", "claude-sonnet-4-5", 500, ""),
            line("c", "m1", "r1", "claude-sonnet-4-5", 1, ""),
            line("d", "m2", "r2", "claude-haiku-4-5", 7, ""),
            line("e", "m3", "r3", "<synthetic>", 99, ""),
            line(
                "f",
                "m4",
                "r4",
                "claude-sonnet-4-5",
                99,
                r#","isApiErrorMessage":true"#,
            ),
        ]
        .join("\n");
        let t = Transcript::from_bytes(text.into_bytes());
        let mut c = UsageCollector::new();
        c.add(&t);
        let r = c.report();
        assert_eq!(r.by_model.len(), 2);
        let s = r.by_model["claude-sonnet-4-5"];
        assert_eq!((s.requests, s.output_tokens, s.input_tokens), (1, 500, 10));
        assert_eq!(
            (
                s.cache_creation_input_tokens,
                s.cache_creation_1h_input_tokens,
                s.cache_read_input_tokens
            ),
            (100, 40, 1000)
        );
        let expected =
            (10.0 + 1000.0 * 0.1 + 60.0 * 1.25 + 40.0 * 2.0) * 3.0 / 1e6 + 500.0 * 15.0 / 1e6;
        assert!((s.cost_usd - expected).abs() < 1e-12);
        assert_eq!(r.by_model["claude-haiku-4-5"].output_tokens, 7);
        assert!(
            (r.total_cost_usd - (s.cost_usd + r.by_model["claude-haiku-4-5"].cost_usd)).abs()
                < 1e-12
        );
    }
}
