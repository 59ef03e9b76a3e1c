//! Issue 25 item 3: the reference agent's settings files (`~/.claude/settings.json`,
//! `.claude/settings.json`, `.claude/settings.local.json`) are sources of the same scopes
//! as strata's own: merged with them, strata's winning a value both set, rule lists
//! united, failing closed like strata's, watched, and never written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_config::{
    SettingsChange, SettingsFiles, SettingsLocations, SettingsSource, SettingsWatcher,
};

struct Fixture {
    _tmp: tempfile::TempDir,
    /// The reference agent's config directory (`$CLAUDE_CONFIG_DIR`).
    claude: PathBuf,
    proj: PathBuf,
    locations: SettingsLocations,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (claude, proj) = (root.join("claude-home"), root.join("proj"));
        fs::create_dir_all(&proj).unwrap();
        let locations = SettingsLocations::new(&root.join("cfg"), &proj)
            .with_managed_dir(root.join("etc"))
            .with_reference_config_dir(Some(&claude));
        Self {
            _tmp: tmp,
            claude,
            proj,
            locations,
        }
    }

    fn claude_user(&self) -> PathBuf {
        self.claude.join("settings.json")
    }

    fn claude_project(&self) -> PathBuf {
        self.proj.join(".claude/settings.json")
    }

    fn claude_local(&self) -> PathBuf {
        self.proj.join(".claude/settings.local.json")
    }

    fn write(&self, path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn files(&self) -> SettingsFiles {
        SettingsFiles::new(self.locations.clone())
    }
}

fn labels(files: &SettingsFiles, key: &str) -> Vec<String> {
    let merged = files.load();
    let entry = merged
        .entries()
        .into_iter()
        .find(|e| e.key.join(".") == key)
        .unwrap_or_else(|| panic!("no {key}"));
    entry.from.iter().map(|f| f.label()).collect()
}

#[test]
fn i25_3_reference_files_are_read_at_their_scope_and_strata_wins_a_value_both_set() {
    let f = Fixture::new();
    let l = &f.locations;
    f.write(
        &f.claude_user(),
        r#"{"model": "claude-user", "a": "claude-user", "env": {"FROM_CLAUDE_USER": "1"}}"#,
    );
    f.write(&l.user, r#"{"a": "user"}"#);
    f.write(
        &f.claude_project(),
        r#"{"model": "claude-project", "b": "claude-project", "c": "claude-project"}"#,
    );
    f.write(&l.project, r#"{"model": "project", "b": "project"}"#);
    f.write(&f.claude_local(), r#"{"d": "claude-local"}"#);
    let files = f.files();
    let merged = files.load();
    // Same scope: strata's file wins. A higher scope wins whoever wrote it.
    assert_eq!(merged.settings.model.as_deref(), Some("project"));
    assert_eq!(merged.get(&["a"]), Some(&json!("user")));
    assert_eq!(merged.get(&["b"]), Some(&json!("project")));
    assert_eq!(merged.get(&["c"]), Some(&json!("claude-project")));
    assert_eq!(merged.get(&["d"]), Some(&json!("claude-local")));
    assert_eq!(
        merged.settings.env.as_ref().unwrap()["FROM_CLAUDE_USER"],
        "1"
    );
    // Provenance names the file: strata's by scope, the reference's as `claude <scope>`.
    assert_eq!(labels(&files, "model"), ["project"]);
    assert_eq!(labels(&files, "c"), ["claude project"]);
    assert_eq!(labels(&files, "d"), ["claude local"]);
    assert_eq!(labels(&files, "env.FROM_CLAUDE_USER"), ["claude user"]);
    let order: Vec<(SettingsSource, bool)> = merged
        .files
        .iter()
        .map(|f| (f.source, f.reference))
        .collect();
    assert_eq!(
        order,
        [
            (SettingsSource::User, true),
            (SettingsSource::User, false),
            (SettingsSource::Project, true),
            (SettingsSource::Project, false),
            (SettingsSource::Local, true),
        ]
    );
    assert_eq!(
        merged.files[2].file,
        f.claude_project().display().to_string()
    );
}

#[test]
fn i25_3_rule_lists_are_unions_of_every_file() {
    let f = Fixture::new();
    let l = &f.locations;
    f.write(
        &f.claude_project(),
        r#"{"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"],
            "ask": ["Bash(git push:*)"], "additionalDirectories": ["../shared"]}}"#,
    );
    f.write(
        &l.project,
        r#"{"permissions": {"allow": ["Bash(cargo test:*)", "Bash(npm test:*)"],
            "deny": ["Bash(rm:*)"]}}"#,
    );
    f.write(
        &f.claude_local(),
        r#"{"permissions": {"deny": ["WebFetch"], "additionalDirectories": ["../docs"]}}"#,
    );
    let files = f.files();
    let merged = files.load();
    let p = merged.settings.permissions.unwrap();
    assert_eq!(
        p.allow.unwrap(),
        ["Bash(npm test:*)", "Bash(cargo test:*)"],
        "united, a rule in both files once"
    );
    assert_eq!(p.deny.unwrap(), ["Read(./.env)", "Bash(rm:*)", "WebFetch"]);
    assert_eq!(p.ask.unwrap(), ["Bash(git push:*)"]);
    assert_eq!(p.additional_directories.unwrap(), ["../shared", "../docs"]);
    assert_eq!(
        labels(&files, "permissions.deny"),
        ["claude project", "project", "claude local"]
    );
}

