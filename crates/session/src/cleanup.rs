//! Deleting old sessions (`cleanupPeriodDays`): a session whose transcript was last
//! written longer ago than the period is deleted with everything that belongs to it, as
//! the reference agent does at start (default 30 days; the period is counted from the
//! last activity, the transcript's modification time).
//!
//! Deleting is split in two so the front end can show what would go first
//! (`strata sessions cleanup --dry-run`): [`plan`] only reads the directory tree and
//! lists the expired sessions; [`apply`] deletes them. What one expired session loses:
//!
//! ```text
//! projects/<project>/<session-id>.jsonl          the transcript (deleted last)
//! projects/<project>/<session-id>/               sub-agent transcripts, large tool outputs
//! file-history/<session-id>/                     its pre-edit backups
//! ```
//!
//! plus the file-history folders whose session no longer exists anywhere and that are
//! older than the period themselves. Safety rules: a period of 0 is refused (it would
//! delete every session; the reference agent rejects it too); symbolic links are never
//! followed or deleted; the sessions named in `keep` (the one being resumed) are never
//! touched; and [`apply`] takes the transcript's lock first and checks its age again
//! under it, so a session that a running strata holds open, or that was written to
//! since the plan, is skipped. The transcript goes last, so a sweep cut short (the
//! process exits) leaves the session findable and the next sweep finishes it.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use strata_config::paths;

/// The period when the settings give none (the reference agent's default).
pub const DEFAULT_PERIOD_DAYS: u32 = 30;

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Why no cleanup could be planned.
#[derive(Debug, thiserror::Error)]
pub enum CleanupError {
    /// `cleanupPeriodDays` is 0.
    #[error(
        "cleanupPeriodDays is 0, which would delete every session; set it to 1 or more \
         (days a session is kept after its last activity). No session was deleted."
    )]
    ZeroPeriod,
    /// The projects folder exists but cannot be read.
    #[error("cannot read the sessions folder {}: {source}", path.display())]
    Unreadable {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// One session older than the period, and what deleting it removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredSession {
    /// The session id (the transcript's file stem).
    pub session_id: String,
    /// The transcript.
    pub transcript: PathBuf,
    /// When the transcript was last written.
    pub modified: SystemTime,
    /// Its size in bytes.
    pub bytes: u64,
    /// The side folder (`<session-id>/`: sub-agents, tool outputs), when there is one.
    pub side_dir: Option<PathBuf>,
    /// The file-history folder, when there is one.
    pub file_history: Option<PathBuf>,
}

/// What a sweep would delete (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupPlan {
    /// Sessions last written before this time are expired.
    pub cutoff: Option<SystemTime>,
    /// The expired sessions, oldest first.
    pub expired: Vec<ExpiredSession>,
    /// File-history folders of sessions that no longer exist, older than the period.
    pub orphan_file_history: Vec<PathBuf>,
    /// Entries that could not be examined (kept), with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// What [`apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Sessions deleted, with their side and file-history folders.
    pub deleted: Vec<PathBuf>,
    /// Orphaned file-history folders deleted.
    pub deleted_file_history: Vec<PathBuf>,
    /// Sessions kept because a process holds them open or they were written since the
    /// plan.
    pub kept_in_use: Vec<PathBuf>,
    /// What could not be deleted, with the reason.
    pub failed: Vec<(PathBuf, String)>,
}

/// The cutoff for `period_days` before `now`; `None` when it lies before the epoch
/// (nothing can be that old).
fn cutoff(period_days: u32, now: SystemTime) -> Option<SystemTime> {
    now.checked_sub(DAY.checked_mul(period_days)?)
}

