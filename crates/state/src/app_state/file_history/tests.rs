//! The file-history updaters: versions, carried-over backups, the persisted change, the
//! no-change rule and the cap.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::{RuntimeFacts, default_app_state};

fn namer(abs: &Path, version: u32) -> String {
    format!("{}@v{version}", abs.file_name().unwrap().to_string_lossy())
}

fn file(key: &str, exists: bool) -> InspectedFile {
    InspectedFile {
        key: key.to_owned(),
        absolute: PathBuf::from("/w").join(key),
        exists,
    }
}

const T: &str = "2026-01-01T00:00:00.000Z";

#[test]
fn an_edit_already_tracked_at_this_prompt_leaves_the_state_the_same_arc() {
    let state = Arc::new(default_app_state(RuntimeFacts::default()));
    let state = update_file_history(&state, |h| Some(h.with_snapshot("u1", &[], &namer, T)));
    let state = update_file_history(&state, |h| {
        h.with_edit(&file("a.rs", true), "u1", &namer, T).unwrap()
    });
    let again = update_file_history(&state, |h| {
        h.with_edit(&file("a.rs", true), "u1", &namer, T).unwrap()
    });
    assert!(
        Arc::ptr_eq(&again, &state),
        "no change must return the same Arc"
    );
}

#[test]
fn a_change_shares_every_other_domain() {
    let mut state = default_app_state(RuntimeFacts::default());
    // Enough messages that the vector is a shared tree, not an inline buffer.
    state.messages.extend((0..100).map(|i| {
        Arc::new(strata_protocol::message::Message::user_text(format!(
            "m{i}"
        )))
    }));
    let state = Arc::new(state);
    let next = update_file_history(&state, |h| Some(h.with_snapshot("u1", &[], &namer, T)));
    assert!(!Arc::ptr_eq(&next, &state));
    assert!(next.messages.ptr_eq(&state.messages));
    assert!(Arc::ptr_eq(&next.settings, &state.settings));
    assert_eq!(next.file_history.snapshots.len(), 1);
}

#[test]
fn first_edit_backs_the_file_up_as_version_one_and_names_the_backup_to_write() {
    let h = FileHistory::default().with_snapshot("u1", &[], &namer, T);
    let first = h.last_change.clone().unwrap();
    assert!(!first.entry.is_snapshot_update);
    assert!(first.backups.is_empty());

    let h = h
        .with_edit(&file("a.rs", true), "u1", &namer, T)
        .unwrap()
        .unwrap();
    let change = h.last_change.clone().unwrap();
    assert!(change.entry.is_snapshot_update);
    assert_eq!(change.entry.snapshot.message_id, "u1");
    assert_eq!(
        change.backups,
        [PendingBackup {
            source: PathBuf::from("/w/a.rs"),
            backup_file_name: "a.rs@v1".into()
        }]
    );
    let backup = &h.latest().unwrap().tracked_file_backups["a.rs"];
    assert_eq!(backup.version, 1);
    assert_eq!(backup.backup_file_name.as_deref(), Some("a.rs@v1"));
    assert_eq!(change.sequence, 2);
}

#[test]
fn a_new_file_is_tracked_with_no_backup() {
    let h = FileHistory::default()
        .with_snapshot("u1", &[], &namer, T)
        .with_edit(&file("new.rs", false), "u1", &namer, T)
        .unwrap()
        .unwrap();
    let change = h.last_change.clone().unwrap();
    assert!(change.backups.is_empty());
    assert_eq!(
        change.entry.snapshot.tracked_file_backups["new.rs"].backup_file_name,
        None
    );
}

#[test]
fn an_edit_before_any_prompt_is_refused() {
    let err = FileHistory::default()
        .with_edit(&file("a.rs", true), "m", &namer, T)
        .unwrap_err();
    assert!(matches!(err, FileHistoryUpdateError::NoSnapshot { .. }));
}

#[test]
fn the_next_prompt_carries_unchanged_files_and_versions_changed_ones() {
    let h = FileHistory::default()
        .with_snapshot("u1", &[], &namer, T)
        .with_edit(&file("a.rs", true), "u1", &namer, T)
        .unwrap()
        .unwrap()
        .with_edit(&file("b.rs", true), "u1", &namer, T)
        .unwrap()
        .unwrap();
    let h = h.with_snapshot("u2", &[file("a.rs", true)], &namer, T);
    let snap = h.latest().unwrap();
    assert_eq!(snap.message_id, "u2");
    assert_eq!(snap.tracked_file_backups["a.rs"].version, 2);
    assert_eq!(snap.tracked_file_backups["b.rs"].version, 1);
    let change = h.last_change.clone().unwrap();
    assert_eq!(change.backups.len(), 1);
    assert_eq!(change.backups[0].backup_file_name, "a.rs@v2");
}

#[test]
fn a_failed_backup_is_withdrawn_so_the_next_edit_backs_up_again() {
    let h = FileHistory::default()
        .with_snapshot("u1", &[], &namer, T)
        .with_edit(&file("a.rs", true), "u1", &namer, T)
        .unwrap()
        .unwrap();
    let seq = h.change_sequence;
    assert!(h.without_failed_edit(seq + 1, "a.rs").is_none());
    let h = h.without_failed_edit(seq, "a.rs").unwrap();
    assert!(!h.tracks("a.rs"));
    assert!(h.last_change.is_none());
    let retried = h
        .with_edit(&file("a.rs", true), "u1", &namer, T)
        .unwrap()
        .unwrap();
    assert_eq!(retried.last_change.unwrap().backups.len(), 1);
}

#[test]
fn resume_keeps_the_cap_and_continues_versions_past_the_newest_snapshot() {
    let mut h = FileHistory::default()
        .with_snapshot("u0", &[], &namer, T)
        .with_edit(&file("a.rs", true), "u0", &namer, T)
        .unwrap()
        .unwrap();
    let mut snaps = vec![(**h.latest().unwrap()).clone()];
    for n in 1..=MAX_FILE_HISTORY_SNAPSHOTS {
        h = h.with_snapshot(&format!("u{n}"), &[file("a.rs", true)], &namer, T);
        snaps.push((**h.latest().unwrap()).clone());
    }
    let newest = snaps.last().cloned();
    let resumed = FileHistory::resumed(snaps, newest.as_ref());
    assert_eq!(resumed.snapshots.len(), MAX_FILE_HISTORY_SNAPSHOTS);
    assert!(resumed.snapshots_dropped);
    assert!(resumed.last_change.is_none(), "a resume persists nothing");
    let last = MAX_FILE_HISTORY_SNAPSHOTS as u32 + 1;
    assert_eq!(resumed.versions["a.rs"], last);
    let h = resumed.with_snapshot("next", &[file("a.rs", true)], &namer, T);
    assert_eq!(
        h.latest().unwrap().tracked_file_backups["a.rs"].version,
        last + 1
    );
}
