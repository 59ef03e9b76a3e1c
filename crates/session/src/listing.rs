//! Listing sessions fast (`strata sessions list`, the resume picker).
//!
//! The reference agent parses every transcript in full to list them, which takes minutes
//! for large histories. A listing needs little: the title (metadata lines, small), the
//! first prompt (near the top), the timestamps of the first and last entries, and a
//! count of messages. So each file is read once and each line is classified from its
//! first keys only ([`scan_head`]): the reference writer (and strata's) puts `type`
//! before the bulk of every line except assistant lines, whose `message` comes first.
//! Only the few lines that carry what the listing shows are scanned further. Files are
//! summarised on two threads.
//!
//! `messageCount` counts the `user` and `assistant` lines of the main conversation
//! (sidechain lines excluded), dead branches included; `sessions show` counts the live
//! conversation only.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use strata_config::paths;
use strata_protocol::transcript::{Entry, MetadataEntry};

use crate::reader::line::{Head, flag, scan_head, scan_line};

/// Longest first prompt kept, in characters (pasted prompts can be huge).
pub const FIRST_PROMPT_MAX_CHARS: usize = 500;

/// One session in a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// The session id (the file name without `.jsonl`).
    pub session_id: String,
    /// The transcript.
    pub path: PathBuf,
    /// The folder under `projects/` the transcript is in.
    pub project_folder: PathBuf,
    /// The working directory the session recorded (the real project path).
    pub cwd: Option<String>,
    /// The custom title, else the AI title.
    pub title: Option<String>,
    /// The first prompt the user typed (commands and meta messages skipped), shortened to
    /// [`FIRST_PROMPT_MAX_CHARS`].
    pub first_prompt: Option<String>,
    /// `user` and `assistant` lines of the main conversation.
    pub message_count: usize,
    /// The first entry's timestamp.
    pub created_at: Option<String>,
    /// The last entry's timestamp.
    pub updated_at: Option<String>,
    /// The file's modification time (the listing's order, newest first).
    pub modified: SystemTime,
}

impl SessionSummary {
    /// The project the session belongs to: its recorded working directory, else the
    /// project folder.
    pub fn project(&self) -> String {
        self.cwd
            .clone()
            .unwrap_or_else(|| self.project_folder.display().to_string())
    }
}

/// A listing, with the files that could not be read.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Newest first.
    pub sessions: Vec<SessionSummary>,
    /// Transcripts that could not be read, with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// Errors listing sessions.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// A folder could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The sessions of the project rooted at `project_root`, newest first.
pub fn list_project(config_dir: &Path, project_root: &Path) -> Result<Listing, ListError> {
    let dir = paths::project_sessions_dir(config_dir, project_root);
    summarize_all(transcripts_in(&dir)?)
}

