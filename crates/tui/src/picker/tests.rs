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
