//! `strata config`: get/set/unset/add/remove/list through the real binary, key routing,
//! value parsing, and corrupt files (one-line error, exit 1, file unchanged).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

struct Env {
    tmp: tempfile::TempDir,
    cfg: PathBuf,
    proj: PathBuf,
}

impl Env {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let cfg = base.join("cfg");
        let proj = base.join("proj");
        fs::create_dir_all(proj.join(".git")).unwrap();
        fs::create_dir_all(proj.join("sub/dir")).unwrap();
        Self { tmp, cfg, proj }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("config")
            .args(args)
            .current_dir(&self.proj)
            .env("STRATA_CONFIG_DIR", &self.cfg)
            .env("HOME", self.tmp.path())
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn local(&self) -> PathBuf {
        self.proj.join(".strata/settings.local.json")
    }

    fn user(&self) -> PathBuf {
        self.cfg.join("settings.json")
    }

    fn json(&self, path: &PathBuf) -> Value {
        serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Output with the temp dir replaced, for snapshots.
    fn redact(&self, s: &[u8]) -> String {
        let base = self.tmp.path().canonicalize().unwrap();
        String::from_utf8_lossy(s).replace(&base.display().to_string(), "<tmp>")
    }
}

#[test]
fn set_writes_project_local_settings_by_default_and_get_reads_it_back() {
    let e = Env::new();
    e.ok(&["set", "model", "opus"]);
    assert_eq!(e.json(&e.local()), json!({"model": "opus"}));
    assert_eq!(e.ok(&["get", "model"]), "opus\n");
    assert_eq!(e.ok(&["get", "model", "--json"]), "\"opus\"\n");
    assert!(!e.user().exists());
}

#[test]
fn the_project_root_is_found_from_a_subdirectory() {
    let e = Env::new();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["config", "set", "model", "x"])
        .current_dir(e.proj.join("sub/dir"))
        .env("STRATA_CONFIG_DIR", &e.cfg)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(e.json(&e.local())["model"], "x");
}

#[test]
fn global_writes_user_settings_and_local_wins_in_the_merged_view() {
    let e = Env::new();
    e.ok(&["set", "--global", "model", "sonnet"]);
    assert_eq!(e.json(&e.user()), json!({"model": "sonnet"}));
    assert_eq!(e.ok(&["get", "model"]), "sonnet\n");
    e.ok(&["set", "model", "opus"]);
    assert_eq!(e.ok(&["get", "model"]), "opus\n");
    assert_eq!(e.ok(&["get", "--global", "model"]), "sonnet\n");
    e.ok(&["unset", "model"]);
    assert_eq!(e.ok(&["get", "model"]), "sonnet\n");
}

