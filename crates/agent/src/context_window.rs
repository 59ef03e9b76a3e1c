//! Context accounting (issue 13): the model's window, how full the conversation is, and
//! when to compact.
//!
//! The size of the context is what the last request and its answer held: input + cache
//! read + cache creation + output tokens (the reference agent's count), kept in the app
//! state's `context_usage` after every response. Between responses new messages (tool
//! results) are estimated at four characters a token until the next response counts
//! them exactly.
//!
//! Settings (any source; the merged value is read at each request, so a settings edit
//! applies at once):
//! - `contextWindow`: the window in tokens, replacing the table below;
//! - `autoCompactThreshold`: when to compact, a fraction (`0.8`) or a percentage (`80`) of
//!   the window (default [`DEFAULT_THRESHOLD`]);
//! - `autoCompactEnabled: false`, or the environment variable `DISABLE_AUTO_COMPACT=1`
//!   (also `STRATA_DISABLE_AUTO_COMPACT`): never compact automatically;
//! - `maxThinkingTokens`: the thinking budget when thinking is on.

use serde_json::Value;
use strata_protocol::message::{ContentBlock, Message, MessageContent, Usage};
use strata_protocol::settings::Settings;

/// Compact when the context passes this share of the window.
pub const DEFAULT_THRESHOLD: f64 = 0.8;
/// The thinking budget when neither the flag, a control request nor a setting sets one.
pub const DEFAULT_THINKING_TOKENS: u32 = 8_000;
/// The smallest thinking budget the API accepts.
pub const MIN_THINKING_TOKENS: u32 = 1_024;

/// The context window of `model` in tokens, by model family.
///
/// Claude models have 200k (a `[1m]` suffix or `-1m` marks the one-million-token beta);
/// OpenAI-compatible models by family; an unknown model gets 200k, the most common.
pub fn model_window(model: &str) -> u64 {
    let m = model.to_ascii_lowercase();
    if m.contains("[1m]") || m.ends_with("-1m") || m.starts_with("gpt-4.1") {
        return 1_000_000;
    }
    if m.starts_with("gpt-4o") || m.starts_with("gpt-4-turbo") {
        return 128_000;
    }
    if m.starts_with("gpt-5") {
        return 400_000;
    }
    if m.starts_with("gpt-4") {
        return 8_192;
    }
    if m.starts_with("gpt-3.5") {
        return 16_385;
    }
    200_000
}

/// The window for `model` with the settings' `contextWindow` override.
pub fn window(settings: &Settings, model: &str) -> u64 {
    settings
        .extra
        .get("contextWindow")
        .and_then(Value::as_u64)
        .filter(|w| *w > 0)
        .unwrap_or_else(|| model_window(model))
}

/// The context size a response reports (input + cache read + cache creation + output).
pub fn usage_tokens(usage: &Usage) -> u64 {
    usage.input_tokens
        + usage.cache_read_input_tokens.unwrap_or(0)
        + usage.cache_creation_input_tokens.unwrap_or(0)
        + usage.output_tokens
}

/// The token count at which automatic compaction starts, `None` when it is off.
pub fn auto_compact_at(
    settings: &Settings,
    window: u64,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<u64> {
    let disabled =
        |name: &str| env(name).is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
    if disabled("DISABLE_AUTO_COMPACT") || disabled("STRATA_DISABLE_AUTO_COMPACT") {
        return None;
    }
    if settings
        .extra
        .get("autoCompactEnabled")
        .and_then(Value::as_bool)
        == Some(false)
    {
        return None;
    }
    let share = settings
        .extra
        .get("autoCompactThreshold")
        .and_then(Value::as_f64)
        .map(|t| if t > 1.0 { t / 100.0 } else { t })
        .filter(|t| *t > 0.0 && *t <= 1.0)
        .unwrap_or(DEFAULT_THRESHOLD);
    Some((window as f64 * share) as u64)
}

/// The thinking budget from the settings (`maxThinkingTokens`), when set.
pub fn settings_thinking_tokens(settings: &Settings) -> Option<u32> {
    settings
        .extra
        .get("maxThinkingTokens")
        .and_then(Value::as_u64)
        .map(|t| t.min(u64::from(u32::MAX)) as u32)
}

/// A rough token count of `text` (four characters a token: what is used between exact
/// counts and for the per-category breakdown).
pub fn estimate_text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// A rough token count of `message`.
pub fn estimate_message(message: &Message) -> u64 {
    match &message.content {
        MessageContent::Text(t) => estimate_text(t),
        MessageContent::Blocks(blocks) => blocks.iter().map(estimate_block).sum(),
    }
}

fn estimate_block(block: &ContentBlock) -> u64 {
    match block {
        ContentBlock::Text(t) => estimate_text(&t.text),
        ContentBlock::ToolUse(u) => estimate_text(&u.input.to_string()) + 10,
        other => serde_json::to_string(other)
            .map(|s| estimate_text(&s))
            .unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn settings(json: Value) -> Settings {
        let mut s = Settings::default();
        for (k, v) in json.as_object().unwrap() {
            s.extra.insert(k.clone(), v.clone());
        }
        s
    }

    #[test]
    fn window_per_model_family_with_settings_override() {
        assert_eq!(model_window("claude-sonnet-4-5"), 200_000);
        assert_eq!(model_window("claude-sonnet-4-5[1m]"), 1_000_000);
        assert_eq!(model_window("gpt-4o-mini"), 128_000);
        let s = settings(serde_json::json!({"contextWindow": 100000}));
        assert_eq!(window(&s, "claude-opus-4-1"), 100_000);
        assert_eq!(window(&Settings::default(), "claude-opus-4-1"), 200_000);
    }

    #[test]
    fn auto_compact_threshold_default_setting_and_env_switch() {
        let none = |_: &str| None;
        assert_eq!(
            auto_compact_at(&Settings::default(), 100_000, &none),
            Some(80_000)
        );
        let pct = settings(serde_json::json!({"autoCompactThreshold": 50}));
        assert_eq!(auto_compact_at(&pct, 100_000, &none), Some(50_000));
        let frac = settings(serde_json::json!({"autoCompactThreshold": 0.9}));
        assert_eq!(auto_compact_at(&frac, 100_000, &none), Some(90_000));
        let off = settings(serde_json::json!({"autoCompactEnabled": false}));
        assert_eq!(auto_compact_at(&off, 100_000, &none), None);
        let env = |k: &str| (k == "DISABLE_AUTO_COMPACT").then(|| "1".to_owned());
        assert_eq!(auto_compact_at(&Settings::default(), 100_000, &env), None);
    }

    #[test]
    fn context_size_counts_input_cache_and_output() {
        let usage = Usage {
            input_tokens: 10,
            cache_read_input_tokens: Some(1000),
            cache_creation_input_tokens: Some(200),
            output_tokens: 50,
            ..Usage::default()
        };
        assert_eq!(usage_tokens(&usage), 1260);
    }
}
