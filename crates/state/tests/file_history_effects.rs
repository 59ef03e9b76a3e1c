//! File history through the root store: every new change of the domain is persisted
//! once through the file-history port, after the commit and before `set` returns; a
//! commit that does not touch the file history persists nothing (FX-6, SP-2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::default_harness;
use strata_state::{InspectedFile, update_file_history};

fn namer(abs: &Path, version: u32) -> String {
    format!("{}@v{version}", abs.file_name().unwrap().to_string_lossy())
}

const T: &str = "2026-01-01T00:00:00.000Z";

fn edit(key: &str) -> InspectedFile {
    InspectedFile {
        key: key.to_owned(),
        absolute: PathBuf::from("/w").join(key),
        exists: true,
    }
}

#[test]
fn fx6_a_snapshot_update_produces_exactly_one_persistence_call() {
    let h = default_harness();
    let _ = h
        .root
        .set(|s| update_file_history(s, |fh| Some(fh.with_snapshot("u1", &[], &namer, T))));
    // Delivered before `set` returned: the port has run.
    let changes = h.rec.file_history.changes();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].entry.message_id, "u1");
    assert!(!changes[0].entry.is_snapshot_update);

    // Unrelated commits do not persist the same change again.
    let _ = h.root.update(|s| s.verbose = !s.verbose);
    assert_eq!(h.rec.file_history.changes().len(), 1);
}

#[test]
fn fx6_an_edit_is_persisted_with_its_backup_and_a_repeat_edit_persists_nothing() {
    let h = default_harness();
    let _ = h
        .root
        .set(|s| update_file_history(s, |fh| Some(fh.with_snapshot("u1", &[], &namer, T))));
    for _ in 0..2 {
        let _ = h.root.set(|s| {
            update_file_history(s, |fh| {
                fh.with_edit(&edit("a.rs"), "u1", &namer, T).unwrap()
            })
        });
    }
    let changes = h.rec.file_history.changes();
    assert_eq!(
        changes.len(),
        2,
        "the second edit of a.rs at u1 is no change"
    );
    assert!(changes[1].entry.is_snapshot_update);
    assert_eq!(changes[1].backups[0].backup_file_name, "a.rs@v1");
    assert_eq!(changes[1].backups[0].source, PathBuf::from("/w/a.rs"));
}

#[test]
fn a_failing_file_history_port_is_logged_and_the_commit_stands() {
    let h = default_harness();
    h.rec.file_history.set_failing(true);
    let _ = h
        .root
        .set(|s| update_file_history(s, |fh| Some(fh.with_snapshot("u1", &[], &namer, T))));
    assert_eq!(h.root.effects().failures(), 1);
    assert!(h.rec.file_history.changes().is_empty());
    assert_eq!(h.root.get().file_history.snapshots.len(), 1);
}
