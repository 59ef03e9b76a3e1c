//! [`LongSession`]: what a session keeps across turns for long work — its system prompt
//! (built once, stable for the prompt cache), the thinking budget set at run time, and
//! how much of the conversation the last exact context count covered.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use strata_state::{AppState, ContextUsage};

use crate::context_window::{
    DEFAULT_THINKING_TOKENS, MIN_THINKING_TOKENS, auto_compact_at, estimate_message,
    settings_thinking_tokens, window,
};
use crate::prompt::SessionPrompt;
use crate::prompt::memory::nested_memory_files;
use crate::sync::lock;

/// The long-session parts of one session.
pub struct LongSession {
    /// The system prompt.
    pub prompt: SessionPrompt,
    /// `--max-thinking-tokens` or `set_max_thinking_tokens` (`Some(0)`: thinking off).
    thinking_tokens: Mutex<Option<u32>>,
    /// How many conversation messages the app state's `context_usage.tokens` counted.
    counted: Mutex<usize>,
    /// The transcript (named in the compaction summary).
    pub(crate) transcript: PathBuf,
    /// Directories below the working directory already searched for nested memory files.
    nested_dirs: Mutex<HashSet<PathBuf>>,
    /// A compaction was tried (done or failed) and no response came since: another
    /// automatic one would only summarise the summary again (or fail again).
    compaction_pending_response: Mutex<bool>,
}

impl LongSession {
    /// A session's long-session state.
    pub fn new(prompt: SessionPrompt, thinking_tokens: Option<u32>, transcript: PathBuf) -> Self {
        Self {
            prompt,
            thinking_tokens: Mutex::new(thinking_tokens),
            counted: Mutex::new(0),
            transcript,
            nested_dirs: Mutex::new(HashSet::new()),
            compaction_pending_response: Mutex::new(false),
        }
    }

    /// The memory files a tool call on `path` brings in for the first time (nested
    /// `CLAUDE.md`/`AGENTS.md`/`STRATA.md` of its directory and those above it, up to the
    /// working directory), as text to attach to the call's result; `None` when none.
    pub(crate) fn nested_memory(&self, path: &Path, cwd: &Path) -> Option<String> {
        let path = cwd.join(path);
        let (files, warnings) = nested_memory_files(&path, cwd, &mut lock(&self.nested_dirs));
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        if files.is_empty() {
            return None;
        }
        let mut out = String::new();
        for file in files {
            out.push_str(&format!(
                "\n\n<system-reminder>\nContents of {} (instructions for this directory; \
                 follow them for work here):\n\n{}\n</system-reminder>",
                file.path.display(),
                file.content.trim_end()
            ));
        }
        Some(out)
    }

    /// Sets the thinking budget (`None`: back to the setting or default; `0`: off).
    pub fn set_thinking_tokens(&self, tokens: Option<u32>) {
        *lock(&self.thinking_tokens) = tokens;
    }

    /// The thinking budget of the next request, `None` when thinking is off. An explicit
    /// budget (flag, control request) turns thinking on by itself, as in the reference;
    /// otherwise it follows the app state's `thinking_enabled` with the setting's budget.
    pub(crate) fn thinking_budget(&self, state: &AppState) -> Option<u32> {
        match *lock(&self.thinking_tokens) {
            Some(0) => None,
            Some(n) => Some(n.max(MIN_THINKING_TOKENS)),
            None => state.thinking_enabled.then(|| {
                settings_thinking_tokens(&state.settings)
                    .unwrap_or(DEFAULT_THINKING_TOKENS)
                    .max(MIN_THINKING_TOKENS)
            }),
        }
    }

    /// Records an exact count: the response to a request of `messages` messages.
    pub(crate) fn counted(&self, messages: usize) {
        *lock(&self.counted) = messages;
        *lock(&self.compaction_pending_response) = false;
    }

    /// Marks that a compaction was tried; automatic ones wait for the next response.
    /// When it replaced the conversation, nothing of it is counted exactly any more.
    pub(crate) fn compaction_tried(&self, replaced: bool) {
        if replaced {
            *lock(&self.counted) = 0;
        }
        *lock(&self.compaction_pending_response) = true;
    }

    /// Whether an automatic compaction may run now (none was tried since the last
    /// response).
    pub(crate) fn may_auto_compact(&self) -> bool {
        !*lock(&self.compaction_pending_response)
    }

    /// The context size now: the last exact count plus an estimate of the messages
    /// added since.
    pub(crate) fn current_tokens(&self, state: &AppState) -> u64 {
        let counted = (*lock(&self.counted)).min(state.messages.len());
        let added: u64 = state
            .messages
            .iter()
            .skip(counted)
            .map(|m| estimate_message(m))
            .sum();
        state.context_usage.tokens + added
    }

    /// The context usage with the window of `model`.
    pub(crate) fn usage_for(state: &AppState, model: &str, tokens: u64) -> ContextUsage {
        ContextUsage {
            tokens,
            window: window(&state.settings, model),
        }
    }

    /// The token count at which to compact automatically for `model`, `None` when off.
    pub(crate) fn threshold(state: &AppState, model: &str) -> Option<u64> {
        let env = |k: &str| state.runtime.env.var(k);
        auto_compact_at(&state.settings, window(&state.settings, model), &env)
    }
}
