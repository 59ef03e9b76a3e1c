//! Issue 16, "fail closed on broken settings", at the decision: real settings files are
//! loaded and merged (`strata_config::SettingsFiles`), the session's permission context
//! is built from them as the engine builds it, and every call is decided. A file that
//! breaks never lets through what it denied: its last good rules hold, or, with none,
//! every call asks (and is denied where no one can be asked, naming file, line and
//! column). A live reload (UI-7) rebuilds the rules the decisions read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use strata_agent::permissions::{
    LaunchFlags, PermissionDecision, PermissionEnv, PermissionLaunch, bypass_of, initial_mode,
};
use strata_agent::tools::{Bash, Read, Tool, Write};
use strata_config::{MergedSettings, SettingsFiles, SettingsLocations, SettingsSource};
use strata_protocol::permission::PermissionMode;
use strata_state::{
    AppState, RuntimeFacts, SettingsPermissions, ToolPermissionContext, apply_settings_change,
    default_app_state,
};

struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    files: SettingsFiles,
}

fn project() -> Project {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("proj");
    std::fs::create_dir_all(root.join(".strata")).unwrap();
    let files = SettingsFiles::new(
        SettingsLocations::new(&base.join("cfg"), &root).with_managed_dir(base.join("etc")),
    );
    Project {
        _tmp: tmp,
        root,
        files,
    }
}

impl Project {
    fn write_local(&self, text: &str) {
        std::fs::write(&self.files.locations().local, text).unwrap();
    }

    fn local(&self) -> String {
        self.files.locations().local.display().to_string()
    }
}

fn bypass_launch() -> PermissionLaunch {
    PermissionLaunch {
        flags: LaunchFlags {
            dangerously_skip_permissions: true,
            ..LaunchFlags::default()
        },
        mode: Some(PermissionMode::BypassPermissions),
        ..PermissionLaunch::default()
    }
}

/// A session's permission state: the app state as the engine opens it (the rules filed
/// per settings file and the command line's), reloaded as the settings watcher does.
struct Session {
    state: Arc<AppState>,
    env: PermissionEnv,
}

impl Session {
    fn ctx(&self) -> &ToolPermissionContext {
        &self.state.tool_permission_context
    }

    fn check(&self, tool: &dyn Tool, input: &Value, cwd: &Path) -> PermissionDecision {
        self.env.check(self.ctx(), tool, input, cwd)
    }

    /// What the watcher does with a changed file (UI-7).
    fn reload(&mut self, merged: &MergedSettings) {
        self.state = apply_settings_change(SettingsSource::Local, merged)(&self.state);
    }

    fn bypass_available(&self) -> bool {
        bypass_of(self.ctx(), &self.state.settings).is_available()
    }
}

/// The state the engine opens a session with.
fn opened(p: &Project, merged: &MergedSettings, launch: &PermissionLaunch) -> Session {
    let mode = initial_mode(launch.flags, launch.mode, &merged.settings)
        .unwrap()
        .mode;
    let flags = launch.flags;
    let state = default_app_state(RuntimeFacts {
        settings: Arc::new(merged.settings.clone()),
        settings_permissions: SettingsPermissions::from_merged(merged),
        permission_mode_flag: Some(mode),
        bypass_permissions_allowed: flags.dangerously_skip_permissions
            || flags.allow_dangerously_skip_permissions,
        cli_allow: launch.allowed_tools.clone(),
        cli_deny: launch.disallowed_tools.clone(),
        ..Default::default()
    });
    Session {
        state: Arc::new(state),
        env: PermissionEnv::new(&p.root),
    }
}

fn rm(c: &Session, root: &std::path::Path) -> PermissionDecision {
    c.check(&Bash, &json!({"command": "rm -rf build"}), root)
}

#[test]
fn a_broken_file_with_no_good_version_makes_every_call_ask_even_in_bypass_mode() {
    for (name, text) in [
        (
            "trailing comma",
            "{\"permissions\": {\"deny\": [\"Bash(rm:*)\",]}}",
        ),
        (
            "`//` comment",
            "{\n// rm is dangerous\n\"permissions\": {\"deny\": [\"Bash(rm:*)\"]}}",
        ),
        (
            "wrong-typed permissions",
            "{\"permissions\": {\"deny\": \"Bash(rm:*)\"}}",
        ),
        (
            "a broken deny entry",
            "{\"permissions\": {\"deny\": [\"Bash(rm:*\"]}}",
        ),
    ] {
        let p = project();
        p.write_local(text);
        let merged = p.files.load();
        let launch = bypass_launch();
        let c = opened(&p, &merged, &launch);
        assert_eq!(c.ctx().mode, PermissionMode::BypassPermissions);
        let PermissionDecision::Ask { reason } = rm(&c, &p.root) else {
            panic!("{name}: {:?}", rm(&c, &p.root))
        };
        assert!(reason.contains(&p.local()), "{name}: {reason}");
        assert!(reason.contains("line "), "{name}: {reason}");
        // A read inside the project would need no permission: now it asks too.
        let read = c.check(&Read, &json!({"file_path": p.root.join("a.txt")}), &p.root);
        assert!(
            matches!(read, PermissionDecision::Ask { .. }),
            "{name}: {read:?}"
        );
    }
}

