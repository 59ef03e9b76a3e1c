//! Protected paths through Bash (issue 16, "the model can give itself permissions"):
//! with Bash allowed by a rule (`--allowedTools Bash`), a command that writes a
//! protected path — through a redirection or a program that writes files (`tee`, `cp`,
//! `mv`, `ln`, `install`, `dd of=`, `sed -i`, `perl -i`, `truncate`, `touch`, `chmod`,
//! `rsync`, `git config`, …), also behind wrappers, `sh -c`, `find -exec` and after a `cd` — asks
//! exactly as a Write to that path does: asked in default and acceptEdits, denied in
//! plan (not read-only) and dontAsk, allowed only in bypassPermissions. A file written
//! that is only known when it runs (`> "$F"`) asks too (fail closed), while ordinary
//! writes inside the project run as before.
//!
//! Print the per-mode figures with
//! `cargo nextest run -p strata-agent --test permissions_protected_bash --no-capture`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // the figures are printed

mod permissions_support;

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use permissions_support::{Ctx, Env, Want, bash, ctx, env, want};
use strata_agent::permissions::PermissionDecision;
use strata_agent::tools::Bash;
use strata_protocol::permission::PermissionMode::{self, *};

const MODES: [PermissionMode; 5] = [Default, AcceptEdits, Plan, DontAsk, BypassPermissions];

/// Commands that write a protected path (in the project, or in the temporary home).
const PROTECTED: &[&str] = &[
    // Redirections.
    r#"echo '{"permissions":{"allow":["Bash"]}}' > .strata/settings.local.json"#,
    "cat x >> .git/hooks/pre-commit",
    "echo x >| .mcp.json",
    "echo x &> .claude/settings.json",
    "echo x &>> .claude/settings.local.json",
    "echo x 1>>.gitmodules",
    "echo x >&.envrc",
    "exec 3<> .git/config",
    "printf '#!/bin/sh\\nrm -rf ~\\n' > ~/.bashrc",
    "echo x > ~/.config/fish/config.fish",
    "echo x >> ~/.ssh/authorized_keys",
    "echo x > .vscode/tasks.json",
    "echo x > .husky/pre-commit",
    "echo x > sub/../.mcp.json",
    "echo x > .STRATA/settings.local.json",
    "echo x > src/.git/hooks/pre-commit",
    "echo x > link/pre-commit",
    "{ echo a; echo b; } > .git/hooks/pre-commit",
    "(echo x) > .git/hooks/post-checkout",
    "echo ok > out.txt && echo x > .strata/settings.json",
    "cat <<'EOF' > .git/hooks/pre-push\n#!/bin/sh\nEOF",
    // Programs that write files.
    "tee .git/hooks/pre-commit < x",
    "echo x | tee -a ~/.bashrc",
    "echo x | tee out.txt .mcp.json",
    "cp x .git/hooks/pre-commit",
    "cp hooks/pre-commit .git/hooks/",
    "cp -t .git/hooks pre-commit",
    "cp --target-directory=.strata settings.local.json",
    "cp -r payload/.git .",
    "mv x .git/hooks/pre-commit",
    "mv .strata/settings.json /tmp/gone.json",
    "ln -s ../../evil .git/hooks/pre-commit",
    "ln -sf /tmp/evil ~/.zshrc",
    "ln -s /tmp/evil/.bashrc ~",
    "ln -s ../.git/hooks h && tee h/pre-commit",
    "sort -u -o ~/.bashrc x",
    "uniq x .mcp.json",
    "gawk -i inplace '{print}' .git/config",
    "sed -i 's/a/b/' ~/.bashrc",
    "sed -i.bak -e 's/deny/x/' .strata/settings.json",
    "sed -Ei 's/x/y/' .git/config",
    "perl -pi -e 's/deny/allow/' .claude/settings.json",
    "perl -i.orig -pe 's/a/b/' ~/.profile",
    "dd if=x of=.git/hooks/pre-commit",
    "dd if=x of=~/.zprofile bs=1k",
    "install -m 755 x .git/hooks/pre-commit",
    "install -D x .husky/pre-commit",
    "truncate -s 0 .strata/settings.json",
    "touch .envrc",
    "mkdir -p .strata",
    "chmod +x .git/hooks/pre-commit",
    "chmod 777 ~/.ssh",
    "chown me .mcp.json",
    "rsync -a hooks/ .git/hooks/",
    "rsync -a x --backup-dir=.strata y",
    "rm -f .strata/settings.json",
    "curl -sSo .git/hooks/pre-commit http://127.0.0.1:9/x",
    "curl -O http://127.0.0.1:9/x/.bashrc --output-dir ~",
    "wget -O ~/.bashrc http://127.0.0.1:9/x",
    "wget -P .git/hooks http://127.0.0.1:9/pre-commit",
    "find . -name x -fprint .git/hooks/pre-commit",
    "tar -xzf payload.tgz -C .git/hooks",
    "tar czf ~/.bashrc src",
    "unzip -o payload.zip -d .strata",
    "git config core.hooksPath /tmp/evil",
    "git -C sub config core.fsmonitor ./evil",
    "git config --global alias.st '!sh -c evil'",
    // Behind wrappers, shells and runners.
    "timeout 5 tee .git/hooks/pre-commit",
    "sudo tee -a .git/config",
    "env -i PATH=/bin tee .git/hooks/x",
    "nice -n 5 cp x .git/hooks/pre-commit",
    "nohup dd if=x of=.mcp.json &",
    "bash -c 'echo x > .strata/settings.local.json'",
    "sh -c \"cat x >> ~/.profile\"",
    "eval 'echo x > .mcp.json'",
    "find . -name x -exec cp {} .git/hooks/pre-commit \\;",
    "ls | xargs -I{} cp {} .git/hooks/",
    "git add . && echo x > .git/hooks/post-commit",
    // After a `cd`.
    "cd .git/hooks && echo x > pre-commit",
    "cd .git && cd hooks && tee pre-commit",
    "cd ~ && tee .bashrc",
    "cd && sed -i 's/a/b/' .zshrc",
    "pushd .strata && cp ../x settings.local.json",
];

