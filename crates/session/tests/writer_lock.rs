//! Two strata processes never append to the same transcript (issue 5 part 2): the
//! second writer gets a clear error naming the file and the process holding it.
//!
//! The "other process" is this test binary run again with an environment variable that
//! turns [`lock_holder_child`] into a program that holds a writer until its stdin closes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use serde_json::json;
use strata_session::writer::{TranscriptWriter, WriterError};

const CHILD_ENV: &str = "STRATA_TEST_LOCK_HOLDER";

/// Not a test on its own: the body of the child process (does nothing unless spawned by
/// the tests below).
#[test]
fn lock_holder_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let w = TranscriptWriter::open(&path).unwrap();
    w.append(&json!({"type": "user", "from": "child"})).unwrap();
    w.sync().unwrap();
    println!("holding {}", std::process::id());
    let mut rest = Vec::new();
    std::io::stdin().read_to_end(&mut rest).unwrap();
    w.close().unwrap();
}

/// Spawns a holder; returns it, its pid, and its stdout (kept open so the child can
/// still print when it finishes).
#[allow(clippy::zombie_processes)] // the caller waits for (or kills) the child it gets back
fn spawn_holder(
    path: &std::path::Path,
) -> (
    std::process::Child,
    u32,
    BufReader<std::process::ChildStdout>,
) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lock_holder_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            let status = child.wait().unwrap();
            panic!("the child stopped before holding the lock: {status}");
        }
        // libtest prints `test lock_holder_child ... ` before the child's first line.
        if let Some((_, pid)) = line.trim().split_once("holding ") {
            return (child, pid.parse().unwrap(), out);
        }
    }
}

#[test]
fn sp5_second_process_gets_a_lock_error_naming_file_and_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("session.jsonl");
    std::fs::write(&path, "{\"type\":\"user\"}\n").unwrap();
    let (mut child, pid, _out) = spawn_holder(&path);
    assert_eq!(pid, child.id());

    let err = TranscriptWriter::open(&path).expect_err("the transcript is held by the child");
    match &err {
        WriterError::Locked { path: p, holder } => {
            assert_eq!(p, &path);
            assert_eq!(*holder, Some(pid), "on Linux the holder is named");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("session.jsonl") && text.contains(&format!("process {pid}")),
        "{text}"
    );

    // Once the holder exits, the transcript can be written again, and nothing was lost.
    child.stdin.take().unwrap().write_all(b"").unwrap();
    assert!(child.wait().unwrap().success());
    let w = TranscriptWriter::open(&path).unwrap();
    w.append(&json!({"type": "user", "from": "parent"}))
        .unwrap();
    w.close().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn sp5_a_killed_holder_releases_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("session.jsonl");
    std::fs::write(&path, "").unwrap();
    let (mut child, _, _out) = spawn_holder(&path);
    assert!(matches!(
        TranscriptWriter::open(&path),
        Err(WriterError::Locked { .. })
    ));
    child.kill().unwrap(); // SIGKILL: no destructor runs, the kernel drops the lock
    child.wait().unwrap();
    reopen_after_release(&path);
}

#[test]
fn sp5_two_writers_in_one_process_are_refused_too() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("session.jsonl");
    std::fs::write(&path, "").unwrap();
    let first = TranscriptWriter::open(&path).unwrap();
    let err = TranscriptWriter::open(&path).unwrap_err();
    assert!(
        matches!(err, WriterError::Locked { holder: Some(pid), .. } if pid == std::process::id())
    );
    drop(first);
    reopen_after_release(&path);
}

/// Opens `path` once the lock is released. Regression (plain `cargo test`, tests as
/// threads of one process): a sibling test spawning its holder child forks while our
/// writer's file is open, and the child's copy of the descriptor (closed at its `exec`,
/// the descriptor is close-on-exec) keeps the `flock` for a moment after our writer
/// dropped it. The lock is ours to take again as soon as that copy is gone.
fn reopen_after_release(path: &std::path::Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match TranscriptWriter::open(path) {
            Ok(w) => return w.close().unwrap(),
            Err(WriterError::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::yield_now();
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn sp5_lazily_created_file_is_locked_against_a_late_second_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("session.jsonl");
    let first = TranscriptWriter::open(&path).unwrap();
    let second = TranscriptWriter::open(&path).unwrap(); // no file yet: nothing to lock
    first.append(&json!({"type": "user", "n": 1})).unwrap();
    first.sync().unwrap();
    second.append(&json!({"type": "user", "n": 2})).ok();
    let err = second
        .sync()
        .expect_err("the second writer must not append to a held file");
    assert!(matches!(err, WriterError::Locked { .. }), "{err:?}");
    drop(second); // its record was never acknowledged, and it never reaches the file
    first.close().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
}

/// Regression (issue 25 item 10, "a session cannot always be reopened right after it
/// closed"): a clone of the writer still held by work winding down — a cancelled
/// background task about to record its last line — kept the transcript locked after
/// the session closed, and reopening it at once failed with `Locked { holder: None }`.
/// `shutdown` releases the file whatever other handle lives.
#[test]
fn regression_reopen_right_after_shutdown_while_a_clone_lives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let writer = TranscriptWriter::open(&path).unwrap();
    writer.append(&json!({"type": "user", "n": 1})).unwrap();
    let straggler = writer.clone();
    writer.shutdown().unwrap();

    let again = TranscriptWriter::open(&path).expect("the closed transcript reopens at once");
    again.append(&json!({"type": "user", "n": 2})).unwrap();
    // The straggler's line is refused, never written after the new writer's lines.
    assert!(matches!(
        straggler.append(&json!({"type": "user", "n": 3})),
        Err(WriterError::Stopped { .. })
    ));
    drop(straggler);
    again.close().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let ns: Vec<i64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["n"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ns, [1, 2], "{text}");
}
