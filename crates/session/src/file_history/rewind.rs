//! Rewinding files to a snapshot: which state each file must return to, what would
//! change (files, inserted and deleted lines), and the restore itself.
//!
//! The state of a file at user message `U`:
//! - tracked in `U`'s snapshot: the backup it names (`null`: the file did not exist);
//! - first tracked after `U`: its earliest backup after `U`, which holds its contents
//!   before the agent first touched it — the same as at `U`, unless something outside
//!   the agent changed it in between, which strata cannot know.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use strata_protocol::transcript::FileHistorySnapshot;

use super::{FileHistoryError, store};

/// What a rewind does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeKind {
    /// The file exists and gets its earlier contents back.
    Restored,
    /// The file did not exist at that message and is deleted.
    Deleted,
    /// The file was deleted since and is recreated.
    Created,
}

/// One file a rewind changes (or would change).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// The path as tracked (relative to the session's cwd when inside it).
    pub path: String,
    /// The absolute path.
    pub absolute: PathBuf,
    /// Restored, deleted or recreated.
    pub kind: ChangeKind,
    /// Lines the rewind adds.
    pub insertions: usize,
    /// Lines the rewind removes.
    pub deletions: usize,
}

/// The outcome of a rewind or a dry run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindReport {
    /// The user message rewound to.
    pub message_id: String,
    /// Whether files were left untouched (a dry run).
    pub dry_run: bool,
    /// Files that differ from their state at the message, by path.
    pub changes: Vec<FileChange>,
    /// Tracked files that already match it.
    pub unchanged: usize,
    /// Tracked paths outside the session's project, left alone: a transcript names the
    /// files rewind writes and deletes, and one from elsewhere could name any file.
    pub outside_project: Vec<String>,
}

impl RewindReport {
    /// Number of files changed.
    pub fn files_changed(&self) -> usize {
        self.changes.len()
    }

    /// Lines added, over all files.
    pub fn insertions(&self) -> usize {
        self.changes.iter().map(|c| c.insertions).sum()
    }

    /// Lines removed, over all files.
    pub fn deletions(&self) -> usize {
        self.changes.iter().map(|c| c.deletions).sum()
    }
}

/// The target state of every file tracked at or after the first snapshot of `from`:
/// key → backup file name (`None`: must not exist).
pub(crate) fn targets<'a>(
    from: impl IntoIterator<Item = &'a FileHistorySnapshot>,
) -> BTreeMap<String, Option<String>> {
    let mut targets = BTreeMap::new();
    for snapshot in from {
        for (key, backup) in &snapshot.tracked_file_backups {
            targets
                .entry(key.clone())
                .or_insert_with(|| backup.backup_file_name.clone());
        }
    }
    targets
}

/// Whether `name` is one plain file name (no separator, not `.` or `..`).
pub(crate) fn is_plain_file_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    ) && !name.contains(['/', '\\'])
}

/// A planned change with the bytes to write.
struct Planned {
    change: FileChange,
    contents: Option<Vec<u8>>,
    mode: Option<u32>,
}