#[test]
fn i25_3_a_claude_settings_file_with_a_syntax_slip_makes_its_rules_unknown() {
    let f = Fixture::new();
    // A deny rule, then a trailing comma further down: not JSON.
    f.write(
        &f.claude_project(),
        "{\n  \"permissions\": {\"deny\": [\"Bash(curl:*)\"]},\n  \"model\": \"x\",\n}\n",
    );
    let merged = f.files().load();
    assert_eq!(merged.unknown_permissions.len(), 1, "{merged:?}");
    let unknown = &merged.unknown_permissions[0];
    assert_eq!(unknown.source, SettingsSource::Project);
    assert_eq!(unknown.file, f.claude_project().display().to_string());
    assert!(unknown.problem.contains("line 4"), "{}", unknown.problem);
    assert!(
        merged
            .warnings()
            .any(|w| w.contains("every tool call asks")),
        "{:?}",
        merged.warnings().collect::<Vec<_>>()
    );
}

#[test]
fn i25_3_a_claude_file_broken_during_a_session_keeps_its_last_good_deny_rules() {
    let f = Fixture::new();
    f.write(
        &f.claude_local(),
        r#"{"permissions": {"deny": ["Bash(curl:*)"]}}"#,
    );
    let files = f.files();
    assert!(files.load().unknown_permissions.is_empty());
    f.write(
        &f.claude_local(),
        r#"{"permissions": {"deny": ["Bash(curl:*)"], "allow": ["Bash"],}}"#,
    );
    let merged = files.load();
    assert!(merged.unknown_permissions.is_empty());
    let p = merged.settings.permissions.unwrap();
    assert_eq!(p.deny.unwrap(), ["Bash(curl:*)"]);
    assert_eq!(
        p.allow, None,
        "the broken version's allow rule is not taken"
    );
}

