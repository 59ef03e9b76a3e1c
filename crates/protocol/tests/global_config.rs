//! The global config file: view flags and per-project cost slots, unknown keys kept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use strata_protocol::global_config::{GlobalConfig, ModelUsage};

/// Shaped like the reference agent's `config.json`: many keys strata does not know.
const SAMPLE: &str = r#"{
  "numStartups": 42,
  "installMethod": "native",
  "verbose": false,
  "tipsHistory": {"new-user-warmup": 1},
  "showExpandedTodos": true,
  "projects": {
    "/home/me/proj": {
      "allowedTools": [],
      "lastCost": 0.1234,
      "lastAPIDuration": 5120,
      "lastToolDuration": 300,
      "lastDuration": 60000,
      "lastLinesAdded": 10,
      "lastLinesRemoved": 2,
      "lastTotalInputTokens": 1000,
      "lastTotalOutputTokens": 200,
      "lastTotalCacheCreationInputTokens": 30,
      "lastTotalCacheReadInputTokens": 400,
      "lastModelUsage": {
        "claude-sonnet-4-5": {"inputTokens": 1000, "outputTokens": 200, "cacheReadInputTokens": 400, "cacheCreationInputTokens": 30, "webSearchRequests": 0, "costUSD": 0.1234, "contextWindow": 200000}
      },
      "lastSessionId": "4c2ddfdc-b619-4525-8d03-1950fb1b0257",
      "hasTrustDialogAccepted": true
    },
    "/tmp/other": {"history": []}
  },
  "showSpinnerTree": false,
  "fileCheckpointingEnabled": true,
  "userID": "abc"
}"#;

/// The value with every number as an f64, and its keys in order (as a string), so that
/// `5120` and `5120.0` compare equal but a moved key does not.
fn normalised(v: &Value) -> String {
    fn walk(v: &Value) -> Value {
        match v {
            Value::Number(n) => serde_json::json!(n.as_f64()),
            Value::Array(a) => Value::Array(a.iter().map(walk).collect()),
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), walk(v))).collect())
            }
            other => other.clone(),
        }
    }
    walk(v).to_string()
}

#[test]
fn global_config_round_trip_keeps_unknown_keys_in_order_at_every_level() {
    let cfg: GlobalConfig = serde_json::from_str(SAMPLE).unwrap();
    let written = serde_json::to_string(&cfg).unwrap();
    // Durations are f64 (the reference writes JS numbers): `5120` comes back as `5120.0`,
    // the same JSON number.
    let a: Value = serde_json::from_str(SAMPLE).unwrap();
    let b: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(normalised(&a), normalised(&b));
    let back: GlobalConfig = serde_json::from_str(&written).unwrap();
    assert_eq!(back, cfg);
    assert_eq!(serde_json::to_string(&back).unwrap(), written);
}

#[test]
fn global_config_known_keys_are_typed() {
    let cfg: GlobalConfig = serde_json::from_str(SAMPLE).unwrap();
    assert_eq!(cfg.verbose, Some(false));
    assert_eq!(cfg.show_expanded_todos, Some(true));
    assert_eq!(cfg.show_spinner_tree, Some(false));
    assert_eq!(cfg.file_checkpointing_enabled, Some(true));
    assert_eq!(
        cfg.extra.keys().collect::<Vec<_>>(),
        ["numStartups", "installMethod", "tipsHistory", "userID"]
    );
    let p = cfg.project("/home/me/proj").unwrap();
    assert_eq!(p.last_cost, Some(0.1234));
    assert_eq!(p.last_api_duration, Some(5120.0));
    assert_eq!(p.last_tool_duration, Some(300.0));
    assert_eq!(p.last_duration, Some(60000.0));
    assert_eq!(
        (p.last_lines_added, p.last_lines_removed),
        (Some(10), Some(2))
    );
    assert_eq!(p.last_total_input_tokens, Some(1000));
    assert_eq!(p.last_total_output_tokens, Some(200));
    assert_eq!(p.last_total_cache_creation_input_tokens, Some(30));
    assert_eq!(p.last_total_cache_read_input_tokens, Some(400));
    assert_eq!(
        p.last_session_id.as_deref(),
        Some("4c2ddfdc-b619-4525-8d03-1950fb1b0257")
    );
    assert_eq!(
        p.extra.keys().collect::<Vec<_>>(),
        ["allowedTools", "hasTrustDialogAccepted"]
    );
    let usage: &ModelUsage = &p.last_model_usage.as_ref().unwrap()["claude-sonnet-4-5"];
    assert_eq!(usage.input_tokens, Some(1000));
    assert_eq!(usage.cost_usd, Some(0.1234));
    assert_eq!(usage.extra["contextWindow"], 200000);
    assert!(
        cfg.project("/tmp/other")
            .unwrap()
            .extra
            .contains_key("history")
    );
}

#[test]
fn sp4_cost_slot_written_into_a_new_project_keeps_other_projects() {
    let mut cfg: GlobalConfig = serde_json::from_str(SAMPLE).unwrap();
    let slot = cfg.project_mut("/new");
    slot.last_cost = Some(2.5);
    slot.last_session_id = Some("s".into());
    let v: Value = serde_json::to_value(&cfg).unwrap();
    let projects = v["projects"].as_object().unwrap();
    assert_eq!(
        projects.keys().collect::<Vec<_>>(),
        ["/home/me/proj", "/tmp/other", "/new"]
    );
    assert_eq!(
        v["projects"]["/new"],
        serde_json::json!({"lastCost": 2.5, "lastSessionId": "s"})
    );
}

#[test]
fn wrong_type_for_a_flag_is_an_error_with_position() {
    let err = serde_json::from_str::<GlobalConfig>("{\n \"verbose\": \"yes\"}").unwrap_err();
    assert!(err.to_string().contains("expected a boolean"), "{err}");
    assert_eq!(err.line(), 2);
}
