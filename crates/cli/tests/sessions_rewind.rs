//! `strata sessions rewind <session-id> --to <user-message-uuid> [--dry-run]` through the
//! real binary (issue 5 parts 6 and 7): a session recorded with the real writer and file
//! history is rewound; errors are one line naming what is wrong, exit code 1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use strata_session::layout::SessionLayout;
use strata_session::writer::TranscriptWriter;

// The agent tests' driver of file history (the app state's domain plus the
// session layer's disk side, wired as the engine wires them), to record a session.
#[path = "../../agent/tests/file_history_support/mod.rs"]
mod file_history_driver;
use file_history_driver::HistoryDriver;

const SESSION: &str = "5e55a0e1-0000-4000-8000-000000000001";

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    cfg: PathBuf,
    proj: PathBuf,
}

impl Env {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("sessions")
            .arg("rewind")
            .args(args)
            .current_dir(&self.proj)
            .env("STRATA_CONFIG_DIR", &self.cfg)
            .env("HOME", &self.home)
            .output()
            .unwrap()
    }

    fn file(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.proj.join(name)).ok()
    }
}

fn line(kind: &str, uuid: &str, parent: Option<&str>, n: u32, cwd: &Path, message: Value) -> Value {
    json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": cwd.to_string_lossy(), "sessionId": SESSION, "version": "2.1.39",
        "gitBranch": "main", "type": kind, "message": message, "uuid": uuid,
        "timestamp": format!("2026-02-12T10:00:{n:02}.000Z"),
    })
}

fn prompt(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn tool_use(id: &str) -> Value {
    json!({"id": format!("msg_{id}"), "type": "message", "role": "assistant",
           "model": "claude-sonnet-4-5-20250929",
           "content": [{"type": "tool_use", "id": format!("toolu_{id}"), "name": "Edit", "input": {}}],
           "usage": {"input_tokens": 1, "output_tokens": 1}})
}

fn result(id: &str) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{id}"), "content": "ok"}]})
}

