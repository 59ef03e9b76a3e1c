//! Rewind (issue 5 part 6): every tracked file returns to its state at a user message,
//! files that did not exist are deleted, deleted files come back, and a dry run reports
//! files, insertions and deletions without touching anything.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod file_history_support;

use file_history_support::HistoryDriver;
use strata_session::file_history::{ChangeKind, FileHistoryError};
use strata_session::layout::SessionLayout;

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

/// Three turns of an agent editing files:
/// - u1: edits `a.txt` (3 lines → 4 lines) and creates `new.txt`;
/// - u2: deletes `gone.txt`, edits `a.txt` again;
/// - u3: (current state).
struct Session {
    _tmp: tempfile::TempDir,
    cwd: PathBuf,
    fh: HistoryDriver,
}

fn session() -> Session {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    let layout = SessionLayout::new(&tmp.path().join("config"), &cwd, "s");
    let (a, new, gone) = (
        cwd.join("a.txt"),
        cwd.join("sub/new.txt"),
        cwd.join("gone.txt"),
    );
    std::fs::write(&a, "one\ntwo\nthree\n").unwrap();
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::write(&gone, "keep me\n").unwrap();
    let mut fh = HistoryDriver::new(&layout, &cwd);

    fh.make_snapshot("u1").unwrap();
    fh.track_edit(&a, "m1").unwrap();
    std::fs::write(&a, "one\nTWO\nthree\nfour\n").unwrap();
    fh.track_edit(&new, "m1").unwrap();
    std::fs::create_dir_all(new.parent().unwrap()).unwrap();
    std::fs::write(&new, "brand\nnew\n").unwrap();

    fh.make_snapshot("u2").unwrap();
    fh.track_edit(&gone, "m2").unwrap();
    std::fs::remove_file(&gone).unwrap();
    std::fs::write(&a, "one\nTWO\nthree\nfour\nfive\n").unwrap();

    fh.make_snapshot("u3").unwrap();
    Session { cwd, fh, _tmp: tmp }
}

#[test]
fn dry_run_reports_files_insertions_and_deletions_and_changes_nothing() {
    let s = session();
    let report = s.fh.rewind("u1", true).unwrap();
    assert!(report.dry_run);
    let summary: Vec<(&str, ChangeKind, usize, usize)> = report
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.kind, c.insertions, c.deletions))
        .collect();
    assert_eq!(
        summary,
        [
            ("a.txt", ChangeKind::Restored, 1, 3), // TWO→two; four and five go
            ("gone.txt", ChangeKind::Created, 1, 0), // comes back
            ("sub/new.txt", ChangeKind::Deleted, 0, 2)  // did not exist at u1
        ]
    );
    assert_eq!(
        (
            report.files_changed(),
            report.insertions(),
            report.deletions()
        ),
        (3, 2, 5)
    );
    assert_eq!(
        read(&s.cwd.join("a.txt")).unwrap(),
        "one\nTWO\nthree\nfour\nfive\n"
    );
    assert!(s.cwd.join("sub/new.txt").exists());
    assert!(!s.cwd.join("gone.txt").exists());
}

#[test]
fn rewind_restores_every_tracked_file_and_deletes_files_that_did_not_exist() {
    let s = session();
    let report = s.fh.rewind("u1", false).unwrap();
    assert_eq!(report.files_changed(), 3);
    assert_eq!(read(&s.cwd.join("a.txt")).unwrap(), "one\ntwo\nthree\n");
    assert_eq!(read(&s.cwd.join("gone.txt")).unwrap(), "keep me\n");
    assert!(
        !s.cwd.join("sub/new.txt").exists(),
        "created after u1: deleted"
    );
    let mode = std::fs::metadata(s.cwd.join("a.txt"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o640, "permissions are kept");
    // Rewinding again is a no-op.
    let again = s.fh.rewind("u1", true).unwrap();
    assert_eq!((again.files_changed(), again.unchanged), (0, 3));
}

#[test]
fn rewind_to_a_later_prompt_keeps_what_existed_then() {
    let s = session();
    s.fh.rewind("u2", false).unwrap();
    assert_eq!(
        read(&s.cwd.join("a.txt")).unwrap(),
        "one\nTWO\nthree\nfour\n"
    );
    assert_eq!(read(&s.cwd.join("sub/new.txt")).unwrap(), "brand\nnew\n");
    assert_eq!(read(&s.cwd.join("gone.txt")).unwrap(), "keep me\n");
}

#[test]
fn rewind_to_the_latest_prompt_changes_only_what_moved_since() {
    let s = session();
    std::fs::write(s.cwd.join("a.txt"), "scribbled\n").unwrap();
    let report = s.fh.rewind("u3", false).unwrap();
    assert_eq!(report.files_changed(), 1);
    assert_eq!(
        read(&s.cwd.join("a.txt")).unwrap(),
        "one\nTWO\nthree\nfour\nfive\n"
    );
}

#[test]
fn a_missing_backup_aborts_before_any_file_is_touched() {
    let s = session();
    let backups = s.fh.backups_dir().to_path_buf();
    let a_v1 = s.fh.snapshots().next().unwrap().tracked_file_backups["a.txt"]
        .backup_file_name
        .clone()
        .unwrap();
    std::fs::remove_file(backups.join(&a_v1)).unwrap();
    let err = s.fh.rewind("u1", false).unwrap_err();
    assert!(matches!(err, FileHistoryError::BackupMissing { .. }));
    let text = err.to_string();
    assert!(text.contains("a.txt") && text.contains(&a_v1) && text.contains("no file was changed"));
    assert!(s.cwd.join("sub/new.txt").exists(), "nothing was deleted");
}

#[test]
fn an_unknown_message_is_a_clear_error() {
    let s = session();
    let err = s.fh.rewind("not-a-prompt", true).unwrap_err();
    assert!(matches!(
        err,
        FileHistoryError::UnknownMessage { at_cap: false, .. }
    ));
    assert!(err.to_string().contains("not-a-prompt"));
}

#[test]
fn a_file_edited_through_a_symlink_is_restored_behind_the_link() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    let (real, link) = (cwd.join("real.txt"), cwd.join("link.txt"));
    std::fs::write(&real, "before\n").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let layout = SessionLayout::new(&tmp.path().join("config"), &cwd, "s");
    let mut fh = HistoryDriver::new(&layout, &cwd);
    fh.make_snapshot("u1").unwrap();
    fh.track_edit(&link, "m1").unwrap();
    std::fs::write(&link, "after\n").unwrap();
    fh.rewind("u1", false).unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read(&real).unwrap(), "before\n");
}
