//! Writing settings sources and the global config: read-modify-write under the lock,
//! unknown keys and order kept, nothing written when nothing changed, corrupt files and
//! invalid results refused with the file untouched, concurrent writers lose nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::PathBuf;

use serde_json::{Value, json};
use strata_config::{
    ConfigError, GlobalConfigFile, SettingsFiles, SettingsLocations, SettingsSource, keypath,
};

fn files(tmp: &tempfile::TempDir) -> SettingsFiles {
    SettingsFiles::new(
        SettingsLocations::new(&tmp.path().join("cfg"), &tmp.path().join("proj"))
            .with_managed_dir(tmp.path().join("etc")),
    )
}

fn local(tmp: &tempfile::TempDir) -> PathBuf {
    tmp.path().join("proj/.strata/settings.local.json")
}

#[test]
fn update_keeps_unknown_keys_and_their_order() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    let path = local(&tmp);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        &path,
        r#"{"zeta": {"b": 1, "a": [3, 1]}, "model": "x", "alpha": null}"#,
    )
    .unwrap();
    f.set_value(SettingsSource::Local, &["model"], Some(json!("opus")))
        .unwrap();
    f.set_value(SettingsSource::Local, &["env", "FOO"], Some(json!("bar")))
        .unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "{\n  \"zeta\": {\n    \"b\": 1,\n    \"a\": [\n      3,\n      1\n    ]\n  },\n  \"model\": \"opus\",\n  \"alpha\": null,\n  \"env\": {\n    \"FOO\": \"bar\"\n  }\n}\n"
    );
}

#[test]
fn fx2_clearing_the_model_removes_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    f.set_value(SettingsSource::User, &["model"], Some(json!("sonnet")))
        .unwrap();
    f.set_value(SettingsSource::User, &["other"], Some(json!(1)))
        .unwrap();
    assert!(
        f.set_value(SettingsSource::User, &["model"], None::<Value>)
            .unwrap()
            .written
    );
    let raw = f.read_source(SettingsSource::User).unwrap().unwrap();
    assert_eq!(Value::Object(raw), json!({"other": 1}));
    assert!(
        !f.set_value(SettingsSource::User, &["model"], None::<Value>)
            .unwrap()
            .written
    );
}

#[test]
fn an_update_that_changes_nothing_does_not_touch_the_file_or_create_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    let up = f
        .update(SettingsSource::Local, |doc| doc.get("model").is_some())
        .unwrap();
    assert_eq!((up.written, up.value), (false, false));
    assert!(
        !tmp.path().join("proj/.strata").exists(),
        "a no-op must not create anything"
    );

    f.set_value(SettingsSource::Local, &["model"], Some(json!("a")))
        .unwrap();
    let path = local(&tmp);
    let inode_before = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).unwrap());
    let up = f
        .set_value(SettingsSource::Local, &["model"], Some(json!("a")))
        .unwrap();
    assert!(!up.written);
    let inode_after = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).unwrap());
    assert_eq!(
        inode_before, inode_after,
        "an unchanged update must not replace the file"
    );
}

#[test]
fn a_corrupt_file_is_never_written_and_the_error_names_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    let path = local(&tmp);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let corrupt = b"{\n  \"model\": \"x\",,\n}";
    fs::write(&path, corrupt).unwrap();
    let err = f
        .set_value(SettingsSource::Local, &["model"], Some(json!("y")))
        .unwrap_err();
    let ConfigError::Parse(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!((e.line, e.column), (2, 16));
    assert!(e.file.ends_with("settings.local.json"));
    assert_eq!(fs::read(&path).unwrap(), corrupt);
}

#[test]
fn an_edit_that_breaks_the_schema_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    f.set_value(SettingsSource::Local, &["model"], Some(json!("a")))
        .unwrap();
    let before = fs::read(local(&tmp)).unwrap();
    let err = f
        .set_value(
            SettingsSource::Local,
            &["permissions", "defaultMode"],
            Some(json!("yolo")),
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("permissions.defaultMode: unknown permission mode \"yolo\""),
        "{msg}"
    );
    assert!(matches!(err, ConfigError::Rejected { .. }));
    assert_eq!(fs::read(local(&tmp)).unwrap(), before);
}

#[test]
fn a_file_with_a_bad_value_can_be_fixed_by_an_edit_but_not_otherwise_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    let path = local(&tmp);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        &path,
        r#"{"permissions": {"defaultMode": "yolo"}, "keep": 1}"#,
    )
    .unwrap();
    assert!(matches!(
        f.set_value(SettingsSource::Local, &["model"], Some(json!("x"))),
        Err(ConfigError::Rejected { .. })
    ));
    f.set_value(
        SettingsSource::Local,
        &["permissions", "defaultMode"],
        Some(json!("plan")),
    )
    .unwrap();
    let raw = f.read_source(SettingsSource::Local).unwrap().unwrap();
    assert_eq!(
        Value::Object(raw),
        json!({"permissions": {"defaultMode": "plan"}, "keep": 1})
    );
}

#[test]
fn flag_and_managed_sources_are_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    for s in [SettingsSource::Flag, SettingsSource::Managed] {
        assert!(matches!(f.update(s, |_| ()), Err(ConfigError::ReadOnly(x)) if x == s));
    }
}

