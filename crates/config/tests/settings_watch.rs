//! UI-7: the watcher reports which settings source changed, with a real directory tree.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use strata_config::{
    SettingsChange, SettingsFiles, SettingsLocations, SettingsSource, SettingsWatcher,
};

/// Waits for a change of `source`, skipping others; fails after a generous timeout
/// (inotify on a loaded CI machine can be slow, the debounce here is 50 ms).
fn expect(rx: &mpsc::Receiver<SettingsChange>, source: SettingsSource) -> SettingsChange {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(c) if c.source == source => return c,
            Ok(_) => continue,
            Err(_) => panic!("no change reported for {source}"),
        }
    }
}

#[test]
fn ui7_watcher_reports_the_source_that_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let cfg = root.join("cfg");
    let proj = root.join("proj");
    fs::create_dir_all(&cfg).unwrap();
    fs::create_dir_all(&proj).unwrap();
    let locations = SettingsLocations::new(&cfg, &proj).with_managed_dir(root.join("etc"));
    let (tx, rx) = mpsc::channel();
    let _w = SettingsWatcher::start(&locations, Duration::from_millis(50), move |c| {
        let _ = tx.send(c);
    })
    .unwrap();
    let files = SettingsFiles::new(locations.clone());

    // User settings, written by strata's own atomic replace.
    files
        .set_value(SettingsSource::User, &["model"], Some(json!("opus")))
        .unwrap();
    assert_eq!(expect(&rx, SettingsSource::User).path, locations.user);

    // Local settings in a `.strata/` directory that did not exist when the watch started.
    files
        .set_value(SettingsSource::Local, &["model"], Some(json!("x")))
        .unwrap();
    assert_eq!(expect(&rx, SettingsSource::Local).path, locations.local);

    // An external, in-place edit of the project file (as an editor without rename would).
    fs::write(&locations.project, r#"{"fastMode": true}"#).unwrap();
    assert_eq!(expect(&rx, SettingsSource::Project).path, locations.project);

    // A managed drop-in file, in directories created after the watch started.
    fs::create_dir_all(locations.managed_dropin_dir()).unwrap();
    fs::write(locations.managed_dropin_dir().join("50-policy.json"), "{}").unwrap();
    expect(&rx, SettingsSource::Managed);

    // A further edit of the local file is still seen after the directory's watch moved
    // from the ancestor to the directory itself.
    files
        .set_value(SettingsSource::Local, &["model"], Some(json!("y")))
        .unwrap();
    expect(&rx, SettingsSource::Local);
}

#[test]
fn ui7_unrelated_files_are_not_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let cfg = root.join("cfg");
    fs::create_dir_all(&cfg).unwrap();
    let locations =
        SettingsLocations::new(&cfg, &root.join("proj")).with_managed_dir(root.join("etc"));
    let (tx, rx) = mpsc::channel();
    let _w = SettingsWatcher::start(&locations, Duration::from_millis(50), move |c| {
        let _ = tx.send(c);
    })
    .unwrap();
    fs::write(cfg.join("history.jsonl"), "{}\n").unwrap();
    fs::write(cfg.join("config.json"), "{}").unwrap();
    // Then a real change, so the test knows the watcher is running and the earlier writes
    // have been processed.
    fs::write(&locations.user, "{}").unwrap();
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first.source, SettingsSource::User);
}
