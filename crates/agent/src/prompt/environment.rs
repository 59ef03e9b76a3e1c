//! The environment section of the system prompt: where strata runs, gathered cheaply.
//!
//! Start-up time matters (issue 13: at most 5 ms added to `strata -p hi`), so what can be
//! read from files is read from files: the branch from `.git/HEAD`, the recent commits
//! from the `HEAD` reflog (`.git/logs/HEAD`, the last lines only). Only `git status`
//! needs git itself; it runs on a thread started when the session opens
//! ([`GitStatus::start`]), in parallel with everything else, and the first request waits
//! for it at most [`STATUS_WAIT`] (a very large repository gets a prompt without it rather
//! than a slow first request). Its output is capped at [`STATUS_MAX_LINES`] lines.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// How long the first request waits for `git status`.
pub const STATUS_WAIT: Duration = Duration::from_millis(500);
/// The most lines of `git status` put in the prompt.
pub const STATUS_MAX_LINES: usize = 20;
/// How many recent commits are listed.
pub const RECENT_COMMITS: usize = 5;
/// How much of the end of the reflog is read for them.
const REFLOG_TAIL_BYTES: u64 = 16 * 1024;

/// What the prompt says about the repository.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GitInfo {
    /// The current branch (`None`: detached `HEAD`, shown by its commit).
    pub branch: Option<String>,
    /// The commit `HEAD` points at when detached.
    pub detached_at: Option<String>,
    /// The newest commits' subjects, newest first (`<short hash> <subject>`).
    pub recent_commits: Vec<String>,
}

/// The `.git` directory of `root` (a worktree's or submodule's `.git` file followed).
pub fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.strip_prefix("gitdir:")?.trim();
    let target = Path::new(target);
    Some(if target.is_absolute() {
        target.to_path_buf()
    } else {
        root.join(target)
    })
}

/// Reads the branch and recent commits of the repository at `root` from its files.
pub fn git_info(root: &Path) -> Option<GitInfo> {
    let dir = git_dir(root)?;
    let head = std::fs::read_to_string(dir.join("HEAD")).ok()?;
    let head = head.trim();
    let mut info = GitInfo::default();
    match head.strip_prefix("ref: ") {
        Some(reference) => {
            info.branch = Some(
                reference
                    .strip_prefix("refs/heads/")
                    .unwrap_or(reference)
                    .to_owned(),
            );
        }
        None => info.detached_at = Some(head.chars().take(12).collect()),
    }
    info.recent_commits = recent_commits(&dir.join("logs").join("HEAD"));
    Some(info)
}

/// The subjects of the newest reflog entries that made commits (`commit:`,
/// `commit (amend):`, `commit (initial):`, `commit (merge):`), newest first.
fn recent_commits(reflog: &Path) -> Vec<String> {
    let Ok(mut file) = std::fs::File::open(reflog) else {
        return Vec::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(REFLOG_TAIL_BYTES);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0); // probably cut in the middle
    }
    lines
        .iter()
        .rev()
        .filter_map(|line| {
            // `<old> <new> <name> <email> <time> <tz>\t<action>: <message>`
            let (head, action) = line.split_once('\t')?;
            let (kind, subject) = action.split_once(": ")?;
            if !kind.starts_with("commit") {
                return None;
            }
            let new = head.split(' ').nth(1)?;
            Some(format!("{} {}", &new[..new.len().min(7)], subject))
        })
        .take(RECENT_COMMITS)
        .collect()
}

/// `git status --short` of a repository, run on its own thread.
pub struct GitStatus {
    receiver: Option<mpsc::Receiver<Option<String>>>,
    value: Option<Option<String>>,
}

impl GitStatus {
    /// Starts `git status` in `root` (nothing when `root` is not a repository).
    pub fn start(root: &Path) -> GitStatus {
        if git_dir(root).is_none() {
            return GitStatus {
                receiver: None,
                value: Some(None),
            };
        }
        let (tx, rx) = mpsc::channel();
        let root = root.to_path_buf();
        let spawned = std::thread::Builder::new()
            .name("git-status".into())
            .spawn(move || {
                let _ = tx.send(run_status(&root));
            });
        GitStatus {
            value: spawned.is_err().then_some(None),
            receiver: spawned.is_ok().then_some(rx),
        }
    }

    /// A status already known (tests, sub-agents given their parent's).
    pub fn known(status: Option<String>) -> GitStatus {
        GitStatus {
            receiver: None,
            value: Some(status),
        }
    }

    /// The status, waiting at most [`STATUS_WAIT`] the first time; `None` when git is
    /// missing, failed or was too slow.
    pub fn get(&mut self) -> Option<String> {
        if self.value.is_none() {
            let got = self
                .receiver
                .take()
                .and_then(|rx| rx.recv_timeout(STATUS_WAIT).ok())
                .flatten();
            self.value = Some(got);
        }
        self.value.clone().flatten()
    }
}

fn run_status(root: &Path) -> Option<String> {
    let output = std::process::Command::new("git")
        .args([
            "status",
            "--short",
            "--no-renames",
            "--untracked-files=normal",
        ])
        .current_dir(root)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return Some("(clean)".into());
    }
    let mut out: Vec<String> = lines
        .iter()
        .take(STATUS_MAX_LINES)
        .map(|l| (*l).to_owned())
        .collect();
    if lines.len() > STATUS_MAX_LINES {
        out.push(format!(
            "… and {} more (run `git status` for all)",
            lines.len() - STATUS_MAX_LINES
        ));
    }
    Some(out.join("\n"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn branch_and_recent_commits_are_read_from_git_files() {
        let tmp = tempfile::tempdir().unwrap();
        let git = tmp.path().join(".git");
        std::fs::create_dir_all(git.join("logs")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        let z = "0".repeat(40);
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        std::fs::write(
            git.join("logs/HEAD"),
            format!(
                "{z} {a} Me <me@x> 1 +0000\tcommit (initial): first\n\
                 {a} {a} Me <me@x> 2 +0000\tcheckout: moving from main to feature/x\n\
                 {a} {b} Me <me@x> 3 +0000\tcommit: second change\n"
            ),
        )
        .unwrap();
        let info = git_info(tmp.path()).unwrap();
        assert_eq!(info.branch.as_deref(), Some("feature/x"));
        assert_eq!(
            info.recent_commits,
            ["bbbbbbb second change", "aaaaaaa first"]
        );
        assert!(git_info(&tmp.path().join("nothing")).is_none());
    }
}
