//! `strata sessions cleanup [--dry-run] [--json]`, and the same sweep when a session
//! starts: sessions last written more than `cleanupPeriodDays` ago (default 30) are
//! deleted with their side folders and backups (`strata_session::cleanup` says what and
//! what is never touched).
//!
//! The period comes from the merged settings. When a settings file cannot be read or
//! parsed, nothing is deleted: the broken file may hold a longer period, and guessing the
//! default would delete sessions the user meant to keep. The command then fails; the
//! start-up sweep skips (the broken file is reported where settings are loaded).
//!
//! ```text
//! Deleted 2 sessions last active more than 30 days ago (1.2 MB):
//!   3f0c…-….jsonl  in -home-me-project  last active 41 days ago
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use clap::Args;
use serde_json::json;
use strata_config::{FlagSettings, SettingsFiles, SettingsLocations, paths};
use strata_session::cleanup::{self, CleanupPlan, CleanupReport, DEFAULT_PERIOD_DAYS};

use crate::commands::output;
use crate::exit::Failure;

/// Arguments of `strata sessions cleanup`.
#[derive(Debug, Args)]
pub(crate) struct CleanupArgs {
    /// Only list the sessions that would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `strata sessions cleanup`.
pub(crate) fn run(args: CleanupArgs) -> anyhow::Result<()> {
    let config = paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?;
    let days = period_days(&config, &cwd, None).map_err(Failure::failed)?;
    let plan = cleanup::plan(&config, days, SystemTime::now(), &[])
        .map_err(|e| Failure::failed(e.to_string()))?;
    let report = (!args.dry_run).then(|| cleanup::apply(&plan));
    if args.json {
        output::println(&serde_json::to_string_pretty(&as_json(
            days,
            &plan,
            report.as_ref(),
        ))?)?;
    } else {
        output::print(&as_text(days, &plan, report.as_ref(), SystemTime::now()))?;
    }
    match report {
        Some(r) if !r.failed.is_empty() => Err(Failure::reported(1).into()),
        _ => Ok(()),
    }
}

/// The sweep at the start of a session, on a thread of its own so start-up does not
/// wait for it; [`Sweep::finish`] waits for it before the process exits (so a sweep is
/// never cut off half-way through a session's folders). `keep` names the sessions in use
/// (the one opened, the one resumed).
pub(crate) fn sweep_at_start(
    config_dir: PathBuf,
    cwd: PathBuf,
    settings_flag: Option<String>,
    keep: Vec<String>,
) -> Sweep {
    let spawned = std::thread::Builder::new()
        .name("strata-cleanup".into())
        .spawn(move || sweep(&config_dir, &cwd, settings_flag.as_deref(), &keep));
    match spawned {
        Ok(handle) => Sweep(Some(handle)),
        Err(e) => {
            tracing::warn!("old sessions were not cleaned up: cannot start a thread: {e}");
            Sweep(None)
        }
    }
}

/// A running start-up sweep.
pub(crate) struct Sweep(Option<std::thread::JoinHandle<()>>);

impl Sweep {
    /// Waits for the sweep to end.
    pub(crate) fn finish(self) {
        if let Some(handle) = self.0
            && handle.join().is_err()
        {
            tracing::warn!("the clean-up of old sessions stopped unexpectedly");
        }
    }
}

fn sweep(config_dir: &Path, cwd: &Path, settings_flag: Option<&str>, keep: &[String]) {
    let days = match period_days(config_dir, cwd, settings_flag) {
        Ok(d) => d,
        Err(why) => {
            // The settings layer reports the broken file itself; skipping is the safe side.
            tracing::info!("old sessions were not cleaned up: {why}");
            return;
        }
    };
    let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
    match cleanup::plan(config_dir, days, SystemTime::now(), &keep) {
        Ok(plan) => {
            let report = cleanup::apply(&plan);
            for (path, why) in &report.failed {
                tracing::warn!(
                    "cannot delete the old session file {}: {why}",
                    path.display()
                );
            }
            tracing::info!(
                deleted = report.deleted.len(),
                backups = report.deleted_file_history.len(),
                kept_in_use = report.kept_in_use.len(),
                "sessions older than {days} days cleaned up"
            );
        }
        Err(e) => tracing::warn!("old sessions were not cleaned up: {e}"),
    }
}

/// The session id a `--resume` value names (an id, or a transcript path).
pub(crate) fn resumed_id(value: &str) -> String {
    let p = Path::new(value);
    if p.extension().is_some_and(|e| e == "jsonl")
        && let Some(stem) = p.file_stem().and_then(|s| s.to_str())
    {
        return stem.to_owned();
    }
    value.to_owned()
}

/// `cleanupPeriodDays` of the merged settings (the default when unset); an error naming
/// the files when any settings source is broken.
fn period_days(config_dir: &Path, cwd: &Path, flag: Option<&str>) -> Result<u32, String> {
    let mut locations = SettingsLocations::new(config_dir, &paths::project_root(cwd));
    if let Some(flag) = flag {
        locations = locations.with_flag(FlagSettings::from_arg(flag));
    }
    let merged = SettingsFiles::new(locations).load();
    if !merged.errors.is_empty() {
        let errors: Vec<String> = merged.errors.iter().map(ToString::to_string).collect();
        return Err(format!(
            "the settings could not be read, so the period sessions are kept is unknown \
             ({}); fix the file and run `strata sessions cleanup` again",
            errors.join("; ")
        ));
    }
    Ok(merged
        .settings
        .cleanup_period_days
        .unwrap_or(DEFAULT_PERIOD_DAYS))
}

fn days_ago(t: SystemTime, now: SystemTime) -> u64 {
    now.duration_since(t).map_or(0, |d| d.as_secs() / 86_400)
}

fn project_of(transcript: &Path) -> String {
    transcript
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn as_text(
    days: u32,
    plan: &CleanupPlan,
    report: Option<&CleanupReport>,
    now: SystemTime,
) -> String {
    let mut out = String::new();
    let bytes: u64 = plan.expired.iter().map(|s| s.bytes).sum();
    let verb = if report.is_some() {
        "Deleted"
    } else {
        "Would delete"
    };
    if plan.expired.is_empty() && plan.orphan_file_history.is_empty() {
        let _ = writeln!(
            out,
            "No session was last active more than {days} days ago; nothing to delete."
        );
        return out;
    }
    let deleted = report.map_or(plan.expired.len(), |r| r.deleted.len());
    let _ = writeln!(
        out,
        "{verb} {deleted} session{} last active more than {days} days ago ({:.1} MB of transcripts):",
        if deleted == 1 { "" } else { "s" },
        bytes as f64 / 1_000_000.0
    );
    for s in &plan.expired {
        let gone = report.is_none_or(|r| r.deleted.contains(&s.transcript));
        let note = match report {
            Some(r) if r.kept_in_use.contains(&s.transcript) => "  (kept: in use or written since)",
            _ if !gone => "  (failed, see below)",
            _ => "",
        };
        let _ = writeln!(
            out,
            "  {}.jsonl  in {}  last active {} days ago{note}",
            s.session_id,
            project_of(&s.transcript),
            days_ago(s.modified, now)
        );
    }
    if !plan.orphan_file_history.is_empty() {
        let _ = writeln!(
            out,
            "{verb} the backups of {} session{} that no longer exist.",
            plan.orphan_file_history.len(),
            if plan.orphan_file_history.len() == 1 {
                ""
            } else {
                "s"
            }
        );
    }
    if let Some(r) = report {
        for (path, why) in &r.failed {
            let _ = writeln!(out, "cannot delete {}: {why}", path.display());
        }
    }
    out
}

fn as_json(days: u32, plan: &CleanupPlan, report: Option<&CleanupReport>) -> serde_json::Value {
    let sessions: Vec<serde_json::Value> = plan
        .expired
        .iter()
        .map(|s| {
            let status = match report {
                None => "wouldDelete",
                Some(r) if r.deleted.contains(&s.transcript) => "deleted",
                Some(r) if r.kept_in_use.contains(&s.transcript) => "keptInUse",
                Some(_) => "failed",
            };
            json!({
                "sessionId": s.session_id,
                "path": s.transcript,
                "projectDir": project_of(&s.transcript),
                "bytes": s.bytes,
                "lastActiveDaysAgo": days_ago(s.modified, SystemTime::now()),
                "status": status,
            })
        })
        .collect();
    json!({
        "cleanupPeriodDays": days,
        "dryRun": report.is_none(),
        "sessions": sessions,
        "orphanFileHistory": plan.orphan_file_history,
        "failed": report.map(|r| r.failed.iter().map(|(p, why)| json!({"path": p, "error": why})).collect::<Vec<_>>()).unwrap_or_default(),
    })
}
