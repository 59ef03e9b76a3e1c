//! Protected paths (issue 16, "the model can give itself permissions"): a write or edit
//! of the agents' settings and state, `.git/`, shell start-up files, `.mcp.json` and
//! the config directories always asks, whatever allow rule matches; a deny rule still
//! denies; bypass mode allows; accept-edits does not cover them; dontAsk and a run
//! without a prompt channel deny with a reason. Paths are judged where they lead (links
//! resolved, dangling ones followed) with names in any case.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod permissions_support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use permissions_support::{Ctx, Env, Want, ctx, edit, env, want};
use serde_json::{Value, json};
use strata_agent::permissions::PermissionDecision;
use strata_agent::tools::{Edit, Read, Tool, Write};
use strata_protocol::permission::PermissionMode::{self, *};

/// The broad rules of the attack: every write in the project (`Write(/**)`), and every
/// edit anywhere (`Edit(//**)`, which Write obeys too).
const BROAD: &[&str] = &["Write(/**)", "Edit(//**)"];

fn write(path: &Path) -> Value {
    json!({"file_path": path, "content": "{\"permissions\":{\"allow\":[\"Bash\"]}}"})
}

/// A custom strata config directory, protected as a whole wherever it is.
fn config_dir(e: &Env) -> PathBuf {
    e.home.parent().unwrap().join("cfg")
}

fn context(e: &Env, mode: PermissionMode, allow: &[&str], deny: &[&str]) -> Ctx {
    let mut c = ctx(e, mode, allow, deny, &[]);
    c.bypass_available(true);
    c.env.protected_dirs = vec![config_dir(e)];
    c
}

/// Every protected path of the issue, in the project and in (a temporary) home.
fn protected_paths(e: &Env) -> Vec<PathBuf> {
    let (r, h) = (&e.root, &e.home);
    vec![
        r.join(".strata/settings.local.json"),
        r.join(".strata/settings.json"),
        r.join(".claude/settings.json"),
        r.join(".claude/settings.local.json"),
        r.join(".git/hooks/pre-commit"),
        r.join(".git/config"),
        r.join(".git"),
        r.join("sub/.git/hooks/post-checkout"),
        r.join(".gitmodules"),
        r.join(".husky/pre-commit"),
        r.join(".envrc"),
        r.join(".mcp.json"),
        r.join(".vscode/tasks.json"),
        h.join(".bashrc"),
        h.join(".bash_profile"),
        h.join(".bash_logout"),
        h.join(".profile"),
        h.join(".zshrc"),
        h.join(".zshenv"),
        h.join(".zprofile"),
        h.join(".config/fish/config.fish"),
        h.join(".config/git/config"),
        h.join(".gitconfig"),
        h.join(".claude.json"),
        h.join(".claude/settings.json"),
        h.join(".strata/settings.json"),
        h.join(".ssh/authorized_keys"),
        config_dir(e).join("settings.json"),
        config_dir(e).join("projects/x/s.jsonl"),
        // Other cases of the same names (one file on macOS and Windows).
        r.join(".STRATA/settings.local.json"),
        r.join(".Git/hooks/pre-commit"),
        h.join(".BashRC"),
    ]
}

