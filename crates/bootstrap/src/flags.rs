//! Session-wide flags and prompt-cache latches (BS-2).
//!
//! Both are bit sets in one atomic word each: reading a flag is a single load, and adding a
//! flag means adding an enum variant, which keeps the list reviewable (BS-6).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::Bootstrap;

/// A session-wide yes/no fact that code outside the app store needs (BS-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionFlag {
    /// Bypass-permissions mode may be entered in this session (the user allowed it on the
    /// command line and settings do not disable it, UI-6).
    BypassPermissionsAvailable,
    /// The session was started with permission checks bypassed; read by code that runs
    /// before the app store exists or outside it (hooks, sub-processes).
    SessionBypassPermissions,
    /// The user accepted the workspace-trust prompt for this session's directory.
    TrustAccepted,
    /// Plan mode was left at least once in this session (drives a one-time reminder).
    ExitedPlanMode,
    /// Scheduled (cron-like) tasks may run in this session.
    ScheduledTasksEnabled,
    /// Nothing of this session is written to disk (no transcript, no cost slot).
    SessionPersistenceDisabled,
}

impl SessionFlag {
    /// Every flag, in declaration order.
    pub const ALL: [SessionFlag; 6] = [
        SessionFlag::BypassPermissionsAvailable,
        SessionFlag::SessionBypassPermissions,
        SessionFlag::TrustAccepted,
        SessionFlag::ExitedPlanMode,
        SessionFlag::ScheduledTasksEnabled,
        SessionFlag::SessionPersistenceDisabled,
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// A request option that must not flip back once used in a session (BS-2).
///
/// The provider's prompt cache is keyed by the exact request prefix, including some
/// headers and options. Turning such an option off again mid-session would change the key
/// and re-bill the whole cached prefix, so once a request used it, the latch keeps it on
/// until the session changes (switch or regenerate reset all latches: a new session starts
/// a new cache prefix anyway).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptCacheLatch {
    /// The one-hour cache TTL was requested.
    OneHourTtl,
    /// The fast-mode request header was sent.
    FastModeHeader,
    /// The context-management header (server-side clearing of old tool results) was sent.
    ContextManagementHeader,
    /// Extended thinking was enabled on a request.
    ThinkingEnabled,
}

impl PromptCacheLatch {
    /// Every latch, in declaration order.
    pub const ALL: [PromptCacheLatch; 4] = [
        PromptCacheLatch::OneHourTtl,
        PromptCacheLatch::FastModeHeader,
        PromptCacheLatch::ContextManagementHeader,
        PromptCacheLatch::ThinkingEnabled,
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// Prompt-cache latches plus the one-shot "a cache miss is expected" flag.
pub(crate) struct PromptCache {
    latches: AtomicU32,
    expect_miss: AtomicBool,
}

impl PromptCache {
    pub(crate) fn new() -> Self {
        Self {
            latches: AtomicU32::new(0),
            expect_miss: AtomicBool::new(false),
        }
    }

    /// Called by session switch and regenerate: a new session starts a new cache prefix.
    pub(crate) fn reset_for_new_session(&self) {
        self.latches.store(0, Ordering::Release);
        self.expect_miss.store(true, Ordering::Release);
    }
}

/// Session flags and prompt-cache latches (BS-2).
impl Bootstrap {
    /// Whether `flag` is set.
    pub fn session_flag(&self, flag: SessionFlag) -> bool {
        self.session_flags.load(Ordering::Acquire) & flag.bit() != 0
    }

    /// Sets or clears `flag`; returns its previous value.
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_bootstrap::{Bootstrap, SessionFlag};
    ///
    /// let state = Bootstrap::new(Path::new("/"));
    /// assert!(!state.set_session_flag(SessionFlag::TrustAccepted, true));
    /// assert!(state.session_flag(SessionFlag::TrustAccepted));
    /// ```
    pub fn set_session_flag(&self, flag: SessionFlag, on: bool) -> bool {
        let previous = if on {
            self.session_flags.fetch_or(flag.bit(), Ordering::AcqRel)
        } else {
            self.session_flags.fetch_and(!flag.bit(), Ordering::AcqRel)
        };
        previous & flag.bit() != 0
    }

    /// Engages `latch` for the rest of the session; returns `true` if this call engaged it
    /// (it was off before).
    pub fn latch_prompt_cache(&self, latch: PromptCacheLatch) -> bool {
        self.prompt_cache
            .latches
            .fetch_or(latch.bit(), Ordering::AcqRel)
            & latch.bit()
            == 0
    }

    /// Whether `latch` is engaged in this session.
    pub fn prompt_cache_latched(&self, latch: PromptCacheLatch) -> bool {
        self.prompt_cache.latches.load(Ordering::Acquire) & latch.bit() != 0
    }

    /// Announces that the next request will miss the prompt cache for a known reason
    /// (compaction, model switch, new session), so the cache-break check does not report it.
    pub fn expect_prompt_cache_miss(&self) {
        self.prompt_cache.expect_miss.store(true, Ordering::Release);
    }

    /// Consumes the "miss expected" flag: returns whether it was set and clears it.
    pub fn take_expected_prompt_cache_miss(&self) -> bool {
        self.prompt_cache.expect_miss.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn bs2_session_flags_are_independent_and_report_previous_value() {
        let state = Bootstrap::new(Path::new("/"));
        for flag in SessionFlag::ALL {
            assert!(!state.session_flag(flag), "{flag:?} starts off");
        }
        assert!(!state.set_session_flag(SessionFlag::ExitedPlanMode, true));
        assert!(state.set_session_flag(SessionFlag::ExitedPlanMode, true));
        for flag in SessionFlag::ALL {
            assert_eq!(
                state.session_flag(flag),
                flag == SessionFlag::ExitedPlanMode,
                "{flag:?}"
            );
        }
        assert!(state.set_session_flag(SessionFlag::ExitedPlanMode, false));
        assert!(!state.session_flag(SessionFlag::ExitedPlanMode));
    }

    #[test]
    fn bs2_prompt_cache_latch_stays_on_until_the_session_changes() {
        let state = Bootstrap::new(Path::new("/"));
        assert!(state.latch_prompt_cache(PromptCacheLatch::OneHourTtl));
        assert!(!state.latch_prompt_cache(PromptCacheLatch::OneHourTtl));
        assert!(state.prompt_cache_latched(PromptCacheLatch::OneHourTtl));
        assert!(!state.prompt_cache_latched(PromptCacheLatch::FastModeHeader));

        state.switch_session(uuid::Uuid::new_v4(), None);
        for latch in PromptCacheLatch::ALL {
            assert!(
                !state.prompt_cache_latched(latch),
                "{latch:?} reset by switch"
            );
        }
        // A new session starts a new cache prefix: its first miss is expected.
        assert!(state.take_expected_prompt_cache_miss());
        assert!(!state.take_expected_prompt_cache_miss());
    }

    #[test]
    fn bs2_latches_survive_a_cwd_change() {
        let state = Bootstrap::new(Path::new("/"));
        state.latch_prompt_cache(PromptCacheLatch::ThinkingEnabled);
        state.set_cwd(Path::new("/no/such/dir"));
        assert!(state.prompt_cache_latched(PromptCacheLatch::ThinkingEnabled));
    }
}
