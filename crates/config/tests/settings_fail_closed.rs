//! Issue 16, "fail closed on broken settings": a settings file that does not parse, or
//! whose `permissions` do not, never drops its deny rules; reading is bounded (regular
//! files only, a size cap); writes never create directories outside the config directory
//! and the project.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use strata_config::{
    ConfigError, GlobalConfigFile, MAX_CONFIG_FILE_BYTES, MergedSettings, SettingsFiles,
    SettingsLocations, SettingsSource,
};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    files: SettingsFiles,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        fs::create_dir_all(root.join("proj/.strata")).unwrap();
        let locations = SettingsLocations::new(&root.join("cfg"), &root.join("proj"))
            .with_managed_dir(root.join("etc"));
        Self {
            _tmp: tmp,
            root,
            files: SettingsFiles::new(locations),
        }
    }

    fn project(&self) -> PathBuf {
        self.files.locations().project.clone()
    }

    fn write_project(&self, text: &str) {
        fs::write(self.project(), text).unwrap();
    }
}

fn deny(m: &MergedSettings) -> Vec<String> {
    m.settings
        .permissions
        .as_ref()
        .and_then(|p| p.deny.clone())
        .unwrap_or_default()
}

const GOOD: &str = r#"{"permissions": {"deny": ["Bash(rm:*)"]}, "model": "opus"}"#;

/// Every way a file can break, without a good version read before: its rules are unknown
/// (the agent then asks for everything), and the problem names file, line and column.
#[test]
fn broken_settings_without_a_last_good_version_make_the_rules_unknown() {
    let cases = [
        (
            "trailing comma",
            "{\n  \"permissions\": {\"deny\": [\"Bash(rm:*)\",]}\n}",
            (2, 0),
        ),
        (
            "`//` comment",
            "{\n  // no rm\n  \"permissions\": {\"deny\": [\"Bash(rm:*)\"]}\n}",
            (2, 3),
        ),
        (
            "wrong-typed permissions",
            "{\n  \"permissions\": {\"deny\": \"Bash(rm:*)\"}\n}",
            (2, 0),
        ),
        (
            "a broken deny entry",
            "{\n  \"permissions\": {\"deny\": [\"Read\", \"Bash(rm\"]}\n}",
            (2, 0),
        ),
        (
            "a deny entry of the wrong type",
            "{\n  \"permissions\": {\"deny\": [\"Bash(rm:*)\", 7]}\n}",
            (2, 0),
        ),
    ];
    for (name, text, (line, column)) in cases {
        let f = Fixture::new();
        f.write_project(text);
        let m = f.files.load();
        assert_eq!(m.unknown_permissions.len(), 1, "{name}: {:?}", m.errors);
        let unknown = &m.unknown_permissions[0];
        assert_eq!(unknown.source, SettingsSource::Project, "{name}");
        let prefix = format!("{}: line {line}, column ", f.project().display());
        assert!(unknown.problem.starts_with(&prefix), "{name}: {unknown}");
        if column > 0 {
            assert!(
                unknown.problem.starts_with(&format!("{prefix}{column}:")),
                "{name}: {unknown}"
            );
        }
        assert!(deny(&m).is_empty(), "{name}: nothing half-read is merged");
        let warning: Vec<&str> = m.warnings().collect();
        assert!(
            warning[0].contains("every tool call asks for approval"),
            "{name}: {warning:?}"
        );
        assert_eq!(
            fs::read_to_string(f.project()).unwrap(),
            text,
            "{name}: never rewritten"
        );
    }
}

