//! File history (SP-2, SP-3; issue 5 part 6): backups before the first edit of a turn,
//! one snapshot per prompt in the reference entry shape, versions, the 100-snapshot cap,
//! and resuming a history from its snapshots.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::Value;
use strata_protocol::transcript::{Entry, FileHistorySnapshot, MetadataEntry};
mod file_history_support;

use file_history_support::{DriverError, HistoryDriver};
use strata_session::file_history::FileHistoryError;
use strata_session::layout::SessionLayout;
use strata_session::writer::TranscriptWriter;
use strata_state::MAX_FILE_HISTORY_SNAPSHOTS as MAX_SNAPSHOTS;

struct Fixture {
    _tmp: tempfile::TempDir,
    cwd: std::path::PathBuf,
    layout: SessionLayout,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("proj");
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    let layout = SessionLayout::new(&tmp.path().join("config"), &cwd, "sess-1");
    Fixture {
        cwd,
        layout,
        _tmp: tmp,
    }
}

fn snapshot_of(entry: &Entry) -> (&str, &FileHistorySnapshot, bool) {
    match entry {
        Entry::Metadata(MetadataEntry::FileHistorySnapshot(e)) => {
            (e.message_id.as_str(), &e.snapshot, e.is_snapshot_update)
        }
        other => panic!("not a snapshot entry: {other:?}"),
    }
}

#[test]
fn sp2_first_edit_in_a_turn_is_backed_up_once_and_recorded_as_an_update() {
    let f = fixture();
    std::fs::write(f.cwd.join("src/a.rs"), "fn a() {}\n").unwrap();
    let mut fh = HistoryDriver::new(&f.layout, &f.cwd);

    let first = fh.make_snapshot("user-1").unwrap();
    let (id, snap, update) = snapshot_of(&first);
    assert_eq!(
        (id, snap.message_id.as_str(), update),
        ("user-1", "user-1", false)
    );
    assert!(snap.tracked_file_backups.is_empty());

    let entry = fh
        .track_edit(Path::new("src/a.rs"), "assistant-1")
        .unwrap()
        .unwrap();
    let (id, snap, update) = snapshot_of(&entry);
    assert_eq!(
        id, "assistant-1",
        "the update line is keyed by the editing message"
    );
    assert_eq!(
        snap.message_id, "user-1",
        "and belongs to the turn's prompt"
    );
    assert!(update);
    let a = &snap.tracked_file_backups["src/a.rs"];
    assert_eq!(a.version, 1);
    let name = a.backup_file_name.clone().unwrap();
    assert!(name.ends_with("@v1") && name.len() == 19, "{name}");
    let backup = f.layout.file_history_dir().join(&name);
    assert_eq!(std::fs::read_to_string(backup).unwrap(), "fn a() {}\n");

    // The same file again in this turn (even by another path spelling): nothing to do.
    std::fs::write(f.cwd.join("src/a.rs"), "fn a() { 1 }\n").unwrap();
    assert!(
        fh.track_edit(&f.cwd.join("src/./a.rs"), "assistant-2")
            .unwrap()
            .is_none()
    );

    // A file the tool is about to create: recorded as not existing.
    let entry = fh
        .track_edit(&f.cwd.join("src/new.rs"), "assistant-3")
        .unwrap()
        .unwrap();
    let new = &snapshot_of(&entry).1.tracked_file_backups["src/new.rs"];
    assert_eq!((new.backup_file_name.as_deref(), new.version), (None, 1));
}

