//! Permission decisions by mode, table-driven: each row is a mode, rules, a call and
//! the expected decision, named after the rule it pins (deny wins over ask over allow;
//! acceptEdits inside/outside the project; plan allows only read-only tools; dontAsk;
//! bypass gated by the launch flag and the settings; prompts avoided for async
//! sub-agents and headless runs, SA-4). Rule syntax is in `permissions_rules.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod permissions_support;

use std::path::Path;

use permissions_support::{Row, Want, bash, ctx, edit, env, row, run, want};
use serde_json::{Value, json};
use strata_agent::permissions::PermissionDecision;
use strata_agent::tools::{Bash, Edit, Glob, Grep, Read, TodoWrite, Tool, Write};
use strata_protocol::permission::PermissionMode::*;

#[test]
fn default_mode_allows_read_only_inside_and_asks_for_the_rest() {
    let e = env();
    let inside = e.root.join("src/a.rs");
    run(
        &e,
        vec![
            row(
                "read inside",
                Default,
                &Read,
                json!({"file_path": inside}),
                Want::Allow,
            ),
            row(
                "read in additional dir",
                Default,
                &Read,
                json!({"file_path": e.extra.join("x")}),
                Want::Allow,
            ),
            row(
                "read outside",
                Default,
                &Read,
                json!({"file_path": "/etc/hosts"}),
                Want::Ask,
            ),
            row(
                "read escaping with ..",
                Default,
                &Read,
                json!({"file_path": e.root.join("../outside.txt")}),
                Want::Ask,
            ),
            row(
                "grep cwd",
                Default,
                &Grep,
                json!({"pattern": "x"}),
                Want::Allow,
            ),
            row(
                "grep relative inside",
                Default,
                &Grep,
                json!({"pattern": "x", "path": "src"}),
                Want::Allow,
            ),
            row(
                "glob relative escaping",
                Default,
                &Glob,
                json!({"pattern": "*", "path": "../.."}),
                Want::Ask,
            ),
            row(
                "glob absolute pattern outside",
                Default,
                &Glob,
                json!({"pattern": "/etc/*.conf"}),
                Want::Ask,
            ),
            row(
                "todo write",
                Default,
                &TodoWrite,
                json!({"todos": []}),
                Want::Allow,
            ),
            row("edit inside", Default, &Edit, edit(&inside), Want::Ask),
            row(
                "write inside",
                Default,
                &Write,
                json!({"file_path": inside, "content": ""}),
                Want::Ask,
            ),
            // Issue 25 item 7: a read-only command inside the project is a read.
            row("bash read-only", Default, &Bash, bash("ls"), Want::Allow),
            row("bash", Default, &Bash, bash("npm install"), Want::Ask),
        ],
    );
}

#[test]
fn deny_wins_over_ask_and_allow() {
    let e = env();
    let env_file = e.root.join(".env");
    run(
        &e,
        vec![
            Row {
                allow: &["Read"],
                deny: &["Read(.env)"],
                ..row(
                    "deny beats allow",
                    Default,
                    &Read,
                    json!({"file_path": env_file}),
                    Want::Deny,
                )
            },
            Row {
                ask: &["Bash"],
                deny: &["Bash(rm:*)"],
                ..row(
                    "deny beats ask",
                    Default,
                    &Bash,
                    bash("rm -rf build"),
                    Want::Deny,
                )
            },
            Row {
                allow: &["Bash"],
                ask: &["Bash(git push:*)"],
                ..row(
                    "ask beats allow",
                    Default,
                    &Bash,
                    bash("git push origin main"),
                    Want::Ask,
                )
            },
            Row {
                allow: &["Bash"],
                ask: &["Bash(git push:*)"],
                ..row(
                    "allow when ask misses",
                    Default,
                    &Bash,
                    bash("git status"),
                    Want::Allow,
                )
            },
            Row {
                deny: &["Read(.env)"],
                ..row(
                    "deny beats read-only default",
                    Default,
                    &Read,
                    json!({"file_path": e.root.join("sub/.env")}),
                    Want::Deny,
                )
            },
            Row {
                deny: &["Edit"],
                ..row(
                    "deny beats acceptEdits",
                    AcceptEdits,
                    &Edit,
                    edit(&e.root.join("a")),
                    Want::Deny,
                )
            },
            Row {
                deny: &["Bash"],
                ..row("whole-tool deny", Default, &Bash, bash("ls"), Want::Deny)
            },
            Row {
                allow: &["Read"],
                ..row(
                    "whole-tool allow outside",
                    Default,
                    &Read,
                    json!({"file_path": "/etc/hosts"}),
                    Want::Allow,
                )
            },
        ],
    );
}

