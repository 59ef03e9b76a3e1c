//! The errors of this crate. Every one names the file it is about; parse errors also name
//! the line and column and say what is wrong, so a user can fix the file by hand.

use std::path::{Path, PathBuf};

use crate::sources::SettingsSource;

/// A settings or config document that could not be read as what it must be: invalid JSON,
/// not an object, or a known key with a value of the wrong shape.
///
/// Displayed as one line: `<file>: line <l>, column <c>: <problem>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: line {line}, column {column}: {problem}")]
pub struct ParseError {
    /// The file's path, or `--settings (inline JSON)` for inline flag settings.
    pub file: String,
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem.
    pub column: usize,
    /// What is wrong, with the key path when a known key is at fault
    /// (`permissions.defaultMode: unknown permission mode "yolo"; expected one of …`).
    pub problem: String,
}

/// Everything that can go wrong reading or writing configuration files.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file does not parse or does not match the schema. Nothing was written.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// An edit would have left the file not matching the schema; the file is unchanged.
    #[error("{}: change refused, the file would be invalid: {problem}", file.display())]
    Rejected {
        /// The file that was to be written.
        file: PathBuf,
        /// What would have been wrong (with the key path).
        problem: String,
    },
    /// A project settings file is a symbolic link leading out of the project; strata does
    /// not write through it. Nothing was written.
    #[error(
        "{}: not written: it is a symbolic link to {}, outside the project (a repository could point it at your own settings); replace the link with a file to keep project settings here",
        file.display(),
        target.display()
    )]
    LinkOutOfProject {
        /// The settings file (the link).
        file: PathBuf,
        /// Where it leads.
        target: PathBuf,
    },
    /// A settings or config path leads to something that is not a regular file (a FIFO, a
    /// device, a directory): it is not read at all, so it can neither hang strata nor fill
    /// its memory.
    #[error(
        "{}: not read: it is {kind}, not a regular file; a settings or config file must be a regular JSON file (replace it with one, or remove it)",
        file.display()
    )]
    NotARegularFile {
        /// The path as configured (a link is named, not its target).
        file: PathBuf,
        /// What it is ("a FIFO (named pipe)", "a character device", ...).
        kind: &'static str,
    },
    /// A settings or config file is larger than [`crate::MAX_CONFIG_FILE_BYTES`]; it is
    /// not read.
    #[error(
        "{}: not read: it is larger than {}, which no settings or config file needs; check what the path points to",
        file.display(),
        size(*limit)
    )]
    TooLarge {
        /// The path.
        file: PathBuf,
        /// The cap in bytes.
        limit: u64,
    },
    /// A write would have created a directory outside the config directory or the
    /// project (a settings path that is a symbolic link to a place that does not exist
    /// yet). Nothing was created or written.
    #[error(
        "{}: not written: writing it would create the directory {}, which is outside {}; strata creates directories only inside the config directory and the project (create it yourself, or replace the link with a file)",
        file.display(),
        dir.display(),
        root.display()
    )]
    OutsideWriteRoot {
        /// The file that was to be written (as configured).
        file: PathBuf,
        /// The directory that does not exist.
        dir: PathBuf,
        /// Where directories may be created.
        root: PathBuf,
    },
    /// A filesystem operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done ("read", "lock", "replace", ...).
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The source cannot be written (flag and managed settings are read-only).
    #[error("the {0} settings cannot be written by strata")]
    ReadOnly(SettingsSource),
    /// No config directory could be determined.
    #[error(transparent)]
    Path(#[from] crate::paths::PathError),
    /// The file watcher could not be started or extended.
    #[error("cannot watch settings files: {0}")]
    Watch(#[from] notify::Error),
}

/// `4 MiB`, `64 KiB`, `100 bytes`.
fn size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    match bytes {
        b if b >= KIB * KIB && b % (KIB * KIB) == 0 => format!("{} MiB", b / (KIB * KIB)),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

impl ConfigError {
    /// Wraps an I/O error with what was being done and to which path.
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}