#[test]
fn values_are_json_when_they_parse_else_strings_and_schema_strings_stay_strings() {
    let e = Env::new();
    e.ok(&["set", "cleanupPeriodDays", "30"]);
    e.ok(&["set", "fastMode", "true"]);
    e.ok(&["set", "statusLine", r#"{"type":"command","command":"x"}"#]);
    e.ok(&["set", "theme", "dark mode"]);
    e.ok(&["set", "env.PORT", "8080"]);
    e.ok(&["set", "model", r#""quoted""#]);
    e.ok(&["set", "permissions.defaultMode", "acceptEdits"]);
    assert_eq!(
        e.json(&e.local()),
        json!({
            "cleanupPeriodDays": 30,
            "fastMode": true,
            "statusLine": {"type": "command", "command": "x"},
            "theme": "dark mode",
            "env": {"PORT": "8080"},
            "model": "quoted",
            "permissions": {"defaultMode": "acceptEdits"}
        })
    );
}

#[test]
fn add_and_remove_edit_arrays_once() {
    let e = Env::new();
    e.ok(&["add", "permissions.allow", "Bash(npm test:*)"]);
    e.ok(&["add", "permissions.allow", "Read"]);
    e.ok(&["add", "permissions.allow", "Read"]);
    e.ok(&["add", "permissions.additionalDirectories", "123"]);
    assert_eq!(
        e.json(&e.local())["permissions"],
        json!({"allow": ["Bash(npm test:*)", "Read"], "additionalDirectories": ["123"]})
    );
    e.ok(&["remove", "permissions.allow", "Bash(npm test:*)"]);
    assert_eq!(e.json(&e.local())["permissions"]["allow"], json!(["Read"]));
    let out = e.run(&["remove", "permissions.allow", "Nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        e.redact(&out.stderr),
        "strata: permissions.allow does not contain that value; nothing changed\n"
    );
    e.ok(&["add", "custom.list", "1"]);
    assert_eq!(
        e.json(&e.local())["custom"],
        json!({"list": [1]}),
        "add creates a missing array"
    );
    e.ok(&["set", "model", "m"]);
    let out = e.run(&["add", "model", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        e.redact(&out.stderr),
        "strata: model is a string, not an array; nothing changed\n"
    );
}

#[test]
fn view_flags_live_in_the_global_config_and_need_global_to_change() {
    let e = Env::new();
    let out = e.run(&["set", "verbose", "true"]);
    assert_eq!(out.status.code(), Some(2));
    insta::assert_snapshot!(e.redact(&out.stderr), @"strata: verbose lives in the global config (<tmp>/cfg/config.json); add --global to change it");
    e.ok(&["set", "--global", "verbose", "true"]);
    e.ok(&["set", "--global", "showExpandedTodos", "false"]);
    assert_eq!(
        e.json(&e.cfg.join("config.json")),
        json!({"verbose": true, "showExpandedTodos": false})
    );
    assert!(!e.user().exists(), "view flags are not settings");
    assert_eq!(e.ok(&["get", "verbose"]), "true\n");
    let out = e.run(&["set", "--global", "verbose", "yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        e.redact(&out.stderr)
            .contains("verbose: invalid type: string \"yes\", expected a boolean")
    );
    let out = e.run(&["set", "--global", "projects./x.lastCost", "1"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_invalid_permission_mode_is_refused_and_the_file_is_unchanged() {
    let e = Env::new();
    e.ok(&["set", "model", "opus"]);
    let before = fs::read(e.local()).unwrap();
    let out = e.run(&["set", "permissions.defaultMode", "yolo"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(e.redact(&out.stderr), @r#"strata: <tmp>/proj/.strata/settings.local.json: change refused, the file would be invalid: permissions.defaultMode: unknown permission mode "yolo"; expected one of: default, acceptEdits, plan, bypassPermissions, dontAsk (manual is accepted as an alias of default)"#);
    assert_eq!(fs::read(e.local()).unwrap(), before);
}

#[test]
fn corrupt_settings_file_one_line_error_exit_1_file_unchanged_other_sources_applied() {
    let e = Env::new();
    e.ok(&["set", "--global", "model", "sonnet"]);
    e.ok(&["add", "--global", "permissions.allow", "Read"]);
    fs::create_dir_all(e.local().parent().unwrap()).unwrap();
    let corrupt = "{\n  \"model\": \"opus\",\n  \"fastMode\": tru\n}\n";
    fs::write(e.local(), corrupt).unwrap();

    let out = e.run(&["set", "model", "haiku"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = e.redact(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    insta::assert_snapshot!(stderr, @"strata: <tmp>/proj/.strata/settings.local.json: line 3, column 18: expected ident (the file was left unchanged; fix it by hand)");
    assert_eq!(fs::read_to_string(e.local()).unwrap(), corrupt);

    // Reading still shows the other sources, and still reports the broken file.
    let out = e.run(&["list"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "model = \"sonnet\"  [user]\npermissions.allow = [\"Read\"]  [user]\n"
    );
    assert!(
        e.redact(&out.stderr)
            .contains("settings.local.json: line 3, column 18")
    );
    let out = e.run(&["get", "model"]);
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(1), b"sonnet\n".as_slice())
    );
    assert_eq!(fs::read_to_string(e.local()).unwrap(), corrupt);

    // Writing another source is not blocked by the broken one.
    e.ok(&["set", "--global", "fastMode", "true"]);
}

#[test]
fn list_shows_every_value_with_its_source() {
    let e = Env::new();
    e.ok(&["set", "--global", "model", "sonnet"]);
    e.ok(&["add", "--global", "permissions.allow", "Read"]);
    e.ok(&["add", "permissions.allow", "Edit"]);
    e.ok(&["set", "env.FOO", "bar"]);
    e.ok(&["set", "--global", "verbose", "true"]);
    fs::write(
        e.proj.join(".strata/settings.json"),
        r#"{"model": "project-model"}"#,
    )
    .unwrap();
    insta::assert_snapshot!(e.ok(&["list"]), @r#"
    model = "project-model"  [project]
    permissions.allow = ["Read","Edit"]  [user, local]
    env.FOO = "bar"  [local]
    verbose = true  [global]
    "#);
    let json: Value = serde_json::from_str(&e.ok(&["list", "--json"])).unwrap();
    let redacted = e.redact(json.to_string().as_bytes());
    let json: Value = serde_json::from_str(&redacted).unwrap();
    insta::assert_json_snapshot!(json[1], @r#"
    {
      "key": "permissions.allow",
      "value": [
        "Read",
        "Edit"
      ],
      "sources": [
        "user",
        "local"
      ],
      "files": [
        "<tmp>/cfg/settings.json",
        "<tmp>/proj/.strata/settings.local.json"
      ]
    }
    "#);
}

#[test]
fn settings_flag_joins_the_merged_view() {
    let e = Env::new();
    e.ok(&["set", "model", "opus"]);
    assert_eq!(
        e.ok(&["get", "model", "--settings", r#"{"model":"flagged"}"#]),
        "flagged\n"
    );
    let out = e.run(&["get", "model", "--settings", "{bad"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        e.redact(&out.stderr)
            .contains("--settings (inline JSON): line 1, column 2")
    );
}

#[test]
fn bad_keys_are_usage_errors() {
    let e = Env::new();
    for key in ["", "a..b", ".a"] {
        let out = e.run(&["set", key, "1"]);
        assert_eq!(out.status.code(), Some(2), "{key:?}");
    }
    e.ok(&["set", "custom", "flat"]);
    let out = e.run(&["set", "custom.FOO", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        e.redact(&out.stderr)
            .contains("custom is a string, not an object")
    );
    let out = e.run(&["set", "env", "flat"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "env must stay an object of strings"
    );
}

/// Regression: a value starting with `-` was taken for a flag (`config set
/// statusLine.padding -1` failed with a usage error).
#[test]
fn regression_values_may_start_with_a_hyphen() {
    let e = Env::new();
    e.ok(&["set", "statusLine.padding", "-1"]);
    e.ok(&["set", "env.ARGS", "--fast"]);
    e.ok(&["add", "permissions.allow", "-x"]);
    assert_eq!(
        e.json(&e.local()),
        json!({
            "statusLine": {"padding": -1},
            "env": {"ARGS": "--fast"},
            "permissions": {"allow": ["-x"]}
        })
    );
}
