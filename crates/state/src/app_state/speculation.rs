//! The speculation domain (AS-1): running the next turn before the user confirms it.
//!
//! When a prompt suggestion is shown, strata may start answering it in the background;
//! if the user accepts the suggestion, the finished work is used at once and the time it
//! saved is counted. The state machine is data ([`Speculation`]); the way to abort a
//! running speculation is a runtime handle ([`Runtime::speculation`](crate::Runtime)).
//! Filled by the speculation engine (the agent crate). Not persisted (SP-3: it is idle
//! after resume).

use std::sync::Arc;

use smol_str::SmolStr;

use super::Messages;

/// The speculation state machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Speculation {
    /// Nothing is being speculated.
    #[default]
    Idle,
    /// A suggested prompt is being answered in the background.
    Active(Arc<ActiveSpeculation>),
}

impl Speculation {
    /// True when a speculation is running.
    pub fn is_active(&self) -> bool {
        matches!(self, Self::Active(_))
    }
}

/// A running speculation.
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveSpeculation {
    /// Its id.
    pub id: SmolStr,
    /// The suggested prompt being answered.
    pub prompt: Arc<str>,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// The messages produced so far.
    pub messages: Messages,
    /// Where it stopped, once it did.
    pub boundary: Option<SpeculationBoundary>,
    /// Tool uses it made.
    pub tool_use_count: u32,
    /// It was started from a previous speculation's result (pipelined).
    pub pipelined: bool,
}

/// Why a speculation stopped before being accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpeculationBoundary {
    /// The model finished its answer.
    Complete {
        /// When.
        at_ms: u64,
    },
    /// The next step needs a permission it does not have; it waits at that tool use.
    NeedsPermission {
        /// The tool it wants to use.
        tool_name: SmolStr,
        /// When it stopped.
        at_ms: u64,
    },
    /// It would edit a file; speculations never write.
    WouldEdit {
        /// The file.
        path: Arc<str>,
        /// When it stopped.
        at_ms: u64,
    },
}

/// The suggested next prompt shown greyed out in the input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptSuggestion {
    /// Suggestions are on for this session (from configuration, AS-5).
    pub enabled: bool,
    /// The suggestion shown, if any.
    pub text: Option<Arc<str>>,
    /// The id of the prompt it was generated for.
    pub prompt_id: Option<SmolStr>,
    /// When it was shown, in milliseconds since the Unix epoch.
    pub shown_at_ms: Option<u64>,
    /// When the user accepted it.
    pub accepted_at_ms: Option<u64>,
}
