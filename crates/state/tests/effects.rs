//! FX-1 … FX-6 and AS-3 through the root store with recording ports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{capture_logs, default_harness, harness};
use indexmap::IndexMap;
use proptest::prelude::*;
use strata_protocol::global_config::GlobalConfig;
use strata_protocol::permission::{ExternalPermissionMode as Ext, PermissionMode as Mode};
use strata_protocol::settings::Settings;
use strata_state::effects::{EffectError, SettingsWriter};
use strata_state::{
    AppStore, EffectsHub, ExpandedView, MemoryGlobalConfig, RecordingPorts, RuntimeFacts,
    SessionMetadataPatch, SessionScope, default_app_state,
};

fn set_mode(store: &AppStore, mode: Mode) {
    let _ = store.update(|s| {
        if s.tool_permission_context.mode != mode {
            s.tool_permission_context.mode = mode;
        }
    });
}

fn with_env(store: &AppStore, env: Option<&[(&str, &str)]>) {
    let env: Option<IndexMap<String, String>> = env.map(|vars| {
        vars.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    });
    let _ = store.update(|s| {
        let mut settings = Settings::clone(&s.settings);
        settings.env = env;
        s.settings = Arc::new(settings);
    });
}

#[test]
fn fx1_an_external_mode_change_reaches_the_remote_and_the_raw_mode_the_sdk_stream() {
    let h = default_harness();
    set_mode(&h.root, Mode::Plan);
    assert_eq!(
        h.rec.remote.patches(),
        [SessionMetadataPatch {
            permission_mode: Ext::Plan,
            is_ultraplan_mode: None
        }]
    );
    assert_eq!(h.rec.remote.document().permission_mode(), Some("plan"));
    assert_eq!(h.rec.sdk.modes(), [Mode::Plan]);
}

#[test]
fn fx1_default_bubble_default_notifies_the_remote_zero_times_and_the_sdk_stream_twice() {
    let h = default_harness();
    set_mode(&h.root, Mode::Bubble);
    set_mode(&h.root, Mode::Default);
    assert!(
        h.rec.remote.patches().is_empty(),
        "the externalised mode never changed"
    );
    assert_eq!(h.rec.sdk.modes(), [Mode::Bubble, Mode::Default]);
    // `auto` is internal too.
    set_mode(&h.root, Mode::Auto);
    assert!(h.rec.remote.patches().is_empty());
    assert_eq!(h.rec.sdk.modes().len(), 3);
}

#[test]
fn fx1_the_ultraplan_flag_is_true_only_on_the_first_entry_and_null_otherwise() {
    let h = default_harness();
    let flags = |h: &common::Harness| -> Vec<Option<bool>> {
        h.rec
            .remote
            .patches()
            .iter()
            .map(|p| p.is_ultraplan_mode)
            .collect()
    };

    // Entering plan without ultraplan: null.
    set_mode(&h.root, Mode::Plan);
    set_mode(&h.root, Mode::Default);
    assert_eq!(flags(&h), [None, None]);

    // First entry into ultraplan (plan mode and the flag in one commit): true.
    let _ = h.root.update(|s| {
        s.tool_permission_context.mode = Mode::Plan;
        s.is_ultraplan_mode = true;
    });
    assert_eq!(flags(&h).last(), Some(&Some(true)));
    assert_eq!(h.rec.remote.document().is_ultraplan_mode(), Some(true));

    // Leaving plan, and entering plan again while ultraplan was already on: null.
    set_mode(&h.root, Mode::AcceptEdits);
    set_mode(&h.root, Mode::Plan);
    assert_eq!(flags(&h)[3..], [None, None]);
    assert!(
        !h.rec.remote.document().0.contains_key("is_ultraplan_mode"),
        "null deletes the key"
    );

    // Ultraplan turned on with a non-plan external mode: null.
    let _ = h.root.update(|s| {
        s.is_ultraplan_mode = false;
        s.tool_permission_context.mode = Mode::Default;
    });
    let _ = h.root.update(|s| {
        s.is_ultraplan_mode = true;
        s.tool_permission_context.mode = Mode::AcceptEdits;
    });
    assert_eq!(flags(&h).last(), Some(&None));

    // The flag alone (mode unchanged) tells the remote nothing.
    let before = h.rec.remote.patches().len();
    let _ = h.root.update(|s| s.is_ultraplan_mode = false);
    assert_eq!(h.rec.remote.patches().len(), before);
}

