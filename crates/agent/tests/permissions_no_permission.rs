//! Tools that need no permission of their own (TaskOutput, TaskStop: they reach only
//! what the session started): allowed in every mode without a rule or a prompt, plan
//! mode included, yet a deny rule naming them still denies them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod permissions_support;

use serde_json::json;
use strata_agent::tools::{TaskOutput, TaskStop, Tool};
use strata_protocol::permission::PermissionMode;

use permissions_support::{Want, ctx, env, want};

#[test]
fn task_stop_is_not_read_only_but_needs_no_permission_in_any_mode() {
    let e = env();
    let input = json!({"task_id": "b123"});
    assert!(!TaskStop.is_read_only(&input), "TaskStop ends processes");
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
    ] {
        let c = ctx(&e, mode, &[], &[], &[]);
        for tool in [&TaskStop as &dyn Tool, &TaskOutput] {
            let decision = c.check(tool, &input, &e.root);
            assert_eq!(
                want(&decision),
                Want::Allow,
                "{} in {mode:?}: {decision:?}",
                tool.name()
            );
        }
    }
}

#[test]
fn a_deny_rule_still_denies_a_tool_that_needs_no_permission() {
    let e = env();
    let c = ctx(&e, PermissionMode::Default, &[], &["TaskStop"], &[]);
    let decision = c.check(&TaskStop, &json!({"task_id": "b1"}), &e.root);
    assert_eq!(want(&decision), Want::Deny, "{decision:?}");
    let other = c.check(&TaskOutput, &json!({"task_id": "b1"}), &e.root);
    assert_eq!(want(&other), Want::Allow, "{other:?}");
}
