//! The settings schema: known keys typed, unknown keys kept as-is and in order.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use strata_protocol::permission::ExternalPermissionMode;
use strata_protocol::settings::{DisableBypassPermissionsMode, Settings};

/// A file mixing every known key with unknown ones, at both levels, in a deliberate
/// (non-alphabetical, interleaved) order.
const FULL: &str = r#"{
  "zUnknownFirst": {"nested": [1, 2, {"deep": null}]},
  "permissions": {
    "futureRuleKind": ["x"],
    "allow": ["Bash(npm test:*)", "Read"],
    "deny": ["WebFetch"],
    "ask": ["Bash(git push:*)"],
    "defaultMode": "acceptEdits",
    "disableBypassPermissionsMode": "disable",
    "additionalDirectories": ["../shared"],
    "anotherUnknown": true
  },
  "model": "opus",
  "env": {"ZED": "1", "ALPHA": "two"},
  "apiKeyHelper": "~/bin/key.sh",
  "statusLine": {"type": "command", "command": "echo hi"},
  "cleanupPeriodDays": 30,
  "alwaysThinkingEnabled": true,
  "fastMode": false,
  "aaLast": 1.5
}"#;

#[test]
fn settings_round_trip_keeps_unknown_keys_values_and_order() {
    let s: Settings = serde_json::from_str(FULL).unwrap();
    let written = serde_json::to_string_pretty(&s).unwrap();
    // Same meaning...
    let a: Value = serde_json::from_str(FULL).unwrap();
    let b: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(a, b);
    // ...and the same key order at every level (preserve_order makes Value ordered).
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    // A second trip is a fixed point.
    let again: Settings = serde_json::from_str(&written).unwrap();
    assert_eq!(again, s);
    assert_eq!(serde_json::to_string_pretty(&again).unwrap(), written);
}

#[test]
fn settings_known_keys_are_typed() {
    let s: Settings = serde_json::from_str(FULL).unwrap();
    assert_eq!(s.model.as_deref(), Some("opus"));
    let p = s.permissions.as_ref().unwrap();
    assert_eq!(p.allow.as_deref().unwrap(), ["Bash(npm test:*)", "Read"]);
    assert_eq!(p.deny.as_deref().unwrap(), ["WebFetch"]);
    assert_eq!(p.ask.as_deref().unwrap(), ["Bash(git push:*)"]);
    assert_eq!(p.default_mode, Some(ExternalPermissionMode::AcceptEdits));
    assert_eq!(
        p.disable_bypass_permissions_mode,
        Some(DisableBypassPermissionsMode::Disable)
    );
    assert_eq!(p.additional_directories.as_deref().unwrap(), ["../shared"]);
    assert_eq!(
        p.extra.keys().collect::<Vec<_>>(),
        ["futureRuleKind", "anotherUnknown"]
    );
    let env = s.env.as_ref().unwrap();
    assert_eq!(env.keys().collect::<Vec<_>>(), ["ZED", "ALPHA"]);
    assert_eq!(s.api_key_helper.as_deref(), Some("~/bin/key.sh"));
    assert_eq!(s.cleanup_period_days, Some(30));
    assert_eq!(s.always_thinking_enabled, Some(true));
    assert_eq!(s.fast_mode, Some(false));
    assert_eq!(
        s.extra.keys().collect::<Vec<_>>(),
        ["zUnknownFirst", "statusLine", "aaLast"]
    );
    assert!(s.bypass_permissions_disabled());
}

#[test]
fn keys_set_after_reading_go_last_and_cleared_keys_disappear() {
    let mut s: Settings = serde_json::from_str(r#"{"b":1,"model":"opus","a":2}"#).unwrap();
    s.model = None;
    s.fast_mode = Some(true);
    s.extra.insert("c".into(), json!(3));
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        r#"{"b":1,"a":2,"fastMode":true,"c":3}"#
    );
}

#[test]
fn key_order_does_not_affect_equality() {
    let a: Settings = serde_json::from_str(r#"{"model":"x","q":1}"#).unwrap();
    let b: Settings = serde_json::from_str(r#"{"q":1,"model":"x"}"#).unwrap();
    assert_eq!(a, b);
}

#[test]
fn manual_default_mode_reads_as_default() {
    let s: Settings = serde_json::from_str(r#"{"permissions":{"defaultMode":"manual"}}"#).unwrap();
    assert_eq!(s.default_mode(), Some(ExternalPermissionMode::Default));
}

#[test]
fn invalid_known_values_fail_at_their_position() {
    let cases = [
        (
            "{\n  \"permissions\": {\n    \"defaultMode\": \"yolo\"\n  }\n}",
            "unknown permission mode \"yolo\"",
            3,
        ),
        (
            "{\"permissions\":{\"disableBypassPermissionsMode\":true}}",
            "expected",
            1,
        ),
        (
            "{\n\"env\": {\"PORT\": 8080}}",
            "invalid type: integer `8080`, expected a string",
            2,
        ),
        ("{\"cleanupPeriodDays\": -1}", "invalid value", 1),
        ("{\"model\": 3}", "expected a string", 1),
        ("[1]", "expected a settings object", 1),
    ];
    for (text, want, line) in cases {
        let err = serde_json::from_str::<Settings>(text).unwrap_err();
        assert!(err.to_string().contains(want), "{text}: {err}");
        assert_eq!(err.line(), line, "{text}: {err}");
    }
}

#[test]
fn null_known_values_read_as_absent() {
    let s: Settings = serde_json::from_str(r#"{"model":null,"permissions":null}"#).unwrap();
    assert_eq!(s, Settings::default());
}

/// Issue 16 (secrets): `credentialEnvVars` names extra credential variables; it reads as
/// a list of strings, survives a round trip in place, and a wrong shape fails at its value.
#[test]
fn credential_env_vars_round_trip_in_place_and_wrong_shapes_fail_at_the_value() {
    let text = r#"{"a":1,"credentialEnvVars":["GITHUB_TOKEN","MY_SECRET"],"model":"x"}"#;
    let s: Settings = serde_json::from_str(text).unwrap();
    assert_eq!(
        s.credential_env_vars.as_deref().unwrap(),
        ["GITHUB_TOKEN", "MY_SECRET"]
    );
    assert!(
        s.extra.get("credentialEnvVars").is_none(),
        "typed, not extra"
    );
    assert_eq!(serde_json::to_string(&s).unwrap(), text);
    assert!(strata_protocol::settings::expects_string_array(&[
        "credentialEnvVars"
    ]));
    for (bad, want) in [
        (
            "{\n\"credentialEnvVars\": \"GITHUB_TOKEN\"}",
            "expected a sequence",
        ),
        ("{\n\"credentialEnvVars\": [1]}", "expected a string"),
    ] {
        let err = serde_json::from_str::<Settings>(bad).unwrap_err();
        assert!(err.to_string().contains(want), "{bad}: {err}");
        assert_eq!(err.line(), 2, "{bad}: {err}");
    }
}
