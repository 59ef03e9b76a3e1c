//! Listing sessions fast (`strata sessions list`, the resume picker).
//!
//! The reference agent parses every transcript in full each time it lists them, which
//! takes minutes for a large history. A listing needs little of each transcript: the
//! title (metadata lines), the first prompt (near the top), the first and last entry
//! times, and a count of messages. Two things make it fast:
//!
//! - **Reading little.** Each line is classified from its first keys only
//!   (`reader::line::scan_head`): the reference writer (and strata's) puts
//!   `type` before the bulk of every line except assistant lines, whose `message` comes
//!   first. Only the few lines that carry what the listing shows are scanned further.
//! - **Reading once.** Transcripts are append-only, so each project folder keeps an index
//!   (`.strata-sessions-index.json`, beside the transcripts; the reference agent ignores
//!   it) with every transcript's summary, its size, modification time and a fingerprint
//!   of its first bytes. An unchanged transcript is not opened at all; one that grew is
//!   read from where the summary stopped; one that was rewritten is read again. The
//!   index is only a cache: a missing or unreadable one is rebuilt, and it is replaced
//!   atomically so concurrent listings never see half of it.
//!
//! `messageCount` counts the `user` and `assistant` lines of the main conversation
//! (sidechain lines excluded, dead branches included); `sessions show` counts the live
//! conversation only.

mod index;
mod summary;

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use strata_config::paths;

pub use summary::FIRST_PROMPT_MAX_CHARS;

use index::{Index, IndexEntry};
use summary::{FINGERPRINT_BYTES, ScanState, fingerprint};

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
    /// The git branch the session started on, when its transcript names one.
    pub git_branch: Option<String>,
    /// The custom title, else the AI title.
    pub title: Option<String>,
    /// The first prompt the user typed (commands and meta messages skipped), shortened to
    /// [`FIRST_PROMPT_MAX_CHARS`].
    pub first_prompt: Option<String>,
    /// `user` and `assistant` lines of the main conversation.
    pub message_count: usize,
    /// Lines that could not be read as records, skipped (not counted as messages).
    pub skipped_lines: usize,
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

/// What a listing shows as a session's title — its custom title, else its AI title, else
/// its first prompt (else the slash command it started with) — read from transcript
/// lines as they come. The remote session metadata carries it (issue 17), so every place
/// that names a session names it as `strata sessions list` does.
#[derive(Debug, Clone, Default)]
pub struct TitleScan(ScanState);

impl TitleScan {
    /// Reads the complete lines of `bytes` (a last line without its newline is left out).
    pub fn feed(&mut self, bytes: &[u8]) {
        self.0.feed(bytes);
    }

    /// Reads one transcript line (without its newline).
    pub fn feed_line(&mut self, line: &str) {
        self.0.feed_lines(line.as_bytes());
    }

    /// The title the listing shows, `None` while the lines read name none.
    pub fn title(&self) -> Option<String> {
        let s = &self.0;
        s.custom_title
            .clone()
            .or_else(|| s.ai_title.clone())
            .or_else(|| s.first_prompt.clone())
            .or_else(|| s.command.clone())
    }

