//! What the file tools share: path checks, the read-file state, and running blocking
//! file work off the async executor.
//!
//! The read-file state is a safety rule borrowed from the reference agent's documented
//! behaviour: Write and Edit refuse to change an existing file the model has not Read in
//! this context, or one that changed on disk after it was read (someone else edited it),
//! because an edit computed from a stale picture silently destroys the other change.

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{ToolContext, ToolOutput, lock};

/// What Write and Edit remember about a file the model read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadStamp {
    /// Modification time when it was read (or last written by a tool).
    pub modified: Option<SystemTime>,
    /// Length in bytes at that time.
    pub len: u64,
}

impl ReadStamp {
    /// The stamp of a file's current metadata.
    pub fn of(meta: &Metadata) -> Self {
        Self {
            modified: meta.modified().ok(),
            len: meta.len(),
        }
    }
}

/// The files read in one tool-use context, by absolute path. Cloned, not shared, into a
/// sub-agent's context (SA-6).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileReadState {
    files: HashMap<PathBuf, ReadStamp>,
}

impl FileReadState {
    /// Remembers that `path` was read (or written) and is now at `stamp`.
    pub fn record(&mut self, path: PathBuf, stamp: ReadStamp) {
        self.files.insert(path, stamp);
    }

    /// The stamp recorded for `path`.
    pub fn get(&self, path: &Path) -> Option<ReadStamp> {
        self.files.get(path).copied()
    }

    /// How many files are recorded.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether nothing was read yet.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Checks that `raw` (the value of `field`) is an absolute path and normalises it
/// lexically (`.` and `..` removed), so the permission check and the tool agree on
/// which file is meant.
pub(crate) fn absolute_path(tool: &str, field: &str, raw: &str) -> Result<PathBuf, ToolOutput> {
    if raw.is_empty() {
        return Err(super::input::invalid(tool, field, "must not be empty"));
    }
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(super::input::invalid(
            tool,
            field,
            format!("must be an absolute path, got {raw:?}"),
        ));
    }
    Ok(normalize(path))
}

/// Removes `.` and resolves `..` without touching the file system: the shared
/// normalisation, so the permission check judges the very path the tool opens.
pub(crate) use strata_config::paths::normalize_lexically as normalize;

/// Refuses a change to the existing file at `path` unless it was read in this context
/// and has not changed on disk since.
pub(crate) fn check_fresh(
    ctx: &ToolContext,
    path: &Path,
    meta: &Metadata,
) -> Result<(), ToolOutput> {
    let recorded = lock(&ctx.read_files).get(path);
    match recorded {
        None => Err(ToolOutput::error(format!(
            "{} has not been read yet. Read it first, then retry the change.",
            path.display()
        ))),
        Some(stamp) if stamp != ReadStamp::of(meta) => Err(ToolOutput::error(format!(
            "{} was modified after it was last read (by the user or another program). \
             Read it again before changing it, so the other change is not lost.",
            path.display()
        ))),
        Some(_) => Ok(()),
    }
}

/// Records the current state of `path` after a tool read or wrote it.
pub(crate) fn record_read(ctx: &ToolContext, path: &Path) {
    if let Ok(meta) = std::fs::metadata(path) {
        lock(&ctx.read_files).record(path.to_path_buf(), ReadStamp::of(&meta));
    }
}

/// Runs blocking file work on tokio's blocking pool; a panic inside becomes an error
/// result rather than taking the turn down.
pub(crate) async fn blocking<F>(work: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(out) => out,
        Err(err) => ToolOutput::error(format!("internal error while running the tool: {err}")),
    }
}

/// A file tool's call: the input's check, then `work` on what it checked, off the async
/// executor. A failed check is the result as it is.
pub(crate) async fn blocking_checked<C, F>(checked: Result<C, ToolOutput>, work: F) -> ToolOutput
where
    C: Send + 'static,
    F: FnOnce(C) -> ToolOutput + Send + 'static,
{
    match checked {
        Ok(c) => blocking(move || work(c)).await,
        Err(err) => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../x")), PathBuf::from("/x"));
    }

    #[test]
    fn relative_paths_are_refused_with_the_field_named() {
        let err = absolute_path("Read", "file_path", "src/main.rs").unwrap_err();
        assert!(err.content.contains("`file_path`"), "{}", err.content);
        assert!(err.content.contains("absolute"), "{}", err.content);
        assert!(absolute_path("Read", "file_path", "").is_err());
    }
}
