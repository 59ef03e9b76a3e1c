//! The transcript writer's file handling (SP-1, SP-5; DESIGN.md "Sessions"): lazy
//! creation, permissions, the torn-tail repair, flushing, ordering, errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_session::layout::SessionLayout;
use strata_session::writer::{TranscriptWriter, WriterError};

fn user(n: u64) -> Value {
    json!({"parentUuid": null, "type": "user", "message": {"role": "user", "content": format!("prompt {n}")}, "uuid": format!("u{n}")})
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn sp1_metadata_only_session_leaves_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = SessionLayout::new(tmp.path(), Path::new("/w/proj"), "s1");
    let w = TranscriptWriter::for_session(&layout).unwrap();
    w.append(&json!({"type": "custom-title", "customTitle": "t", "sessionId": "s1"}))
        .unwrap();
    w.append(&json!({"type": "file-history-snapshot", "messageId": "m"}))
        .unwrap();
    w.sync().unwrap();
    assert!(!w.file_exists());
    w.close().unwrap();
    assert!(!layout.transcript().exists());
    assert!(
        !layout.project_dir.exists(),
        "not even the project folder is created"
    );
}

#[test]
fn sp1_first_message_creates_file_0600_in_0700_folders_with_held_metadata_first() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = SessionLayout::new(tmp.path(), Path::new("/w/proj"), "s1");
    let w = TranscriptWriter::for_session(&layout).unwrap();
    w.append(&json!({"type": "file-history-snapshot", "messageId": "u1"}))
        .unwrap();
    w.append(&user(1)).unwrap();
    w.turn_end().unwrap();
    assert!(w.file_exists());
    let path = layout.transcript();
    let got = lines(&path);
    assert_eq!(got.len(), 2);
    assert!(
        got[0].contains("file-history-snapshot"),
        "held metadata keeps its order"
    );
    assert!(got[1].contains("prompt 1"));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&layout.project_dir), 0o700);
    assert_eq!(mode(&tmp.path().join("projects")), 0o700);
}

#[test]
fn sp5_torn_last_line_is_terminated_before_the_next_record() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let whole = serde_json::to_string(&user(1)).unwrap();
    std::fs::write(
        &path,
        format!("{whole}\n{{\"parentUuid\":\"u1\",\"type\":\"assis"),
    )
    .unwrap();
    let w = TranscriptWriter::open(&path).unwrap();
    w.append(&user(2)).unwrap();
    w.close().unwrap();
    let got = lines(&path);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(serde_json::from_str::<Value>(&got[0]).is_ok());
    assert!(
        serde_json::from_str::<Value>(&got[1]).is_err(),
        "the torn fragment stays alone"
    );
    let next: Value = serde_json::from_str(&got[2]).unwrap();
    assert_eq!(
        next["uuid"], "u2",
        "the new record did not fuse with the fragment"
    );
}

#[test]
fn sp5_intact_file_gets_no_extra_newline() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    std::fs::write(
        &path,
        format!("{}\n", serde_json::to_string(&user(1)).unwrap()),
    )
    .unwrap();
    let w = TranscriptWriter::open(&path).unwrap();
    w.append(&user(2)).unwrap();
    w.close().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("\n\n"));
    assert_eq!(text.lines().count(), 2);
}

#[test]
fn sp5_records_reach_the_file_within_100ms_without_a_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let w = TranscriptWriter::open(&path).unwrap();
    // Median of several rounds, so one scheduler hiccup on a busy machine does not count.
    let mut latencies = Vec::new();
    for n in 0..5 {
        w.append(&user(n)).unwrap();
        let start = Instant::now();
        loop {
            let count = std::fs::read_to_string(&path)
                .map(|t| t.lines().count())
                .unwrap_or(0);
            if count as u64 == n + 1 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "record {n} never reached the file"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        latencies.push(start.elapsed());
    }
    latencies.sort();
    assert!(latencies[2] < Duration::from_millis(100), "{latencies:?}");
}

#[test]
fn sp5_dropping_the_last_handle_writes_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let w = TranscriptWriter::open(&path).unwrap();
    for n in 0..2_000 {
        w.append(&user(n)).unwrap();
    }
    drop(w);
    let got = lines(&path);
    assert_eq!(got.len(), 2_000);
    for (n, line) in got.iter().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["uuid"], format!("u{n}"), "records keep their order");
    }
}