/// Commands whose written file is only known when it runs: they may write a protected
/// one, so a rule that allows them asks instead (fail closed).
const UNKNOWN: &[&str] = &[
    "echo x > \"$F\"",
    "echo x > $(cat name)",
    "echo x > `cat name`",
    "echo x > $HOME/.bashrc",
    "echo x > ~root/.bashrc",
    "echo x > *.json",
    "F=.mcp.json; echo x > $F",
    "tee \"$OUT\"",
    "cp x $DEST",
    "cp $OPTS x y",
    "sed -i 's/a/b/' \"$F\"",
    "ls | xargs touch",
    "find . -exec cp x {} \\;",
    "cd \"$D\" && echo x > f",
    "cd - && tee f",
    "popd && tee f",
    "env -C .git/hooks tee pre-commit",
    "env -C .git/hooks sh -c 'echo x > pre-commit'",
    "find .git -name hooks -execdir sh -c 'cat x > hooks/pre-commit' \\;",
    "find . -type d -execdir touch x \\;",
    "bash -c 'echo x > \"$1\"' _ .mcp.json",
    "echo x >",
    "tar xf payload.tgz",
    "unzip payload.zip",
];

/// Ordinary writes inside the project: allowed by `Bash` as before (denied in plan
/// mode, where nothing that writes runs).
const HARMLESS: &[&str] = &[
    "echo x > out.txt",
    "echo \"$X\" > out.txt",
    "echo x >> logs/run.log",
    "cargo build 2> err.txt",
    "npm test 2>&1 | tee test.log",
    "cp a b",
    "cp -r src backup",
    "mv a b",
    "ln -s src/a.rs link.rs",
    "tee log.txt",
    "sed -i 's/a/b/' src/a.rs",
    "perl -pi -e 's/a/b/' src/a.rs",
    "touch new.txt",
    "mkdir -p build/out",
    "truncate -s 0 big.log",
    "chmod +x script.sh",
    "dd if=/dev/zero of=blob bs=1 count=1",
    "rsync -a src/ backup/",
    "rsync -a src host:backup",
    "install -m 644 a dist/a",
    "curl -o page.html http://127.0.0.1:9/",
    "cd sub && echo x > out.txt",
    "cd src && cp a.rs b.rs",
    "find . -name '*.o' -exec rm {} +",
    "git status > status.txt",
    "sed 's/a/b/' ~/.bashrc",
    "sed -n \"${N}p\" notes.txt > line.txt",
    "sort \"$F\" > sorted.txt",
    "awk -v n=\"$N\" '{print n}' data.txt > out.txt",
    "uniq -c a.txt counts.txt",
    "tar czf dist.tgz src",
    "tar -xzf vendor.tgz -C vendor",
    "unzip -q a.zip -d out",
    "find . -name '*.rs' -fprint list.txt",
    "git config user.name",
    "git config --get remote.origin.url",
    "git config --file build.cfg a.b c",
];

/// Reading protected paths is not writing them: allowed in every mode, plan included.
const READS: &[&str] = &[
    "ls > /dev/null 2>&1",
    "cat .git/config",
    "grep -r deny .strata",
    "head -n 3 ~/.bashrc 2>/dev/null",
    "diff .mcp.json .mcp.json.orig",
];

