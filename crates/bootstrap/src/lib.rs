//! strata-bootstrap: the process-wide bootstrap state (SPEC.md BS-1 … BS-7).
//!
//! # Why this crate exists
//!
//! strata keeps its state in two layers (SPEC.md "Why two layers"). The *app state* drives
//! the UI through subscriptions. This crate holds the other layer: infrastructure that exists
//! before any UI, is read from hundreds of places, is updated many times a second and never
//! drives a redraw — the session id and working directory, cost and token counters,
//! telemetry counters, request tracking, a few session-wide flags and caches.
//!
//! # What it owns, and the rules
//!
//! - [`Bootstrap`] holds every domain of BS-2. It is reached only through functions —
//!   getters, setters and accumulators — and never hands out its mutable insides (BS-1).
//!   Counters are atomics; everything else sits behind short locks that no callback ever
//!   runs under.
//! - [`global()`] is the one process-wide instance, created lazily; [`Bootstrap::new`] makes
//!   private instances so tests run in parallel without sharing counters.
//! - Setters normalise and may have effects (BS-3): [`Bootstrap::set_cwd`] stores the
//!   resolved NFC path, bumps the settings-cache epoch and announces the change.
//! - Accumulators update related fields in one call (BS-4): [`Bootstrap::add_cost`],
//!   [`Bootstrap::add_tool_duration`].
//! - [`Bootstrap::switch_session`] and [`Bootstrap::regenerate_session_id`] handle session
//!   lineage and notify subscribers (BS-5).
//! - The main-loop model override is a mirror of app state, written only by the change hook
//!   (BS-7, FX-2).
//!
//! This crate is a leaf: it depends on no crate of ours (not even `strata-store`), which is
//! why it carries its own small listener facility (`events`).
//!
//! ```
//! use std::path::Path;
//! use std::time::Duration;
//! use strata_bootstrap::{ApiDuration, Bootstrap, Usage};
//!
//! let state = Bootstrap::new(Path::new("/"));
//! state.add_cost(0.25, "sonnet", Usage { output_tokens: 10, ..Usage::default() },
//!                ApiDuration::single(Duration::from_secs(2)));
//! state.add_tool_duration(Duration::from_millis(15));
//! assert_eq!(state.total_cost_usd(), 0.25);
//! assert_eq!(state.turn_stats().tool_count, 1);
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Mutex, OnceLock, RwLock};

mod caches;
mod config;
mod cost;
mod events;
mod flags;
mod identity;
mod sync;
mod telemetry;

pub use caches::{ERROR_LOG_CAPACITY, InvokedSkill, LoggedError};
pub use config::DEFAULT_CLIENT_TYPE;
pub use cost::{ApiDuration, CostSummary, ModelUsage, RestoreError, TurnStats, Usage};
pub use events::{CwdChanged, MAX_EVENTS_PER_DISPATCH, SessionSwitched, Subscription, SwitchCause};
pub use flags::{PromptCacheLatch, SessionFlag};
pub use identity::normalize_path;
pub use telemetry::Counter;
/// The session id type, re-exported so callers need not depend on `uuid` directly.
pub use uuid::Uuid;

/// The process-wide bootstrap state (BS-1, BS-2).
///
/// # Adding state here is deliberately hard (BS-6)
///
/// Everything in this struct is global to the process, outlives every session switch unless
/// explicitly reset, and is invisible to the UI's change tracking. Before adding a field, the
/// change must state in the field's docs, and its review must accept:
///
/// 1. **why it cannot live in app state** (it must not drive a redraw, and it is needed
///    before the app store exists or where the store is out of reach);
/// 2. **why it cannot be an argument or part of a tool-use context** (a value one caller
///    needs belongs in that caller's parameters, and sub-agents need their own copy, SA-*);
/// 3. **who writes it and who reads it** (one writer is the norm; several need a reason);
/// 4. **what happens to it on session switch, regenerate and resume** (BS-5, SP-4);
/// 5. **why its access is cheap and safe from many threads** (an atomic or a short lock,
///    never a lock held across I/O or a callback).
///
/// If any answer is weak, the value belongs somewhere else. Expose new state through
/// getters, setters and accumulators only, never by handing out the mutable value (BS-1).
pub struct Bootstrap {
    /// Session identity: ids, cwd, original cwd, project root. One lock: read together.
    identity: RwLock<identity::Identity>,
    /// Bumped whenever the settings cache must be discarded (BS-3).
    settings_epoch: AtomicU64,
    /// Cost, durations, lines, usage by model, per-turn counters (BS-4).
    cost: cost::CostState,
    /// Telemetry counters.
    telemetry: telemetry::Telemetry,
    /// Model and configuration facts (BS-7 mirror included).
    config: config::ConfigState,
    /// Last request, request id and completion time.
    api: Mutex<config::ApiTracking>,
    /// [`SessionFlag`] bits.
    session_flags: AtomicU32,
    /// [`PromptCacheLatch`] bits and the expected-miss flag.
    prompt_cache: flags::PromptCache,
    /// System prompt sections, plan slugs, invoked skills, agent colours.
    caches: caches::Caches,
    /// The capped in-memory error log.
    errors: caches::ErrorLog,
    /// Cwd-changed and session-switched listeners and their delivery queue.
    events: events::Hub,
}