#[test]
fn headless_a_call_under_unknown_rules_is_denied_naming_file_line_and_column() {
    let p = project();
    p.write_local("{\n  \"permissions\": {\n    \"deny\": [\"Bash(rm:*)\"],\n  }\n}");
    let merged = p.files.load();
    let mut c = opened(&p, &merged, &PermissionLaunch::default());
    Arc::make_mut(&mut c.state)
        .tool_permission_context
        .should_avoid_permission_prompts = true;
    let PermissionDecision::Deny { reason } = rm(&c, &p.root) else {
        panic!("{:?}", rm(&c, &p.root))
    };
    assert!(
        reason.contains(&format!("{}: line 4, column 3", p.local())),
        "{reason}"
    );
    assert!(reason.contains("denied"), "{reason}");
    let write = c.check(
        &Write,
        &json!({"file_path": p.root.join("x"), "content": ""}),
        &p.root,
    );
    assert!(
        matches!(write, PermissionDecision::Deny { .. }),
        "{write:?}"
    );
}

#[test]
fn a_known_deny_rule_still_denies_outright_while_another_file_is_unknown() {
    let p = project();
    p.write_local("{,}");
    let launch = PermissionLaunch {
        disallowed_tools: vec!["Bash(rm:*)".into()],
        ..PermissionLaunch::default()
    };
    let c = opened(&p, &p.files.load(), &launch);
    assert!(matches!(rm(&c, &p.root), PermissionDecision::Deny { .. }));
}

#[test]
fn a_file_broken_by_a_live_edit_keeps_its_last_good_deny_rules() {
    let p = project();
    p.write_local(r#"{"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}"#);
    let launch = bypass_launch();
    let mut c = opened(&p, &p.files.load(), &launch);
    assert!(matches!(rm(&c, &p.root), PermissionDecision::Deny { .. }));
    for broken in [
        r#"{"permissions": {"allow": ["Bash"], "deny": [],}}"#,
        "{\"permissions\": {\"allow\": [\"Bash\"]} // deny removed\n}",
        r#"{"permissions": {"allow": ["Bash"], "deny": [3]}}"#,
        r#"{"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*"]}}"#,
    ] {
        p.write_local(broken);
        c.reload(&p.files.load());
        assert!(
            matches!(rm(&c, &p.root), PermissionDecision::Deny { .. }),
            "{broken}: {:?}",
            rm(&c, &p.root)
        );
        assert!(c.ctx().unknown_settings_rules.is_empty(), "{broken}");
    }
    // The fix takes effect.
    p.write_local(r#"{"permissions": {"allow": ["Bash"]}}"#);
    c.reload(&p.files.load());
    assert_eq!(rm(&c, &p.root), PermissionDecision::Allow);
}

#[test]
fn a_wrong_typed_unrelated_key_keeps_the_deny_rules_of_its_file() {
    let p = project();
    p.write_local(
        r#"{"fastMode": "on", "env": {"N": 1}, "permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}"#,
    );
    let merged = p.files.load();
    assert_eq!(merged.errors.len(), 2, "{:?}", merged.errors);
    let c = opened(&p, &merged, &bypass_launch());
    assert!(c.ctx().unknown_settings_rules.is_empty());
    assert!(matches!(rm(&c, &p.root), PermissionDecision::Deny { .. }));
    assert_eq!(
        c.check(&Bash, &json!({"command": "ls"}), &p.root),
        PermissionDecision::Allow
    );
}

#[test]
fn ui7_a_reload_that_disables_bypass_takes_it_away_and_never_gives_it_back() {
    let p = project();
    let launch = bypass_launch();
    let mut c = opened(&p, &p.files.load(), &launch);
    assert!(c.bypass_available());
    p.write_local(r#"{"permissions": {"disableBypassPermissionsMode": "disable"}}"#);
    c.reload(&p.files.load());
    assert!(!c.bypass_available());
    assert!(
        matches!(rm(&c, &p.root), PermissionDecision::Ask { .. }),
        "bypass mode no longer allows"
    );
    p.write_local("{}");
    c.reload(&p.files.load());
    assert!(!c.bypass_available());
}