/// Lists what a sweep of `config_dir` with `period_days` would delete at `now`, never
/// touching a session whose id is in `keep`. Reads only directory entries and their
/// metadata.
pub fn plan(
    config_dir: &Path,
    period_days: u32,
    now: SystemTime,
    keep: &[&str],
) -> Result<CleanupPlan, CleanupError> {
    if period_days == 0 {
        return Err(CleanupError::ZeroPeriod);
    }
    let mut plan = CleanupPlan {
        cutoff: cutoff(period_days, now),
        ..CleanupPlan::default()
    };
    let Some(cut) = plan.cutoff else {
        return Ok(plan);
    };
    let projects = paths::projects_dir(config_dir);
    let mut live_ids = HashSet::new();
    for project in read_dir_or_empty(&projects)? {
        let project = match project {
            Ok(p) => p,
            Err(e) => {
                plan.unreadable.push((projects.clone(), e.to_string()));
                continue;
            }
        };
        let path = project.path();
        if !is_real_dir(&path) {
            continue;
        }
        let entries = match fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) => {
                plan.unreadable.push((path, e.to_string()));
                continue;
            }
        };
        for entry in entries.flatten() {
            let file = entry.path();
            let Some(id) = transcript_id(&file) else {
                continue;
            };
            live_ids.insert(id.clone());
            let meta = match fs::symlink_metadata(&file) {
                Ok(m) if m.file_type().is_file() => m,
                Ok(_) => continue, // a link or a folder named *.jsonl: not ours to delete
                Err(e) => {
                    plan.unreadable.push((file, e.to_string()));
                    continue;
                }
            };
            let modified = match meta.modified() {
                Ok(t) => t,
                Err(e) => {
                    plan.unreadable.push((file, e.to_string()));
                    continue;
                }
            };
            if modified >= cut || keep.contains(&id.as_str()) {
                continue;
            }
            let side = path.join(&id);
            let history = paths::file_history_dir(config_dir, &id);
            plan.expired.push(ExpiredSession {
                side_dir: is_real_dir(&side).then_some(side),
                file_history: is_real_dir(&history).then_some(history),
                session_id: id,
                transcript: file,
                modified,
                bytes: meta.len(),
            });
        }
    }
    // A session deleted earlier (or by hand) can leave its backups behind.
    let history_root = config_dir.join("file-history"); // the parent of every paths::file_history_dir
    for entry in read_dir_or_empty(&history_root)?.into_iter().flatten() {
        let dir = entry.path();
        let Some(id) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if live_ids.contains(id) || keep.contains(&id) || !is_real_dir(&dir) {
            continue;
        }
        if fs::symlink_metadata(&dir)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < cut)
        {
            plan.orphan_file_history.push(dir);
        }
    }
    plan.expired
        .sort_by(|a, b| (a.modified, &a.transcript).cmp(&(b.modified, &b.transcript)));
    plan.orphan_file_history.sort();
    Ok(plan)
}

/// Deletes what `plan` lists (see the module docs for what is skipped).
pub fn apply(plan: &CleanupPlan) -> CleanupReport {
    let mut report = CleanupReport::default();
    let Some(cut) = plan.cutoff else {
        return report;
    };
    for s in &plan.expired {
        // The writer of a running session holds an exclusive lock on its transcript:
        // taking it here both detects that and keeps a new writer out while deleting.
        let file = match File::open(&s.transcript) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                report.failed.push((s.transcript.clone(), e.to_string()));
                continue;
            }
        };
        let still_old = file
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < cut);
        if file.try_lock().is_err() || !still_old {
            report.kept_in_use.push(s.transcript.clone());
            continue;
        }
        let mut ok = true;
        for dir in [&s.side_dir, &s.file_history].into_iter().flatten() {
            if let Err(e) = remove_dir(dir) {
                report.failed.push((dir.clone(), e.to_string()));
                ok = false;
            }
        }
        // Only once its folders are gone, so an interrupted sweep can finish later.
        if ok {
            match fs::remove_file(&s.transcript) {
                Ok(()) => report.deleted.push(s.transcript.clone()),
                Err(e) => report.failed.push((s.transcript.clone(), e.to_string())),
            }
        }
        drop(file);
    }
    for dir in &plan.orphan_file_history {
        match remove_dir(dir) {
            Ok(()) => report.deleted_file_history.push(dir.clone()),
            Err(e) => report.failed.push((dir.clone(), e.to_string())),
        }
    }
    report
}

/// The session id of a transcript path (`<id>.jsonl`), `None` for anything else.
fn transcript_id(path: &Path) -> Option<String> {
    if path.extension().is_none_or(|e| e != "jsonl") {
        return None;
    }
    let stem = path.file_stem()?.to_str()?;
    (!stem.is_empty()).then(|| stem.to_owned())
}

/// A folder that is not a symbolic link.
fn is_real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir())
}

/// `fs::remove_dir_all`, where a folder already gone is success. (It does not follow
/// symbolic links inside: links are removed, not their targets.)
fn remove_dir(dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The entries of `dir`, none when it does not exist.
fn read_dir_or_empty(dir: &Path) -> Result<Vec<io::Result<fs::DirEntry>>, CleanupError> {
    match fs::read_dir(dir) {
        Ok(entries) => Ok(entries.collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(CleanupError::Unreadable {
            path: dir.to_path_buf(),
            source,
        }),
    }
}
