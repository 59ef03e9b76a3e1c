//! `--fork-session`: a copy of a session under a new id that resumes to the same state.
//!
//! Every readable line is copied with `sessionId` changed to the new id and every other
//! byte of every value kept, unknown types and fields included ([`RawEntry`]); sub-agent
//! transcripts are copied the same way into the new session's folder; file-history
//! backups and stored tool outputs are hard-linked (copied when the filesystem cannot
//! link), since they never change once written. The new transcript appears atomically
//! and never replaces an existing file.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use strata_protocol::transcript::RawEntry;

use super::ResumeError;
use super::locate::subagent_transcripts;
use crate::layout::SessionLayout;
use crate::reader::Transcript;

/// What a fork copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkOutcome {
    /// The new session id.
    pub session_id: String,
    /// The new transcript.
    pub path: PathBuf,
    /// Lines copied into it.
    pub entries_copied: usize,
    /// Unreadable lines of the source left out.
    pub lines_skipped: usize,
    /// Sub-agent transcripts copied.
    pub subagents_copied: usize,
    /// File-history backups and stored tool outputs linked (or copied).
    pub files_linked: usize,
}

/// Copies the session whose transcript is `source` to a new session `new_id` in the same
/// project folder; `config_dir` holds the file-history backups.
pub fn fork(config_dir: &Path, source: &Path, new_id: &str) -> Result<ForkOutcome, ResumeError> {
    let Some(old) = SessionLayout::from_transcript_path(config_dir, source) else {
        return Err(ResumeError::NoSuchFile {
            path: source.to_path_buf(),
        });
    };
    let new = SessionLayout {
        session_id: new_id.to_owned(),
        ..old
    };
    fork_to(source, &new)
}

/// Copies the session whose transcript is `source` to the session `new` (any project
/// folder, any id not taken there): how a transcript from outside the config directory
/// (`--resume path/to/file.jsonl`) joins a project's sessions, so it can be listed and
/// resumed by its id afterwards.
pub fn fork_to(source: &Path, new: &SessionLayout) -> Result<ForkOutcome, ResumeError> {
    let new_id = new.session_id.as_str();
    if !is_plain_id(new_id) {
        return Err(ResumeError::InvalidId {
            id: new_id.to_owned(),
        });
    }
    let Some(old) = SessionLayout::from_transcript_path(&new.config_dir, source) else {
        return Err(ResumeError::NoSuchFile {
            path: source.to_path_buf(),
        });
    };
    mkdirs(Some(&new.project_dir))?;
    let target = new.transcript();
    if target.exists() {
        return Err(ResumeError::Exists { path: target });
    }
    let t = Transcript::read(source)?;
    let entries_copied = copy_rewritten(&t, &target, new_id)?;

    // The side folders are found by the old id, the file's name: one that is not a plain
    // name (`...jsonl` has the stem `..`) names no folder of its own, and following it
    // would link whatever lies above.
    let side_folders = is_plain_id(&old.session_id);
    let mut subagents_copied = 0;
    let subagents = if side_folders {
        subagent_transcripts(source, &old.session_id)
    } else {
        Vec::new()
    };
    for (agent_id, path) in subagents {
        let Ok(sub) = Transcript::read(&path) else {
            continue;
        };
        let dest = new.subagent_transcript(&agent_id);
        mkdirs(dest.parent())?;
        copy_rewritten(&sub, &dest, new_id)?;
        subagents_copied += 1;
    }
    let files_linked = if side_folders {
        link_all(&old.tool_results_dir(), &new.tool_results_dir())?
            + link_all(&old.file_history_dir(), &new.file_history_dir())?
    } else {
        0
    };
    Ok(ForkOutcome {
        session_id: new_id.to_owned(),
        path: target,
        entries_copied,
        lines_skipped: t.malformed().iter().filter(|m| !m.recovered_record).count(),
        subagents_copied,
        files_linked,
    })
}

/// Whether `id` can name a session's files: not empty, not `.` or `..`, no separator.
fn is_plain_id(id: &str) -> bool {
    !id.is_empty() && id != "." && id != ".." && !id.contains(['/', '\\'])
}

