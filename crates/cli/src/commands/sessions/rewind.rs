//! `strata sessions rewind <session-id> --to <user-message-uuid> [--dry-run]`: puts the
//! files a session edited back to their state at one of its prompts (issue 5 part 6).
//!
//! The session is loaded with the resume loader, so only the file-history snapshots of
//! its live conversation count (a prompt on a branch abandoned by an earlier rewind
//! cannot be the target). Relative paths in the snapshots are resolved against the
//! session's recorded working directory. While the command runs it holds a shared lock
//! on the transcript, so it refuses to run under a strata process that is still writing
//! that session, and no such process can start meanwhile.
//!
//! Output, one line per file (`restore`, `delete`: did not exist then, `recreate`: was
//! deleted since), with inserted and deleted lines:
//!
//! ```text
//! Rewound 2 files of session 1f…c4 to message 9b…2e (+3 -7):
//!   restore   src/lib.rs  +3 -5
//!   delete    notes.md  +0 -2
//! ```

use std::fs::{File, TryLockError};
use std::path::Path;

use anyhow::Context as _;
use clap::Args;
use strata_config::paths;
use strata_session::file_history::{ChangeKind, FileHistoryFiles, RewindReport};
use strata_session::layout::SessionLayout;
use strata_session::resume::{self, LoadedSession};

use crate::exit::Failure;

/// Arguments of `strata sessions rewind`.
#[derive(Debug, Args)]
pub(crate) struct RewindArgs {
    /// The session: its id, or the path of its `.jsonl` transcript.
    #[arg(value_name = "SESSION-ID")]
    session: String,
    /// The uuid of the user message whose files to go back to.
    #[arg(long = "to", value_name = "USER-MESSAGE-UUID")]
    to: String,
    /// Only report what would change; touch no file.
    #[arg(long)]
    dry_run: bool,
}

/// Runs `strata sessions rewind`.
pub(crate) fn run(args: RewindArgs) -> anyhow::Result<()> {
    let config_dir = paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let project_root = paths::project_root(&cwd);
    let path = resume::resolve(&config_dir, &project_root, &args.session)
        .map_err(|e| Failure::failed(one_line(&e)))?;
    let _lock = lock_shared(&path)?;
    let session = LoadedSession::load(&path).map_err(|e| Failure::failed(one_line(&e)))?;
    let Some(session_cwd) = session.cwd() else {
        return Err(Failure::failed(format!(
            "session {} records no working directory, so its files cannot be found",
            session.session_id
        ))
        .into());
    };
    let layout = SessionLayout::from_transcript_path(&config_dir, &path).ok_or_else(|| {
        Failure::failed(format!("{} is not a transcript file path", path.display()))
    })?;
    // A closed session: its file history is rebuilt from the transcript into the app
    // state's domain type (the same rules as a resume, the 100-snapshot cap included).
    let history = strata_state::FileHistory::resumed(
        session.file_history.iter().cloned(),
        session.latest_snapshot.as_ref(),
    );
    let files = FileHistoryFiles::new(&layout, session_cwd);
    let snapshots = history.snapshots.iter().map(|s| &**s);
    let rewound = files.rewind(snapshots, history.snapshots_dropped, &args.to, args.dry_run);
    let report = rewound.map_err(|e| {
        Failure::failed(format!("session {}: {}", session.session_id, one_line(&e)))
    })?;
    crate::commands::output::print(&render(&session.session_id, &report))?;
    Ok(())
}

/// Holds a shared lock on the transcript for the command's duration; fails when a strata
/// process is writing the session (it holds the exclusive lock).
fn lock_shared(path: &Path) -> anyhow::Result<File> {
    let file = File::open(path)
        .map_err(|e| Failure::failed(format!("cannot read {}: {e}", path.display())))?;
    match file.try_lock_shared() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(Failure::failed(format!(
            "session {} is open in a running strata process; close it there before rewinding its files",
            path.display()
        ))
        .into()),
        Err(TryLockError::Error(e)) => {
            Err(Failure::failed(format!("cannot lock {}: {e}", path.display())).into())
        }
    }
}

/// The report as the command prints it.
fn render(session_id: &str, report: &RewindReport) -> String {
    let n = report.files_changed();
    let files = if n == 1 { "file" } else { "files" };
    let stat = format!("(+{} -{})", report.insertions(), report.deletions());
    let mut out = if n == 0 {
        format!(
            "Nothing to rewind: the {} tracked files of session {session_id} already match message {}.\n",
            report.unchanged, report.message_id
        )
    } else if report.dry_run {
        format!(
            "Dry run: rewinding session {session_id} to message {} would change {n} {files} {stat}:\n",
            report.message_id
        )
    } else {
        format!(
            "Rewound {n} {files} of session {session_id} to message {} {stat}:\n",
            report.message_id
        )
    };
    for change in &report.changes {
        let verb = match change.kind {
            ChangeKind::Restored => "restore",
            ChangeKind::Deleted => "delete",
            ChangeKind::Created => "recreate",
        };
        out.push_str(&format!(
            "  {verb:<9} {}  +{} -{}\n",
            change.path, change.insertions, change.deletions
        ));
    }
    if !report.outside_project.is_empty() {
        out.push_str(
            "Left alone, outside the session's project (restore them by hand if you need to):\n",
        );
        for path in &report.outside_project {
            out.push_str(&format!("  {path}\n"));
        }
    }
    out
}

/// An error's message with its causes, on one line.
fn one_line(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text.replace(['\n', '\r'], " ")
}