#[test]
fn fx1_a_remote_attached_later_hears_later_changes_and_the_sdk_stream_can_be_absent() {
    let rec = RecordingPorts::default();
    let initial = default_app_state(RuntimeFacts::default());
    let mut ports = rec.ports(&initial.runtime);
    ports.remote = None;
    ports.sdk = None;
    let scope = SessionScope::new();
    let root = scope.create_root(initial, EffectsHub::new(ports)).unwrap();
    set_mode(&root, Mode::Plan);
    assert!(rec.remote.patches().is_empty());
    root.effects().set_remote(Some(rec.remote.clone()));
    set_mode(&root, Mode::AcceptEdits);
    assert_eq!(rec.remote.document().permission_mode(), Some("acceptEdits"));
    assert!(rec.sdk.modes().is_empty());
}

#[test]
fn fx2_model_changes_are_persisted_and_mirrored_into_bootstrap() {
    let h = default_harness();
    let _ = h.root.update(|s| s.main_loop_model = Some("opus".into()));
    assert_eq!(h.rec.settings.writes(), [Some("opus".to_owned())]);
    assert_eq!(
        h.rec.bootstrap.main_loop_model_override().as_deref(),
        Some("opus")
    );

    // Clearing the model removes the key and the override.
    let _ = h.root.update(|s| s.main_loop_model = None);
    assert_eq!(h.rec.settings.writes(), [Some("opus".to_owned()), None]);
    assert_eq!(h.rec.bootstrap.main_loop_model_override(), None);

    // Other changes write nothing.
    let _ = h.root.update(|s| s.fast_mode = true);
    assert_eq!(h.rec.settings.writes().len(), 2);
}

/// A permission update kept in a settings file is saved by the hub, once, from the
/// state it recorded (issue 10: never by the call path); a settings reload, which only
/// reads files, saves nothing.
#[test]
fn fx6_a_permission_update_is_saved_once_by_the_hub_and_a_reload_saves_nothing() {
    use strata_protocol::sdk::{
        PermissionRuleValue, PermissionUpdate, RuleBehaviorName, UpdateDestination,
    };
    let h = default_harness();
    let update = PermissionUpdate::AddRules {
        rules: vec![PermissionRuleValue {
            tool_name: "Bash".into(),
            rule_content: Some("npm test:*".into()),
        }],
        behavior: RuleBehaviorName::Allow,
        destination: UpdateDestination::LocalSettings,
    };
    let _ = h.root.update(|s| {
        let mut ctx = s.tool_permission_context.clone();
        let edit =
            strata_state::apply_permission_update(&mut ctx, &update, &|d| d.to_path_buf()).unwrap();
        ctx.last_settings_edits = Some(edit.into_iter().collect());
        s.tool_permission_context = ctx;
    });
    let edits = h.rec.settings.edits();
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(edits[0].source, strata_config::SettingsSource::Local);
    // Later commits (another field, a settings reload) do not save it again.
    let _ = h.root.update(|s| s.fast_mode = true);
    let dir = tempfile::tempdir().unwrap();
    let files = strata_config::SettingsFiles::new(strata_config::SettingsLocations::new(
        &dir.path().join("cfg"),
        dir.path(),
    ));
    files
        .set_value(
            strata_config::SettingsSource::Local,
            &["permissions", "allow"],
            Some(serde_json::json!(["Read"])),
        )
        .unwrap();
    let _ = h
        .root
        .apply_settings_change(strata_config::SettingsSource::Local, &files.load());
    assert_eq!(
        h.rec.settings.edits().len(),
        1,
        "a reload is never written back"
    );
    let allow: Vec<String> = h
        .root
        .get()
        .tool_permission_context
        .always_allow_rules
        .iter()
        .map(|(_, r)| r.to_string())
        .collect();
    assert_eq!(
        allow,
        ["Read"],
        "the local settings' rules are the file's again"
    );
}

