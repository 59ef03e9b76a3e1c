//! Permission modes as they appear in JSON: names, the `manual` alias, clear errors for
//! unknown names, and the external mapping (FX-1).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use strata_protocol::permission::{ExternalPermissionMode, PermissionMode};

#[test]
fn permission_modes_round_trip_through_json_by_name() {
    for mode in PermissionMode::ALL {
        let json = serde_json::to_string(&mode).unwrap();
        assert_eq!(json, format!("\"{}\"", mode.as_str()));
        assert_eq!(serde_json::from_str::<PermissionMode>(&json).unwrap(), mode);
    }
    for mode in ExternalPermissionMode::ALL {
        let json = serde_json::to_string(&mode).unwrap();
        assert_eq!(
            serde_json::from_str::<ExternalPermissionMode>(&json).unwrap(),
            mode
        );
    }
}

#[test]
fn reference_transcript_mode_names_parse() {
    // The names the reference agent writes into `permissionMode` fields.
    for name in [
        "default",
        "acceptEdits",
        "plan",
        "bypassPermissions",
        "dontAsk",
    ] {
        let m: ExternalPermissionMode = serde_json::from_str(&format!("\"{name}\"")).unwrap();
        assert_eq!(m.as_str(), name);
    }
}

#[test]
fn manual_alias_reads_as_default_and_writes_as_default() {
    let m: PermissionMode = serde_json::from_str("\"manual\"").unwrap();
    assert_eq!(m, PermissionMode::Default);
    assert_eq!(serde_json::to_string(&m).unwrap(), "\"default\"");
}

#[test]
fn unknown_mode_in_json_names_the_value_the_valid_modes_and_the_position() {
    let err = serde_json::from_str::<PermissionMode>("\n  \"yolo\"").unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("unknown permission mode \"yolo\"; expected one of: default, acceptEdits, plan, bypassPermissions, dontAsk"), "{msg}");
    assert_eq!((err.line(), err.column()), (2, 8));
}

#[test]
fn fx1_internal_modes_are_rejected_where_only_public_modes_are_allowed() {
    for name in ["auto", "bubble"] {
        let err =
            serde_json::from_str::<ExternalPermissionMode>(&format!("\"{name}\"")).unwrap_err();
        assert!(err.to_string().contains("is internal"), "{err}");
        let internal: PermissionMode = serde_json::from_str(&format!("\"{name}\"")).unwrap();
        assert_eq!(internal.external(), ExternalPermissionMode::Default);
    }
}
