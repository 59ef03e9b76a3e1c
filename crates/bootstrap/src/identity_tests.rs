//! Tests of session identity, the cwd setter (BS-3) and session switching (BS-5).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use crate::{Bootstrap, CwdChanged, SessionSwitched, SwitchCause, normalize_path};

fn recorder<E: Clone + Send + 'static>() -> (Arc<Mutex<Vec<E>>>, impl Fn(&E) + Send + Sync) {
    let seen: Arc<Mutex<Vec<E>>> = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    (seen, move |event: &E| {
        sink.lock().unwrap().push(event.clone())
    })
}

#[test]
fn bs2_new_state_has_v4_session_id_and_cwd_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let state = Bootstrap::new(dir.path());
    let resolved = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(state.session_id().get_version_num(), 4);
    assert_eq!(state.parent_session_id(), None);
    assert_eq!(&*state.cwd(), resolved.as_path());
    assert_eq!(&*state.original_cwd(), resolved.as_path());
    assert_eq!(&*state.project_root(), resolved.as_path());
    assert_eq!(state.session_project_dir(), None);
}

#[test]
fn bs3_set_cwd_stores_nfc_form_of_a_decomposed_existing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let decomposed = dir.path().join("cafe\u{301}");
    std::fs::create_dir(&decomposed).unwrap();
    let state = Bootstrap::new(dir.path());
    let stored = state.set_cwd(&decomposed);
    let expected = std::fs::canonicalize(dir.path()).unwrap().join("caf\u{e9}");
    assert_eq!(&*stored, expected.as_path());
    assert_eq!(state.cwd(), stored);
    assert!(stored.to_str().unwrap().ends_with("caf\u{e9}"));
}

#[test]
fn bs3_set_cwd_stores_nfc_form_of_a_decomposed_missing_path() {
    let state = Bootstrap::new(Path::new("/"));
    let stored = state.set_cwd(Path::new("/no/such/A\u{30a}ngstro\u{308}m"));
    assert_eq!(&*stored, Path::new("/no/such/\u{c5}ngstr\u{f6}m"));
}

#[cfg(unix)]
#[test]
fn bs3_set_cwd_resolves_symlinks_and_dot_dot() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let state = Bootstrap::new(Path::new("/"));
    let resolved_real = std::fs::canonicalize(&real).unwrap();
    assert_eq!(&*state.set_cwd(&link), resolved_real.as_path());
    assert_eq!(
        &*state.set_cwd(&link.join("..").join("real")),
        resolved_real.as_path()
    );
}

#[test]
fn bs3_set_cwd_keeps_the_raw_path_when_it_cannot_be_resolved() {
    let state = Bootstrap::new(Path::new("/"));
    let raw = Path::new("/definitely/not/here/../there");
    assert_eq!(&*state.set_cwd(raw), raw);
}

#[cfg(unix)]
#[test]
fn bs3_non_utf8_path_is_kept_byte_for_byte() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let raw = PathBuf::from(OsStr::from_bytes(b"/no/such/\xff\xfe"));
    assert_eq!(normalize_path(&raw), raw);
}

#[test]
fn bs3_setting_cwd_clears_the_settings_cache_every_time() {
    let state = Bootstrap::new(Path::new("/"));
    let start = state.settings_cache_epoch();
    state.set_cwd(Path::new("/no/such/a"));
    let after_first = state.settings_cache_epoch();
    state.set_cwd(Path::new("/no/such/a"));
    let after_same = state.settings_cache_epoch();
    assert!(after_first > start);
    assert!(after_same > after_first, "same path still clears the cache");
    assert_eq!(state.invalidate_settings_cache(), after_same + 1);
}

#[test]
fn bs3_cwd_change_is_announced_with_old_and_new_path_only_when_it_changes() {
    let state = Bootstrap::new(Path::new("/"));
    let (seen, listener) = recorder::<CwdChanged>();
    let subscription = state.on_cwd_changed(listener);
    let root = state.cwd();
    state.set_cwd(Path::new("/no/such/a"));
    state.set_cwd(Path::new("/no/such/a"));
    state.set_cwd(Path::new("/no/such/b"));
    drop(subscription);
    state.set_cwd(Path::new("/no/such/c"));
    let seen = seen.lock().unwrap().clone();
    let pairs: Vec<(PathBuf, PathBuf)> = seen
        .iter()
        .map(|e| (e.old.to_path_buf(), e.new.to_path_buf()))
        .collect();
    assert_eq!(
        pairs,
        vec![
            (root.to_path_buf(), PathBuf::from("/no/such/a")),
            (PathBuf::from("/no/such/a"), PathBuf::from("/no/such/b")),
        ]
    );
}

#[test]
fn bs3_listener_can_read_and_write_the_state_without_deadlock() {
    let state = Arc::new(Bootstrap::new(Path::new("/")));
    let weak = Arc::downgrade(&state);
    let observed = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&observed);
    let _sub = state.on_cwd_changed(move |change| {
        let Some(state) = weak.upgrade() else { return };
        // The state already holds the new value when listeners run.
        log.lock().unwrap().push(state.cwd().to_path_buf());
        assert_eq!(state.cwd(), change.new);
        // Re-entrant write: its own event is delivered after this one.
        if change.new.ends_with("first") {
            state.set_cwd(Path::new("/no/such/second"));
        }
    });
    state.set_cwd(Path::new("/no/such/first"));
    assert_eq!(&*state.cwd(), Path::new("/no/such/second"));
    assert_eq!(
        *observed.lock().unwrap(),
        vec![
            PathBuf::from("/no/such/first"),
            PathBuf::from("/no/such/second"),
        ]
    );
}

