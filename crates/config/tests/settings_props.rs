//! Property tests: the merge rules hold for any sources, typed settings round-trip any
//! unknown keys in order, and any sequence of edits through the locked write path leaves
//! the file equal to a plain in-memory model (nothing lost, order kept).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use strata_config::{SettingsFiles, SettingsLocations, SettingsSource};
use strata_protocol::settings::Settings;

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        (0u32..5).prop_map(Value::from),
        "[a-c]{1,2}".prop_map(Value::from),
    ]
}

/// Keys from a small alphabet so that sources overlap.
fn source() -> impl Strategy<Value = Map<String, Value>> {
    let leaf = prop_oneof![
        scalar(),
        prop::collection::vec(scalar(), 0..4).prop_map(Value::Array),
    ];
    let inner = prop::collection::vec(("[xy]", leaf.clone()), 0..3)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()));
    prop::collection::vec(("u[pqr]", prop_oneof![leaf, inner]), 0..5)
        .prop_map(|kv| kv.into_iter().collect())
}

fn write(path: &std::path::Path, v: &Map<String, Value>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec(v).unwrap()).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn merge_rules_hold_for_any_sources(user in source(), project in source(), local in source()) {
        let tmp = tempfile::tempdir().unwrap();
        let l = SettingsLocations::new(&tmp.path().join("c"), &tmp.path().join("p"))
            .with_managed_dir(tmp.path().join("m"));
        write(&l.user, &user);
        write(&l.project, &project);
        write(&l.local, &local);
        let merged = SettingsFiles::new(l).load();
        prop_assert!(merged.errors.is_empty());
        let sources = [&user, &project, &local];
        for key in merged.value.keys() {
            let present: Vec<&Value> = sources.iter().filter_map(|s| s.get(key)).collect();
            let last = *present.last().unwrap();
            match (&merged.value[key], last) {
                (Value::Array(m), Value::Array(_)) => {
                    // Every element of every contributing array is there, exactly once.
                    for (i, item) in m.iter().enumerate() {
                        prop_assert!(!m[i + 1..].contains(item));
                    }
                    for s in present.iter().rev().take_while(|v| v.is_array()) {
                        for item in s.as_array().unwrap() {
                            prop_assert!(m.contains(item));
                        }
                    }
                }
                (Value::Object(_), Value::Object(_)) => {}
                (m, l) => prop_assert_eq!(m, l, "scalars: the last source wins"),
            }
        }
        // Every leaf is attributed to exactly as many sources as it has elements.
        for e in merged.entries() {
            match &e.value {
                Value::Array(items) => prop_assert_eq!(items.len(), e.from.len()),
                _ => prop_assert_eq!(e.from.len(), 1),
            }
        }
    }

    #[test]
    fn typed_settings_round_trip_unknown_keys_in_order(
        unknown in prop::collection::vec(("z[a-e]{1,3}", scalar()), 0..6),
        model_at in 0usize..7,
    ) {
        let mut obj = Map::new();
        for (k, v) in unknown {
            obj.insert(k, v);
        }
        let mut entries: Vec<(String, Value)> = obj.into_iter().collect();
        let at = model_at.min(entries.len());
        entries.insert(at, ("model".to_owned(), json!("opus")));
        let original = Value::Object(entries.into_iter().collect());
        let text = original.to_string();
        let s: Settings = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(serde_json::to_string(&s).unwrap(), text);
    }

    #[test]
    fn any_edit_sequence_matches_a_model(
        ops in prop::collection::vec((0usize..4, proptest::option::of(scalar())), 1..12),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let files = SettingsFiles::new(
            SettingsLocations::new(&tmp.path().join("c"), &tmp.path().join("p"))
                .with_managed_dir(tmp.path().join("m")),
        );
        let keys = ["ka", "kb", "kc", "kd"];
        let mut model = Map::new();
        for (k, v) in ops {
            let key = keys[k];
            let up = files.set_value(SettingsSource::Local, &[key], v.clone()).unwrap();
            let before = model.clone();
            match v {
                Some(v) => { model.insert(key.to_owned(), v); }
                None => { model.shift_remove(key); }
            }
            prop_assert_eq!(up.written, model != before, "written iff the model changed");
            let on_disk = files.read_source(SettingsSource::Local).unwrap().unwrap_or_default();
            // Same keys, same order, same values.
            prop_assert_eq!(Value::Object(on_disk).to_string(), Value::Object(model.clone()).to_string());
        }
    }
}
