//! The real, file-backed ports and the settings watcher, with a real temporary config
//! directory (FX-2 … FX-5, UI-7).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_bootstrap::Bootstrap;
use strata_config::{GlobalConfigFile, SettingsFiles, SettingsLocations};
use strata_protocol::permission::PermissionMode as Mode;
use strata_state::{
    AppRoot, AppState, CredentialCache, EffectsHub, ExpandedView, Ports, RuleSource, RuntimeFacts,
    SessionScope, default_app_state,
};

struct Session {
    _dir: tempfile::TempDir,
    config_dir: PathBuf,
    files: SettingsFiles,
    bootstrap: Arc<Bootstrap>,
    root: AppRoot,
    _scope: SessionScope,
}

/// A session over a fresh config dir and project, with every real port.
fn session(prepare: impl FnOnce(&Path, &SettingsLocations)) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let config_dir = base.join("cfg");
    let project = base.join("proj");
    fs::create_dir_all(&config_dir).unwrap();
    fs::create_dir_all(&project).unwrap();
    let locations =
        SettingsLocations::new(&config_dir, &project).with_managed_dir(base.join("etc"));
    prepare(&config_dir, &locations);
    let files = SettingsFiles::new(locations);
    let global = GlobalConfigFile::new(&config_dir);
    let initial = default_app_state(RuntimeFacts::from_config(
        &files.load(),
        global.read().unwrap(),
    ));
    let bootstrap = Arc::new(Bootstrap::new(&base));
    let ports = Ports::from_files(
        files.clone(),
        global,
        Arc::clone(&bootstrap),
        &initial.runtime,
    );
    let scope = SessionScope::new();
    let root = scope.create_root(initial, EffectsHub::new(ports)).unwrap();
    Session {
        _dir: dir,
        config_dir,
        files,
        bootstrap,
        root,
        _scope: scope,
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

#[test]
fn fx2_model_end_to_end_settings_json_gains_and_loses_model() {
    let s = session(|_, l| {
        fs::write(&l.user, r#"{"zeta":1,"permissions":{"allow":["Read"]}}"#).unwrap();
    });
    let user = s.files.locations().user.clone();

    let _ = s.root.update(|st| st.main_loop_model = Some("opus".into()));
    let written = read_json(&user);
    assert_eq!(written["model"], "opus");
    assert_eq!(written["zeta"], 1, "unknown keys kept");
    assert_eq!(written["permissions"]["allow"], json!(["Read"]));
    assert_eq!(
        s.bootstrap.main_loop_model_override().as_deref(),
        Some("opus")
    );
    let keys: Vec<String> = written.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["zeta", "permissions", "model"], "key order kept");

    let _ = s.root.update(|st| st.main_loop_model = None);
    let cleared = read_json(&user);
    assert!(cleared.get("model").is_none(), "clearing removes the key");
    assert_eq!(cleared["zeta"], 1);
    assert_eq!(s.bootstrap.main_loop_model_override(), None);
}

#[test]
fn fx2_a_corrupt_user_settings_file_is_never_overwritten_and_the_failure_is_logged() {
    let s = session(|_, l| fs::write(&l.user, "{\"model\": \"opus\",,}").unwrap());
    let user = s.files.locations().user.clone();
    let before = fs::read(&user).unwrap();
    let update = s
        .root
        .update(|st| st.main_loop_model = Some("sonnet".into()));
    assert!(update.is_committed());
    assert_eq!(
        fs::read(&user).unwrap(),
        before,
        "the user's file is untouched"
    );
    let errors = s.bootstrap.errors();
    let logged = errors.iter().find(|e| e.message.contains("FX-2")).unwrap();
    assert!(logged.message.contains("line 1"), "{}", logged.message);
    assert_eq!(s.root.effects().failures(), 1);
}

#[cfg(unix)]
fn identity(path: &Path) -> (u64, i64, i64) {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(path).unwrap();
    (m.ino(), m.mtime(), m.mtime_nsec())
}

#[cfg(unix)]
#[test]
fn fx3_fx4_config_json_is_rewritten_only_when_a_stored_value_differs() {
    let s = session(|cfg, _| {
        fs::write(
            cfg.join("config.json"),
            r#"{"numStartups":7,"verbose":true,"showExpandedTodos":true}"#,
        )
        .unwrap();
    });
    let config = s.config_dir.join("config.json");
    // The initial state came from the file: verbose on, tasks expanded.
    assert!(s.root.get().verbose);
    assert_eq!(s.root.get().ui.expanded_view, ExpandedView::Tasks);

    // Change the state away and back without touching the file in between: the stored
    // values then equal the new ones, so the atomic replace must not happen.
    let original = identity(&config);
    let _ = s.root.update(|st| st.verbose = false);
    let after_write = identity(&config);
    assert_ne!(
        after_write, original,
        "verbose false differs from the file: written"
    );
    assert_eq!(read_json(&config)["verbose"], false);

    fs::write(
        &config,
        r#"{"numStartups":7,"verbose":true,"showExpandedTodos":true}"#,
    )
    .unwrap();
    let external = identity(&config);
    let _ = s.root.update(|st| st.verbose = true);
    assert_eq!(
        identity(&config),
        external,
        "the file already says true: not written"
    );

    let _ = s
        .root
        .update(|st| st.ui.expanded_view = ExpandedView::Teammates);
    let cfg = read_json(&config);
    assert_eq!(
        (
            cfg["showExpandedTodos"].clone(),
            cfg["showSpinnerTree"].clone()
        ),
        (json!(false), json!(true))
    );
    assert_eq!(cfg["numStartups"], 7, "other keys kept");
    let written = identity(&config);
    let _ = s
        .root
        .update(|st| st.ui.expanded_view = ExpandedView::Teammates);
    assert_eq!(identity(&config), written, "no change, no write");
}

struct CountingCache(AtomicUsize);

impl CredentialCache for CountingCache {
    fn name(&self) -> &str {
        "apiKeyHelper"
    }
    fn clear(&self) -> Result<(), strata_state::CredentialCacheError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Waits until `check` holds for the store's state; fails after a generous timeout
/// (inotify on a loaded machine can be slow).
fn wait_for(root: &AppRoot, what: &str, check: impl Fn(&AppState) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !check(&root.get()) {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ui7_an_external_edit_of_a_settings_file_is_applied_to_the_store() {
    let s = session(|_, l| fs::write(&l.user, r#"{"permissions":{"allow":["Read"]}}"#).unwrap());
    let cache = Arc::new(CountingCache(AtomicUsize::new(0)));
    s.root.runtime().credentials.register(cache.clone());
    let _ = s.root.update(|st| {
        st.tool_permission_context.always_allow_rules.add(
            RuleSource::Session,
            strata_state::PermissionRule::parse("Bash(ls)").unwrap(),
        );
    });
    let _watcher = s
        .root
        .watch_settings(s.files.clone(), Duration::from_millis(50))
        .unwrap();
    let project = s.files.locations().project.clone();
    fs::create_dir_all(project.parent().unwrap()).unwrap();

    // An editor writes the project file: new rules, an env var, bypass disabled.
    fs::write(
        &project,
        r#"{"permissions":{"deny":["Bash(rm:*)"],"disableBypassPermissionsMode":"disable"},
            "env":{"STRATA_UI7":"on"}}"#,
    )
    .unwrap();
    wait_for(&s.root, "the project rules", |st| {
        !st.tool_permission_context.always_deny_rules.is_empty()
    });
    let st = s.root.get();
    let ctx = &st.tool_permission_context;
    assert_eq!(
        ctx.always_deny_rules
            .of(RuleSource::ProjectSettings)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        ctx.always_allow_rules.len(),
        2,
        "user rule and session rule kept"
    );
    assert!(!ctx.is_bypass_permissions_mode_available);
    assert!(st.settings.bypass_permissions_disabled());
    assert_eq!(
        st.runtime.env.get("STRATA_UI7").as_deref(),
        Some("on"),
        "FX-5 env"
    );
    assert!(
        cache.0.load(Ordering::SeqCst) >= 1,
        "FX-5 cleared the credential caches"
    );

    // A broken edit keeps the last good settings and says why.
    fs::write(&project, "{\"permissions\": {\"deny\": [}").unwrap();
    wait_for(&s.root, "the error notification", |st| {
        st.ui.notifications.current.is_some()
    });
    let note = s.root.get().ui.notifications.current.clone().unwrap();
    assert!(note.text.contains("line 1"), "{}", note.text);
    assert!(note.text.contains("settings.json"), "{}", note.text);
    assert_eq!(
        s.root.get().tool_permission_context.always_deny_rules.len(),
        1,
        "previous settings kept"
    );
    assert_eq!(
        fs::read_to_string(&project).unwrap(),
        "{\"permissions\": {\"deny\": [}"
    );

    // The fix is applied; removing the rule removes it from the state.
    fs::write(&project, r#"{"fastMode":true}"#).unwrap();
    wait_for(&s.root, "the fixed file", |st| {
        st.settings.fast_mode == Some(true)
    });
    let st = s.root.get();
    assert!(st.tool_permission_context.always_deny_rules.is_empty());
    assert_eq!(
        st.runtime.env.get("STRATA_UI7").as_deref(),
        Some("on"),
        "environment is additive only"
    );
}

#[test]
fn ui7_strata_s_own_model_write_comes_back_through_the_watcher_without_a_loop() {
    let s = session(|_, _| {});
    let _watcher = s
        .root
        .watch_settings(s.files.clone(), Duration::from_millis(50))
        .unwrap();
    let _ = s.root.update(|st| {
        st.main_loop_model = Some("opus".into());
        st.tool_permission_context.mode = Mode::AcceptEdits;
    });
    wait_for(&s.root, "settings.model", |st| {
        st.settings.model.as_deref() == Some("opus")
    });
    // Settle, then check nothing keeps committing.
    std::thread::sleep(Duration::from_millis(400));
    let version = s.root.version();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(s.root.version(), version);
    assert_eq!(s.root.get().tool_permission_context.mode, Mode::AcceptEdits);
}

/// Issue 10 item 2 and issue 16: a file that stops parsing keeps its last good values
/// however often it is saved broken; the reload hook (what the agent's decisions read)
/// sees the last good rules, the user is told which file and where, and nothing is
/// written back. (That the report is given once is pinned through the binary, in the cli
/// test `headless_live_settings`.)
#[test]
fn ui7_a_broken_edit_keeps_the_last_good_rules_for_the_reload_hook() {
    let s = session(|_, l| {
        fs::create_dir_all(l.local.parent().unwrap()).unwrap();
        fs::write(&l.local, r#"{"permissions":{"deny":["Bash(rm:*)"]}}"#).unwrap();
    });
    let seen: Arc<std::sync::Mutex<Vec<Vec<String>>>> = Arc::default();
    let hook = Arc::clone(&seen);
    let _watcher = s
        .root
        .watch_settings_with(s.files.clone(), Duration::from_millis(50), move |m| {
            let deny = m
                .settings
                .permissions
                .as_ref()
                .and_then(|p| p.deny.clone())
                .unwrap_or_default();
            hook.lock().unwrap().push(deny);
        })
        .unwrap();
    let local = s.files.locations().local.clone();
    let broken = r#"{"permissions":{"deny":[],}}"#;
    let save = |text: &str| {
        let tmp = local.with_file_name(".tmp-save");
        fs::write(&tmp, text).unwrap();
        fs::rename(&tmp, &local).unwrap();
    };
    let reloads = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(15);
        while seen.lock().unwrap().len() < n {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for reload {n}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    reloads(1); // the merge right after the watch starts
    save(broken);
    reloads(2);
    save(broken);
    reloads(3);
    for deny in seen.lock().unwrap().iter() {
        assert_eq!(deny, &["Bash(rm:*)"], "the last good rules stay in force");
    }
    let st = s.root.get();
    let deny = &st.tool_permission_context.always_deny_rules;
    assert_eq!(deny.len(), 1, "the store keeps them too");
    let note = st
        .ui
        .notifications
        .current
        .as_ref()
        .filter(|n| n.key == "settings-error")
        .map(|n| n.text.to_string())
        .expect("the problem is shown");
    assert!(
        note.contains(&format!("{}: line 1, column", local.display()))
            && note.contains("last good"),
        "{note}"
    );
    assert_eq!(
        fs::read_to_string(&local).unwrap(),
        broken,
        "nothing is written back"
    );
}

/// Fail closed in the store (issue 16, issue 10): a settings file whose rules cannot be
/// read is listed in the app state's permission context from the start, and a fixed
/// file takes it off the list on the next reload.
#[test]
fn unreadable_settings_rules_are_unknown_in_the_store_until_the_file_is_fixed() {
    let s = session(|_, l| {
        fs::create_dir_all(l.local.parent().unwrap()).unwrap();
        fs::write(&l.local, r#"{"permissions":{"deny":["Bash(rm:*)"],,}}"#).unwrap();
    });
    let unknown = s
        .root
        .get()
        .tool_permission_context
        .unknown_settings_rules
        .clone();
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert_eq!(
        unknown[0].file,
        s.files.locations().local.display().to_string()
    );

    fs::write(
        &s.files.locations().local,
        r#"{"permissions":{"deny":["Bash(rm:*)"]}}"#,
    )
    .unwrap();
    let merged = s.files.load();
    let _ = s
        .root
        .apply_settings_change(strata_config::SettingsSource::Local, &merged);
    let st = s.root.get();
    assert!(st.tool_permission_context.unknown_settings_rules.is_empty());
    assert_eq!(st.tool_permission_context.always_deny_rules.len(), 1);
}