/// What a row of a table expects.
#[derive(Clone, Copy)]
enum Kind {
    /// Asks like a Write to a protected path.
    Asks,
    /// Runs as any allowed command that writes (not in plan mode).
    Writes,
    /// Runs in every mode.
    Reads,
}

fn context(e: &Env, mode: PermissionMode, allow: &[&str], deny: &[&str]) -> Ctx {
    let mut c = ctx(e, mode, allow, deny, &[]);
    c.bypass_available(true);
    c.env.protected_dirs = vec![e.home.parent().unwrap().join("cfg")];
    c
}

/// The environment with `link` in the project leading to `.git/hooks` (not there yet).
fn setup() -> Env {
    let e = env();
    symlink(e.root.join(".git/hooks"), e.root.join("link")).unwrap();
    e
}

/// What a row of `kind` gets in `mode` with Bash allowed.
fn expected(mode: PermissionMode, kind: Kind) -> Want {
    match (mode, kind) {
        (_, Kind::Reads) | (BypassPermissions, _) => Want::Allow,
        (Plan | DontAsk, Kind::Asks) | (Plan, Kind::Writes) => Want::Deny,
        (_, Kind::Asks) => Want::Ask,
        (_, Kind::Writes) => Want::Allow,
    }
}

/// Runs `rows` in every mode with `allow`; returns (mode, tried, correct) and failures.
fn run_table(
    e: &Env,
    allow: &[&str],
    rows: &[&str],
    kind: Kind,
) -> (Vec<(PermissionMode, usize, usize)>, Vec<String>) {
    let mut figures = Vec::new();
    let mut failures = Vec::new();
    for mode in MODES {
        let c = context(e, mode, allow, &[]);
        let wanted = expected(mode, kind);
        let mut correct = 0;
        for cmd in rows {
            let got = c.check(&Bash, &bash(cmd), &e.root);
            if want(&got) == wanted {
                correct += 1;
            } else {
                failures.push(format!("[{mode:?}] {cmd:?}: want {wanted:?}, got {got:?}"));
            }
        }
        figures.push((mode, rows.len(), correct));
    }
    (figures, failures)
}