/// The same breakages after a good version was read (a live edit): the last good rules
/// stay in force, nothing is unknown, and the problem is reported once.
#[test]
fn broken_settings_keep_their_last_good_rules() {
    for (name, text) in [
        ("trailing comma", r#"{"permissions": {"deny": [],}}"#),
        ("`//` comment", "{\n// allow all\n\"permissions\": {}}"),
        (
            "wrong-typed permissions",
            r#"{"permissions": {"deny": {"x": 1}}}"#,
        ),
        (
            "a broken deny entry",
            r#"{"permissions": {"deny": ["Bash(rm"]}}"#,
        ),
    ] {
        let f = Fixture::new();
        f.write_project(GOOD);
        assert_eq!(deny(&f.files.load()), ["Bash(rm:*)"]);
        f.write_project(text);
        let m = f.files.load();
        assert_eq!(deny(&m), ["Bash(rm:*)"], "{name}: the last good rules hold");
        assert!(m.unknown_permissions.is_empty(), "{name}");
        assert_eq!(m.new_warnings().count(), 1, "{name}");
        assert!(
            m.warnings().next().unwrap().contains("last good"),
            "{name}: {:?}",
            m.errors
        );
        // A clone (the watcher's copy) shares the memory; the same problem is not new.
        let again = f.files.clone().load();
        assert_eq!(deny(&again), ["Bash(rm:*)"], "{name}");
        assert_eq!(again.new_warnings().count(), 0, "{name}: reported once");
        assert_eq!(again.warnings().count(), 1, "{name}");
    }
}

#[test]
fn a_wrong_typed_unrelated_key_does_not_drop_the_permissions() {
    let f = Fixture::new();
    f.write_project(
        "{\n  \"fastMode\": \"very\",\n  \"permissions\": {\"deny\": [\"Bash(rm:*)\"]},\n  \"env\": {\"PORT\": 8080}\n}",
    );
    let m = f.files.load();
    assert_eq!(deny(&m), ["Bash(rm:*)"]);
    assert!(m.unknown_permissions.is_empty());
    assert_eq!(m.errors.len(), 2, "{:?}", m.errors);
    let shown: Vec<String> = m.warnings().map(str::to_owned).collect();
    let project = f.project().display().to_string();
    assert!(
        shown[0].starts_with(&format!("{project}: line 2, column "))
            && shown[0].contains("fastMode"),
        "{shown:?}"
    );
    assert!(
        shown[1].starts_with(&format!("{project}: line 4, column "))
            && shown[1].contains("env.PORT"),
        "{shown:?}"
    );
    assert!(shown[0].contains("this key is ignored"), "{shown:?}");
}

#[test]
fn a_wrong_typed_key_keeps_its_last_good_value() {
    let f = Fixture::new();
    f.write_project(GOOD);
    f.files.load();
    f.write_project(r#"{"permissions": {"deny": ["Bash(rm:*)", "Edit"]}, "model": 4}"#);
    let m = f.files.load();
    assert_eq!(m.settings.model.as_deref(), Some("opus"));
    assert_eq!(deny(&m), ["Bash(rm:*)", "Edit"], "the new rules apply");
}

#[test]
fn a_deleted_file_is_forgotten_so_a_later_broken_one_is_unknown() {
    let f = Fixture::new();
    f.write_project(GOOD);
    f.files.load();
    fs::remove_file(f.project()).unwrap();
    assert!(deny(&f.files.load()).is_empty());
    f.write_project("{,}");
    assert_eq!(f.files.load().unknown_permissions.len(), 1);
}

#[test]
fn a_bad_allow_entry_is_not_fatal() {
    // Leaving an allow rule out only narrows what is allowed.
    let f = Fixture::new();
    f.write_project(r#"{"permissions": {"allow": ["Bash(ls"], "deny": ["Edit"]}}"#);
    let m = f.files.load();
    assert!(m.unknown_permissions.is_empty());
    assert!(m.errors.is_empty());
    assert_eq!(deny(&m), ["Edit"]);
}

#[cfg(unix)]
fn assert_quick_refusal(m: &MergedSettings, started: Instant, file: &Path, kind: &str) {
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    let ConfigError::NotARegularFile {
        file: named,
        kind: k,
    } = &m.errors[0]
    else {
        panic!("{:?}", m.errors)
    };
    assert_eq!(named, file);
    assert_eq!(*k, kind);
    assert!(m.errors[0].to_string().contains("not a regular file"));
    assert_eq!(m.unknown_permissions.len(), 1, "fails closed");
}

/// Issue 16: a committed project settings file linked to `/dev/zero` grew strata to
/// 7.7 GB in 6 s.
#[test]
#[cfg(unix)]
fn dev_zero_linked_project_settings_are_refused_at_once() {
    let f = Fixture::new();
    std::os::unix::fs::symlink("/dev/zero", f.project()).unwrap();
    let started = Instant::now();
    let m = f.files.load();
    assert_quick_refusal(&m, started, &f.project(), "a character device");
}

/// Issue 16: a FIFO as settings file hung strata forever.
#[test]
#[cfg(unix)]
fn fifo_project_settings_are_refused_without_hanging() {
    let f = Fixture::new();
    let status = std::process::Command::new("mkfifo")
        .arg(f.project())
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    let m = f.files.load();
    assert_quick_refusal(&m, started, &f.project(), "a FIFO (named pipe)");
}

#[test]
#[cfg(unix)]
fn fifo_global_config_is_refused_without_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("config.json");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    let err = GlobalConfigFile::at(&path).read().unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(matches!(err, ConfigError::NotARegularFile { .. }), "{err}");
    // A write reads first: it is refused too, and the FIFO stays.
    let err = GlobalConfigFile::at(&path)
        .update(|c| c.verbose = Some(true))
        .unwrap_err();
    assert!(matches!(err, ConfigError::NotARegularFile { .. }), "{err}");
}

#[test]
fn settings_larger_than_the_cap_are_refused() {
    let f = Fixture::new();
    let mut text = String::from("{\"model\": \"");
    text.push_str(&"x".repeat(usize::try_from(MAX_CONFIG_FILE_BYTES).unwrap()));
    text.push_str("\"}");
    f.write_project(&text);
    let m = f.files.load();
    assert!(
        matches!(&m.errors[0], ConfigError::TooLarge { file, .. } if *file == f.project()),
        "{:?}",
        m.errors
    );
    assert!(m.errors[0].to_string().contains("larger than 4 MiB"));
    assert_eq!(m.unknown_permissions.len(), 1);
}

#[test]
fn a_directory_as_settings_file_is_named() {
    let f = Fixture::new();
    fs::create_dir(f.project()).unwrap();
    let m = f.files.load();
    assert!(
        matches!(
            &m.errors[0],
            ConfigError::NotARegularFile {
                kind: "a directory",
                ..
            }
        ),
        "{:?}",
        m.errors
    );
}

/// Issue 16: `config set -g` followed a dangling user `settings.json` link and created
/// its missing parent directories anywhere.
#[test]
#[cfg(unix)]
fn a_dangling_user_settings_link_creates_no_directories_outside_the_config_dir() {
    let f = Fixture::new();
    let cfg = f.root.join("cfg");
    fs::create_dir_all(&cfg).unwrap();
    let elsewhere = f.root.join("elsewhere/deep/er");
    std::os::unix::fs::symlink(elsewhere.join("settings.json"), cfg.join("settings.json")).unwrap();
    let err = f
        .files
        .set_value(SettingsSource::User, &["model"], Some(json!("opus")))
        .unwrap_err();
    assert!(matches!(err, ConfigError::OutsideWriteRoot { .. }), "{err}");
    assert!(err.to_string().contains("outside"), "{err}");
    assert!(
        !f.root.join("elsewhere").exists(),
        "no directory was created"
    );
    // A relative link that climbs out with `..` is refused the same way.
    fs::remove_file(cfg.join("settings.json")).unwrap();
    std::os::unix::fs::symlink("../up/settings.json", cfg.join("settings.json")).unwrap();
    let err = f
        .files
        .set_value(SettingsSource::User, &["model"], Some(json!("opus")))
        .unwrap_err();
    assert!(matches!(err, ConfigError::OutsideWriteRoot { .. }), "{err}");
    assert!(!f.root.join("up").exists());
}

#[test]
fn writes_still_create_the_config_dir_and_the_project_strata_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir(root.join("proj")).unwrap();
    let files = SettingsFiles::new(
        SettingsLocations::new(&root.join("cfg/nested"), &root.join("proj"))
            .with_managed_dir(root.join("etc")),
    );
    files
        .set_value(SettingsSource::User, &["model"], Some(json!("a")))
        .unwrap();
    files
        .set_value(SettingsSource::Local, &["model"], Some(json!("b")))
        .unwrap();
    assert!(root.join("cfg/nested/settings.json").is_file());
    assert!(root.join("proj/.strata/settings.local.json").is_file());
    GlobalConfigFile::new(&root.join("cfg2"))
        .update(|c| c.verbose = Some(true))
        .unwrap();
    assert!(root.join("cfg2/config.json").is_file());
}

/// Every truncation and every single deleted byte of a settings file (what an editor
/// mid-save or a slip of the hand leaves): either the result is a valid file, whose rules
/// are then the truth, or the last good deny rules stay in force; and with no last good
/// version, the rules are unknown. Never fewer deny rules without a word.
#[test]
fn no_truncation_or_deleted_byte_of_a_settings_file_silently_drops_its_deny_rules() {
    let good = "{\n  \"permissions\": {\n    \"allow\": [\"Bash\"],\n    \"deny\": [\"Bash(rm:*)\", \"Edit(.env)\"]\n  },\n  \"model\": \"opus\"\n}\n";
    let mut variants: Vec<String> = (0..good.len()).map(|n| good[..n].to_owned()).collect();
    variants.extend((0..good.len()).map(|i| {
        let mut s = good.to_owned();
        s.remove(i);
        s
    }));
    let (mut kept, mut unknown, mut valid) = (0, 0, 0);
    let f = Fixture::new();
    for text in &variants {
        // A new `SettingsFiles` has no memory: one remembers the good version, one not.
        let warm = SettingsFiles::new(f.files.locations().clone());
        f.write_project(good);
        assert_eq!(deny(&warm.load()), ["Bash(rm:*)", "Edit(.env)"]);
        f.write_project(text);
        let m = warm.load();
        let cold = SettingsFiles::new(f.files.locations().clone()).load();
        let broken_rules = m
            .errors
            .iter()
            .any(|e| !e.to_string().contains("this key is ignored"));
        if !broken_rules {
            valid += 1;
            assert!(cold.unknown_permissions.is_empty(), "{text:?}");
            continue;
        }
        kept += 1;
        assert_eq!(
            deny(&m),
            ["Bash(rm:*)", "Edit(.env)"],
            "{text:?}: {:?}",
            m.errors
        );
        assert!(m.unknown_permissions.is_empty(), "{text:?}");
        if cold.unknown_permissions.is_empty() {
            // Without a last good version, only the `model` key can be at fault.
            assert!(
                cold.errors.iter().all(|e| e.to_string().contains("model")),
                "{text:?}: {:?}",
                cold.errors
            );
        } else {
            unknown += 1;
            assert!(deny(&cold).is_empty(), "{text:?}");
        }
    }
    assert!(
        kept > 100 && unknown > 100 && valid > 0,
        "{kept} {unknown} {valid}"
    );
}
