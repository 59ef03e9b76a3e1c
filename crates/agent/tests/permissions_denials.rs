//! Denial tracking: consecutive and total denials are counted; after 3 in a row or 20
//! in a session the denial result tells the model to stop retrying and ask the user;
//! an allowed call breaks the run but not the total.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use strata_agent::permissions::{
    DenialTracking, MAX_CONSECUTIVE_DENIALS, MAX_TOTAL_DENIALS, denial_output,
};

const STOP: &str = "Stop retrying denied actions";

#[test]
fn three_consecutive_denials_tell_the_model_to_stop() {
    assert_eq!(MAX_CONSECUTIVE_DENIALS, 3);
    let mut t = DenialTracking::default();
    for n in 1..=2 {
        t = t.record_denial();
        assert!(!t.limit_reached(), "after {n}");
        assert_eq!(t.denial_message("Edit was denied."), "Edit was denied.");
    }
    t = t.record_denial();
    assert!(t.limit_reached());
    let msg = t.denial_message("Edit was denied.");
    assert!(msg.starts_with("Edit was denied."), "{msg}");
    assert!(
        msg.contains("3 tool calls in a row have been denied"),
        "{msg}"
    );
    assert!(
        msg.contains(STOP) && msg.contains("ask how they want to proceed"),
        "{msg}"
    );
}

#[test]
fn an_allowed_call_resets_the_run_but_not_the_total() {
    let t = DenialTracking::default()
        .record_denial()
        .record_denial()
        .record_allowed()
        .record_denial();
    assert_eq!(
        t,
        DenialTracking {
            consecutive: 1,
            total: 3
        }
    );
    assert!(!t.limit_reached());
}

#[test]
fn twenty_denials_in_a_session_tell_the_model_to_stop() {
    assert_eq!(MAX_TOTAL_DENIALS, 20);
    // Nine pairs of denials, each followed by an allowed call: never three in a row.
    let mut t = DenialTracking::default();
    for _ in 0..9 {
        t = t.record_denial().record_denial().record_allowed();
        assert!(!t.limit_reached());
    }
    assert_eq!(t.total, 18);
    t = t.record_denial();
    assert!(!t.limit_reached());
    t = t.record_denial();
    assert_eq!(
        t,
        DenialTracking {
            consecutive: 2,
            total: 20
        }
    );
    assert!(t.limit_reached());
    let out = denial_output("Bash was denied.", t);
    assert!(out.is_error);
    assert!(
        out.content
            .contains("20 tool calls have been denied in this session"),
        "{}",
        out.content
    );
    assert!(out.content.contains(STOP));
}

#[test]
fn counters_saturate_instead_of_overflowing() {
    let t = DenialTracking {
        consecutive: u32::MAX,
        total: u32::MAX,
    }
    .record_denial();
    assert_eq!(t.total, u32::MAX);
    assert!(t.limit_reached());
}
