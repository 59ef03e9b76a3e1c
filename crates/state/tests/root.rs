//! The root store (UI-1, UI-5, UI-6), the state's shape (AS-2, AS-4) and defaults (AS-5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{default_harness, harness};
use strata_protocol::message::Message;
use strata_protocol::permission::PermissionMode as Mode;
use strata_protocol::settings::Settings;
use strata_state::tasks::{LocalShell, TaskId, TaskKind, TaskState};
use strata_state::{
    AppState, EffectsHub, McpTool, RecordingPorts, RootError, RuntimeFacts, SessionScope,
    current_app_store, default_app_state,
};

fn big_state(messages: usize) -> AppState {
    let mut s = default_app_state(RuntimeFacts::default());
    s.messages = (0..messages)
        .map(|i| Arc::new(Message::user_text(format!("message {i}"))))
        .collect();
    for i in 0..100 {
        let task = TaskState::new(
            TaskId::generate('b'),
            format!("job {i}"),
            0,
            TaskKind::LocalShell(LocalShell {
                command: "true".into(),
                pid: None,
                exit_code: None,
                output_file: None,
            }),
        );
        s.tasks.tasks = s.tasks.tasks.register(task).unwrap();
    }
    s.mcp.tools = (0..100)
        .map(|i| {
            Arc::new(McpTool {
                server: "srv".into(),
                name: format!("t{i}").into(),
                qualified_name: format!("mcp__srv__t{i}").into(),
                description: Arc::from("a tool"),
                input_schema: Arc::new(serde_json::json!({"type": "object"})),
                read_only: false,
            })
        })
        .collect();
    s
}

#[test]
fn as4_updating_verbose_keeps_10000_messages_and_the_other_domains_pointer_equal() {
    let h = harness(big_state(10_000));
    let old = h.root.get();
    assert!(h.root.update(|s| s.verbose = true).is_committed());
    let new = h.root.get();
    assert!(!Arc::ptr_eq(&old, &new), "a new top-level state");
    assert!(new.messages.ptr_eq(&old.messages), "messages shared");
    assert!(new.tasks.tasks.ptr_eq(&old.tasks.tasks), "tasks shared");
    assert!(new.mcp.tools.ptr_eq(&old.mcp.tools), "MCP tools shared");
    assert!(Arc::ptr_eq(&new.settings, &old.settings), "settings shared");
    assert_eq!(new.messages.len(), 10_000);

    // Appending one message shares all but the tail.
    let _ = h.root.update(|s| {
        s.messages
            .push_back(Arc::new(Message::user_text("one more")))
    });
    let appended = h.root.get();
    assert!(Arc::ptr_eq(&appended.messages[0], &new.messages[0]));
    assert!(appended.tasks.tasks.ptr_eq(&new.tasks.tasks));
}

#[test]
fn as2_runtime_handles_take_no_part_in_comparison_and_are_shared_by_every_version() {
    let a = default_app_state(RuntimeFacts::default());
    let b = default_app_state(RuntimeFacts::default());
    b.runtime.env.apply([("ONLY_IN_B", "1")]);
    assert_eq!(a, b, "states differing only in runtime handles are equal");

    let h = default_harness();
    let runtime = h.root.runtime();
    let _ = h.root.update(|s| s.verbose = true);
    runtime.env.apply([("SHARED", "yes")]);
    assert_eq!(
        h.root.get().runtime.env.get("SHARED").as_deref(),
        Some("yes")
    );
    // A change to the runtime alone is not a state change for selections.
    let mut sel = h.root.select(|s| s.runtime.clone());
    runtime.env.apply([("SHARED", "changed")]);
    let _ = h.root.update(|s| s.verbose = false);
    assert!(!sel.changed(&h.root));
}

#[test]
fn ui5_a_second_root_in_the_same_session_is_rejected_and_names_the_first() {
    let h = default_harness();
    let rec = RecordingPorts::default();
    let second = default_app_state(RuntimeFacts::default());
    let hub = EffectsHub::new(rec.ports(&second.runtime));
    let err = h.scope.create_root(second, hub).unwrap_err();
    let RootError::AlreadyExists { created_at } = &err;
    assert!(
        created_at.contains("common"),
        "points at the harness: {created_at}"
    );
    assert!(err.to_string().contains("already exists"));
    // The first root is untouched and still the session's.
    let current = h.scope.current().unwrap();
    let _ = current.update(|s| s.verbose = true);
    assert!(h.root.get().verbose, "the accessor reaches the same store");
}

#[test]
fn ui5_the_optional_accessor_yields_none_outside_a_session_and_a_new_root_may_follow() {
    // No test in this binary creates a root in the process scope.
    assert!(current_app_store().is_none());
    let scope = SessionScope::new();
    assert!(scope.current().is_none());
    let rec = RecordingPorts::default();
    let make = || {
        let s = default_app_state(RuntimeFacts::default());
        let hub = EffectsHub::new(rec.ports(&s.runtime));
        (s, hub)
    };
    let (s, hub) = make();
    let root = scope.create_root(s, hub).unwrap();
    let kept = root.store().clone();
    drop(root);
    assert!(scope.current().is_none());
    let _ = kept.update(|s| s.verbose = true); // handles given out keep working
    let (s, hub) = make();
    let again = scope.create_root(s, hub).unwrap();
    assert!(!again.get().verbose, "a new session, a new state");
    // Scopes are independent.
    let other = SessionScope::new();
    let (s, hub) = make();
    assert!(other.create_root(s, hub).is_ok());
}

#[test]
fn ui6_bypass_is_turned_off_when_the_ui_is_up_even_if_the_settings_arrived_earlier() {
    // Started with --dangerously-skip-permissions, settings not yet forbidding it.
    let h = harness(default_app_state(RuntimeFacts {
        permission_mode_flag: Some(Mode::BypassPermissions),
        bypass_permissions_allowed: true,
        ..RuntimeFacts::default()
    }));
    assert_eq!(
        h.root.get().tool_permission_context.mode,
        Mode::BypassPermissions
    );

    // Managed settings forbidding bypass arrive before the UI exists; no watcher event
    // will repeat them.
    let arrived: Settings =
        serde_json::from_str(r#"{"permissions":{"disableBypassPermissionsMode":"disable"}}"#)
            .unwrap();
    assert!(h.root.on_ui_ready(&arrived).is_committed());
    let ctx = h.root.get().tool_permission_context.clone();
    assert_eq!(ctx.mode, Mode::Default);
    assert!(!ctx.is_bypass_permissions_mode_available);
    assert_eq!(
        h.rec.remote.document().permission_mode(),
        Some("default"),
        "FX-1 told the remote"
    );

    // Nothing to do the second time, or when settings allow bypass.
    assert!(!h.root.on_ui_ready(&arrived).is_committed());
    let allowed = harness(default_app_state(RuntimeFacts {
        bypass_permissions_allowed: true,
        ..RuntimeFacts::default()
    }));
    assert!(
        !allowed
            .root
            .on_ui_ready(&Settings::default())
            .is_committed()
    );
}

#[test]
fn ui1_every_handle_reaches_the_same_store() {
    let h = default_harness();
    let a = h.root.store().clone();
    let setter = h.root.setter();
    let _ = setter.update(|s| s.fast_mode = true);
    assert!(a.get().fast_mode);
    assert!(h.scope.current().unwrap().get().fast_mode);
}