/// FX-3: the expanded view is persisted only when it differs.
#[test]
fn fx3_the_expanded_view_is_written_only_when_the_stored_flags_differ() {
    let stored: GlobalConfig = serde_json::from_str(r#"{"showExpandedTodos":true}"#).unwrap();
    let rec = RecordingPorts {
        global_config: Arc::new(MemoryGlobalConfig::with(stored)),
        ..RecordingPorts::default()
    };
    let initial = default_app_state(RuntimeFacts::default());
    let hub = EffectsHub::new(rec.ports(&initial.runtime));
    let scope = SessionScope::new();
    let root = scope.create_root(initial, hub).unwrap();
    let view = |v: ExpandedView| {
        let _ = root.update(|s| s.ui.expanded_view = v);
    };

    view(ExpandedView::Tasks); // stored already says tasks
    assert_eq!(rec.global_config.writes(), 0);
    view(ExpandedView::Teammates);
    assert_eq!(rec.global_config.writes(), 1);
    let cfg = rec.global_config.config();
    assert_eq!(
        (cfg.show_expanded_todos, cfg.show_spinner_tree),
        (Some(false), Some(true))
    );
    view(ExpandedView::None);
    assert_eq!(rec.global_config.writes(), 2);
    let _ = root.update(|s| s.verbose = false); // unchanged: nothing read or written
    assert_eq!(rec.global_config.writes(), 2);
}

#[test]
fn fx4_verbose_is_written_only_when_the_stored_value_differs() {
    let stored: GlobalConfig = serde_json::from_str(r#"{"verbose":true}"#).unwrap();
    let rec = RecordingPorts {
        global_config: Arc::new(MemoryGlobalConfig::with(stored)),
        ..RecordingPorts::default()
    };
    let initial = default_app_state(RuntimeFacts::default()); // verbose false in state
    let hub = EffectsHub::new(rec.ports(&initial.runtime));
    let scope = SessionScope::new();
    let root = scope.create_root(initial, hub).unwrap();

    let _ = root.update(|s| s.verbose = true);
    assert_eq!(
        rec.global_config.writes(),
        0,
        "config.json already says true"
    );
    let _ = root.update(|s| s.verbose = false);
    assert_eq!(rec.global_config.writes(), 1);
    assert_eq!(rec.global_config.config().verbose, Some(false));
    let _ = root.update(|s| s.ui.spinner_tip = Some("tip".into()));
    assert_eq!(
        rec.global_config.reads(),
        2,
        "unwatched changes read nothing"
    );
}

#[test]
fn fx5_a_settings_change_clears_the_credential_caches() {
    let h = default_harness();
    let _ = h.root.update(|s| {
        let mut settings = Settings::clone(&s.settings);
        settings.api_key_helper = Some("~/bin/key".into());
        s.settings = Arc::new(settings);
    });
    assert_eq!(h.rec.credentials.clears(), 1);
    // An equal value in a new Arc is not a change; unrelated updates are not either.
    let _ = h
        .root
        .update(|s| s.settings = Arc::new(Settings::clone(&s.settings)));
    let _ = h.root.update(|s| s.verbose = true);
    assert_eq!(h.rec.credentials.clears(), 1);
}

#[test]
fn fx5_the_environment_is_applied_additively() {
    let h = default_harness();
    let env = h.root.runtime().env;
    with_env(&h.root, Some(&[("STRATA_A", "1"), ("STRATA_B", "2")]));
    with_env(&h.root, Some(&[("STRATA_A", "3")]));
    with_env(&h.root, None);
    let snapshot = env.snapshot();
    assert_eq!(snapshot.get("STRATA_A").map(String::as_str), Some("3"));
    assert_eq!(
        snapshot.get("STRATA_B").map(String::as_str),
        Some("2"),
        "never removed"
    );
    assert_eq!(h.rec.credentials.clears(), 3);

    // The processes strata spawns see it.
    #[cfg(unix)]
    {
        let mut cmd = std::process::Command::new("sh");
        env.apply_to(cmd.args(["-c", "printf '%s-%s' \"$STRATA_A\" \"$STRATA_B\""]));
        assert_eq!(cmd.output().unwrap().stdout, b"3-2");
    }
}

#[test]
fn fx5_the_initial_environment_is_applied_when_the_root_is_created() {
    let settings: Settings = serde_json::from_str(r#"{"env":{"STRATA_START":"yes"}}"#).unwrap();
    let h = harness(default_app_state(RuntimeFacts {
        settings: Arc::new(settings),
        ..RuntimeFacts::default()
    }));
    assert_eq!(
        h.root.runtime().env.get("STRATA_START").as_deref(),
        Some("yes")
    );
}

#[test]
fn fx_a_failing_effect_is_logged_and_never_propagated() {
    let h = default_harness();
    h.rec.settings.set_failing(true);
    h.rec.global_config.set_failing(true);
    h.rec.remote.set_failing(true);
    h.rec.credentials.set_failing(true);
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&heard);
    let _sub = h.root.subscribe(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });

    let (update, logs) = capture_logs(|| {
        h.root.update(|s| {
            s.main_loop_model = Some("opus".into());
            s.verbose = true;
            s.tool_permission_context.mode = Mode::Plan;
            s.settings = Arc::new(Settings {
                fast_mode: Some(true),
                ..Settings::clone(&s.settings)
            });
        })
    });

    assert!(update.is_committed());
    let state = h.root.get();
    assert_eq!(state.main_loop_model.as_deref(), Some("opus"));
    assert!(state.verbose);
    assert_eq!(heard.load(Ordering::SeqCst), 1, "listeners still notified");
    assert_eq!(h.rec.sdk.modes(), [Mode::Plan], "other effects still ran");
    assert_eq!(
        h.rec.bootstrap.main_loop_model_override().as_deref(),
        Some("opus")
    );
    assert_eq!(h.root.effects().failures(), 4);
    for effect in [
        "FX-1 remote metadata",
        "FX-2 model",
        "FX-4 verbose",
        "FX-5 credential caches",
    ] {
        assert!(logs.contains(effect), "{effect} not logged in:\n{logs}");
        assert!(
            h.rec
                .bootstrap
                .errors()
                .iter()
                .any(|e| e.message.contains(effect)),
            "{effect} not in the bootstrap error log"
        );
    }
}

#[test]
fn fx_a_panicking_port_is_contained() {
    struct Panics;
    impl SettingsWriter for Panics {
        fn persist_main_loop_model(&self, _: Option<&str>) -> Result<(), EffectError> {
            panic!("disk on fire");
        }
    }
    let rec = RecordingPorts::default();
    let initial = default_app_state(RuntimeFacts::default());
    let mut ports = rec.ports(&initial.runtime);
    ports.settings = Arc::new(Panics);
    let scope = SessionScope::new();
    let root = scope.create_root(initial, EffectsHub::new(ports)).unwrap();
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&heard);
    let _sub = root.subscribe(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let _ = root.update(|s| s.main_loop_model = Some("opus".into()));
    let _ = root.update(|s| s.verbose = true);
    assert_eq!(heard.load(Ordering::SeqCst), 2);
    assert_eq!(root.effects().failures(), 1);
    assert!(
        rec.bootstrap
            .errors()
            .iter()
            .any(|e| e.message.contains("disk on fire"))
    );
}

#[test]
fn as3_a_multi_domain_update_is_one_commit_one_hook_call_one_notification() {
    let h = default_harness();
    let notified = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&notified);
    let _sub = h.root.subscribe(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let before = h.root.version();
    let _ = h.root.update(|s| {
        s.tool_permission_context.mode = Mode::AcceptEdits;
        s.ui.expanded_view = ExpandedView::Tasks;
        s.verbose = true;
        s.main_loop_model = Some("sonnet".into());
        s.remote.background_task_count = 2;
    });
    assert_eq!(h.root.version().0, before.0 + 1, "one commit");
    assert_eq!(h.root.effects().invocations(), 1, "one hook call");
    assert_eq!(notified.load(Ordering::SeqCst), 1, "one notification");
    // Every effect of the commit ran within that one call.
    assert_eq!(h.rec.remote.patches().len(), 1);
    assert_eq!(h.rec.settings.writes().len(), 1);
    assert_eq!(h.rec.global_config.writes(), 2);
}

/// One step of the FX-6 property: every way the mode or ultraplan flag can change.
#[derive(Clone, Debug)]
enum Step {
    Set(Mode),
    Cycle,
    Ultraplan(bool),
    SetWithUltraplan(Mode, bool),
    Remote(Option<Mode>, Option<bool>),
    Unrelated,
}

fn step() -> impl Strategy<Value = Step> {
    let mode = proptest::sample::select(Mode::ALL.to_vec());
    prop_oneof![
        mode.clone().prop_map(Step::Set),
        Just(Step::Cycle),
        any::<bool>().prop_map(Step::Ultraplan),
        (mode.clone(), any::<bool>()).prop_map(|(m, u)| Step::SetWithUltraplan(m, u)),
        (
            proptest::option::of(mode),
            proptest::option::of(any::<bool>())
        )
            .prop_map(|(m, u)| Step::Remote(m, u)),
        Just(Step::Unrelated),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// FX-6: whatever path changes the mode, the remote metadata ends equal to the
    /// externalised current mode, the remote hears only external changes, and the SDK
    /// stream hears every raw change.
    #[test]
    fn fx6_any_sequence_of_mode_changes_leaves_the_remote_equal_to_the_external_mode(
        steps in proptest::collection::vec(step(), 0..40),
        bypass in any::<bool>(),
    ) {
        let h = harness(default_app_state(RuntimeFacts {
            bypass_permissions_allowed: bypass,
            ..RuntimeFacts::default()
        }));
        let store = &h.root;
        let (mut raw_changes, mut external_changes) = (Vec::new(), 0usize);
        for step in steps {
            let old = store.get();
            let _ = match step {
                Step::Set(m) => store.update(|s| if s.tool_permission_context.mode != m {
                    s.tool_permission_context.mode = m;
                }),
                Step::Cycle => store.update(|s| {
                    let ctx = &s.tool_permission_context;
                    let next = ctx.mode.next_in_cycle(ctx.is_bypass_permissions_mode_available);
                    if next != ctx.mode { s.tool_permission_context.mode = next; }
                }),
                Step::Ultraplan(u) => store.update(|s| if s.is_ultraplan_mode != u {
                    s.is_ultraplan_mode = u;
                }),
                Step::SetWithUltraplan(m, u) => store.update(|s| {
                    s.tool_permission_context.mode = m;
                    s.is_ultraplan_mode = u;
                }),
                Step::Remote(m, u) => {
                    let mut doc = serde_json::Map::new();
                    if let Some(m) = m { doc.insert("permission_mode".into(), m.as_str().into()); }
                    if let Some(u) = u { doc.insert("is_ultraplan_mode".into(), u.into()); }
                    store.apply_external_metadata(&strata_state::SessionExternalMetadata(doc))
                }
                Step::Unrelated => store.update(|s| s.speculation_time_saved_ms += 1),
            };
            let new = store.get();
            let (a, b) = (old.tool_permission_context.mode, new.tool_permission_context.mode);
            if a != b {
                raw_changes.push(b);
                if a.external() != b.external() { external_changes += 1; }
            }
        }
        let mode = store.get().tool_permission_context.mode;
        let document = h.rec.remote.document();
        prop_assert_eq!(document.permission_mode(), Some(mode.external().as_str()));
        prop_assert_eq!(h.rec.remote.patches().len(), external_changes);
        prop_assert_eq!(h.rec.sdk.modes(), raw_changes);
    }
}

/// The file port applies a settings edit all or nothing, and never writes a file that
/// does not parse (the user's file is left exactly as it was).
#[test]
fn a_settings_edit_is_all_or_nothing_and_never_touches_a_broken_file() {
    use strata_config::{SettingsFiles, SettingsLocations, SettingsSource};
    use strata_state::{SettingsEdit, SettingsEditOp, permissions_key};
    let dir = tempfile::tempdir().unwrap();
    let files = SettingsFiles::new(SettingsLocations::new(&dir.path().join("cfg"), dir.path()));
    let local = files.locations().local.clone();
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    let add = |rule: &str| SettingsEditOp::AddToArray {
        key: permissions_key("allow"),
        value: serde_json::json!(rule),
    };
    // `ask` holds a string, not a list: the second operation fails, so neither lands.
    let text = r#"{"permissions": {"ask": "Bash"}}"#;
    std::fs::write(&local, text).unwrap();
    let edit = SettingsEdit {
        source: SettingsSource::Local,
        ops: vec![
            add("Read"),
            SettingsEditOp::AddToArray {
                key: permissions_key("ask"),
                value: serde_json::json!("Edit"),
            },
        ],
    };
    let err = files.apply_settings_edit(&edit).unwrap_err();
    assert!(err.to_string().contains("local"), "{err}");
    assert_eq!(std::fs::read_to_string(&local).unwrap(), text);

    let broken = "{\"permissions\": {\"allow\": [\"Read\",]}}";
    std::fs::write(&local, broken).unwrap();
    let err = files
        .apply_settings_edit(&SettingsEdit {
            source: SettingsSource::Local,
            ops: vec![add("Glob")],
        })
        .unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
    assert_eq!(std::fs::read_to_string(&local).unwrap(), broken);

    std::fs::write(&local, "{}").unwrap();
    files
        .apply_settings_edit(&SettingsEdit {
            source: SettingsSource::Local,
            ops: vec![add("Glob"), add("Glob")],
        })
        .unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&local).unwrap()).unwrap();
    assert_eq!(saved["permissions"]["allow"], serde_json::json!(["Glob"]));
}
