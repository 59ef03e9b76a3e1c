#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use strata_session::listing::SessionSummary;

use super::*;

fn summary(i: usize, title: Option<&str>, prompt: &str) -> SessionSummary {
    SessionSummary {
        session_id: format!("s{i:05}"),
        path: PathBuf::from(format!("s{i}.jsonl")),
        project_folder: PathBuf::from("p"),
        cwd: None,
        git_branch: None,
        title: title.map(str::to_owned),
        first_prompt: Some(prompt.to_owned()),
        message_count: i,
        skipped_lines: 0,
        created_at: None,
        updated_at: None,
        modified: SystemTime::UNIX_EPOCH + Duration::from_secs(i as u64),
    }
}

#[test]
fn resume_picker_lists_newest_first_without_a_query() {
    let p = SessionPicker::new(vec![
        summary(1, None, "old"),
        summary(3, None, "new"),
        summary(2, None, "mid"),
    ]);
    let order: Vec<_> = p
        .matches()
        .iter()
        .map(|&(_, i)| p.list().items()[i].first_prompt.clone().unwrap())
        .collect();
    assert_eq!(order, ["new", "mid", "old"]);
}

#[test]
fn resume_picker_matches_titles_and_first_prompts() {
    let mut p = SessionPicker::new(vec![
        summary(1, Some("Refactor parser"), "hello"),
        summary(2, None, "fix the login bug"),
        summary(3, None, "unrelated"),
    ]);
    p.set_query("parser");
    assert_eq!(p.selected().unwrap().session_id, "s00001");
    p.set_query("login");
    assert_eq!(p.matches().len(), 1);
    assert_eq!(p.selected().unwrap().session_id, "s00002");
}

/// UI-resume: instant on 3,000 sessions. Prints the measured time per keystroke.
#[test]
fn resume_picker_is_instant_on_3000_sessions() {
    let sessions: Vec<_> = (0..3000)
        .map(|i| {
            summary(
                i,
                (i % 3 == 0).then_some("Session about the cache layer"),
                &format!("prompt number {i} about tests"),
            )
        })
        .collect();
    let t = std::time::Instant::now();
    let mut p = SessionPicker::new(sessions);
    let build = t.elapsed();
    let t = std::time::Instant::now();
    for q in ["c", "ca", "cac", "cache", "cache l", "number 29"] {
        p.set_query(q);
    }
    let per_key = t.elapsed() / 6;
    assert!(p.matches().len() > 1);
    assert_eq!(p.list().items().len(), 3000);
    println!("3000 sessions: build {build:?}, per keystroke {per_key:?}");
    assert!(per_key < Duration::from_millis(100), "{per_key:?}");
}

#[test]
fn path_completion_respects_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
    std::fs::write(dir.path().join("target/main.rs"), "").unwrap();
    std::fs::write(dir.path().join("debug.log"), "").unwrap();
    let mut c = PathCompleter::new(dir.path());
    let got = c.complete("main");
    assert_eq!(got, ["src/main.rs"]);
    assert!(c.complete("log").is_empty());
    assert!(!c.truncated());
}

#[test]
fn at_token_finds_the_word_before_the_cursor() {
    assert_eq!(at_token("look at @src/ma", 15), Some((8, "src/ma")));
    assert_eq!(at_token("mail@example", 12), None);
    assert_eq!(at_token("@", 1), Some((0, "")));
}

#[test]
fn i25_6_resume_rows_say_how_old_each_session_is_its_messages_and_its_branch() {
    let now = SystemTime::now();
    let mut recent = summary(12, Some("Fix the parser"), "fix it");
    recent.modified = now - Duration::from_secs(3 * 60 + 5);
    recent.git_branch = Some("feature/parser".into());
    let mut old = summary(1, None, "an old one");
    old.modified = now - Duration::from_secs(2 * 86_400 + 60);
    let p = SessionPicker::new(vec![old, recent]);
    let rows: Vec<String> = p
        .render(100, 10, false)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].starts_with("❯ Fix the parser"), "{rows:?}");
    assert!(
        rows[0].ends_with("3 minutes ago · 12 messages · feature/parser"),
        "{rows:?}"
    );
    assert!(rows[1].ends_with("2 days ago · 1 message"), "{rows:?}");
}

#[test]
fn i25_6_ages_read_as_words() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let ago = |secs: u64| session::age(now - Duration::from_secs(secs), now);
    assert_eq!(ago(5), "just now");
    assert_eq!(ago(60), "1 minute ago");
    assert_eq!(ago(3 * 3_600 + 10), "3 hours ago");
    assert_eq!(ago(86_400), "1 day ago");
    assert_eq!(ago(65 * 86_400), "2 months ago");
    assert_eq!(ago(800 * 86_400), "2 years ago");
    // A transcript written "in the future" (a clock set back) is not a negative age.
    assert_eq!(session::age(now + Duration::from_secs(90), now), "just now");
}