#[test]
fn bs5_switch_session_clears_old_plan_slug_sets_id_and_dir_and_signals() {
    let state = Bootstrap::new(Path::new("/"));
    let (seen, listener) = recorder::<SessionSwitched>();
    let _sub = state.on_session_switched(listener);
    let old = state.session_id();
    let other = Uuid::new_v4();
    state.set_plan_slug(old, "brave-otter");
    state.set_plan_slug(other, "calm-heron");
    let dir = PathBuf::from("/cfg/projects/-work-app");

    state.switch_session(other, Some(dir.clone()));

    assert_eq!(state.session_id(), other);
    assert_eq!(state.session_project_dir().as_deref(), Some(dir.as_path()));
    assert_eq!(state.plan_slug(old), None, "old session's slug cleared");
    assert_eq!(state.plan_slug(other).as_deref(), Some("calm-heron"));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![SessionSwitched {
            old_id: old,
            new_id: other,
            project_dir: Some(Arc::from(dir.as_path())),
            cause: SwitchCause::Switched,
        }]
    );
}

#[test]
fn bs5_switching_to_the_current_session_only_updates_the_project_dir() {
    let state = Bootstrap::new(Path::new("/"));
    let (seen, listener) = recorder::<SessionSwitched>();
    let _sub = state.on_session_switched(listener);
    let id = state.session_id();
    state.set_plan_slug(id, "kept");
    state.switch_session(id, Some(PathBuf::from("/cfg/projects/x")));
    assert_eq!(state.session_id(), id);
    assert_eq!(state.plan_slug(id).as_deref(), Some("kept"));
    assert_eq!(
        state.session_project_dir().as_deref(),
        Some(Path::new("/cfg/projects/x"))
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn bs5_regenerate_with_parent_records_lineage_and_keeps_the_plan() {
    let state = Bootstrap::new(Path::new("/"));
    let (seen, listener) = recorder::<SessionSwitched>();
    let _sub = state.on_session_switched(listener);
    let plan_session = state.session_id();
    state.set_plan_slug(plan_session, "the-plan");
    state.switch_session(plan_session, Some(PathBuf::from("/cfg/projects/p")));

    let implementation = state.regenerate_session_id(true);

    assert_ne!(implementation, plan_session);
    assert_eq!(implementation.get_version_num(), 4);
    assert_eq!(state.session_id(), implementation);
    assert_eq!(state.parent_session_id(), Some(plan_session));
    assert_eq!(state.plan_slug(plan_session).as_deref(), Some("the-plan"));
    assert_eq!(state.session_project_dir(), None);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![SessionSwitched {
            old_id: plan_session,
            new_id: implementation,
            project_dir: None,
            cause: SwitchCause::Regenerated {
                parent_recorded: true
            },
        }]
    );
}

#[test]
fn bs5_regenerate_without_parent_starts_a_fresh_lineage() {
    let state = Bootstrap::new(Path::new("/"));
    state.regenerate_session_id(true);
    assert!(state.parent_session_id().is_some());
    let old = state.session_id();
    state.set_plan_slug(old, "abandoned");
    let fresh = state.regenerate_session_id(false);
    assert_ne!(fresh, old);
    assert_eq!(state.parent_session_id(), None);
    assert_eq!(state.plan_slug(old), None);
}

#[test]
fn bs5_concurrent_switches_are_announced_once_each_in_order() {
    const THREADS: usize = 4;
    const SWITCHES: usize = 200;
    let state = Bootstrap::new(Path::new("/"));
    let (seen, listener) = recorder::<SessionSwitched>();
    let _sub = state.on_session_switched(listener);
    let first = state.session_id();
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                for n in 0..SWITCHES {
                    if n % 2 == 0 {
                        state.switch_session(Uuid::new_v4(), None);
                    } else {
                        state.regenerate_session_id(n % 3 == 0);
                    }
                }
            });
        }
    });
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), THREADS * SWITCHES);
    // Delivery order is change order: each event continues from the previous one.
    let mut expected_old = first;
    for event in &seen {
        assert_eq!(event.old_id, expected_old);
        expected_old = event.new_id;
    }
    assert_eq!(expected_old, state.session_id());
}

#[test]
fn bs3_subscription_outliving_its_state_drops_cleanly() {
    let state = Bootstrap::new(Path::new("/"));
    let subscription = state.on_cwd_changed(|_| {});
    drop(state);
    drop(subscription);
}

#[test]
fn bs3_original_cwd_and_project_root_setters_normalise() {
    let state = Bootstrap::new(Path::new("/"));
    let stored = state.set_project_root(Path::new("/no/such/re\u{301}po"));
    assert_eq!(&*stored, Path::new("/no/such/r\u{e9}po"));
    assert_eq!(state.project_root(), stored);
    let original = state.set_original_cwd(Path::new("/no/such/wt"));
    assert_eq!(state.original_cwd(), original);
    // Neither is the cwd.
    assert_eq!(&*state.cwd(), normalize_path(Path::new("/")).as_path());
}