#[test]
fn concurrent_writers_in_threads_never_drop_each_others_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    std::thread::scope(|s| {
        for t in 0..8 {
            let f = f.clone();
            s.spawn(move || {
                for i in 0..20 {
                    f.update(SettingsSource::Local, |doc| {
                        keypath::set(doc, &["k", &format!("t{t}")], json!(i)).unwrap();
                    })
                    .unwrap();
                }
            });
        }
    });
    let raw = f.read_source(SettingsSource::Local).unwrap().unwrap();
    for t in 0..8 {
        assert_eq!(raw["k"][format!("t{t}")], 19);
    }
}

#[test]
fn fx3_fx4_global_config_flags_written_only_when_they_differ() {
    let tmp = tempfile::tempdir().unwrap();
    let g = GlobalConfigFile::new(tmp.path());
    fs::write(
        g.path(),
        r#"{"numStartups": 5, "verbose": false, "projects": {"/p": {"lastCost": 1, "x": true}}}"#,
    )
    .unwrap();
    let mut writes = 0;
    for (verbose, todos) in [
        (false, None),
        (true, Some(true)),
        (true, Some(true)),
        (true, Some(false)),
    ] {
        let up = g
            .update(|c| {
                c.verbose = Some(verbose);
                if let Some(t) = todos {
                    c.show_expanded_todos = Some(t);
                }
            })
            .unwrap();
        writes += usize::from(up.written);
    }
    assert_eq!(writes, 2);
    let raw: Value = serde_json::from_str(&fs::read_to_string(g.path()).unwrap()).unwrap();
    assert_eq!(
        raw,
        json!({"numStartups": 5, "verbose": true, "projects": {"/p": {"lastCost": 1.0, "x": true}}, "showExpandedTodos": false})
    );
    assert_eq!(
        raw.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["numStartups", "verbose", "projects", "showExpandedTodos"]
    );
}

#[test]
fn sp4_cost_slot_update_keeps_other_projects_and_unknown_slot_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let g = GlobalConfigFile::new(tmp.path());
    fs::write(
        g.path(),
        r#"{"projects": {"/a": {"hasTrustDialogAccepted": true}, "/b": {"lastCost": 2}}}"#,
    )
    .unwrap();
    g.update(|c| {
        let slot = c.project_mut("/a");
        slot.last_cost = Some(0.25);
        slot.last_session_id = Some("s1".into());
    })
    .unwrap();
    let cfg = g.read().unwrap();
    let a = cfg.project("/a").unwrap();
    assert_eq!(a.last_cost, Some(0.25));
    assert_eq!(a.extra["hasTrustDialogAccepted"], true);
    assert_eq!(cfg.project("/b").unwrap().last_cost, Some(2.0));
}

#[test]
fn corrupt_global_config_is_refused_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let g = GlobalConfigFile::new(tmp.path());
    fs::write(g.path(), "{\"verbose\": yes}").unwrap();
    let err = g.update(|c| c.verbose = Some(true)).unwrap_err();
    assert!(err.to_string().contains("line 1, column 13"), "{err}");
    assert_eq!(fs::read_to_string(g.path()).unwrap(), "{\"verbose\": yes}");
    let raw_err = g
        .update_raw(|o| o.insert("x".into(), json!(1)))
        .unwrap_err();
    assert!(matches!(raw_err, ConfigError::Parse(_)));
}

#[test]
fn global_config_raw_update_is_validated() {
    let tmp = tempfile::tempdir().unwrap();
    let g = GlobalConfigFile::new(tmp.path());
    let err = g
        .update_raw(|o| o.insert("verbose".into(), json!("yes")))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("verbose: invalid type: string \"yes\", expected a boolean"),
        "{err}"
    );
    assert!(!g.path().exists());
}

/// A project settings file linked (in the repository) to a file outside the project is
/// not written through: the repository would choose which of the user's files changes.
/// Links within the project and the user's own linked settings are written through.
#[test]
#[cfg(unix)]
fn a_project_settings_link_out_of_the_project_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(&tmp);
    let user = tmp.path().join("cfg/settings.json");
    fs::create_dir_all(user.parent().unwrap()).unwrap();
    fs::write(&user, "{}").unwrap();
    let path = local(&tmp);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("../../cfg/settings.json", &path).unwrap();
    let err = f
        .set_value(SettingsSource::Local, &["model"], Some(json!("x")))
        .unwrap_err();
    assert!(matches!(err, ConfigError::LinkOutOfProject { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(
        fs::read_to_string(&user).unwrap(),
        "{}",
        "the user's file is untouched"
    );

    // Within the project a link is fine.
    fs::remove_file(&path).unwrap();
    fs::write(tmp.path().join("proj/shared.json"), "{}").unwrap();
    std::os::unix::fs::symlink("../shared.json", &path).unwrap();
    f.set_value(SettingsSource::Local, &["model"], Some(json!("y")))
        .unwrap();
    let shared: Value =
        serde_json::from_str(&fs::read_to_string(tmp.path().join("proj/shared.json")).unwrap())
            .unwrap();
    assert_eq!(shared["model"], "y");
}
