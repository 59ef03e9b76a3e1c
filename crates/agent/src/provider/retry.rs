//! When and how long to wait before retrying a failed model request.
//!
//! Both model APIs answer overload and rate limits with statuses a client is expected to
//! retry (429, 5xx, the Messages API's 529 `overloaded_error`), sometimes with a
//! `retry-after` header saying how long to wait. The policy: exponential backoff from
//! [`RetryPolicy::initial_delay`] doubling up to [`RetryPolicy::max_delay`], with up to 25%
//! random jitter taken off so many clients that failed together do not retry together;
//! a server's `retry-after` (or `retry-after-ms`) replaces the computed delay, capped at
//! `max_delay`. At most [`RetryPolicy::max_retries`] retries follow the first attempt.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::HeaderMap;

/// How failed requests are retried (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts in all).
    pub max_retries: u32,
    /// The wait before the first retry.
    pub initial_delay: Duration,
    /// The longest wait between two attempts, also for a server's `retry-after`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// 8 retries, from 0.5 s doubling up to 32 s: about 1.5 minutes of trying in all,
    /// which rides out a typical overload spike without hanging a script for long.
    fn default() -> Self {
        Self {
            max_retries: 8,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(32),
        }
    }
}

impl RetryPolicy {
    /// The default policy with `max_retries` taken from `STRATA_MAX_RETRIES` when that
    /// holds a number.
    pub fn from_env(env: &impl Fn(&str) -> Option<String>) -> Self {
        let mut policy = Self::default();
        if let Some(n) = env("STRATA_MAX_RETRIES").and_then(|v| v.trim().parse().ok()) {
            policy.max_retries = n;
        }
        policy
    }

    /// The wait before retry number `retry` (1 for the first retry), given the server's
    /// `retry-after` if it sent one.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_delay);
        }
        let doublings = retry.saturating_sub(1).min(30);
        let base = self
            .initial_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay);
        // Up to 25% off, so clients that failed together spread out.
        let jitter = base.mul_f64(0.25 * random_unit());
        base.saturating_sub(jitter)
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds, sent by OpenAI) or
/// `retry-after` in seconds (integer or decimal). An HTTP-date form is not honoured (the
/// computed backoff is used instead): no model API sends it.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return duration_from_secs(ms / 1000.0);
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(duration_from_secs)
}

fn duration_from_secs(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Whether an HTTP status is worth retrying: request timeout, conflict (lock contention),
/// rate limits, and server-side errors including 529 (overloaded).
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// A number in `[0, 1)`. Jitter needs no quality randomness, only values that differ
/// between processes and calls; the standard library's randomly keyed hasher gives that
/// without a dependency.
fn random_unit() -> f64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos().into()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_at_most_a_quarter_off() {
        let p = RetryPolicy::default();
        for (retry, base_ms) in [(1, 500), (2, 1000), (3, 2000), (7, 32_000), (20, 32_000)] {
            let d = p.delay(retry, None).as_millis();
            assert!(
                d <= base_ms && d >= base_ms * 3 / 4,
                "retry {retry}: {d} ms not within 75–100% of {base_ms} ms"
            );
        }
    }

    #[test]
    fn retry_after_replaces_the_backoff_but_is_capped() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(p.delay(1, Some(Duration::from_secs(600))), p.max_delay);
    }

    #[test]
    fn retry_after_headers_in_seconds_and_milliseconds() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", HeaderValue::from_static("0.5"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(500)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
    }

    #[test]
    fn statuses_worth_retrying() {
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!retryable_status(s), "{s}");
        }
    }

    #[test]
    fn max_retries_from_the_environment() {
        let env = |k: &str| (k == "STRATA_MAX_RETRIES").then(|| "2".to_owned());
        assert_eq!(RetryPolicy::from_env(&env).max_retries, 2);
        let bad = |_: &str| Some("many".to_owned());
        assert_eq!(RetryPolicy::from_env(&bad).max_retries, 8);
    }
}
