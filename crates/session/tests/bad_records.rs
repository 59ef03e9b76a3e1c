//! One bad record among good ones (issue 16, "bad transcripts, clear words"): a raw
//! control character, invalid UTF-8, garbage. Each is counted and skipped with its own
//! line number by the reader, resume and the listing alike; a file with no transcript
//! line at all cannot be resumed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use strata_session::listing;
use strata_session::resume::{LoadedSession, ResumeError};

fn user(uuid: &str, parent: Option<&str>, text: &str) -> Vec<u8> {
    format!(
        r#"{{"parentUuid":{},"isSidechain":false,"userType":"external","cwd":"/w/p","sessionId":"s1","version":"2.1.39","gitBranch":"main","type":"user","message":{{"role":"user","content":"{text}"}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:00.000Z"}}"#,
        parent.map_or("null".to_owned(), |p| format!("\"{p}\"")),
    )
    .into_bytes()
}

fn assistant(uuid: &str, parent: &str, text: &str) -> Vec<u8> {
    format!(
        r#"{{"parentUuid":"{parent}","isSidechain":false,"userType":"external","cwd":"/w/p","sessionId":"s1","version":"2.1.39","gitBranch":"main","message":{{"model":"claude-sonnet-4-5-20250929","id":"msg_{uuid}","type":"message","role":"assistant","content":[{{"type":"text","text":"{text}"}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}}}},"type":"assistant","uuid":"{uuid}","timestamp":"2026-01-01T00:00:01.000Z"}}"#
    )
    .into_bytes()
}

fn write(dir: &Path, name: &str, lines: &[Vec<u8>]) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    let mut bytes = Vec::new();
    for l in lines {
        bytes.extend_from_slice(l);
        bytes.push(b'\n');
    }
    fs::write(&path, bytes).unwrap();
    path
}

/// Four lines; line 3 is `bad` (a user line answering line 2), line 4 continues from it.
fn with_bad_third_line(bad: Vec<u8>) -> Vec<Vec<u8>> {
    vec![
        user("u1", None, "first"),
        assistant("a1", "u1", "one"),
        bad,
        assistant("a2", "u2", "two"),
    ]
}

#[test]
fn a_raw_control_character_in_one_record_skips_that_line_with_its_number() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = user("u2", Some("a1"), "bad");
    let at = bad.windows(3).position(|w| w == b"bad").unwrap() + 1;
    bad.insert(at, 0x01);
    let path = write(tmp.path(), "s1.jsonl", &with_bad_third_line(bad));
    let s = LoadedSession::load(&path).unwrap();
    let m = s.malformed();
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0].line, 3, "the file's line, not serde's line 1");
    assert_eq!(m[0].column as usize, at + 1);
    assert!(m[0].reason.contains("control character"), "{}", m[0].reason);
    // Every entry left can be read back as JSON (nothing fails later on it).
    for e in s.live_entries().unwrap() {
        serde_json::from_str::<serde_json::Value>(&e.json).unwrap();
    }
    assert_eq!(s.message_count(), 3, "the other three lines are kept");
    assert!(s.check_resumable().is_ok());
    let warning = s.skipped_lines_warning().unwrap();
    assert!(
        warning.contains("1 unreadable line") && warning.contains("line 3"),
        "{warning}"
    );
}

#[test]
fn invalid_utf8_in_one_record_skips_that_line_with_its_number() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = user("u2", Some("a1"), "bad");
    let at = bad.windows(3).position(|w| w == b"bad").unwrap();
    bad[at] = 0xff;
    let path = write(tmp.path(), "s1.jsonl", &with_bad_third_line(bad));
    let s = LoadedSession::load(&path).unwrap();
    let m = s.malformed();
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!((m[0].line, m[0].column as usize), (3, at + 1));
    assert!(m[0].reason.contains("UTF-8"), "{}", m[0].reason);
}

#[test]
fn a_raw_tab_between_tokens_is_still_valid_json() {
    let tmp = tempfile::tempdir().unwrap();
    let mut line = user("u1", None, "hi");
    line.splice(1..1, *b"\t");
    let path = write(tmp.path(), "s1.jsonl", &[line]);
    let s = LoadedSession::load(&path).unwrap();
    assert!(s.malformed().is_empty(), "{:?}", s.malformed());
    assert_eq!(s.message_count(), 1);
}

#[test]
fn a_file_with_no_transcript_line_cannot_be_resumed_and_the_error_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let passwd = write(
        tmp.path(),
        "passwd",
        &[
            b"root:x:0:0:root:/root:/bin/bash".to_vec(),
            b"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin".to_vec(),
        ],
    );
    let empty = write(tmp.path(), "empty.jsonl", &[]);
    let objects = write(tmp.path(), "objects.jsonl", &[br#"{"name":"x"}"#.to_vec()]);
    for (path, detail) in [
        (
            &passwd,
            "2 unreadable line(s), the first at line 1 column 1",
        ),
        (&empty, "the file is empty"),
        (&objects, "without a transcript entry's type"),
    ] {
        let s = LoadedSession::load(path).unwrap();
        let err = s.check_resumable().expect_err("not a transcript");
        assert!(matches!(err, ResumeError::NotATranscript { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains(&path.display().to_string()) && text.contains(detail),
            "{text}"
        );
    }
}

#[test]
fn listing_skips_and_counts_a_bad_record_as_resume_does() {
    let cfg = tempfile::tempdir().unwrap();
    let project = Path::new("/w/p");
    let dir = strata_config::paths::project_sessions_dir(cfg.path(), project);
    let mut bad = user("u2", Some("a1"), "bad");
    let at = bad.windows(3).position(|w| w == b"bad").unwrap();
    bad.insert(at, 0x1b);
    let mut lines = with_bad_third_line(bad);
    lines.push(b"not json at all".to_vec());
    let path = write(&dir, "s1.jsonl", &lines);
    let listed = listing::list_project(cfg.path(), project).unwrap();
    let s = &listed.sessions[0];
    let loaded = LoadedSession::load(&path).unwrap();
    assert_eq!(s.skipped_lines, 2);
    assert_eq!(s.skipped_lines, loaded.malformed().len());
    assert_eq!(s.message_count, 3, "the bad user line is not a message");
    // Listed again from the index: the same counts.
    let again = listing::list_project(cfg.path(), project).unwrap();
    assert_eq!(again.sessions[0], *s);
}

/// A line torn by a crash (the writer ends it with a newline on reopening, so it stays a
/// lone line) is not a message in the listing either.
#[test]
fn listing_skips_a_torn_message_line_as_resume_does() {
    let cfg = tempfile::tempdir().unwrap();
    let project = Path::new("/w/p");
    let dir = strata_config::paths::project_sessions_dir(cfg.path(), project);
    let whole = user("u2", Some("a1"), "second");
    let torn = whole[..whole.len() / 2].to_vec();
    let path = write(
        &dir,
        "s1.jsonl",
        &[
            user("u1", None, "first"),
            assistant("a1", "u1", "one"),
            torn,
            whole,
        ],
    );
    let listed = listing::list_project(cfg.path(), project).unwrap();
    let loaded = LoadedSession::load(&path).unwrap();
    assert_eq!(loaded.malformed().len(), 1);
    assert_eq!(loaded.malformed()[0].line, 3);
    assert_eq!(listed.sessions[0].skipped_lines, 1);
    assert_eq!(listed.sessions[0].message_count, 3);
    assert_eq!(loaded.message_count(), 3);
}