#[test]
fn sp2_each_prompt_snapshots_changed_files_as_new_versions() {
    let f = fixture();
    let a = f.cwd.join("src/a.rs");
    std::fs::write(&a, "v0\n").unwrap();
    let mut fh = HistoryDriver::new(&f.layout, &f.cwd);
    fh.make_snapshot("u1").unwrap();
    fh.track_edit(&a, "m1").unwrap();
    fh.track_edit(&f.cwd.join("b.txt"), "m1").unwrap();
    std::fs::write(&a, "v1\n").unwrap();

    let entry = fh.make_snapshot("u2").unwrap();
    let (_, snap, update) = snapshot_of(&entry);
    assert!(!update);
    let a2 = &snap.tracked_file_backups["src/a.rs"];
    assert_eq!(a2.version, 2, "a changed during turn 1");
    let backup = f
        .layout
        .file_history_dir()
        .join(a2.backup_file_name.as_ref().unwrap());
    assert_eq!(std::fs::read_to_string(backup).unwrap(), "v1\n");
    let b = &snap.tracked_file_backups["b.txt"];
    assert_eq!(
        (b.backup_file_name.as_deref(), b.version),
        (None, 1),
        "still absent: unchanged"
    );

    // Nothing changed in turn 2: the next snapshot reuses the same backups.
    let entry = fh.make_snapshot("u3").unwrap();
    assert_eq!(
        snapshot_of(&entry).1.tracked_file_backups,
        snap.tracked_file_backups
    );
}

#[test]
fn sp1_snapshot_entries_are_written_in_the_reference_shape() {
    let f = fixture();
    std::fs::write(f.cwd.join("x.md"), "hello\n").unwrap();
    let mut fh = HistoryDriver::new(&f.layout, &f.cwd);
    let w = TranscriptWriter::for_session(&f.layout).unwrap();
    w.append(&fh.make_snapshot("u1").unwrap()).unwrap();
    w.append(&serde_json::json!({"type": "user", "uuid": "u1"}))
        .unwrap();
    w.append(&fh.track_edit(Path::new("x.md"), "a1").unwrap().unwrap())
        .unwrap();
    w.close().unwrap();

    let text = std::fs::read_to_string(f.layout.transcript()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        3,
        "the snapshot waited for the first message, then kept its place"
    );
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&lines[0]),
        ["type", "messageId", "snapshot", "isSnapshotUpdate"]
    );
    assert_eq!(
        keys(&lines[0]["snapshot"]),
        ["messageId", "trackedFileBackups", "timestamp"]
    );
    let backup = &lines[2]["snapshot"]["trackedFileBackups"]["x.md"];
    assert_eq!(keys(backup), ["backupFileName", "version", "backupTime"]);
    assert_eq!(lines[2]["isSnapshotUpdate"], true);
    let time = backup["backupTime"].as_str().unwrap();
    assert!(
        time.ends_with('Z') && time.len() == "2026-02-12T16:05:48.433Z".len(),
        "{time}"
    );
    // And it reads back as the protocol's entry.
    assert!(matches!(
        Entry::parse(text.lines().nth(2).unwrap()).unwrap(),
        Entry::Metadata(MetadataEntry::FileHistorySnapshot(_))
    ));
}

#[test]
fn sp2_at_most_100_snapshots_are_kept() {
    let f = fixture();
    let a = f.cwd.join("a.txt");
    std::fs::write(&a, "0\n").unwrap();
    let mut fh = HistoryDriver::new(&f.layout, &f.cwd);
    for n in 0..(MAX_SNAPSHOTS + 5) {
        fh.make_snapshot(&format!("u{n}")).unwrap();
        fh.track_edit(&a, "m").unwrap();
        std::fs::write(&a, format!("{}\n", n + 1)).unwrap();
    }
    assert_eq!(fh.snapshots().len(), MAX_SNAPSHOTS);
    assert_eq!(fh.snapshots().next().unwrap().message_id, "u5");
    let err = fh.rewind("u0", true).unwrap_err();
    assert!(matches!(
        err,
        FileHistoryError::UnknownMessage { at_cap: true, .. }
    ));
    assert!(
        err.to_string().contains("u0") && err.to_string().contains("last 100"),
        "{err}"
    );
    let report = fh.rewind("u5", false).unwrap();
    assert_eq!(report.files_changed(), 1);
    assert_eq!(
        std::fs::read_to_string(&a).unwrap(),
        "5\n",
        "the oldest kept prompt still works"
    );
    assert_eq!(
        fh.snapshots().last().unwrap().tracked_file_backups["a.txt"].version,
        (MAX_SNAPSHOTS + 5) as u32,
        "versions keep counting across dropped snapshots"
    );
}