fn report(name: &str, figures: &[(PermissionMode, usize, usize)], failures: &[String]) {
    for (mode, tried, correct) in figures {
        eprintln!("{name}: {mode:?}: {correct}/{tried} rows decided correctly");
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn self_escalation_through_bash_writes_to_protected_paths_ask_in_every_mode_but_bypass() {
    let e = setup();
    let (figures, failures) = run_table(&e, &["Bash"], PROTECTED, Kind::Asks);
    report("protected", &figures, &failures);
}

#[test]
fn a_write_target_known_only_when_it_runs_asks_when_a_rule_allows_the_command() {
    let e = setup();
    let (figures, failures) = run_table(&e, &["Bash"], UNKNOWN, Kind::Asks);
    report("unknown target", &figures, &failures);
}

#[test]
fn ordinary_writes_inside_the_project_are_allowed_as_before() {
    let e = setup();
    let (figures, failures) = run_table(&e, &["Bash"], HARMLESS, Kind::Writes);
    report("harmless", &figures, &failures);
    let (figures, failures) = run_table(&e, &["Bash"], READS, Kind::Reads);
    report("reads", &figures, &failures);
}

#[test]
fn the_reason_names_the_protected_path_and_what_writes_it() {
    let e = setup();
    let c = context(&e, Default, &["Bash"], &[]);
    let cases = [
        (
            "echo x > .strata/settings.local.json",
            ".strata/settings.local.json",
            "a redirection",
        ),
        (
            "tee .git/hooks/pre-commit",
            ".git/hooks/pre-commit",
            "`tee`",
        ),
        (
            "cd .git/hooks && cp x pre-commit",
            ".git/hooks/pre-commit",
            "`cp`",
        ),
    ];
    for (cmd, path, by) in cases {
        match c.check(&Bash, &bash(cmd), &e.root) {
            PermissionDecision::Ask { reason } => {
                let full = e.root.join(path);
                assert!(reason.contains(&full.display().to_string()), "{reason}");
                assert!(reason.contains(by), "{reason}");
                assert!(reason.contains("protected"), "{reason}");
            }
            other => panic!("{cmd}: {other:?}"),
        }
    }
    match c.check(&Bash, &bash("echo x > \"$F\""), &e.root) {
        PermissionDecision::Ask { reason } => {
            assert!(reason.contains("only known when it runs"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// Headless without a prompt channel: denied, and the reason says no rule helps.
#[test]
fn without_a_prompt_a_protected_bash_write_is_denied_with_a_reason() {
    let e = setup();
    for cmd in [
        r#"echo '{"permissions":{"allow":["Bash"]}}' > .strata/settings.local.json"#,
        "echo x > \"$F\"",
    ] {
        let mut c = context(&e, Default, &["Bash"], &[]);
        c.state.should_avoid_permission_prompts = true;
        match c.check(&Bash, &bash(cmd), &e.root) {
            PermissionDecision::Deny { reason } => {
                assert!(
                    reason.contains("No allow rule covers a protected file"),
                    "{reason}"
                );
            }
            other => panic!("{cmd}: {other:?}"),
        }
    }
}

/// Narrower rules are no way around it: a prefix rule (`Bash(echo:*)`, `Bash(tee:*)`)
/// or an exact rule naming the whole line does not cover a protected write either.
#[test]
fn prefix_and_exact_rules_do_not_cover_a_protected_bash_write() {
    let e = setup();
    let cmd = "echo x > .strata/settings.local.json";
    for allow in [
        &["Bash(echo:*)"][..],
        &["Bash(tee:*)"],
        &["Bash(echo x > .strata/settings.local.json)"],
    ] {
        let c = context(&e, Default, allow, &[]);
        let line = if allow[0].starts_with("Bash(tee") {
            "tee .strata/settings.local.json"
        } else {
            cmd
        };
        match c.check(&Bash, &bash(line), &e.root) {
            PermissionDecision::Ask { reason } => assert!(reason.contains("protected"), "{reason}"),
            other => panic!("{allow:?}: {other:?}"),
        }
    }
    // The exact rule still allows the same command into an ordinary file.
    let c = context(&e, Default, &["Bash(echo x > out.txt)"], &[]);
    assert!(
        c.check(&Bash, &bash("echo x > out.txt"), &e.root)
            .is_allow()
    );
}

/// A deny rule still denies, in every mode (bypass included).
#[test]
fn a_deny_rule_on_the_writing_program_still_denies_in_every_mode() {
    let e = setup();
    for mode in MODES {
        let c = context(&e, mode, &["Bash"], &["Bash(tee:*)"]);
        let got = c.check(&Bash, &bash("tee .git/hooks/pre-commit"), &e.root);
        assert_eq!(want(&got), Want::Deny, "{mode:?}: {got:?}");
    }
}

/// The config directory is protected as a whole wherever it is, and so is the home
/// directory's start-up files when given as an absolute path.
#[test]
fn absolute_targets_in_the_config_dir_and_home_ask() {
    let e = setup();
    let c = context(&e, AcceptEdits, &["Bash"], &[]);
    let cfg: PathBuf = e.home.parent().unwrap().join("cfg/settings.json");
    for target in [cfg, e.home.join(".bashrc"), e.home.join(".gitconfig")] {
        let cmd = format!("echo x > '{}'", target.display());
        let got = c.check(&Bash, &bash(&cmd), &e.root);
        assert_eq!(want(&got), Want::Ask, "{cmd}: {got:?}");
    }
    let outside = e.home.join("notes.txt");
    let cmd = format!("echo x > '{}'", outside.display());
    assert!(c.check(&Bash, &bash(&cmd), &e.root).is_allow());
}

/// Plan mode allows only read-only commands (here with Bash allowed); `uniq IN OUT`
/// writes OUT, so it is not one (found by the write analysis, which the read-only check
/// now consults).
#[test]
fn plan_mode_uniq_with_an_output_file_is_not_read_only() {
    let e = setup();
    let c = context(&e, Plan, &["Bash"], &[]);
    assert!(c.check(&Bash, &bash("uniq a.txt"), &e.root).is_allow());
    for cmd in ["uniq a.txt b.txt", "uniq -c a.txt .mcp.json"] {
        let got = c.check(&Bash, &bash(cmd), &e.root);
        assert_eq!(want(&got), Want::Deny, "{cmd}: {got:?}");
    }
}

/// A prompt for a protected Bash write offers no "always allow" rule: none would spare
/// the next prompt. An ordinary command still gets one.
#[test]
fn no_rule_is_suggested_for_a_protected_bash_write() {
    let e = setup();
    let c = context(&e, Default, &[], &[]);
    let view = c.env.view(&c.state);
    let offered =
        |cmd: &str| strata_agent::permissions::suggestions(&Bash, &bash(cmd), &view, &e.root);
    assert!(offered("tee .git/hooks/pre-commit").is_empty());
    assert!(offered("touch .envrc").is_empty());
    assert!(!offered("tee out.txt").is_empty());
}
