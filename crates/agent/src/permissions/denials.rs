//! Denial tracking: counting refused tool calls so a model that keeps retrying is told
//! to stop and ask the user.
//!
//! A model whose call was denied often retries the same thing, or a workaround, again
//! and again; each retry costs a turn and, in interactive mode, a prompt. After
//! [`MAX_CONSECUTIVE_DENIALS`] denials in a row or [`MAX_TOTAL_DENIALS`] in a session,
//! the denial text tells the model to stop retrying and ask the user instead.
//!
//! [`DenialTracking`] is a small `Copy` value with pure transitions, so app state can
//! hold it in its permissions domain and update it functionally (ST-1); a sub-agent
//! whose state setter is a no-op keeps its own (SA-6). It depends on nothing else in
//! this crate, so it can move into the state crate unchanged if the app state needs to
//! own the type.

/// Denials in a row after which the model is told to stop retrying.
pub const MAX_CONSECUTIVE_DENIALS: u32 = 3;
/// Denials in a session after which the model is told to stop retrying.
pub const MAX_TOTAL_DENIALS: u32 = 20;

/// Denied tool calls: in a row, and in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DenialTracking {
    /// Denials since the last allowed tool call.
    pub consecutive: u32,
    /// Denials in this session.
    pub total: u32,
}

impl DenialTracking {
    /// After one more denial.
    #[must_use]
    pub const fn record_denial(self) -> Self {
        Self {
            consecutive: self.consecutive.saturating_add(1),
            total: self.total.saturating_add(1),
        }
    }

    /// After a tool call was allowed: the run of denials is broken. Returns `self`
    /// unchanged (equal) when there was no run, so an updater can report "no change".
    #[must_use]
    pub const fn record_allowed(self) -> Self {
        Self {
            consecutive: 0,
            total: self.total,
        }
    }

    /// Whether the model should be told to stop retrying.
    pub const fn limit_reached(self) -> bool {
        self.consecutive >= MAX_CONSECUTIVE_DENIALS || self.total >= MAX_TOTAL_DENIALS
    }

    /// The tool result text for a denial with `reason`, given the counters *after*
    /// [`Self::record_denial`]: the reason, plus the instruction to stop once the limit
    /// is reached.
    ///
    /// ```
    /// use strata_agent::permissions::DenialTracking;
    /// let t = DenialTracking::default().record_denial();
    /// assert!(!t.denial_message("denied").contains("Stop"));
    /// let t = t.record_denial().record_denial();
    /// assert!(t.denial_message("denied").contains("Stop retrying"));
    /// ```
    pub fn denial_message(self, reason: &str) -> String {
        if !self.limit_reached() {
            return reason.to_owned();
        }
        let why = if self.consecutive >= MAX_CONSECUTIVE_DENIALS {
            format!("{} tool calls in a row have been denied", self.consecutive)
        } else {
            format!("{} tool calls have been denied in this session", self.total)
        };
        format!(
            "{reason}\n\n{why}. Stop retrying denied actions and do not try to work around \
             the denials. Tell the user what you were trying to do and which permission it \
             needs, and ask how they want to proceed."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_call_resets_only_the_run() {
        let t = DenialTracking::default().record_denial().record_denial();
        assert_eq!(
            t,
            DenialTracking {
                consecutive: 2,
                total: 2
            }
        );
        let t = t.record_allowed();
        assert_eq!(
            t,
            DenialTracking {
                consecutive: 0,
                total: 2
            }
        );
        assert_eq!(t.record_allowed(), t, "no run: unchanged");
    }
}
