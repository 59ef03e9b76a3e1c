//! `cleanupPeriodDays`: sessions last written before the period are deleted with their
//! side folder and backups; everything else stays (the session being resumed, sessions a
//! running strata holds, links, sessions written since the plan).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use strata_session::cleanup::{self, CleanupError};
use strata_testkit::transcripts::TranscriptBuilder;

const DAY: Duration = Duration::from_secs(86_400);

struct Fixture {
    _tmp: tempfile::TempDir,
    cfg: PathBuf,
    project: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cfg");
    let project = cfg.join("projects").join("-w-p");
    fs::create_dir_all(&project).unwrap();
    Fixture {
        _tmp: tmp,
        cfg,
        project,
    }
}

fn set_age(p: &Path, age: Duration) {
    let f = fs::File::options().append(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

/// A session `id` with a sub-agent, a large tool output and file-history backups, its
/// files last written `days` days ago.
fn session(f: &Fixture, id: &str, days: u64) -> PathBuf {
    let mut main = TranscriptBuilder::new(id, "/w/p");
    main.prompt("hello");
    let mut agent = TranscriptBuilder::subagent(id, "a1", "/w/p");
    agent.prompt("sub");
    let path = main.write_session(&f.project, &[&agent]).unwrap();
    let side = f.project.join(id).join("tool-results");
    fs::create_dir_all(&side).unwrap();
    fs::write(side.join("toolu_1.txt"), "big output").unwrap();
    let backups = f.cfg.join("file-history").join(id);
    fs::create_dir_all(&backups).unwrap();
    fs::write(backups.join("0123456789abcdef@v1"), "old text").unwrap();
    set_age(&path, DAY * days as u32);
    path
}

#[test]
fn cleanup_deletes_sessions_older_than_the_period_with_their_folders() {
    let f = fixture();
    let old = session(&f, "old", 31);
    let recent = session(&f, "recent", 29);
    let plan = cleanup::plan(&f.cfg, 30, SystemTime::now(), &[]).unwrap();
    let ids: Vec<&str> = plan.expired.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, ["old"]);
    let s = &plan.expired[0];
    assert_eq!(s.side_dir.as_deref(), Some(f.project.join("old").as_path()));
    assert_eq!(
        s.file_history.as_deref(),
        Some(f.cfg.join("file-history/old").as_path())
    );
    // Planning (the dry run) deletes nothing.
    assert!(old.exists() && f.project.join("old").exists());

    let report = cleanup::apply(&plan);
    assert_eq!(report.deleted, std::slice::from_ref(&old));
    assert!(report.failed.is_empty() && report.kept_in_use.is_empty());
    assert!(!old.exists());
    assert!(
        !f.project.join("old").exists(),
        "sub-agents and tool outputs go too"
    );
    assert!(!f.cfg.join("file-history/old").exists(), "backups go too");
    assert!(recent.exists() && f.project.join("recent/subagents").exists());
    assert!(f.cfg.join("file-history/recent").exists());
    // A listing no longer shows it.
    let listed = strata_session::listing::list_all(&f.cfg).unwrap();
    let ids: Vec<&str> = listed
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(ids, ["recent"]);
}

#[test]
fn cleanup_period_is_configurable_and_zero_is_refused() {
    let f = fixture();
    let a = session(&f, "a", 8);
    let plan = cleanup::plan(&f.cfg, 7, SystemTime::now(), &[]).unwrap();
    assert_eq!(plan.expired.len(), 1);
    let plan = cleanup::plan(&f.cfg, cleanup::DEFAULT_PERIOD_DAYS, SystemTime::now(), &[]).unwrap();
    assert!(plan.expired.is_empty());
    let err = cleanup::plan(&f.cfg, 0, SystemTime::now(), &[]).unwrap_err();
    assert!(matches!(err, CleanupError::ZeroPeriod));
    assert!(err.to_string().contains("cleanupPeriodDays"), "{err}");
    assert!(a.exists());
    // No config folder at all: nothing to do, no error.
    let none = cleanup::plan(&f.cfg.join("missing"), 30, SystemTime::now(), &[]).unwrap();
    assert!(none.expired.is_empty());
}

#[test]
fn cleanup_never_touches_the_kept_session_a_locked_one_or_one_written_since_the_plan() {
    let f = fixture();
    let resumed = session(&f, "resumed", 90);
    let open = session(&f, "open", 90);
    let touched = session(&f, "touched", 90);
    let plan = cleanup::plan(&f.cfg, 30, SystemTime::now(), &["resumed"]).unwrap();
    let ids: Vec<&str> = plan.expired.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, ["open", "touched"]);
    // A running strata's writer holds the transcript's lock.
    let writer = fs::File::options().append(true).open(&open).unwrap();
    writer.lock().unwrap();
    // Another session is written to after the plan was made.
    set_age(&touched, Duration::ZERO);

    let report = cleanup::apply(&plan);
    assert!(report.deleted.is_empty(), "{report:?}");
    assert_eq!(report.kept_in_use, [open.clone(), touched.clone()]);
    assert!(resumed.exists() && open.exists() && touched.exists());
    assert!(f.project.join("open/subagents").exists());
    drop(writer);
}

#[cfg(unix)]
#[test]
fn cleanup_does_not_follow_or_delete_symbolic_links() {
    let f = fixture();
    let outside = f.cfg.parent().unwrap().join("elsewhere");
    fs::create_dir_all(&outside).unwrap();
    let target = outside.join("keep.jsonl");
    fs::write(&target, "{}\n").unwrap();
    set_age(&target, DAY * 400);
    std::os::unix::fs::symlink(&target, f.project.join("linked.jsonl")).unwrap();
    std::os::unix::fs::symlink(&outside, f.cfg.join("projects/-linked-project")).unwrap();
    let plan = cleanup::plan(&f.cfg, 30, SystemTime::now(), &[]).unwrap();
    assert!(plan.expired.is_empty(), "{plan:?}");
    assert!(target.exists());
}

#[test]
fn cleanup_removes_old_backups_of_sessions_that_no_longer_exist() {
    let f = fixture();
    session(&f, "live", 1);
    let orphan = f.cfg.join("file-history/gone");
    fs::create_dir_all(&orphan).unwrap();
    let young_orphan = f.cfg.join("file-history/just-started");
    fs::create_dir_all(&young_orphan).unwrap();
    let old = fs::File::open(&orphan).unwrap();
    old.set_modified(SystemTime::now() - DAY * 60).unwrap();
    let plan = cleanup::plan(&f.cfg, 30, SystemTime::now(), &[]).unwrap();
    assert_eq!(plan.orphan_file_history, std::slice::from_ref(&orphan));
    let report = cleanup::apply(&plan);
    assert_eq!(report.deleted_file_history, std::slice::from_ref(&orphan));
    assert!(!orphan.exists());
    assert!(
        young_orphan.exists(),
        "a session's first backup can precede its transcript"
    );
    assert!(f.cfg.join("file-history/live").exists());
}
