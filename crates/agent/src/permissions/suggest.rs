//! What a permission prompt offers besides "yes, once": the update that would let the
//! same kind of call run without asking, sent as `permission_suggestions` with a
//! `can_use_tool` request for the client to show ("always allow `npm test`").
//!
//! - A shell command of one simple command: allow its program with any arguments
//!   (`Bash(npm:*)`), kept in the personal project settings. When that would allow far
//!   more than the call (a shell, `sudo`, `env`, an interpreter that runs code given on
//!   its command line), would not match the call (leading `VAR=value` assignments, a
//!   program that is only known when it runs) or would not cover what it runs (`find
//!   -exec`, a wrapper), the exact command instead. A compound command gets no suggestion (one rule would
//!   not cover its parts), nor does one that writes a file through a redirection or
//!   writes a protected path (`tee .git/hooks/pre-commit`).
//! - A file edit inside the project: accept edits for the rest of the session. An edit
//!   outside the project: allow edits of that one file for the session. A protected
//!   file gets nothing (no rule or mode would spare the next prompt).
//! - Any other tool: allow the tool, kept in the personal project settings.

use serde_json::Value;
use strata_protocol::sdk::{
    PermissionRuleValue, PermissionUpdate, RuleBehaviorName, UpdateDestination,
};

use std::path::{Path, PathBuf};

use super::Permissions;
use super::matching::{ResolvedPath, is_inside};
use crate::tools::bash::analysis::analyze_parts;
use crate::tools::bash::shell::split_command;
use crate::tools::{PermissionSubject, Tool};

/// Programs whose `program:*` rule would allow running anything at all.
const TOO_BROAD: [&str; 22] = [
    "bash", "sh", "zsh", "dash", "fish", "sudo", "doas", "su", "env", "xargs", "eval", "exec",
    "nohup", "time", "timeout", "nice", "python", "python3", "node", "perl", "ruby", "deno",
];

/// The updates to offer with a prompt for `tool` called with `input` (relative paths
/// resolved against `cwd`).
pub fn suggestions(
    tool: &dyn Tool,
    input: &Value,
    permissions: &Permissions<'_>,
    cwd: &Path,
) -> Vec<PermissionUpdate> {
    let rule = |rule_content: Option<String>, destination| PermissionUpdate::AddRules {
        rules: vec![PermissionRuleValue {
            tool_name: tool.name().to_owned(),
            rule_content,
        }],
        behavior: RuleBehaviorName::Allow,
        destination,
    };
    match tool.permission_subject(input) {
        Some(PermissionSubject::Command(line)) => {
            let parts = split_command(&line);
            let [one] = parts.as_slice() else {
                return Vec::new();
            };
            if one.writes_file || permissions.bash_writes_protected(&line, cwd) {
                // A write to a protected file asks every time: no rule would help.
                return Vec::new();
            }
            let Some(program) = one.words.get(one.assignments) else {
                return Vec::new();
            };
            let analysis = analyze_parts(&parts);
            let exact = one.assignments > 0
                || TOO_BROAD.contains(&program.as_str())
                || !analysis.unknown.is_empty()
                || analysis.runs.iter().any(|r| r.runs_others);
            let content = if exact {
                one.text.trim().to_owned()
            } else {
                format!("{program}:*")
            };
            vec![rule(Some(content), UpdateDestination::LocalSettings)]
        }
        Some(PermissionSubject::Path(p)) if !tool.is_read_only(input) => {
            let resolved = ResolvedPath::new(&p, cwd);
            let roots: Vec<&Path> = std::iter::once(permissions.env.project_root.as_path())
                .chain(permissions.additional.iter().map(PathBuf::as_path))
                .collect();
            if permissions.protected(&resolved).is_some() {
                // Asked every time: no rule or mode would cover it.
                return Vec::new();
            }
            if roots.iter().any(|r| is_inside(&resolved, r)) {
                vec![PermissionUpdate::SetMode {
                    mode: "acceptEdits".to_owned(),
                    destination: UpdateDestination::Session,
                }]
            } else {
                // `//` marks an absolute path in a rule.
                let path = format!("/{}", resolved.lexical.display());
                vec![rule(Some(path), UpdateDestination::Session)]
            }
        }
        // This site, not the whole web.
        Some(PermissionSubject::Domain(host)) => vec![rule(
            Some(format!("domain:{host}")),
            UpdateDestination::LocalSettings,
        )],
        _ => vec![rule(None, UpdateDestination::LocalSettings)],
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
        let env = crate::permissions::PermissionEnv::new("/p");
        let state = strata_state::ToolPermissionContext::default();
        let view = env.view(&state);
        let cwd = Path::new("/p");
        let s = |tool: &dyn Tool, input: Value| suggestions(tool, &input, &view, cwd);
        assert_eq!(
            rule(&s(&Bash, json!({"command": "npm test -- --watch"}))).as_deref(),
            Some("Bash(npm:*)")
        );
        // Regression: `FOO=1 cargo build` got `Bash(cargo:*)`, which does not match the
        // call, and `bash -c …` got `Bash(bash:*)`, which allows anything.
        assert_eq!(
            rule(&s(&Bash, json!({"command": "FOO=1 cargo build"}))).as_deref(),
            Some("Bash(FOO=1 cargo build)")
        );
        assert_eq!(
            rule(&s(&Bash, json!({"command": "bash -c 'make'"}))).as_deref(),
            Some("Bash(bash -c 'make')")
        );
        assert_eq!(
            rule(&s(&Bash, json!({"command": "python3 -c 'print(1)'"}))).as_deref(),
            Some("Bash(python3 -c 'print(1)')")
        );
        // A program rule would not match these (an unknown program can only be allowed
        // exactly) or not cover what they run.
        assert_eq!(
            rule(&s(&Bash, json!({"command": "$CC -o x x.c"}))).as_deref(),
            Some("Bash($CC -o x x.c)")
        );
        assert_eq!(
            rule(&s(&Bash, json!({"command": "find . -exec grep x {} +"}))).as_deref(),
            Some("Bash(find . -exec grep x {} +)")
        );
        assert!(s(&Bash, json!({"command": "make && rm -rf x"})).is_empty());
        assert!(s(&Bash, json!({"command": "echo x > f"})).is_empty());
        assert_eq!(
            s(
                &Edit,
                json!({"file_path": "/p/a.rs", "old_string": "a", "new_string": "b"})
            ),
            [PermissionUpdate::SetMode {
                mode: "acceptEdits".into(),
                destination: UpdateDestination::Session
            }]
        );
        // A protected file always asks: a rule for it would not spare the next prompt,
        // so none is offered.
        assert!(
            s(
                &Edit,
                json!({"file_path": "/p/.git/config", "old_string": "a", "new_string": "b"})
            )
            .is_empty()
        );
        // Accept-edits would not cover this: the one file is offered instead.
        assert_eq!(
            rule(&s(
                &Edit,
                json!({"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"})
            ))
            .as_deref(),
            Some("Edit(//etc/hosts)")
        );
        assert_eq!(
            rule(&s(&Read, json!({"file_path": "/etc/hosts"}))).as_deref(),
            Some("Read")
        );
    }
}
