//! The context-window domain: how full the conversation's context is (issue 13).
//!
//! The query loop sets it after every response (the last request's input + cache read +
//! cache creation + output tokens, as the reference agent counts it) and after a
//! compaction; the footer's percentage and `/context` read it through
//! [`context_percent`].

/// How much of the model's context window the conversation uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContextUsage {
    /// Tokens of the last request and its response; `0` before the first response (and
    /// right after a compaction, until the next one).
    pub tokens: u64,
    /// The model's context window in tokens; `0` when not known yet.
    pub window: u64,
}

/// The percentage of the window in use (0 … 100, rounded down), `None` while the window
/// is not known.
pub fn context_percent(state: &crate::AppState) -> Option<u8> {
    let usage = state.context_usage;
    (usage.window > 0).then(|| (usage.tokens.saturating_mul(100) / usage.window).min(100) as u8)
}
