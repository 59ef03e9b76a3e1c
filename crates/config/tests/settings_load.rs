//! Loading settings: source precedence, merge rules, provenance, and bad files that
//! contribute nothing while the others still apply.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use strata_config::{ConfigError, FlagSettings, SettingsFiles, SettingsLocations, SettingsSource};
use strata_protocol::permission::ExternalPermissionMode;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    locations: SettingsLocations,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let locations = SettingsLocations::new(&root.join("cfg"), &root.join("proj"))
            .with_managed_dir(root.join("etc"));
        Self {
            _tmp: tmp,
            root,
            locations,
        }
    }

    fn write(&self, path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn files(&self) -> SettingsFiles {
        SettingsFiles::new(self.locations.clone())
    }
}

#[test]
fn source_precedence_user_project_local_flag_managed() {
    let f = Fixture::new();
    let l = &f.locations;
    f.write(
        &l.user,
        r#"{"model": "user", "a": "user", "b": "user", "c": "user", "d": "user"}"#,
    );
    f.write(
        &l.project,
        r#"{"model": "project", "a": "project", "b": "project", "c": "project"}"#,
    );
    f.write(
        &l.local,
        r#"{"model": "local", "a": "local", "b": "local"}"#,
    );
    let flag = f.root.join("flag.json");
    f.write(&flag, r#"{"model": "flag", "a": "flag"}"#);
    f.write(&l.managed_file(), r#"{"model": "managed"}"#);
    let files = SettingsFiles::new(l.clone().with_flag(FlagSettings::File(flag)));
    let m = files.load();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    assert_eq!(m.settings.model.as_deref(), Some("managed"));
    assert_eq!(m.value["a"], "flag");
    assert_eq!(m.value["b"], "local");
    assert_eq!(m.value["c"], "project");
    assert_eq!(m.value["d"], "user");
    let from = |k: &str| {
        m.entries()
            .into_iter()
            .find(|e| e.key.join(".") == k)
            .unwrap()
            .from[0]
            .source
    };
    assert_eq!(from("model"), SettingsSource::Managed);
    assert_eq!(from("a"), SettingsSource::Flag);
    assert_eq!(from("b"), SettingsSource::Local);
    assert_eq!(from("c"), SettingsSource::Project);
    assert_eq!(from("d"), SettingsSource::User);
}

#[test]
fn managed_dropins_apply_after_the_base_file_in_name_order() {
    let f = Fixture::new();
    let l = &f.locations;
    f.write(
        &l.managed_file(),
        r#"{"model": "base", "x": "base", "permissions": {"deny": ["A"]}}"#,
    );
    let d = l.managed_dropin_dir();
    f.write(
        &d.join("20-b.json"),
        r#"{"model": "20", "permissions": {"deny": ["C"]}}"#,
    );
    f.write(
        &d.join("10-a.json"),
        r#"{"model": "10", "x": "10", "permissions": {"deny": ["B"]}}"#,
    );
    f.write(&d.join(".hidden.json"), r#"{"model": "hidden"}"#);
    f.write(&d.join("notes.txt"), "not settings");
    let m = f.files().load();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    assert_eq!(m.settings.model.as_deref(), Some("20"));
    assert_eq!(m.value["x"], "10");
    assert_eq!(m.value["permissions"]["deny"], json!(["A", "B", "C"]));
    let names: Vec<_> = m
        .files
        .iter()
        .map(|s| Path::new(&s.file).file_name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["managed-settings.json", "10-a.json", "20-b.json"]);
}

#[test]
fn merge_deep_merges_objects_and_concatenates_arrays_without_duplicates() {
    let f = Fixture::new();
    let l = &f.locations;
    f.write(&l.user, r#"{"permissions": {"allow": ["Read", "Bash(ls)"], "defaultMode": "plan"}, "env": {"A": "1", "B": "1"}}"#);
    f.write(
        &l.local,
        r#"{"permissions": {"allow": ["Bash(ls)", "Edit"]}, "env": {"B": "2"}}"#,
    );
    let m = f.files().load();
    let p = m.settings.permissions.as_ref().unwrap();
    assert_eq!(p.allow.as_deref().unwrap(), ["Read", "Bash(ls)", "Edit"]);
    assert_eq!(p.default_mode, Some(ExternalPermissionMode::Plan));
    let env = m.settings.env.as_ref().unwrap();
    assert_eq!((env["A"].as_str(), env["B"].as_str()), ("1", "2"));
    let allow = m
        .entries()
        .into_iter()
        .find(|e| e.key == ["permissions", "allow"])
        .unwrap();
    let sources: Vec<_> = allow.from.iter().map(|s| s.source).collect();
    assert_eq!(
        sources,
        [
            SettingsSource::User,
            SettingsSource::User,
            SettingsSource::Local
        ]
    );
}

#[test]
fn inline_flag_json_is_a_source() {
    let f = Fixture::new();
    f.write(&f.locations.user, r#"{"model": "user"}"#);
    let files = SettingsFiles::new(
        f.locations
            .clone()
            .with_flag(FlagSettings::from_arg(r#"{"model":"inline"}"#)),
    );
    let m = files.load();
    assert_eq!(m.settings.model.as_deref(), Some("inline"));
    assert_eq!(m.files.last().unwrap().file, "--settings (inline JSON)");
}

#[test]
fn corrupt_file_contributes_nothing_names_line_and_column_and_others_still_apply() {
    let f = Fixture::new();
    let l = &f.locations;
    let corrupt = "{\n  \"model\": \"local\",\n  \"fastMode\": tru\n}\n";
    f.write(&l.user, r#"{"model": "user", "env": {"U": "1"}}"#);
    f.write(&l.project, r#"{"permissions": {"allow": ["Read"]}}"#);
    f.write(&l.local, corrupt);
    let m = f.files().load();
    assert_eq!(
        m.settings.model.as_deref(),
        Some("user"),
        "the local file must not contribute"
    );
    assert_eq!(m.settings.permissions.unwrap().allow.unwrap(), ["Read"]);
    assert_eq!(m.errors.len(), 1);
    let ConfigError::Parse(e) = &m.errors[0] else {
        panic!("{:?}", m.errors[0])
    };
    assert_eq!((e.line, e.column), (3, 18));
    let shown = e
        .to_string()
        .replace(&f.root.display().to_string(), "<tmp>");
    insta::assert_snapshot!(shown, @"<tmp>/proj/.strata/settings.local.json: line 3, column 18: expected ident");
    assert_eq!(
        fs::read_to_string(&l.local).unwrap(),
        corrupt,
        "loading never rewrites a file"
    );
}

#[test]
fn invalid_permissions_keep_the_other_keys_and_make_the_rules_unknown() {
    let f = Fixture::new();
    let l = &f.locations;
    f.write(&l.user, r#"{"model": "user"}"#);
    f.write(
        &l.project,
        "{\n  \"model\": \"project\",\n  \"permissions\": {\"defaultMode\": \"yolo\"}\n}",
    );
    let m = f.files().load();
    // Fail closed: the file's other keys apply, its rules are unknown (no good version of
    // it was read before).
    assert_eq!(m.settings.model.as_deref(), Some("project"));
    assert_eq!(m.unknown_permissions.len(), 1);
    assert_eq!(m.unknown_permissions[0].source, SettingsSource::Project);
    let shown = m.errors[0]
        .to_string()
        .replace(&f.root.display().to_string(), "<tmp>");
    insta::assert_snapshot!(shown, @r#"<tmp>/proj/.strata/settings.json: line 3, column 39: permissions.defaultMode: unknown permission mode "yolo"; expected one of: default, acceptEdits, plan, bypassPermissions, dontAsk (manual is accepted as an alias of default)"#);
}

#[test]
fn missing_files_are_not_errors() {
    let f = Fixture::new();
    let m = f.files().load();
    assert!(m.errors.is_empty());
    assert!(m.files.is_empty());
    assert!(m.value.is_empty());
}

#[test]
fn ui6_bypass_disabled_by_managed_settings_is_visible_in_the_merge() {
    let f = Fixture::new();
    f.write(
        &f.locations.user,
        r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#,
    );
    f.write(
        &f.locations.managed_file(),
        r#"{"permissions": {"disableBypassPermissionsMode": "disable"}}"#,
    );
    let m = f.files().load();
    assert!(m.settings.bypass_permissions_disabled());
    assert_eq!(
        m.settings.default_mode(),
        Some(ExternalPermissionMode::BypassPermissions)
    );
}

#[test]
fn a_missing_flag_file_is_an_error_but_missing_other_files_are_not() {
    let f = Fixture::new();
    f.write(&f.locations.user, r#"{"model": "user"}"#);
    let files = SettingsFiles::new(
        f.locations
            .clone()
            .with_flag(FlagSettings::File(f.root.join("nope.json"))),
    );
    let m = files.load();
    assert_eq!(m.settings.model.as_deref(), Some("user"));
    assert_eq!(m.errors.len(), 1);
    let shown = m.errors[0]
        .to_string()
        .replace(&f.root.display().to_string(), "<tmp>");
    assert_eq!(
        shown,
        "cannot read --settings file <tmp>/nope.json: no such file"
    );
}