#[test]
fn i25_3_strata_writes_only_its_own_files() {
    let f = Fixture::new();
    let l = &f.locations;
    let claude_files = [f.claude_user(), f.claude_project(), f.claude_local()];
    for (path, model) in claude_files.iter().zip(["u", "p", "l"]) {
        f.write(
            path,
            &format!(r#"{{"model": "{model}", "permissions": {{"allow": ["Read"]}}}}"#),
        );
    }
    let before: Vec<Vec<u8>> = claude_files.iter().map(|p| fs::read(p).unwrap()).collect();
    let files = f.files();
    for source in [
        SettingsSource::User,
        SettingsSource::Project,
        SettingsSource::Local,
    ] {
        files
            .set_value(source, &["model"], Some(json!("mine")))
            .unwrap();
        files
            .update(source, |doc| {
                doc.insert("permissions".into(), json!({"allow": ["Bash(ls:*)"]}));
            })
            .unwrap();
        assert_eq!(
            files.locations().writable_file(source),
            Some(match source {
                SettingsSource::User => l.user.as_path(),
                SettingsSource::Project => l.project.as_path(),
                _ => l.local.as_path(),
            })
        );
    }
    let after: Vec<Vec<u8>> = claude_files.iter().map(|p| fs::read(p).unwrap()).collect();
    assert_eq!(before, after, "no .claude file was written");
    for path in [&l.user, &l.project, &l.local] {
        let v: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
        assert_eq!(v["model"], "mine");
    }
    let merged = files.load();
    assert_eq!(merged.settings.model.as_deref(), Some("mine"));
    assert_eq!(
        merged.settings.permissions.unwrap().allow.unwrap(),
        ["Read", "Bash(ls:*)"]
    );
}

#[test]
fn i25_3_setting_sources_leave_out_the_reference_file_of_a_scope_too() {
    let f = Fixture::new();
    f.write(&f.claude_user(), r#"{"a": "claude-user"}"#);
    f.write(&f.claude_project(), r#"{"b": "claude-project"}"#);
    f.write(&f.claude_local(), r#"{"c": "claude-local"}"#);
    let only_user =
        SettingsFiles::new(f.locations.clone().with_sources(&[SettingsSource::User])).load();
    assert_eq!(only_user.get(&["a"]), Some(&json!("claude-user")));
    assert_eq!(only_user.get(&["b"]), None);
    assert_eq!(only_user.get(&["c"]), None);
    let without = SettingsFiles::new(f.locations.clone().without_reference()).load();
    assert!(without.value.is_empty(), "{:?}", without.value);
}

#[test]
fn i25_3_a_project_at_home_reads_the_shared_claude_file_once_as_user_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().canonicalize().unwrap();
    let claude = home.join(".claude");
    fs::create_dir_all(&claude).unwrap();
    fs::write(
        claude.join("settings.json"),
        r#"{"permissions": {"deny": ["WebFetch"]}}"#,
    )
    .unwrap();
    let locations = SettingsLocations::new(&home.join(".strata"), &home)
        .with_managed_dir(home.join("etc"))
        .with_reference_config_dir(Some(&claude));
    let files = SettingsFiles::new(locations);
    let merged = files.load();
    assert_eq!(merged.files.len(), 1, "{:?}", merged.files);
    assert_eq!(merged.files[0].source, SettingsSource::User);
    assert_eq!(labels(&files, "permissions.deny"), ["claude user"]);
}

/// Waits for a change of `path`; fails after a generous timeout.
fn expect_path(rx: &mpsc::Receiver<SettingsChange>, path: &Path) -> SettingsChange {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(c) if c.path == path => return c,
            Ok(_) => continue,
            Err(_) => panic!("no change reported for {}", path.display()),
        }
    }
}

#[test]
fn i25_3_the_watcher_reports_edits_of_the_claude_files_as_their_scope() {
    let f = Fixture::new();
    let (tx, rx) = mpsc::channel();
    let _w = SettingsWatcher::start(&f.locations, Duration::from_millis(50), move |c| {
        let _ = tx.send(c);
    })
    .unwrap();
    // `.claude/` does not exist yet: created after the watch started.
    f.write(
        &f.claude_project(),
        r#"{"permissions": {"deny": ["Bash"]}}"#,
    );
    let change = expect_path(&rx, &f.claude_project());
    assert_eq!(change.source, SettingsSource::Project);
    f.write(&f.claude_local(), "{}");
    assert_eq!(
        expect_path(&rx, &f.claude_local()).source,
        SettingsSource::Local
    );
    f.write(&f.claude_user(), "{}");
    assert_eq!(
        expect_path(&rx, &f.claude_user()).source,
        SettingsSource::User
    );
}