#[test]
fn deny_reason_names_the_rule_and_its_source() {
    let e = env();
    let c = ctx(&e, Default, &[], &["Bash(rm:*)"], &[]);
    match c.check(&Bash, &bash("rm -rf /"), &e.root) {
        PermissionDecision::Deny { reason } => {
            assert!(reason.contains("`Bash(rm:*)`"), "{reason}");
            assert!(reason.contains("settings deny"), "{reason}");
            assert!(reason.contains("rm -rf /"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn accept_edits_allows_file_edits_inside_the_project_and_additional_dirs_only() {
    let e = env();
    run(
        &e,
        vec![
            row(
                "edit inside",
                AcceptEdits,
                &Edit,
                edit(&e.root.join("src/a.rs")),
                Want::Allow,
            ),
            row(
                "write new file inside",
                AcceptEdits,
                &Write,
                json!({"file_path": e.root.join("new/dir/f"), "content": ""}),
                Want::Allow,
            ),
            row(
                "edit in additional dir",
                AcceptEdits,
                &Edit,
                edit(&e.extra.join("lib.rs")),
                Want::Allow,
            ),
            row(
                "edit outside",
                AcceptEdits,
                &Edit,
                edit(Path::new("/etc/hosts")),
                Want::Ask,
            ),
            row(
                "edit escaping with ..",
                AcceptEdits,
                &Edit,
                edit(&e.root.join("../x")),
                Want::Ask,
            ),
            row(
                "bash is not an edit",
                AcceptEdits,
                &Bash,
                bash("touch a"),
                Want::Ask,
            ),
            row(
                "read outside still asks",
                AcceptEdits,
                &Read,
                json!({"file_path": "/etc/hosts"}),
                Want::Ask,
            ),
            // Regression: accept-edits let the model write `.strata/settings.json` (and
            // so allow itself Bash) or a git hook without asking.
            row(
                "strata's own settings ask",
                AcceptEdits,
                &Write,
                json!({"file_path": e.root.join(".strata/settings.json"), "content": "{}"}),
                Want::Ask,
            ),
            row(
                "git hooks ask",
                AcceptEdits,
                &Write,
                json!({"file_path": e.root.join(".git/hooks/pre-commit"), "content": ""}),
                Want::Ask,
            ),
            row(
                "git config asks",
                AcceptEdits,
                &Edit,
                edit(&e.root.join(".git/config")),
                Want::Ask,
            ),
            row(
                "editor tasks ask",
                AcceptEdits,
                &Edit,
                edit(&e.root.join(".vscode/tasks.json")),
                Want::Ask,
            ),
            row(
                "shell rc files ask",
                AcceptEdits,
                &Edit,
                edit(&e.root.join("sub/.bashrc")),
                Want::Ask,
            ),
            row(
                "protected names in another case ask",
                AcceptEdits,
                &Edit,
                edit(&e.root.join(".GIT/hooks/pre-commit")),
                Want::Ask,
            ),
            row(
                "direnv files ask",
                AcceptEdits,
                &Edit,
                edit(&e.root.join("sub/.envrc")),
                Want::Ask,
            ),
            row(
                "a file merely named like a folder is fine",
                AcceptEdits,
                &Edit,
                edit(&e.root.join("docs/.git-notes.md")),
                Want::Allow,
            ),
        ],
    );
}

#[test]
fn accept_edits_sees_through_symlinks_leaving_the_project() {
    let e = env();
    let link = e.root.join("escape");
    std::os::unix::fs::symlink(&e.home, &link).unwrap();
    run(
        &e,
        vec![
            row(
                "edit via symlink to outside",
                AcceptEdits,
                &Edit,
                edit(&link.join(".bashrc")),
                Want::Ask,
            ),
            Row {
                deny: &["Edit(~/.bashrc)"],
                ..row(
                    "deny through symlink",
                    BypassPermissions,
                    &Edit,
                    edit(&link.join(".bashrc")),
                    Want::Deny,
                )
            },
        ],
    );
}

#[test]
fn plan_mode_allows_only_read_only_tools_i25_7_read_only_commands_run() {
    let e = env();
    let inside = e.root.join("src/a.rs");
    run(
        &e,
        vec![
            row(
                "read",
                Plan,
                &Read,
                json!({"file_path": inside}),
                Want::Allow,
            ),
            row("grep", Plan, &Grep, json!({"pattern": "x"}), Want::Allow),
            row("todo", Plan, &TodoWrite, json!({"todos": []}), Want::Allow),
            row("edit", Plan, &Edit, edit(&inside), Want::Deny),
            row(
                "write",
                Plan,
                &Write,
                json!({"file_path": inside, "content": ""}),
                Want::Deny,
            ),
            row(
                "bash that writes",
                Plan,
                &Bash,
                bash("rm -rf src"),
                Want::Deny,
            ),
            // Issue 25 item 7: a command the analysis classes read-only is a read of
            // what it names, in plan mode as in the others.
            row(
                "bash read-only inside the project",
                Plan,
                &Bash,
                bash("git log"),
                Want::Allow,
            ),
            row("ls", Plan, &Bash, bash("ls -la src"), Want::Allow),
            row(
                "grep with a pipe",
                Plan,
                &Bash,
                bash("grep -rn foo src | head -5"),
                Want::Allow,
            ),
            row(
                "ls in default mode",
                Default,
                &Bash,
                bash("ls"),
                Want::Allow,
            ),
            row(
                "read-only but outside the project",
                Plan,
                &Bash,
                bash("cat ~/.ssh/id_ed25519"),
                Want::Ask,
            ),
            row(
                "read-only from an input redirection",
                Plan,
                &Bash,
                bash("cat < ../../etc/passwd"),
                Want::Ask,
            ),
            row(
                "read-only with an expansion",
                Plan,
                &Bash,
                bash("cat \"$HOME/.aws/credentials\""),
                Want::Ask,
            ),
            row(
                "read-only in the additional directory",
                Default,
                &Bash,
                bash(&format!("cat {}/lib.rs", e.extra.display())),
                Want::Allow,
            ),
            Row {
                deny: &["Read(./.env)"],
                ..row(
                    "a Read deny rule holds for cat",
                    Plan,
                    &Bash,
                    bash("cat .env"),
                    Want::Ask,
                )
            },
            Row {
                ask: &["Read(./secrets/**)"],
                ..row(
                    "a Read ask rule holds for grep",
                    Default,
                    &Bash,
                    bash("grep key secrets/api.txt"),
                    Want::Ask,
                )
            },
            Row {
                allow: &["Bash(git log:*)"],
                ..row(
                    "bash read-only allowed by rule",
                    Plan,
                    &Bash,
                    bash("git log -3"),
                    Want::Allow,
                )
            },
            Row {
                allow: &["Edit", "Bash"],
                ..row(
                    "allow rules do not lift plan",
                    Plan,
                    &Edit,
                    edit(&inside),
                    Want::Deny,
                )
            },
            Row {
                allow: &["Bash"],
                ..row(
                    "allow rules do not lift plan for bash",
                    Plan,
                    &Bash,
                    bash("npm install"),
                    Want::Deny,
                )
            },
        ],
    );
}

#[test]
fn dont_ask_denies_whatever_would_prompt() {
    let e = env();
    run(
        &e,
        vec![
            row(
                "read inside",
                DontAsk,
                &Read,
                json!({"file_path": e.root.join("a")}),
                Want::Allow,
            ),
            row(
                "edit inside",
                DontAsk,
                &Edit,
                edit(&e.root.join("a")),
                Want::Deny,
            ),
            row("bash", DontAsk, &Bash, bash("npm install"), Want::Deny),
            Row {
                allow: &["Bash(npm test:*)"],
                ..row(
                    "allowed by rule",
                    DontAsk,
                    &Bash,
                    bash("npm test"),
                    Want::Allow,
                )
            },
            Row {
                allow: &["Bash"],
                ask: &["Bash(git push:*)"],
                ..row(
                    "ask rule becomes deny",
                    DontAsk,
                    &Bash,
                    bash("git push"),
                    Want::Deny,
                )
            },
        ],
    );
    let c = ctx(&e, DontAsk, &[], &[], &[]);
    match c.check(&Bash, &bash("npm install"), &e.root) {
        PermissionDecision::Deny { reason } => assert!(reason.contains("dontAsk"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bypass_allows_everything_but_deny_and_ask_rules_only_when_available() {
    let e = env();
    let outside = Path::new("/etc/hosts");
    let rows_for = |available: bool, want_free: Want| {
        let mut c = ctx(
            &e,
            BypassPermissions,
            &[],
            &["Bash(rm:*)"],
            &["Bash(git push:*)"],
        );
        c.bypass_available(available);
        let cases: [(&str, &dyn Tool, Value, Want); 4] = [
            ("edit outside", &Edit, edit(outside), want_free),
            ("bash", &Bash, bash("npm install"), want_free),
            ("deny rule", &Bash, bash("rm -rf x"), Want::Deny),
            ("ask rule", &Bash, bash("git push"), Want::Ask),
        ];
        for (name, tool, input, expected) in cases {
            assert_eq!(
                want(&c.check(tool, &input, &e.root)),
                expected,
                "{name} (available: {available})"
            );
        }
    };
    rows_for(true, Want::Allow);
    // A bypass mode that is not (or no longer) available decides like default.
    rows_for(false, Want::Ask);
    let mut c = ctx(&e, BypassPermissions, &[], &[], &[]);
    // Launched with the flag, but settings disable it: not available.
    c.bypass_available(false);
    assert_eq!(
        want(&c.check(&Edit, &edit(outside), &e.root)),
        Want::Ask,
        "disabled by settings"
    );
}

#[test]
fn sa4_avoiding_prompts_turns_ask_into_an_automatic_denial() {
    let e = env();
    let mut c = ctx(&e, Default, &["Bash(npm test:*)"], &[], &[]);
    c.state.should_avoid_permission_prompts = true;
    match c.check(&Edit, &edit(&e.root.join("a")), &e.root) {
        PermissionDecision::Deny { reason } => {
            assert!(reason.contains("requires approval"), "{reason}");
            assert!(reason.contains("denied automatically"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        c.check(&Read, &json!({"file_path": e.root.join("a")}), &e.root)
            .is_allow()
    );
    assert!(c.check(&Bash, &bash("npm test"), &e.root).is_allow());
}