#[test]
fn sp5_handles_on_many_threads_never_interleave_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let w = TranscriptWriter::open(&path).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let w = w.clone();
            std::thread::spawn(move || {
                for n in 0..500u64 {
                    let big = "x".repeat((n as usize * 37) % 9_000);
                    w.append(&json!({"type": "user", "t": t, "n": n, "pad": big}))
                        .unwrap();
                    if n % 100 == 0 {
                        w.sync().unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    w.close().unwrap();
    let mut next = [0u64; 8];
    for line in lines(&path) {
        let v: Value = serde_json::from_str(&line).expect("every line is one whole record");
        let t = v["t"].as_u64().unwrap() as usize;
        assert_eq!(
            v["n"].as_u64().unwrap(),
            next[t],
            "each thread's records stay in order"
        );
        next[t] += 1;
    }
    assert_eq!(next, [500; 8]);
}

#[test]
fn sp5_sync_async_acknowledges_from_tokio_tasks() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let w = TranscriptWriter::open(&path).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..4)
            .map(|t| {
                let w = w.clone();
                tokio::spawn(async move {
                    for n in 0..50 {
                        w.append(&json!({"type": "assistant", "t": t, "n": n}))
                            .unwrap();
                    }
                    w.sync_async().await.unwrap();
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(
        lines(&path).len(),
        200,
        "acknowledged records are in the file"
    );
}

#[test]
fn sp5_disk_full_is_reported_and_never_acknowledged() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    // Every write to /dev/full fails with ENOSPC, as on a full disk.
    std::os::unix::fs::symlink("/dev/full", &path).unwrap();
    let w = TranscriptWriter::open(&path).unwrap();
    // The thread may write (and fail) before `append` returns, which then already
    // reports the failure; either way the record is never acknowledged below.
    if let Err(e) = w.append(&user(1)) {
        assert!(
            matches!(&e, WriterError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull),
            "{e:?}"
        );
    }
    let err = w
        .turn_end()
        .expect_err("a record that was not written must not be acknowledged");
    let text = err.to_string();
    assert!(text.contains("s.jsonl"), "{text}");
    assert!(
        matches!(&err, WriterError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull),
        "{err:?}"
    );
    assert!(
        w.append(&user(2)).is_err(),
        "later appends report the outstanding failure"
    );
    assert!(
        w.sync().is_err(),
        "and syncs keep failing while the records are unwritten"
    );
}

#[test]
fn sp2_subagent_transcript_lives_under_the_session_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = SessionLayout::new(tmp.path(), Path::new("/w/proj"), "s1");
    let w = TranscriptWriter::for_subagent(&layout, "a1b2c3").unwrap();
    w.append(
        &json!({"parentUuid": null, "isSidechain": true, "agentId": "a1b2c3", "type": "user"}),
    )
    .unwrap();
    w.close().unwrap();
    let path = layout.project_dir.join("s1/subagents/agent-a1b2c3.jsonl");
    let got = lines(&path);
    assert_eq!(got.len(), 1);
    assert!(got[0].contains("\"isSidechain\":true"));
    assert!(
        !layout.transcript().exists(),
        "the main transcript is separate"
    );
}

/// Issue 16 "acknowledged means written": once `append_written` returns, the line is in
/// the file for any reader (the kernel has it), with no sync in between. Plain `append`
/// only queues, so reading right after it finds the line missing much of the time.
#[test]
fn append_written_returns_only_once_the_line_is_in_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let w = TranscriptWriter::open(&path).unwrap();
    let mut handles = Vec::new();
    for t in 0..4u64 {
        let w = w.clone();
        let path = path.clone();
        handles.push(std::thread::spawn(move || {
            for i in 0..150u64 {
                let n = t * 1_000 + i;
                w.append_written(&user(n)).unwrap();
                let text = std::fs::read_to_string(&path).unwrap();
                let uuid = format!("\"uuid\":\"u{n}\"");
                assert!(
                    text.contains(&uuid),
                    "record u{n} was acknowledged as written but is not in the file"
                );
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    w.close().unwrap();
    assert_eq!(lines(&path).len(), 600);
}

/// A record whose write failed is never acknowledged as written (a full disk): the
/// caller learns it and must not show the record.
#[test]
fn append_written_reports_a_failed_write_instead_of_acknowledging_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    std::os::unix::fs::symlink("/dev/full", &path).unwrap();
    let w = TranscriptWriter::open(&path).unwrap();
    let started = Instant::now();
    let err = w
        .append_written(&user(1))
        .expect_err("a record that could not be written must not be acknowledged as written");
    assert!(
        matches!(&err, WriterError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull),
        "{err:?}"
    );
    assert!(err.to_string().contains("s.jsonl"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it does not hang"
    );
}

/// Metadata before the first message is held in memory (no file yet); waiting for it
/// to be written returns instead of hanging until a message comes.
#[test]
fn append_written_of_held_metadata_does_not_wait_for_a_message() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let w = TranscriptWriter::open(&path).unwrap();
    w.append_written(&json!({"type": "custom-title", "customTitle": "t"}))
        .unwrap();
    assert!(!path.exists(), "metadata alone still creates no file");
    w.append_written(&user(1)).unwrap();
    let got = lines(&path);
    assert_eq!(
        got.len(),
        2,
        "the held metadata goes out with the message: {got:?}"
    );
}