/// Writes the readable lines of `t` to `dest` with `sessionId` set to `new_id`; the file
/// appears only once complete, and never over an existing one.
fn copy_rewritten(t: &Transcript, dest: &Path, new_id: &str) -> Result<usize, ResumeError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ResumeError::Io { path, source }
    };
    let tmp = dest.with_extension(format!("jsonl.fork-{}", std::process::id()));
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let file = opts.open(&tmp).map_err(io(&tmp))?;
    let mut out = BufWriter::new(file);
    let mut copied = 0;
    let result = (|| {
        for i in 0..t.lines.len() {
            let Some(bytes) = t.line_text(i) else {
                continue;
            };
            let text = String::from_utf8_lossy(bytes);
            let line = match RawEntry::parse(&text) {
                Ok(mut raw) if raw.get("sessionId").is_some() => {
                    raw.set("sessionId", new_id)
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                    raw.to_line()
                }
                // Lines without a session id (summaries, snapshots) are copied as they are.
                _ => text.into_owned(),
            };
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
            copied += 1;
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        // A hard link is the atomic "create if absent" for a finished file.
        fs::hard_link(&tmp, dest)
    })();
    let _ = fs::remove_file(&tmp);
    match result {
        Ok(()) => Ok(copied),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(ResumeError::Exists {
            path: dest.to_path_buf(),
        }),
        Err(e) => Err(ResumeError::Io {
            path: dest.to_path_buf(),
            source: e,
        }),
    }
}

/// Creates `dir` and its missing parents, private (0700) like every folder strata makes
/// for a session: they hold copies of the user's files and tool outputs.
fn mkdirs(dir: Option<&Path>) -> Result<(), ResumeError> {
    let Some(d) = dir else {
        return Ok(());
    };
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(d).map_err(|source| ResumeError::Io {
        path: d.to_path_buf(),
        source,
    })
}

/// Hard-links (or copies) every file of `from` into `to`; returns how many.
fn link_all(from: &Path, to: &Path) -> Result<usize, ResumeError> {
    let Ok(rd) = fs::read_dir(from) else {
        return Ok(0);
    };
    let mut n = 0;
    for e in rd.filter_map(Result::ok) {
        let src = e.path();
        if !src.is_file() {
            continue;
        }
        mkdirs(Some(to))?;
        let dst = to.join(e.file_name());
        if dst.exists() {
            continue;
        }
        if fs::hard_link(&src, &dst).is_err() {
            // Another filesystem, or links not supported: a copy keeps the fork whole.
            copy_file(&src, &dst)?;
        }
        n += 1;
    }
    Ok(n)
}

fn copy_file(src: &Path, dst: &Path) -> Result<(), ResumeError> {
    let mut input = File::open(src).map_err(|source| ResumeError::Io {
        path: src.to_path_buf(),
        source,
    })?;
    let mut output = File::create_new(dst).map_err(|source| ResumeError::Io {
        path: dst.to_path_buf(),
        source,
    })?;
    std::io::copy(&mut input, &mut output).map_err(|source| ResumeError::Io {
        path: dst.to_path_buf(),
        source,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a transcript named `...jsonl` (stem `..`) made the fork link every file
    /// of the folder above its side folders into the new session's history.
    #[test]
    fn a_file_whose_name_is_not_a_plain_id_brings_no_side_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("cfg");
        let outside = tmp.path().join("a/b");
        fs::create_dir_all(&outside).unwrap();
        let source = outside.join("...jsonl");
        fs::write(
            &source,
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"x","message":{"role":"user","content":"hi"}}
"#,
        )
        .unwrap();
        // What `..` would have reached: `<a>/tool-results/…`.
        fs::create_dir_all(tmp.path().join("a/tool-results")).unwrap();
        fs::write(tmp.path().join("a/tool-results/secret.txt"), "x").unwrap();
        let new = SessionLayout {
            project_dir: config.join("projects/-p"),
            session_id: "new".into(),
            config_dir: config.clone(),
        };
        let outcome = fork_to(&source, &new).unwrap();
        assert_eq!(outcome.entries_copied, 1);
        assert_eq!(outcome.files_linked, 0);
        assert!(!new.tool_results_dir().exists());
        assert!(!is_plain_id("..") && !is_plain_id("") && is_plain_id("abc-1"));
    }

    /// The fork's folders are private like the original's (they hold backups of the
    /// user's files).
    #[test]
    #[cfg(unix)]
    fn fork_folders_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("file-history/new");
        mkdirs(Some(&dir)).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
