//! What a permission prompt offers besides "yes, once": the update that would let the
//! same kind of call run without asking, sent as `permission_suggestions` with a
//! `can_use_tool` request for the client to show ("always allow `npm test`").
//!
//! - A shell command of one simple command: allow its program with any arguments
//!   (`Bash(npm:*)`), kept in the personal project settings. A compound command gets no
//!   rule suggestion (one rule would not cover its parts).
//! - A file edit: accept edits for the rest of the session (the mode, not a rule).
//! - Any other tool: allow the tool, kept in the personal project settings.

use serde_json::Value;
use strata_protocol::sdk::{
    PermissionRuleValue, PermissionUpdate, RuleBehaviorName, UpdateDestination,
};

use crate::tools::bash::shell::split_command;
use crate::tools::{PermissionSubject, Tool};

/// The updates to offer with a prompt for `tool` called with `input`.
pub fn suggestions(tool: &dyn Tool, input: &Value) -> Vec<PermissionUpdate> {
    let allow = |rule_content: Option<String>| PermissionUpdate::AddRules {
        rules: vec![PermissionRuleValue {
            tool_name: tool.name().to_owned(),
            rule_content,
        }],
        behavior: RuleBehaviorName::Allow,
        destination: UpdateDestination::LocalSettings,
    };
    match tool.permission_subject(input) {
        Some(PermissionSubject::Command(line)) => {
            let parts = split_command(&line);
            match parts.as_slice() {
                [one] if !one.writes_file => one
                    .words
                    .get(one.assignments)
                    .map(|program| vec![allow(Some(format!("{program}:*")))])
                    .unwrap_or_default(),
                _ => Vec::new(),
            }
        }
        Some(PermissionSubject::Path(_)) if !tool.is_read_only(input) => {
            vec![PermissionUpdate::SetMode {
                mode: "acceptEdits".to_owned(),
                destination: UpdateDestination::Session,
            }]
        }
        _ => vec![allow(None)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Bash, Edit, Read};
    use serde_json::json;

    fn rule(updates: &[PermissionUpdate]) -> Option<String> {
        match updates {
            [PermissionUpdate::AddRules { rules, .. }] => Some(rules[0].to_rule_string()),
            _ => None,
        }
    }

    #[test]
    fn suggestions_fit_the_call() {
        assert_eq!(
            rule(&suggestions(
                &Bash,
                &json!({"command": "npm test -- --watch"})
            ))
            .as_deref(),
            Some("Bash(npm:*)")
        );
        assert_eq!(
            rule(&suggestions(
                &Bash,
                &json!({"command": "FOO=1 cargo build"})
            ))
            .as_deref(),
            Some("Bash(cargo:*)")
        );
        assert!(suggestions(&Bash, &json!({"command": "make && rm -rf x"})).is_empty());
        assert!(suggestions(&Bash, &json!({"command": "echo x > f"})).is_empty());
        assert_eq!(
            suggestions(
                &Edit,
                &json!({"file_path": "/p/a.rs", "old_string": "a", "new_string": "b"})
            ),
            [PermissionUpdate::SetMode {
                mode: "acceptEdits".into(),
                destination: UpdateDestination::Session
            }]
        );
        assert_eq!(
            rule(&suggestions(&Read, &json!({"file_path": "/etc/hosts"}))).as_deref(),
            Some("Read")
        );
    }
}