/// The sessions of every project, newest first.
pub fn list_all(config_dir: &Path) -> Result<Listing, ListError> {
    let root = paths::projects_dir(config_dir);
    let mut files = Vec::new();
    for dir in read_dir(&root)? {
        if dir.is_dir() {
            files.extend(transcripts_in(&dir)?);
        }
    }
    summarize_all(files)
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, ListError> {
    match std::fs::read_dir(dir) {
        Ok(rd) => Ok(rd.filter_map(Result::ok).map(|e| e.path()).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(ListError::Io {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// The session transcripts of a project folder (sub-agent files excluded).
fn transcripts_in(dir: &Path) -> Result<Vec<PathBuf>, ListError> {
    Ok(read_dir(dir)?
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".jsonl") && !n.starts_with("agent-"))
        })
        .collect())
}

fn summarize_all(files: Vec<PathBuf>) -> Result<Listing, ListError> {
    let half = files.len() / 2;
    let (mut a, b) = if files.len() >= 64 {
        std::thread::scope(|s| {
            let second = s.spawn(|| summarize_files(&files[half..]));
            let first = summarize_files(&files[..half]);
            // A panic while summarising is a bug; surface it.
            #[allow(clippy::expect_used)]
            (first, second.join().expect("listing thread panicked"))
        })
    } else {
        (summarize_files(&files), Vec::new())
    };
    a.extend(b);
    let mut listing = Listing::default();
    for r in a {
        match r {
            Ok(s) => listing.sessions.push(s),
            Err((p, e)) => listing.unreadable.push((p, e)),
        }
    }
    listing.sessions.sort_by(|x, y| {
        y.modified
            .cmp(&x.modified)
            .then_with(|| y.session_id.cmp(&x.session_id))
    });
    Ok(listing)
}

type Summarized = Result<SessionSummary, (PathBuf, String)>;

fn summarize_files(files: &[PathBuf]) -> Vec<Summarized> {
    let mut buf = Vec::new();
    files
        .iter()
        .map(|p| summarize(p, &mut buf).map_err(|e| (p.clone(), e.to_string())))
        .collect()
}

/// Summarises one transcript, reading it into `buf` (reused across files).
pub fn summarize(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<SessionSummary> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let meta = f.metadata()?;
    buf.clear();
    f.read_to_end(buf)?;
    let buf = &buf[..];
    let mut s = SessionSummary {
        session_id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.to_path_buf(),
        project_folder: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        cwd: None,
        title: None,
        first_prompt: None,
        message_count: 0,
        created_at: None,
        updated_at: None,
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
    };
    let (mut custom, mut ai, mut command) = (None, None, None);
    let mut last_line = None;
    for (start, end) in lines(buf) {
        last_line = Some((start, end));
        let (head, sidechain) = scan_head(buf, start, end);
        let ty = match head {
            Head::Type(t) => &buf[t.start..t.end],
            Head::MessageFirst => b"assistant",
            Head::Unknown => b"",
        };
        let wanted = match ty {
            b"user" | b"assistant" if !sidechain => {
                s.message_count += 1;
                (ty == b"user" && s.first_prompt.is_none())
                    || s.created_at.is_none()
                    || s.cwd.is_none()
            }
            b"custom-title" | b"ai-title" => {
                match std::str::from_utf8(&buf[start..end]).ok().map(Entry::parse) {
                    Some(Ok(Entry::Metadata(MetadataEntry::CustomTitle(e)))) => {
                        custom = Some(e.custom_title)
                    }
                    Some(Ok(Entry::Metadata(MetadataEntry::AiTitle(e)))) => ai = Some(e.ai_title),
                    _ => {}
                }
                false
            }
            _ => s.created_at.is_none() || s.cwd.is_none(),
        };
        if !wanted {
            continue;
        }
        let Ok(l) = scan_line(buf, start, end, 0) else {
            continue;
        };
        if s.created_at.is_none() {
            s.created_at = l.text_of(buf, l.timestamp).map(|t| t.into_owned());
        }
        if s.cwd.is_none() {
            s.cwd = l.text_of(buf, l.cwd).map(|t| t.into_owned());
        }
        if ty == b"user"
            && !sidechain
            && s.first_prompt.is_none()
            && !l.has(flag::META)
            && let Some(text) = l.text_of(buf, l.text)
        {
            match prompt_of(&text) {
                Prompt::Typed(p) => s.first_prompt = Some(p),
                Prompt::Command(c) if command.is_none() => command = Some(c),
                _ => {}
            }
        }
    }
    s.first_prompt = s.first_prompt.or(command);
    s.title = custom.or(ai);
    s.updated_at = last_timestamp(buf, last_line);
    Ok(s)
}

/// The timestamp of the last line that has one, searching backwards from the end.
fn last_timestamp(buf: &[u8], last: Option<(usize, usize)>) -> Option<String> {
    let (_, mut end) = last?;
    loop {
        let start = memchr::memrchr(b'\n', &buf[..end]).map_or(0, |k| k + 1);
        if let Ok(l) = scan_line(buf, start, end, 0)
            && let Some(t) = l.text_of(buf, l.timestamp)
        {
            return Some(t.into_owned());
        }
        if start == 0 {
            return None;
        }
        end = start - 1;
        if end > 0 && buf[end - 1] == b'\r' {
            end -= 1;
        }
    }
}

/// The non-blank lines of `buf` as `(start, end)`, without `\r\n`.
fn lines(buf: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        while start < buf.len() {
            let end = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |k| start + k);
            let s = start;
            start = end + 1;
            let e = if end > s && buf[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            if e > s {
                return Some((s, e));
            }
        }
        None
    })
}

enum Prompt {
    /// Text the user typed.
    Typed(String),
    /// A slash command (`/name args`), used when nothing was typed.
    Command(String),
    /// Not a prompt (command output, notifications, interruptions).
    Skip,
}

/// Classifies the text of a user line for the first-prompt column.
fn prompt_of(text: &str) -> Prompt {
    let t = text.trim();
    if t.is_empty() || t.starts_with("[Request interrupted") {
        return Prompt::Skip;
    }
    if t.starts_with('<') {
        return match between(t, "<command-name>", "</command-name>") {
            Some(name) => {
                let args = between(t, "<command-args>", "</command-args>")
                    .unwrap_or("")
                    .trim();
                Prompt::Command(shorten(&if args.is_empty() {
                    name.to_owned()
                } else {
                    format!("{name} {args}")
                }))
            }
            None => Prompt::Skip,
        };
    }
    Prompt::Typed(shorten(t))
}

fn between<'t>(t: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let from = t.find(open)? + open.len();
    let to = t[from..].find(close)? + from;
    Some(t[from..to].trim())
}

fn shorten(t: &str) -> String {
    match t.char_indices().nth(FIRST_PROMPT_MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &t[..cut]),
        None => t.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_skip_command_output_and_keep_commands_as_a_fallback() {
        assert!(matches!(prompt_of("  fix the bug "), Prompt::Typed(p) if p == "fix the bug"));
        assert!(matches!(
            prompt_of("<local-command-stdout>x</local-command-stdout>"),
            Prompt::Skip
        ));
        assert!(matches!(
            prompt_of("[Request interrupted by user]"),
            Prompt::Skip
        ));
        assert!(matches!(
            prompt_of("<command-name>/review</command-name>\n<command-message>review</command-message>\n<command-args>PR 12</command-args>"),
            Prompt::Command(c) if c == "/review PR 12"
        ));
        let long = "x".repeat(FIRST_PROMPT_MAX_CHARS + 10);
        assert!(
            matches!(prompt_of(&long), Prompt::Typed(p) if p.chars().count() == FIRST_PROMPT_MAX_CHARS + 1)
        );
    }
}