impl Bootstrap {
    /// A fresh state whose cwd, original cwd and project root are `cwd` in its stored form
    /// ([`normalize_path`]), with a new UUID v4 session id and zeroed counters. Use it for
    /// tests and embedders that want an instance of their own; the program uses [`global()`].
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_bootstrap::Bootstrap;
    ///
    /// let a = Bootstrap::new(Path::new("/"));
    /// let b = Bootstrap::new(Path::new("/"));
    /// a.add_lines_changed(3, 1);
    /// assert_eq!(b.lines_added(), 0); // instances share nothing
    /// assert_ne!(a.session_id(), b.session_id());
    /// assert_eq!(a.session_id().get_version_num(), 4);
    /// ```
    pub fn new(cwd: &Path) -> Self {
        Self {
            identity: RwLock::new(identity::Identity::new(cwd)),
            settings_epoch: AtomicU64::new(0),
            cost: cost::CostState::new(),
            telemetry: telemetry::Telemetry::new(),
            config: config::ConfigState::new(),
            api: Mutex::new(config::ApiTracking::default()),
            session_flags: AtomicU32::new(0),
            prompt_cache: flags::PromptCache::new(),
            caches: caches::Caches::default(),
            errors: caches::ErrorLog::default(),
            events: events::Hub::new(),
        }
    }
}

impl std::fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (cwd_listeners, session_listeners) = self.events.listener_counts();
        f.debug_struct("Bootstrap")
            .field("session_id", &self.session_id())
            .field("cwd", &self.cwd())
            .field("total_cost_usd", &self.total_cost_usd())
            .field("cwd_listeners", &cwd_listeners)
            .field("session_listeners", &session_listeners)
            .finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<Bootstrap> = OnceLock::new();

/// The process-wide instance (BS-1), created on first use from the process's current
/// directory. If the process has no readable current directory, the cwd is `.` and the
/// problem is recorded in the error log.
///
/// The binary calls [`init_global`] early to choose the directory explicitly; libraries and
/// tools call `global()`.
///
/// ```
/// let id = strata_bootstrap::global().session_id();
/// assert_eq!(strata_bootstrap::global().session_id(), id); // one instance per process
/// ```
pub fn global() -> &'static Bootstrap {
    GLOBAL.get_or_init(|| match std::env::current_dir() {
        Ok(cwd) => Bootstrap::new(&cwd),
        Err(err) => {
            let state = Bootstrap::new(&PathBuf::from("."));
            state.log_error(format!(
                "could not read the process's current directory ({err}); using \".\" as cwd"
            ));
            state
        }
    })
}

/// [`init_global`] was called after the process-wide instance already existed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the process-wide bootstrap state already exists (something called global() or \
     init_global() first); call init_global() before any other use"
)]
pub struct AlreadyInitialized;

/// Creates the process-wide instance with `cwd` (see [`Bootstrap::new`]). Fails if it
/// already exists, because silently keeping a different cwd would be worse.
pub fn init_global(cwd: &Path) -> Result<&'static Bootstrap, AlreadyInitialized> {
    let mut created = false;
    let state = GLOBAL.get_or_init(|| {
        created = true;
        Bootstrap::new(cwd)
    });
    if created {
        Ok(state)
    } else {
        Err(AlreadyInitialized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn bs1_state_is_shareable_across_threads() {
        assert_send_sync::<Bootstrap>();
        assert_send_sync::<Subscription>();
    }

    #[test]
    fn bs1_global_is_one_instance_and_cannot_be_reinitialised() {
        let first = global();
        assert!(std::ptr::eq(first, global()));
        assert!(matches!(
            init_global(Path::new("/")),
            Err(AlreadyInitialized)
        ));
    }

    #[test]
    fn bs1_private_instances_are_independent() {
        let a = Bootstrap::new(Path::new("/"));
        let b = Bootstrap::new(Path::new("/"));
        a.add_cost(
            1.5,
            "m",
            Usage::default(),
            ApiDuration::single(std::time::Duration::from_secs(1)),
        );
        a.add_tool_duration(std::time::Duration::from_secs(1));
        a.set_session_flag(SessionFlag::TrustAccepted, true);
        a.log_error("only in a");
        a.set_cwd(Path::new("/no/such/place"));
        assert_eq!(b.total_cost_usd(), 0.0);
        assert_eq!(b.turn_stats(), TurnStats::default());
        assert!(!b.session_flag(SessionFlag::TrustAccepted));
        assert!(b.errors().is_empty());
        assert_eq!(&*b.cwd(), normalize_path(Path::new("/")).as_path());
        assert_ne!(a.session_id(), b.session_id());
    }
}