    /// The scan of these lines followed by `later`'s: a title set later wins, the first
    /// prompt stays the earliest.
    pub fn then(&self, later: &TitleScan) -> TitleScan {
        let (a, b) = (&self.0, &later.0);
        TitleScan(ScanState {
            custom_title: b.custom_title.clone().or_else(|| a.custom_title.clone()),
            ai_title: b.ai_title.clone().or_else(|| a.ai_title.clone()),
            first_prompt: a.first_prompt.clone().or_else(|| b.first_prompt.clone()),
            command: a.command.clone().or_else(|| b.command.clone()),
            ..ScanState::default()
        })
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
    let mut listing = list_folder(&paths::project_sessions_dir(config_dir, project_root))?;
    sort(&mut listing);
    Ok(listing)
}

/// The sessions of every project, newest first.
pub fn list_all(config_dir: &Path) -> Result<Listing, ListError> {
    let root = paths::projects_dir(config_dir);
    let mut listing = Listing::default();
    for dir in read_dir(&root)? {
        if dir.is_dir() {
            add_folder(&mut listing, list_folder(&dir));
        }
    }
    sort(&mut listing);
    Ok(listing)
}

/// Adds one project's listing to `listing`. A folder that cannot be read (its
/// permissions) is reported like an unreadable transcript: it does not hide every other
/// project.
fn add_folder(listing: &mut Listing, folder: Result<Listing, ListError>) {
    match folder {
        Ok(l) => {
            listing.sessions.extend(l.sessions);
            listing.unreadable.extend(l.unreadable);
        }
        Err(ListError::Io { path, source }) => {
            listing.unreadable.push((path, source.to_string()));
        }
    }
}

fn sort(listing: &mut Listing) {
    listing.sessions.sort_by(|x, y| {
        y.modified
            .cmp(&x.modified)
            .then_with(|| y.session_id.cmp(&x.session_id))
    });
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

/// A transcript found in a folder, with what `stat` says about it.
struct Found {
    name: String,
    path: PathBuf,
    size: u64,
    modified: SystemTime,
}

/// Lists one project folder, using and refreshing its index.
fn list_folder(dir: &Path) -> Result<Listing, ListError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Listing::default()),
        Err(source) => {
            return Err(ListError::Io {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut found = Vec::new();
    for e in rd.filter_map(Result::ok) {
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        if !name.ends_with(".jsonl") || name.starts_with("agent-") {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        found.push(Found {
            path: e.path(),
            name,
            size: meta.len(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        });
    }
    let old = Index::load(dir);
    // Unchanged transcripts come straight from the index; the rest are read, on two
    // threads when there are many.
    let (fresh, stale): (Vec<&Found>, Vec<&Found>) = found.iter().partition(|f| {
        old.get(&f.name)
            .is_some_and(|e| e.size == f.size && e.modified_ns == nanos(f.modified))
    });
    let refresh = |files: &[&Found]| -> Vec<Result<IndexEntry, String>> {
        let mut buf = Vec::new();
        files
            .iter()
            .map(|f| refresh_entry(f, old.get(&f.name), &mut buf).map_err(|e| e.to_string()))
            .collect()
    };
    let refreshed: Vec<Result<IndexEntry, String>> = if stale.len() >= 16 {
        let half = stale.len() / 2;
        let (a, b) = std::thread::scope(|s| {
            let second = s.spawn(|| refresh(&stale[half..]));
            let first = refresh(&stale[..half]);
            // A panic while summarising is a bug; surface it.
            #[allow(clippy::expect_used)]
            (first, second.join().expect("listing thread panicked"))
        });
        a.into_iter().chain(b).collect()
    } else {
        refresh(&stale)
    };

    let mut listing = Listing::default();
    let mut new_index = Index::default();
    for f in fresh {
        if let Some(e) = old.get(&f.name) {
            listing.sessions.push(summary_of(dir, f, e.shown()));
            new_index.insert(f.name.clone(), e.clone());
        }
    }
    for (f, r) in stale.iter().zip(refreshed) {
        match r {
            Ok(e) => {
                listing.sessions.push(summary_of(dir, f, e.shown()));
                new_index.insert(f.name.clone(), e);
            }
            Err(why) => listing.unreadable.push((f.path.clone(), why)),
        }
    }
    if new_index != old {
        // A cache that cannot be written only costs the next listing some time.
        if let Err(e) = new_index.store(dir) {
            tracing::debug!("cannot write the session index in {}: {e}", dir.display());
        }
    }
    Ok(listing)
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn summary_of(dir: &Path, f: &Found, s: &ScanState) -> SessionSummary {
    SessionSummary {
        session_id: f.name.trim_end_matches(".jsonl").to_owned(),
        path: f.path.clone(),
        project_folder: dir.to_path_buf(),
        cwd: s.cwd.clone(),
        git_branch: s.git_branch.clone(),
        title: s.custom_title.clone().or_else(|| s.ai_title.clone()),
        first_prompt: s.first_prompt.clone().or_else(|| s.command.clone()),
        message_count: s.message_count,
        skipped_lines: s.skipped_lines,
        created_at: s.created_at.clone(),
        updated_at: s.updated_at.clone(),
        modified: f.modified,
    }
}

/// Brings a transcript's summary up to date: reads only what was appended since `old`
/// when the file still starts the same, else the whole file.
fn refresh_entry(
    f: &Found,
    old: Option<&IndexEntry>,
    buf: &mut Vec<u8>,
) -> std::io::Result<IndexEntry> {
    let mut file = std::fs::File::open(&f.path)?;
    let mut head = vec![0u8; FINGERPRINT_BYTES.min(usize::try_from(f.size).unwrap_or(0))];
    file.read_exact(&mut head)?;
    let print = fingerprint(&head);
    let mut state = match old {
        Some(e)
            if e.state.fingerprint == print
                && e.state.scanned <= f.size
                && e.state.scanned >= head.len() as u64 =>
        {
            e.state.clone()
        }
        _ => ScanState {
            fingerprint: print,
            ..ScanState::default()
        },
    };
    file.seek(SeekFrom::Start(state.scanned))?;
    buf.clear();
    file.read_to_end(buf)?;
    state.feed(buf);
    let tail = &buf[memchr::memrchr(b'\n', buf).map_or(0, |k| k + 1)..];
    Ok(IndexEntry {
        size: f.size,
        modified_ns: nanos(f.modified),
        with_tail: state.with_tail(tail),
        state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(text: &str) -> String {
        format!(
            r#"{{"parentUuid":null,"isSidechain":false,"cwd":"/w/p","sessionId":"s1","type":"user","message":{{"role":"user","content":"{text}"}},"uuid":"u-{text}","timestamp":"2026-01-01T00:00:00.000Z"}}"#
        )
    }

    #[test]
    fn i17_the_title_is_the_listing_s_custom_then_ai_title_then_first_prompt() {
        let mut scan = TitleScan::default();
        assert_eq!(scan.title(), None);
        scan.feed_line(&prompt("fix the parser"));
        scan.feed_line(&prompt("and the tests"));
        assert_eq!(scan.title().as_deref(), Some("fix the parser"));
        scan.feed_line(r#"{"type":"ai-title","aiTitle":"Parser fix","sessionId":"s1"}"#);
        assert_eq!(scan.title().as_deref(), Some("Parser fix"));
        scan.feed_line(r#"{"type":"custom-title","customTitle":"mine","sessionId":"s1"}"#);
        scan.feed_line(r#"{"type":"ai-title","aiTitle":"later","sessionId":"s1"}"#);
        assert_eq!(scan.title().as_deref(), Some("mine"));

        // Earlier lines followed by later ones: the later title, the earlier prompt.
        let mut earlier = TitleScan::default();
        earlier.feed(format!("{}\n", prompt("first")).as_bytes());
        let mut later = TitleScan::default();
        later.feed_line(&prompt("second"));
        assert_eq!(earlier.then(&later).title().as_deref(), Some("first"));
        later.feed_line(r#"{"type":"custom-title","customTitle":"renamed","sessionId":"s1"}"#);
        assert_eq!(earlier.then(&later).title().as_deref(), Some("renamed"));
    }

    /// Regression: `sessions list --all-projects` failed as a whole, listing nothing,
    /// when one project's folder could not be read.
    #[test]
    fn regression_an_unreadable_project_folder_is_reported_not_fatal() {
        let mut listing = Listing::default();
        listing
            .unreadable
            .push((PathBuf::from("/cfg/projects/-a/x.jsonl"), "torn".into()));
        add_folder(
            &mut listing,
            Err(ListError::Io {
                path: PathBuf::from("/cfg/projects/-locked"),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            }),
        );
        add_folder(&mut listing, Ok(Listing::default()));
        assert_eq!(listing.unreadable.len(), 2);
        assert_eq!(
            listing.unreadable[1].0,
            PathBuf::from("/cfg/projects/-locked")
        );
        assert!(listing.unreadable[1].1.contains("ermission denied"));
    }
}