/// Runs `check` for Write and Edit on every path, collecting mismatches.
fn expect_all(c: &Ctx, e: &Env, paths: &[PathBuf], expected: Want, label: &str) {
    let mut failures = Vec::new();
    for path in paths {
        for (tool, input) in [
            (&Write as &dyn Tool, write(path)),
            (&Edit as &dyn Tool, edit(path)),
        ] {
            let got = c.check(tool, &input, &e.root);
            if want(&got) != expected {
                failures.push(format!(
                    "{label}: {} on {}: want {expected:?}, got {got:?}",
                    tool.name(),
                    path.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn self_escalation_a_broad_write_rule_does_not_cover_protected_paths() {
    let e = env();
    let paths = protected_paths(&e);
    for allow in [BROAD, &["Write", "Edit"][..]] {
        let c = context(&e, Default, allow, &[]);
        expect_all(&c, &e, &paths, Want::Ask, &format!("default {allow:?}"));
        // The same rules still allow ordinary files: the rule works, only the
        // protected paths are held back.
        expect_all(
            &c,
            &e,
            &[e.root.join("src/a.rs"), e.root.join("docs/.git-notes.md")],
            Want::Allow,
            "ordinary files",
        );
    }
    let c = context(&e, Default, BROAD, &[]);
    match c.check(
        &Write,
        &write(&e.root.join(".strata/settings.local.json")),
        &e.root,
    ) {
        PermissionDecision::Ask { reason } => {
            assert!(reason.contains("protected"), "{reason}");
            assert!(reason.contains("settings"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn accept_edits_never_auto_accepts_protected_paths() {
    let e = env();
    let paths = protected_paths(&e);
    expect_all(
        &context(&e, AcceptEdits, &[], &[]),
        &e,
        &paths,
        Want::Ask,
        "acceptEdits",
    );
    expect_all(
        &context(&e, AcceptEdits, BROAD, &[]),
        &e,
        &paths,
        Want::Ask,
        "acceptEdits with broad rules",
    );
}

#[test]
fn bypass_mode_allows_protected_paths_but_a_deny_rule_still_denies() {
    let e = env();
    let paths = protected_paths(&e);
    expect_all(
        &context(&e, BypassPermissions, &[], &[]),
        &e,
        &paths,
        Want::Allow,
        "bypass",
    );
    let c = context(
        &e,
        BypassPermissions,
        &[],
        &["Edit(.strata/**)", "Edit(~/.bashrc)"],
    );
    expect_all(
        &c,
        &e,
        &[
            e.root.join(".strata/settings.local.json"),
            e.home.join(".bashrc"),
        ],
        Want::Deny,
        "deny in bypass",
    );
    let c = context(&e, Default, BROAD, &["Edit(.git/**)"]);
    expect_all(
        &c,
        &e,
        &[e.root.join(".git/hooks/pre-commit")],
        Want::Deny,
        "deny over broad allow",
    );
    // A bypass mode that is not available decides like default: it asks.
    let mut c = context(&e, BypassPermissions, BROAD, &[]);
    c.bypass_available(false);
    expect_all(&c, &e, &paths, Want::Ask, "bypass unavailable");
}

#[test]
fn dont_ask_and_no_prompt_channel_deny_protected_paths_with_a_reason() {
    let e = env();
    let paths = protected_paths(&e);
    let c = context(&e, DontAsk, BROAD, &[]);
    expect_all(&c, &e, &paths, Want::Deny, "dontAsk");
    match c.check(
        &Write,
        &write(&e.root.join(".git/hooks/pre-commit")),
        &e.root,
    ) {
        PermissionDecision::Deny { reason } => {
            assert!(reason.contains("protected"), "{reason}");
            assert!(reason.contains("dontAsk"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    let mut c = context(&e, Default, BROAD, &[]);
    c.state.should_avoid_permission_prompts = true;
    expect_all(&c, &e, &paths, Want::Deny, "headless without prompter");
    match c.check(&Write, &write(&e.root.join(".mcp.json")), &e.root) {
        PermissionDecision::Deny { reason } => {
            assert!(reason.contains("protected"), "{reason}");
            assert!(reason.contains("denied automatically"), "{reason}");
            // An allow rule would not help, so the reason does not suggest one.
            assert!(!reason.contains("--allowedTools"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Plan mode refuses every edit anyway.
    expect_all(
        &context(&e, Plan, BROAD, &[]),
        &e,
        &paths,
        Want::Deny,
        "plan",
    );
}

#[test]
fn reading_protected_files_is_not_held_back() {
    let e = env();
    let c = context(&e, Default, &[], &[]);
    for path in [".git/config", ".strata/settings.json", ".mcp.json"] {
        let got = c.check(&Read, &json!({"file_path": e.root.join(path)}), &e.root);
        assert_eq!(want(&got), Want::Allow, "{path}: {got:?}");
    }
}

/// A link in the project leading to a protected place is judged by where it leads,
/// also when the file (or the whole folder) does not exist yet.
#[test]
fn links_into_protected_places_are_seen_through() {
    let e = env();
    let r = &e.root;
    std::fs::create_dir_all(r.join(".git/hooks")).unwrap();
    std::fs::write(r.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    std::fs::create_dir_all(r.join(".strata")).unwrap();
    std::fs::create_dir_all(e.home.join(".config/fish")).unwrap();
    std::fs::write(e.home.join(".bashrc"), "").unwrap();
    let other_git = e.home.parent().unwrap().join("gitdir");
    std::fs::create_dir_all(other_git.join("hooks")).unwrap();

    // `x -> .strata`: a not-yet-existing file under a linked folder.
    symlink(".strata", r.join("x")).unwrap();
    // `y -> .claude`, which does not exist yet either.
    symlink(".claude", r.join("y")).unwrap();
    // A link to an existing hook, and to one that does not exist yet.
    symlink(r.join(".git/hooks/pre-commit"), r.join("hook")).unwrap();
    symlink(".git/hooks/post-merge", r.join("hook2")).unwrap();
    // A dangling link to the very settings file of the attack.
    symlink(".strata/settings.local.json", r.join("notes.json")).unwrap();
    // Links out to the home's start-up files, under other names.
    symlink(e.home.join(".bashrc"), r.join("rc")).unwrap();
    symlink(&e.home, r.join("homelink")).unwrap();
    // A `.git` that is itself a link elsewhere (as written it is still git's folder).
    std::fs::create_dir_all(r.join("vendored")).unwrap();
    symlink(&other_git, r.join("vendored/.git")).unwrap();

    let linked = vec![
        r.join("x/settings.local.json"),
        r.join("y/settings.json"),
        r.join("hook"),
        r.join("hook2"),
        r.join("notes.json"),
        r.join("rc"),
        r.join("homelink/.config/fish/config.fish"),
        r.join("homelink/.profile"),
        r.join("vendored/.git/hooks/pre-push"),
    ];
    expect_all(
        &context(&e, Default, BROAD, &[]),
        &e,
        &linked,
        Want::Ask,
        "broad rules through links",
    );
    expect_all(
        &context(&e, AcceptEdits, &[], &[]),
        &e,
        &linked,
        Want::Ask,
        "acceptEdits through links",
    );
    expect_all(
        &context(&e, DontAsk, BROAD, &[]),
        &e,
        &linked,
        Want::Deny,
        "dontAsk through links",
    );
    // A link leading to an ordinary file is ordinary.
    symlink(r.join("src"), r.join("code")).unwrap();
    expect_all(
        &context(&e, Default, BROAD, &[]),
        &e,
        &[r.join("code/main.rs")],
        Want::Allow,
        "ordinary link",
    );
}

/// For tools that write files other than through a path subject (a Bash redirection
/// target): the same judgement, one call.
#[test]
fn protected_write_judges_a_bare_target_path() {
    let e = env();
    let c = context(&e, Default, BROAD, &[]);
    let reason = c
        .protected_write(Path::new(".git/hooks/pre-commit"), &e.root)
        .unwrap();
    assert!(reason.contains("protected"), "{reason}");
    assert!(reason.contains(".git/hooks/pre-commit"), "{reason}");
    assert!(c.protected_write(&e.home.join(".zshrc"), &e.root).is_some());
    assert!(c.protected_write(Path::new("src/a.rs"), &e.root).is_none());
    let rc = c
        .protected_write(Path::new("~/.config/fish/config.fish"), &e.root)
        .unwrap();
    assert!(
        rc.contains(&e.home.display().to_string()),
        "`~/` is the home: {rc}"
    );
    assert!(
        c.protected_write(Path::new("sub/../.mcp.json"), &e.root.join("src"))
            .is_some(),
        "relative to the cwd, with `..`"
    );
}

/// Protected folder names count below the working directory holding the path: a
/// project that itself lives under a `.vscode` (or `.claude`) folder can still be
/// edited, but its own `.git` cannot, and a file outside every working directory is
/// judged by all its names (a linked worktree's git folder elsewhere).
#[test]
fn protected_names_count_below_the_project_root_and_everywhere_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join(".vscode/extensions/my-ext");
    std::fs::create_dir_all(root.join("src")).unwrap();
    let mut c = Ctx::new(&root);
    c.state = context(&env(), Default, BROAD, &[]).state;
    c.state.additional_working_directories = std::default::Default::default();
    c.env.home = Some(base.join("home"));
    c.env.protected_dirs = Vec::new();
    let check = |path: PathBuf| want(&c.check(&Write, &write(&path), &root));
    assert_eq!(check(root.join("src/extension.ts")), Want::Allow);
    assert_eq!(check(root.join(".git/hooks/pre-commit")), Want::Ask);
    assert_eq!(
        check(base.join("main/.git/worktrees/my-ext/config")),
        Want::Ask,
        "outside the project every name counts"
    );
    assert_eq!(check(base.join("main/src/lib.rs")), Want::Allow);
}

/// A hard link is another name of the same file: writing `innocent` (a hard link to a
/// git hook made earlier) changes the hook. Its other names cannot be found, so a file
/// with several links asks.
#[test]
fn a_hard_link_to_a_protected_file_asks() {
    let e = env();
    std::fs::create_dir_all(e.root.join(".git/hooks")).unwrap();
    std::fs::write(e.root.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    std::fs::hard_link(
        e.root.join(".git/hooks/pre-commit"),
        e.root.join("innocent"),
    )
    .unwrap();
    std::fs::write(e.root.join("plain.txt"), "x").unwrap();
    let c = context(&e, Default, BROAD, &[]);
    expect_all(&c, &e, &[e.root.join("innocent")], Want::Ask, "hard link");
    expect_all(&c, &e, &[e.root.join("plain.txt")], Want::Allow, "one name");
}
