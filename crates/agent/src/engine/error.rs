//! The errors of the engine's operations, as enums a host can match on.
//!
//! Each operation has its own enum, naming what went wrong in terms the caller can act
//! on (no such session, the mode is refused and why, no snapshot for that prompt, which
//! file could not be read). The `Display` text is the one-line message for the user;
//! the binary turns these into messages and exit codes in one place
//! (`crates/cli/src/exit.rs`), and the control protocol sends the same text in its error
//! responses.

use std::path::PathBuf;

use strata_protocol::permission::ParsePermissionModeError;
use strata_session::file_history::FileHistoryError;
use strata_session::resume::ResumeError;
use strata_session::writer::WriterError;
use strata_state::{RootError, RuleError};

use crate::permissions::ModeError;

/// Why a session could not be opened ([`Engine::open`](super::Engine::open)).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `--resume` named a session that does not exist.
    #[error("No conversation found with session ID: {0}")]
    NotFound(String),
    /// `--continue`, and the project has no session yet.
    #[error("No conversation found to continue")]
    NothingToContinue {
        /// The folder of the project's sessions that was searched.
        searched: PathBuf,
    },
    /// The session to resume could not be found, read or resumed (an unreadable
    /// directory or file, a file that holds no transcript line).
    #[error(transparent)]
    Resume(ResumeError),
    /// The resumed session could not be copied to continue under a new id (a fork, or a
    /// transcript from outside the project's sessions).
    #[error("cannot fork the session: {0}")]
    Fork(#[source] ResumeError),
    /// The resumed transcript's path is not one of the config directory's session paths.
    #[error("{} is not a transcript path", path.display())]
    NotATranscriptPath {
        /// The path.
        path: PathBuf,
    },
    /// A `--disallowedTools` rule does not parse: it would deny nothing, so the session
    /// does not start.
    #[error("{0}; fix the --disallowedTools value (nothing was run)")]
    DisallowedRule(#[source] RuleError),
    /// The permission mode asked for at launch is not available.
    #[error(transparent)]
    Mode(#[from] ModeError),
    /// The session scope already has a live root store (UI-5): a second session cannot
    /// be opened in it while the first is open.
    #[error(transparent)]
    Root(#[from] RootError),
    /// The transcript file could not be opened for writing.
    #[error(transparent)]
    Transcript(#[from] WriterError),
    /// The task opening the session panicked or was cancelled.
    #[error("opening the session failed: {0}")]
    Task(String),
}

/// Why a permission mode change was refused ([`Engine::set_permission_mode`](super::Engine::set_permission_mode)).
/// The mode stays what it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetModeError {
    /// The name is not a permission mode.
    #[error(transparent)]
    UnknownMode(#[from] ParsePermissionModeError),
    /// The mode exists but may not be entered now (bypass not launched, or disabled by
    /// settings).
    #[error(transparent)]
    Refused(#[from] ModeError),
}

/// Why files could not be rewound ([`Engine::rewind_files`](super::Engine::rewind_files)).
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    /// No snapshot of this session belongs to user message `uuid`: it is not one of the
    /// live conversation's prompts (or, with `at_cap`, is older than the snapshots
    /// kept). Nothing was changed.
    #[error("{}", target_not_found(uuid, *at_cap))]
    TargetNotFound {
        /// The user message uuid asked for.
        uuid: String,
        /// Whether older snapshots were dropped (only the last 100 prompts are kept).
        at_cap: bool,
    },
    /// A file or a backup could not be read, written or restored; the error names the
    /// path. A missing backup changes nothing; a failure while restoring leaves the
    /// files restored before it restored.
    #[error(transparent)]
    Files(FileHistoryError),
}

/// The file history's own wording for a missing snapshot (one text for both layers).
fn target_not_found(uuid: &str, at_cap: bool) -> String {
    FileHistoryError::UnknownMessage {
        uuid: uuid.to_owned(),
        at_cap,
    }
    .to_string()
}

impl From<FileHistoryError> for RewindError {
    fn from(error: FileHistoryError) -> Self {
        match error {
            FileHistoryError::UnknownMessage { uuid, at_cap } => {
                Self::TargetNotFound { uuid, at_cap }
            }
            other => Self::Files(other),
        }
    }
}

/// Why a session did not close cleanly ([`Engine::close`](super::Engine::close)).
#[derive(Debug, thiserror::Error)]
pub enum CloseError {
    /// The transcript could not be made durable: records the user was shown may be lost.
    #[error("the transcript could not be synced: {0}")]
    Sync(#[source] WriterError),
    /// The task closing the session panicked or was cancelled.
    #[error("closing the session failed: {0}")]
    Task(String),
}

/// Why a background task could not be stopped or viewed ([`Engine::request_stop`],
/// [`Engine::stop_task`], [`Engine::view_agent`]). Hosts match on the kind; the text is
/// what a user is shown.
///
/// [`Engine::request_stop`]: super::Engine::request_stop
/// [`Engine::stop_task`]: super::Engine::stop_task
/// [`Engine::view_agent`]: super::Engine::view_agent
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The session has no task with that id.
    #[error("No background task with id {id}.")]
    Unknown {
        /// The id asked for.
        id: String,
    },
    /// The task exists but has ended.
    #[error("Task {id} is not running: it has ended.")]
    Ended {
        /// The task's id.
        id: String,
    },
    /// The task is a shell command, not an agent (only agents have a conversation to view).
    #[error("Task {id} is not an agent.")]
    NotAnAgent {
        /// The task's id.
        id: String,
    },
    /// Stopping an agent did nothing (it had ended) or did not finish in time.
    #[error(transparent)]
    Agent(#[from] crate::agents::StopAgentError),
    /// Stopping a shell command did nothing or did not finish in time.
    #[error(transparent)]
    Shell(#[from] crate::tools::bash::background::ShellTaskError),
    /// The agent's sidechain transcript could not be read to show its conversation.
    #[error("the agent's transcript {} cannot be read: {source}", path.display())]
    Transcript {
        /// The transcript's path.
        path: std::path::PathBuf,
        /// What went wrong reading it.
        #[source]
        source: strata_session::resume::ResumeError,
    },
}
