//! What the Anthropic provider knows of model names: the short aliases users type, and
//! what each model family accepts (its output limit, whether it can think).
//!
//! A request the model cannot take fails with a 400 before a single token: Claude 3.5
//! Haiku refuses `max_tokens` above 8,192 and every Claude 3 model refuses `thinking`;
//! a server that only speaks the Messages API for another model may refuse `thinking`
//! too. So the request is fitted to the model rather than sent the same for all.

use std::borrow::Cow;

/// What one model accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The most output tokens a request may ask for.
    pub(crate) max_output_tokens: u32,
    /// Whether extended thinking may be enabled.
    pub(crate) thinking: bool,
}

/// The model `name` stands for: `opus`, `sonnet` and `haiku` become the current model of
/// that family (`ANTHROPIC_DEFAULT_OPUS_MODEL`, `…_SONNET_…`, `…_HAIKU_…` override
/// them); any other name is sent as it is.
pub(crate) fn resolve_alias(name: &str) -> Cow<'_, str> {
    let (var, default) = match name {
        "opus" => ("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-4-6"),
        "sonnet" => ("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-4-5"),
        "haiku" => ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-4-5"),
        _ => return Cow::Borrowed(name),
    };
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Cow::Owned(v.trim().to_owned()),
        _ => Cow::Borrowed(default),
    }
}

/// What `model` accepts, from its family as found in the id (any provider prefix or
/// date suffix: `claude-3-5-haiku-20241022`, `us.anthropic.claude-sonnet-4-5-…`).
pub(crate) fn limits(model: &str) -> Limits {
    let m = model.to_ascii_lowercase();
    let limits = |max_output_tokens, thinking| Limits {
        max_output_tokens,
        thinking,
    };
    if !m.contains("claude") {
        // Another model behind a Messages API server: no thinking field it may refuse,
        // and a modest output limit such servers accept.
        return limits(16_384, false);
    }
    if m.contains("claude-3-7") {
        return limits(64_000, true);
    }
    if m.contains("claude-3-5") {
        return limits(8_192, false);
    }
    if m.contains("claude-3") {
        return limits(4_096, false);
    }
    // Claude 4 and later (`claude-opus-4-6`, `claude-sonnet-4-5`, `claude-haiku-4-5`).
    if let Some(at) = m.find("opus-4") {
        // Opus 4 and 4.1 (`claude-opus-4-20250514`, `claude-opus-4-1-…`, `…opus-4-0`):
        // the minor version is one or two digits; a date is not one.
        let minor: String = m[at + "opus-4".len()..]
            .strip_prefix('-')
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if minor.len() > 2 || matches!(minor.as_str(), "" | "0" | "1") {
            return limits(32_000, true);
        }
    }
    limits(64_000, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_name_the_current_model_of_their_family() {
        assert_eq!(resolve_alias("opus"), "claude-opus-4-6");
        assert_eq!(resolve_alias("sonnet"), "claude-sonnet-4-5");
        assert_eq!(resolve_alias("haiku"), "claude-haiku-4-5");
        assert_eq!(resolve_alias("claude-custom"), "claude-custom");
        assert_eq!(resolve_alias("Opus"), "Opus", "ids are case-sensitive");
    }

    #[test]
    fn limits_follow_the_family() {
        let l = |m| {
            let x = limits(m);
            (x.max_output_tokens, x.thinking)
        };
        assert_eq!(l("claude-3-5-haiku-20241022"), (8_192, false));
        assert_eq!(l("claude-3-5-sonnet-20241022"), (8_192, false));
        assert_eq!(l("claude-3-opus-20240229"), (4_096, false));
        assert_eq!(l("claude-3-haiku-20240307"), (4_096, false));
        assert_eq!(l("claude-3-7-sonnet-20250219"), (64_000, true));
        assert_eq!(l("claude-opus-4-1-20250805"), (32_000, true));
        assert_eq!(l("claude-opus-4-20250514"), (32_000, true));
        assert_eq!(l("claude-opus-4-0"), (32_000, true));
        assert_eq!(l("claude-opus-4-6"), (64_000, true));
        assert_eq!(
            l("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            (64_000, true)
        );
        assert_eq!(l("claude-haiku-4-5-20251001"), (64_000, true));
        assert_eq!(l("qwen2.5-coder"), (16_384, false));
    }
}
