//! Where one session's files are, under the config directory (DESIGN.md "Sessions").
//!
//! ```text
//! projects/<project dir name>/<session-id>.jsonl                     the transcript
//! projects/<project dir name>/<session-id>/subagents/agent-<id>.jsonl
//! projects/<project dir name>/<session-id>/tool-results/<tool-use-id>.txt
//! projects/<project dir name>/<session-id>/tasks/<task-id>.output     background task output
//! file-history/<session-id>/<sha256(path)[..16]>@v<n>                pre-edit backups
//! ```

use std::path::{Path, PathBuf};

use strata_config::paths;

/// The files of one session of one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLayout {
    /// `<config>/projects/<project dir name>`.
    pub project_dir: PathBuf,
    /// The session id (a UUID in strata's own sessions; any file stem in foreign ones).
    pub session_id: String,
    /// The config directory, for the file-history folder.
    pub config_dir: PathBuf,
}

impl SessionLayout {
    /// The layout of `session_id` in the project rooted at `project_root`.
    pub fn new(config_dir: &Path, project_root: &Path, session_id: &str) -> Self {
        Self {
            project_dir: paths::project_sessions_dir(config_dir, project_root),
            session_id: session_id.to_owned(),
            config_dir: config_dir.to_path_buf(),
        }
    }

    /// The layout of a transcript found at `transcript` (its folder is the project dir).
    /// `None` when the path has no parent folder or no file stem.
    pub fn from_transcript_path(config_dir: &Path, transcript: &Path) -> Option<Self> {
        Some(Self {
            project_dir: transcript.parent()?.to_path_buf(),
            session_id: transcript.file_stem()?.to_string_lossy().into_owned(),
            config_dir: config_dir.to_path_buf(),
        })
    }

    /// `<project dir>/<session-id>.jsonl`.
    pub fn transcript(&self) -> PathBuf {
        self.project_dir.join(format!("{}.jsonl", self.session_id))
    }

    /// `<project dir>/<session-id>/`: the session's side folder.
    pub fn session_dir(&self) -> PathBuf {
        self.project_dir.join(&self.session_id)
    }

    /// `<project dir>/<session-id>/subagents/`.
    pub fn subagents_dir(&self) -> PathBuf {
        self.session_dir().join("subagents")
    }

    /// `<project dir>/<session-id>/subagents/agent-<agent id>.jsonl`.
    pub fn subagent_transcript(&self, agent_id: &str) -> PathBuf {
        self.subagents_dir().join(format!("agent-{agent_id}.jsonl"))
    }

    /// `<project dir>/<session-id>/tool-results/`.
    pub fn tool_results_dir(&self) -> PathBuf {
        self.session_dir().join("tool-results")
    }

    /// `<project dir>/<session-id>/tool-results/<tool-use-id>.txt`.
    pub fn tool_result(&self, tool_use_id: &str) -> PathBuf {
        self.tool_results_dir().join(format!("{tool_use_id}.txt"))
    }

    /// `<project dir>/<session-id>/tasks/`: background tasks' output files
    /// (`<task-id>.output`).
    pub fn tasks_dir(&self) -> PathBuf {
        self.session_dir().join("tasks")
    }

    /// `<config>/file-history/<session-id>/`.
    pub fn file_history_dir(&self) -> PathBuf {
        paths::file_history_dir(&self.config_dir, &self.session_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_reference_tree() {
        let l = SessionLayout::new(Path::new("/c"), Path::new("/w/p"), "abc");
        assert_eq!(l.transcript(), PathBuf::from("/c/projects/-w-p/abc.jsonl"));
        assert_eq!(
            l.subagent_transcript("a1"),
            PathBuf::from("/c/projects/-w-p/abc/subagents/agent-a1.jsonl")
        );
        assert_eq!(
            l.tool_result("t1"),
            PathBuf::from("/c/projects/-w-p/abc/tool-results/t1.txt")
        );
        assert_eq!(l.file_history_dir(), PathBuf::from("/c/file-history/abc"));
        let back = SessionLayout::from_transcript_path(Path::new("/c"), &l.transcript()).unwrap();
        assert_eq!(back, l);
    }
}