pub(crate) fn run(
    backups_dir: &Path,
    cwd: &Path,
    message_id: &str,
    targets: BTreeMap<String, Option<String>>,
    dry_run: bool,
) -> Result<RewindReport, FileHistoryError> {
    // Phase 1: read everything; a missing backup aborts before any file is touched.
    let mut planned = Vec::new();
    let mut unchanged = 0;
    let mut outside_project = Vec::new();
    let root = strata_config::paths::project_root(cwd);
    for (key, backup) in targets {
        let abs = store::absolute(cwd, Path::new(&key));
        if !strata_config::paths::resolves_within(&abs, &root) {
            outside_project.push(key);
            continue;
        }
        let (wanted, mode) = match &backup {
            None => (None, None),
            Some(name) => {
                // The name comes from the transcript: a crafted one must not read any
                // file of the machine into the project (`../../.ssh/id_rsa`).
                if !is_plain_file_name(name) {
                    return Err(FileHistoryError::UnsafeBackupName {
                        file: key.clone(),
                        backup: name.clone(),
                    });
                }
                let path = backups_dir.join(name);
                let missing = |source| FileHistoryError::BackupMissing {
                    file: key.clone(),
                    backup: path.clone(),
                    source,
                };
                let bytes = std::fs::read(&path).map_err(missing)?;
                let mode = std::fs::metadata(&path)
                    .map_err(missing)?
                    .permissions()
                    .mode();
                (Some(bytes), Some(mode))
            }
        };
        let current = store::read_state(&abs)?;
        if current == wanted {
            unchanged += 1;
            continue;
        }
        let empty: &[u8] = &[];
        let (insertions, deletions) = line_changes(
            current.as_deref().unwrap_or(empty),
            wanted.as_deref().unwrap_or(empty),
        );
        let kind = match (&current, &wanted) {
            (_, None) => ChangeKind::Deleted,
            (None, Some(_)) => ChangeKind::Created,
            (Some(_), Some(_)) => ChangeKind::Restored,
        };
        planned.push(Planned {
            change: FileChange {
                path: key,
                absolute: abs,
                kind,
                insertions,
                deletions,
            },
            contents: wanted,
            mode,
        });
    }
    // Phase 2: write.
    if !dry_run {
        for p in &planned {
            apply(p)?;
        }
    }
    Ok(RewindReport {
        message_id: message_id.to_owned(),
        dry_run,
        changes: planned.into_iter().map(|p| p.change).collect(),
        unchanged,
        outside_project,
    })
}

/// Lines inserted and deleted going from `old` to `new` (a line diff, as `git diff
/// --stat` counts them; bytes that are not UTF-8 count as replacement characters, which
/// is enough to count lines).
fn line_changes(old: &[u8], new: &[u8]) -> (usize, usize) {
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
    let (mut ins, mut del) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => ins += 1,
            similar::ChangeTag::Delete => del += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (ins, del)
}

