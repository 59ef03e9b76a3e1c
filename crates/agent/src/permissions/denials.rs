//! Denial tracking: counting refused tool calls so a model that keeps retrying is told
//! to stop and ask the user.
//!
//! The counters are app-state data (the permissions domain holds them, and a sub-agent
//! with a no-op setter keeps its own, SA-6), so the type lives in `strata-state`; this
//! module re-exports it next to the rest of the permission machinery.

pub use strata_state::{DenialTracking, MAX_CONSECUTIVE_DENIALS, MAX_TOTAL_DENIALS};