/// Two prompts: u1 edits `src/lib.rs` and creates `notes.md`; u2 edits `src/lib.rs` again.
fn recorded_session() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, cfg, proj) = (base.join("home"), base.join("cfg"), base.join("proj"));
    fs::create_dir_all(proj.join(".git")).unwrap();
    fs::create_dir_all(proj.join("src")).unwrap();
    fs::create_dir_all(&home).unwrap();
    let lib = proj.join("src/lib.rs");
    fs::write(&lib, "fn one() {}\nfn two() {}\n").unwrap();

    let layout = SessionLayout::new(&cfg, &proj, SESSION);
    let w = TranscriptWriter::for_session(&layout).unwrap();
    let mut fh = HistoryDriver::new(&layout, &proj);

    w.append(&fh.make_snapshot("u1").unwrap()).unwrap();
    w.append(&line("user", "u1", None, 1, &proj, prompt("add three")))
        .unwrap();
    w.append(&line(
        "assistant",
        "a1",
        Some("u1"),
        2,
        &proj,
        tool_use("1"),
    ))
    .unwrap();
    w.append(&fh.track_edit(&lib, "a1").unwrap().unwrap())
        .unwrap();
    fs::write(&lib, "fn one() {}\nfn two() {}\nfn three() {}\n").unwrap();
    w.append(&line("user", "r1", Some("a1"), 3, &proj, result("1")))
        .unwrap();
    w.append(&line(
        "assistant",
        "a2",
        Some("r1"),
        4,
        &proj,
        tool_use("2"),
    ))
    .unwrap();
    w.append(&fh.track_edit(Path::new("notes.md"), "a2").unwrap().unwrap())
        .unwrap();
    fs::write(proj.join("notes.md"), "todo\nmore\n").unwrap();
    w.append(&line("user", "r2", Some("a2"), 5, &proj, result("2")))
        .unwrap();
    w.turn_end().unwrap();

    w.append(&fh.make_snapshot("u2").unwrap()).unwrap();
    w.append(&line(
        "user",
        "u2",
        Some("r2"),
        6,
        &proj,
        prompt("rename two"),
    ))
    .unwrap();
    w.append(&line(
        "assistant",
        "a3",
        Some("u2"),
        7,
        &proj,
        tool_use("3"),
    ))
    .unwrap();
    fs::write(&lib, "fn one() {}\nfn deux() {}\nfn three() {}\n").unwrap();
    w.append(&line("user", "r3", Some("a3"), 8, &proj, result("3")))
        .unwrap();
    w.close().unwrap();
    Env {
        _tmp: tmp,
        home,
        cfg,
        proj,
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn dry_run_reports_files_and_line_counts_without_touching_files() {
    let env = recorded_session();
    let out = env.run(&[SESSION, "--to", "u1", "--dry-run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap(), @r"
    Dry run: rewinding session 5e55a0e1-0000-4000-8000-000000000001 to message u1 would change 2 files (+1 -4):
      delete    notes.md  +0 -2
      restore   src/lib.rs  +1 -2
    ");
    assert_eq!(
        env.file("src/lib.rs").unwrap(),
        "fn one() {}\nfn deux() {}\nfn three() {}\n"
    );
    assert!(env.file("notes.md").is_some());
}

#[test]
fn rewind_restores_files_and_deletes_those_that_did_not_exist() {
    let env = recorded_session();
    let out = env.run(&[SESSION, "--to", "u1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "Rewound 2 files of session {SESSION} to message u1 (+1 -4):"
        )),
        "{text}"
    );
    assert_eq!(
        env.file("src/lib.rs").unwrap(),
        "fn one() {}\nfn two() {}\n"
    );
    assert_eq!(env.file("notes.md"), None);

    // Forward again, to the second prompt: the files as they were when it was sent.
    let out = env.run(&[SESSION, "--to", "u2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        env.file("src/lib.rs").unwrap(),
        "fn one() {}\nfn two() {}\nfn three() {}\n"
    );
    assert_eq!(env.file("notes.md").unwrap(), "todo\nmore\n");

    let again = env.run(&[SESSION, "--to", "u2"]);
    assert!(
        String::from_utf8(again.stdout)
            .unwrap()
            .starts_with("Nothing to rewind")
    );
}

#[test]
fn the_transcript_path_works_as_well_as_the_id() {
    let env = recorded_session();
    let path = SessionLayout::new(&env.cfg, &env.proj, SESSION).transcript();
    let out = env.run(&[path.to_str().unwrap(), "--to", "u1", "--dry-run"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn unknown_session_id_is_one_line_naming_it_exit_1() {
    let env = recorded_session();
    let out = env.run(&["no-such-session", "--to", "u1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no-such-session"), "{err}");
}

#[test]
fn missing_transcript_file_is_one_line_naming_it_exit_1() {
    let env = recorded_session();
    let missing = env.proj.join("gone.jsonl");
    let out = env.run(&[missing.to_str().unwrap(), "--to", "u1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("gone.jsonl"), "{err}");
}

#[test]
fn unknown_message_is_one_line_naming_it_exit_1_and_nothing_changes() {
    let env = recorded_session();
    let out = env.run(&[SESSION, "--to", "a1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("a1") && err.contains(SESSION), "{err}");
    assert!(env.file("notes.md").is_some());
}

#[test]
fn a_session_open_in_a_running_process_is_not_rewound() {
    let env = recorded_session();
    let layout = SessionLayout::new(&env.cfg, &env.proj, SESSION);
    let writer = TranscriptWriter::for_session(&layout).unwrap(); // holds the lock
    let out = env.run(&[SESSION, "--to", "u1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("running strata process"),
        "{}",
        stderr(&out)
    );
    assert!(env.file("notes.md").is_some());
    drop(writer);
}
