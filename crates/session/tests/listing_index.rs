//! Session listing: what it shows, and its index (unchanged transcripts are not read
//! again, appended ones are read from where the summary stopped, rewritten ones in full).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use strata_session::listing::{self, SessionSummary};

/// A file of the reference agent's corpus (`STRATA_CORPUS_DIR`); every test that reads it
/// starts with `require_corpus!()`, which skips the test on a fresh clone.
fn corpus(file: &str) -> PathBuf {
    strata_testkit::corpus::claude_code()
        .expect("checked by require_corpus!() first")
        .join(file)
}

struct Setup {
    _tmp: tempfile::TempDir,
    cfg: PathBuf,
    root: PathBuf,
    dir: PathBuf,
}

fn setup(files: &[&str]) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cfg");
    let root = PathBuf::from("/srv/some-project");
    let dir = strata_config::paths::project_sessions_dir(&cfg, &root);
    fs::create_dir_all(&dir).unwrap();
    for (age, f) in files.iter().enumerate() {
        let dst = dir.join(Path::new(f).file_name().unwrap());
        fs::copy(corpus(f), &dst).unwrap();
        let file = fs::File::options().append(true).open(&dst).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(100 * age as u64 + 100))
            .unwrap();
    }
    Setup {
        _tmp: tmp,
        cfg,
        root,
        dir,
    }
}

fn list(s: &Setup) -> Vec<SessionSummary> {
    let l = listing::list_project(&s.cfg, &s.root).unwrap();
    assert!(l.unreadable.is_empty(), "{:?}", l.unreadable);
    l.sessions
}

#[test]
fn sp2_listing_shows_title_prompt_counts_and_times_newest_first() {
    strata_testkit::require_corpus!();
    let s = setup(&[
        "spotter/short.jsonl",
        "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        "codemie/session-196820da.jsonl",
    ]);
    fs::copy(
        corpus("codemie/claude/-tmp-private/agent-36541525.jsonl"),
        s.dir.join("agent-36541525.jsonl"),
    )
    .unwrap();
    let sessions = list(&s);
    let ids: Vec<&str> = sessions.iter().map(|x| x.session_id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "short",
            "4d5611e5-241a-462a-8d15-5122611a9569",
            "session-196820da"
        ],
        "sub-agent files are not sessions"
    );
    let short = &sessions[0];
    assert_eq!(
        short.first_prompt.as_deref(),
        Some("mix phx.server doesnt seem to start")
    );
    assert_eq!(short.message_count, 9);
    assert_eq!(
        short.created_at.as_deref(),
        Some("2026-02-10T21:11:52.438Z")
    );
    assert_eq!(
        short.updated_at.as_deref(),
        Some("2026-02-10T21:16:12.381Z")
    );
    assert_eq!(short.project(), "/home/marco/projects/spotter");
    // A session that starts with /clear and command output shows its first typed prompt.
    let codemie = &sessions[2];
    assert!(
        codemie
            .first_prompt
            .as_deref()
            .is_some_and(|p| !p.starts_with('<')),
        "{:?}",
        codemie.first_prompt
    );
}

#[test]
fn sp2_titles_custom_over_ai_and_last_wins() {
    strata_testkit::require_corpus!();
    let s = setup(&["spotter/short.jsonl"]);
    let p = s.dir.join("short.jsonl");
    let mut text = fs::read_to_string(&p).unwrap();
    text.push_str("{\"type\":\"ai-title\",\"aiTitle\":\"generated\",\"sessionId\":\"x\"}\n");
    fs::write(&p, &text).unwrap();
    assert_eq!(list(&s)[0].title.as_deref(), Some("generated"));
    text.push_str("{\"type\":\"custom-title\",\"customTitle\":\"mine\",\"sessionId\":\"x\"}\n");
    text.push_str("{\"type\":\"ai-title\",\"aiTitle\":\"later ai\",\"sessionId\":\"x\"}\n");
    fs::write(&p, &text).unwrap();
    assert_eq!(list(&s)[0].title.as_deref(), Some("mine"));
}

#[test]
fn sp2_an_unchanged_transcript_is_served_from_the_index_without_reading_it() {
    strata_testkit::require_corpus!();
    let s = setup(&["spotter/short.jsonl"]);
    let first = list(&s);
    let index = s.dir.join(".strata-sessions-index.json");
    assert!(index.is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&index).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode, 0o600,
            "the index holds first prompts: private like transcripts"
        );
    }
    // Same size and modification time, different bytes: only the index can explain the
    // same answer.
    let p = s.dir.join("short.jsonl");
    let meta = fs::metadata(&p).unwrap();
    fs::write(&p, vec![b'x'; meta.len() as usize]).unwrap();
    fs::File::options()
        .append(true)
        .open(&p)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    assert_eq!(list(&s), first);
}

#[test]
fn sp2_an_appended_transcript_is_read_from_where_the_index_stopped() {
    strata_testkit::require_corpus!();
    let s = setup(&["spotter/short.jsonl"]);
    let p = s.dir.join("short.jsonl");
    let full = fs::read(&p).unwrap();
    // Start with half the file (cut mid-line, as a writer in progress leaves it).
    fs::write(&p, &full[..full.len() / 2]).unwrap();
    let half = list(&s);
    assert!(half[0].message_count < 9);
    fs::write(&p, &full).unwrap();
    let grown = list(&s);
    fs::remove_file(s.dir.join(".strata-sessions-index.json")).unwrap();
    let fresh = list(&s);
    assert_eq!(grown, fresh);
    assert_eq!(grown[0].message_count, 9);
}

#[test]
fn sp2_a_rewritten_transcript_or_a_broken_index_is_read_again() {
    strata_testkit::require_corpus!();
    let s = setup(&["spotter/short.jsonl"]);
    list(&s);
    let p = s.dir.join("short.jsonl");
    fs::copy(corpus("spotter/tool_heavy.jsonl"), &p).unwrap();
    assert_eq!(
        list(&s)[0].first_prompt.as_deref(),
        Some("start phoenix in background")
    );
    fs::write(s.dir.join(".strata-sessions-index.json"), "{ not json").unwrap();
    assert_eq!(list(&s)[0].message_count, 22);
}

#[test]
fn sp2_all_projects_lists_every_project_folder() {
    strata_testkit::require_corpus!();
    let s = setup(&["spotter/short.jsonl"]);
    let other = s.cfg.join("projects/-another");
    fs::create_dir_all(&other).unwrap();
    fs::copy(
        corpus("spotter/tool_heavy.jsonl"),
        other.join("tool_heavy.jsonl"),
    )
    .unwrap();
    let all = listing::list_all(&s.cfg).unwrap();
    assert_eq!(all.sessions.len(), 2);
    assert_eq!(
        listing::list_project(&s.cfg, &s.root)
            .unwrap()
            .sessions
            .len(),
        1
    );
    assert!(
        listing::list_project(&s.cfg, Path::new("/nowhere"))
            .unwrap()
            .sessions
            .is_empty()
    );
}
