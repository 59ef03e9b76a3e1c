//! Finding transcripts: by id, by path, the newest of a project (`--continue`), and the
//! sub-agent transcripts of a session in both layouts the reference agent has used.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use strata_config::paths;

use super::ResumeError;
use crate::reader::line::{LineKind, flag, scan_line};

/// How much of each end of a file `--continue` reads to judge it.
pub(crate) const PEEK_BYTES: u64 = 64 * 1024;

/// The transcript of session `id`: in the project of `project_root` first, then in any
/// project (sorted by folder name, so the answer is stable).
pub fn find_by_id(
    config_dir: &Path,
    project_root: &Path,
    id: &str,
) -> Result<PathBuf, ResumeError> {
    if id.is_empty() || id.contains(['/', '\\']) || id == "." || id == ".." {
        return Err(ResumeError::InvalidId { id: id.to_owned() });
    }
    let file = format!("{id}.jsonl");
    let own = paths::project_sessions_dir(config_dir, project_root).join(&file);
    if own.is_file() {
        return Ok(own);
    }
    let projects = paths::projects_dir(config_dir);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&projects)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs.into_iter()
        .map(|d| d.join(&file))
        .find(|p| p.is_file())
        .ok_or(ResumeError::UnknownSession {
            id: id.to_owned(),
            searched: projects,
        })
}

/// A `--resume` argument: a path when it ends in `.jsonl` or holds a path separator, else
/// a session id.
pub fn resolve(config_dir: &Path, project_root: &Path, arg: &str) -> Result<PathBuf, ResumeError> {
    if arg.ends_with(".jsonl") || arg.contains(['/', '\\']) {
        let path = PathBuf::from(arg);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(ResumeError::NoSuchFile { path })
        };
    }
    find_by_id(config_dir, project_root, arg)
}

/// `--continue`: the newest session file of a project folder by modification time,
/// judging each file by its first and last 64 KB only and skipping sub-agent
/// transcripts and files without a conversation. `None` when there is none.
pub fn latest_in_project(project_dir: &Path) -> Result<Option<PathBuf>, ResumeError> {
    let rd = match std::fs::read_dir(project_dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ResumeError::Io {
                path: project_dir.to_path_buf(),
                source,
            });
        }
    };
    let mut files: Vec<(SystemTime, PathBuf)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let p = e.path();
            let name = p.file_name()?.to_str()?;
            if !name.ends_with(".jsonl") || name.starts_with("agent-") {
                return None;
            }
            let meta = e.metadata().ok().filter(std::fs::Metadata::is_file)?;
            Some((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), p))
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    Ok(files
        .into_iter()
        .map(|(_, p)| p)
        .find(|p| is_main_conversation(p)))
}

/// Whether a file holds a main (not sub-agent) conversation, judged from its head and
/// tail: some `user` or `assistant` line there, none of them a sidechain line.
fn is_main_conversation(path: &Path) -> bool {
    let Ok(windows) = head_and_tail(path) else {
        return false;
    };
    let mut conversation = false;
    for w in &windows {
        for (s, e) in whole_lines(w) {
            let Ok(l) = scan_line(w, s, e, 0) else {
                continue;
            };
            if matches!(l.kind, LineKind::User | LineKind::Assistant) {
                if l.has(flag::SIDECHAIN) {
                    return false;
                }
                conversation = true;
            }
        }
    }
    conversation
}

/// The first and (if the file is larger) last [`PEEK_BYTES`] of a file.
pub(crate) fn head_and_tail(path: &Path) -> std::io::Result<Vec<Vec<u8>>> {
    let mut f = File::open(path)?;
    let size = f.metadata()?.len();
    let mut head = Vec::new();
    (&mut f).take(PEEK_BYTES).read_to_end(&mut head)?;
    if size <= PEEK_BYTES {
        return Ok(vec![head]);
    }
    let tail_start = size.saturating_sub(PEEK_BYTES).max(PEEK_BYTES);
    f.seek(SeekFrom::Start(tail_start))?;
    let mut tail = Vec::new();
    f.take(PEEK_BYTES).read_to_end(&mut tail)?;
    // The tail window starts mid-line unless it starts right after the head.
    if tail_start > PEEK_BYTES || head.last() != Some(&b'\n') {
        let cut = memchr::memchr(b'\n', &tail).map_or(tail.len(), |k| k + 1);
        tail.drain(..cut);
    }
    Ok(vec![head, tail])
}

/// The complete lines of a window (a last line without its newline is left out unless
/// the window is the whole rest of the file, which the caller cannot tell: a cut line
/// simply fails to scan).
pub(crate) fn whole_lines(w: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        while start < w.len() {
            let end = memchr::memchr(b'\n', &w[start..]).map_or(w.len(), |k| start + k);
            let s = start;
            start = end + 1;
            let mut e = end;
            if e > s && w[e - 1] == b'\r' {
                e -= 1;
            }
            if e > s {
                return Some((s, e));
            }
        }
        None
    })
}

/// The sub-agent transcripts of `session_id` whose main transcript is `path`: the
/// current layout `<session-id>/subagents/agent-<id>.jsonl`, and the older one,
/// `agent-<id>.jsonl` beside the sessions carrying the parent's `sessionId`.
pub(crate) fn subagent_transcripts(path: &Path, session_id: &str) -> Vec<(String, PathBuf)> {
    let Some(project_dir) = path.parent() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let nested = project_dir.join(session_id).join("subagents");
    for p in agent_files(&nested) {
        found.push(p);
    }
    for p in agent_files(project_dir) {
        if first_session_id(&p.1).as_deref() == Some(session_id) {
            found.push(p);
        }
    }
    found.sort();
    found
}

fn agent_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter_map(|e| {
            let p = e.path();
            let id = p
                .file_name()?
                .to_str()?
                .strip_prefix("agent-")?
                .strip_suffix(".jsonl")?
                .to_owned();
            p.is_file().then_some((id, p))
        })
        .collect()
}

/// The `sessionId` of the first line that has one, read from the file's head.
fn first_session_id(path: &Path) -> Option<String> {
    let windows = head_and_tail(path).ok()?;
    let head = windows.first()?;
    whole_lines(head).find_map(|(s, e)| {
        let l = scan_line(head, s, e, 0).ok()?;
        l.text_of(head, l.session_id)
            .map(std::borrow::Cow::into_owned)
    })
}