fn apply(p: &Planned) -> Result<(), FileHistoryError> {
    let path = &p.change.absolute;
    let err = |source| FileHistoryError::Restore {
        path: path.clone(),
        source,
    };
    let Some(contents) = &p.contents else {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(err(e)),
            _ => Ok(()),
        };
    };
    // A symlink stays a symlink: the file it points to gets the contents (as an edit
    // through the link changed that file, not the link).
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            resolved = std::fs::canonicalize(path).map_err(err)?;
            &resolved
        }
        _ => path,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    // Keep the permissions the file has now; a recreated file gets the backup's.
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode())
        .ok()
        .or(p.mode);
    // Written beside it and renamed over it, so a crash leaves the old or the new
    // contents, never half of each.
    let mut tmp = tempfile::Builder::new()
        .prefix(".strata-rewind-")
        .tempfile_in(dir)
        .map_err(err)?;
    tmp.write_all(contents).map_err(err)?;
    if let Some(mode) = mode {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(err)?;
    }
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_changes_count_like_a_diffstat() {
        assert_eq!(line_changes(b"a\nb\nc\n", b"a\nB\nc\nd\n"), (2, 1));
        assert_eq!(line_changes(b"", b"x\ny\n"), (2, 0));
        assert_eq!(line_changes(b"x\ny\n", b""), (0, 2));
        assert_eq!(line_changes(b"same\n", b"same\n"), (0, 0));
    }

    fn snap(id: &str, files: &[(&str, Option<&str>)]) -> FileHistorySnapshot {
        FileHistorySnapshot {
            message_id: id.into(),
            tracked_file_backups: files
                .iter()
                .map(|(k, b)| {
                    (
                        (*k).to_owned(),
                        strata_protocol::transcript::FileBackup {
                            backup_file_name: b.map(str::to_owned),
                            version: 1,
                            backup_time: String::new(),
                            extra: Default::default(),
                        },
                    )
                })
                .collect(),
            timestamp: String::new(),
            extra: Default::default(),
        }
    }

    #[test]
    fn targets_take_the_snapshot_then_the_earliest_later_backup() {
        let s = [
            snap("u1", &[("a", Some("a@v1"))]),
            snap("u2", &[("a", Some("a@v2")), ("b", None)]),
            snap(
                "u3",
                &[
                    ("a", Some("a@v3")),
                    ("b", Some("b@v2")),
                    ("c", Some("c@v1")),
                ],
            ),
        ];
        let t = targets(&s);
        assert_eq!(t["a"].as_deref(), Some("a@v1"));
        assert_eq!(t["b"], None, "b did not exist at u1's time");
        assert_eq!(t["c"].as_deref(), Some("c@v1"));
        let t = targets(&s[1..]);
        assert_eq!(t["a"].as_deref(), Some("a@v2"));
    }

    #[test]
    fn backup_names_must_be_one_plain_file_name() {
        assert!(is_plain_file_name("0123456789abcdef@v3"));
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "/etc/passwd",
            "a\\..\\b",
            "./x",
        ] {
            assert!(!is_plain_file_name(bad), "{bad:?}");
        }
    }

    /// Regression: a transcript naming a backup `../../…` made rewind copy any readable
    /// file of the machine (a private key) into the project.
    #[test]
    fn regression_a_backup_name_leaving_the_backup_folder_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let backups = tmp.path().join("file-history/s");
        std::fs::create_dir_all(&backups).unwrap();
        let secret = tmp.path().join("secret");
        std::fs::write(&secret, "key").unwrap();
        let project = tmp.path().join("p");
        std::fs::create_dir(&project).unwrap();
        std::fs::write(project.join("victim.txt"), "mine").unwrap();
        let t = targets(&[snap("u1", &[("victim.txt", Some("../../secret"))])]);
        for dry_run in [true, false] {
            let err = run(&backups, &project, "u1", t.clone(), dry_run).unwrap_err();
            assert!(
                matches!(err, FileHistoryError::UnsafeBackupName { .. }),
                "{err}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(project.join("victim.txt")).unwrap(),
            "mine"
        );
    }

    /// Regression: rewind deleted or overwrote any file a transcript named, so a
    /// crafted session could delete `~/.ssh/authorized_keys`. Only files of the session's
    /// project are touched; the others are reported.
    #[test]
    fn regression_files_outside_the_project_are_left_alone_and_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let backups = base.join("file-history/s");
        std::fs::create_dir_all(&backups).unwrap();
        let project = base.join("p");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        let precious = base.join("authorized_keys");
        std::fs::write(&precious, "key").unwrap();
        std::fs::write(project.join("new.txt"), "made later").unwrap();
        // A link inside the project to the file outside is outside too.
        std::os::unix::fs::symlink(&precious, project.join("link")).unwrap();
        let t = targets(&[snap(
            "u1",
            &[
                (precious.to_str().unwrap(), None),
                ("../authorized_keys", None),
                ("link", None),
                ("new.txt", None),
            ],
        )]);
        let report = run(&backups, &project, "u1", t, false).unwrap();
        assert!(
            precious.exists(),
            "the file outside the project is untouched"
        );
        assert!(
            !project.join("new.txt").exists(),
            "the project's own file is rewound"
        );
        assert_eq!(report.files_changed(), 1);
        assert_eq!(
            report.outside_project.len(),
            3,
            "{:?}",
            report.outside_project
        );
    }

    /// Regression: a dangling link in the project (`leak -> ../outside-new`) counted as
    /// inside, since only its existing parent was resolved; restoring it would create
    /// the file outside. The shared containment test follows the link.
    #[test]
    fn regression_a_dangling_link_out_of_the_project_is_outside() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let backups = base.join("file-history/s");
        std::fs::create_dir_all(&backups).unwrap();
        std::fs::write(backups.join("b@v1"), "planted").unwrap();
        let project = base.join("p");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        let target = base.join("outside-new");
        std::os::unix::fs::symlink(&target, project.join("leak")).unwrap();
        let t = targets(&[snap("u1", &[("leak", Some("b@v1"))])]);
        let report = run(&backups, &project, "u1", t, false).unwrap();
        assert!(!target.exists(), "nothing was created outside the project");
        assert_eq!(report.outside_project, ["leak"]);
    }
}