#[test]
fn sp3_resumed_history_continues_versions_and_rewinds() {
    let f = fixture();
    let a = f.cwd.join("a.txt");
    std::fs::write(&a, "one\n").unwrap();
    let mut fh = HistoryDriver::new(&f.layout, &f.cwd);
    fh.make_snapshot("u1").unwrap();
    fh.track_edit(&a, "m1").unwrap();
    std::fs::write(&a, "two\n").unwrap();
    fh.make_snapshot("u2").unwrap();
    std::fs::write(&a, "three\n").unwrap();

    let snaps: Vec<FileHistorySnapshot> = fh.snapshots().cloned().collect();
    // A dead branch once reached version 7: new backups must not reuse its names.
    let mut newest = snaps[1].clone();
    newest
        .tracked_file_backups
        .get_mut("a.txt")
        .unwrap()
        .version = 7;
    let mut resumed = HistoryDriver::resume(&f.layout, &f.cwd, snaps, Some(&newest));
    let entry = resumed.make_snapshot("u3").unwrap();
    assert_eq!(
        snapshot_of(&entry).1.tracked_file_backups["a.txt"].version,
        8
    );

    resumed.rewind("u1", false).unwrap();
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "one\n");
}

#[test]
fn an_edit_before_any_prompt_is_refused() {
    let f = fixture();
    let mut fh = HistoryDriver::new(&f.layout, &f.cwd);
    let err = fh.track_edit(Path::new("a.rs"), "m").unwrap_err();
    assert!(matches!(
        err,
        DriverError::Update(strata_state::FileHistoryUpdateError::NoSnapshot { .. })
    ));
    assert!(err.to_string().contains("a.rs"));
}

/// A real session of the reference agent (`shared/corpus`): its live snapshots load into
/// a history whose versions continue after the recorded ones, and a rewind looks for the
/// backups under the names the reference gave them.
#[test]
fn sp3_reference_session_snapshots_resume_with_continuing_versions() {
    use strata_session::resume::LoadedSession;
    let corpus = strata_testkit::require_corpus!();
    let session =
        LoadedSession::load(&corpus.join("spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"))
            .unwrap();
    assert!(!session.file_history.is_empty());
    let tmp = tempfile::tempdir().unwrap();
    let layout = SessionLayout::new(tmp.path(), Path::new("/w"), &session.session_id);
    let cwd = session.cwd().unwrap();
    let first_prompt = session.file_history[0].message_id.clone();
    let last = session.latest_snapshot.clone().unwrap();
    let mut fh = HistoryDriver::resume(
        &layout,
        &cwd,
        session.file_history.iter().cloned(),
        session.latest_snapshot.as_ref(),
    );

    // The recorded `mix.exs@v2` is the latest version; the files are not on this machine,
    // so the next prompt records them as absent, as version 3.
    let mix = &last.tracked_file_backups["mix.exs"];
    assert_eq!(
        (mix.backup_file_name.as_deref(), mix.version),
        (Some("284b4d4b3c9220c5@v2"), 2)
    );
    let entry = fh.make_snapshot("new-prompt").unwrap();
    let mix = &snapshot_of(&entry).1.tracked_file_backups["mix.exs"];
    assert_eq!((mix.backup_file_name.as_deref(), mix.version), (None, 3));

    // The backups themselves were not part of the corpus: rewinding names the missing one.
    let err = fh.rewind(&first_prompt, true).unwrap_err();
    assert!(
        matches!(err, FileHistoryError::BackupMissing { .. }),
        "{err}"
    );
    // The live conversation starts after the session's compaction, so its first prompt
    // already tracks version 2 of the files.
    assert!(err.to_string().contains("4cd1a53d66f776b3@v2"), "{err}");
}
