//! The input history (SP-2; issue 5 part 5): the reference shape, the paste cache,
//! newest-first reading from the end, the torn-line repair, and appends from several
//! processes at once under the lock.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use serde_json::Value;
use strata_session::history::{History, PASTE_INLINE_LIMIT, Paste, paste_hash};

const CHILD_ENV: &str = "STRATA_TEST_HISTORY_CHILD";

#[test]
fn sp2_prompt_is_appended_in_the_reference_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let h = History::new(tmp.path());
    let small = Paste {
        id: 1,
        text: "short paste".into(),
    };
    h.append("fix [Pasted text #1]", &[small], "/w/proj", Some("sess-1"))
        .unwrap();
    let text = std::fs::read_to_string(tmp.path().join("history.jsonl")).unwrap();
    let v: Value = serde_json::from_str(text.trim_end()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "display",
            "pastedContents",
            "timestamp",
            "project",
            "sessionId"
        ]
    );
    assert_eq!(v["pastedContents"]["1"]["content"], "short paste");
    assert_eq!(v["pastedContents"]["1"]["type"], "text");
    let ms = v["timestamp"].as_i64().unwrap();
    assert!(ms > 1_700_000_000_000, "milliseconds since the epoch: {ms}");
    let mode = std::fs::metadata(h.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn sp2_large_paste_goes_to_the_paste_cache_and_resolves_back() {
    let tmp = tempfile::tempdir().unwrap();
    let h = History::new(tmp.path());
    let big = "line of pasted log output\n".repeat(100);
    assert!(big.chars().count() > PASTE_INLINE_LIMIT);
    let exactly = "é".repeat(PASTE_INLINE_LIMIT); // 1,024 characters, 2,048 bytes: inline
    let entry = h
        .append(
            "[Pasted text #1] and [Pasted text #2]",
            &[
                Paste {
                    id: 1,
                    text: big.clone(),
                },
                Paste {
                    id: 2,
                    text: exactly.clone(),
                },
            ],
            "/w/proj",
            None,
        )
        .unwrap();
    let first = &entry.pasted_contents["1"];
    assert_eq!(first.content, None);
    let hash = first.content_hash.clone().unwrap();
    assert_eq!(hash, paste_hash(&big));
    assert_eq!(hash.len(), 16);
    let cached = tmp.path().join("paste-cache").join(format!("{hash}.txt"));
    assert_eq!(std::fs::read_to_string(&cached).unwrap(), big);
    assert_eq!(
        entry.pasted_contents["2"].content.as_deref(),
        Some(exactly.as_str())
    );

    let read = h.recent("/w/proj", 1).unwrap().remove(0);
    assert_eq!(read, entry, "what is read back is what was written");
    assert_eq!(
        h.paste_text(&read.pasted_contents["1"]).unwrap().as_deref(),
        Some(big.as_str())
    );
    assert!(
        !std::fs::read_to_string(h.path())
            .unwrap()
            .contains("pasted log output")
    );

    // The same paste again is stored once.
    h.append(
        "[Pasted text #1]",
        &[Paste { id: 1, text: big }],
        "/w/proj",
        None,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_dir(tmp.path().join("paste-cache"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn sp2_recent_is_newest_first_and_filtered_by_project() {
    let tmp = tempfile::tempdir().unwrap();
    let h = History::new(tmp.path());
    for n in 0..30 {
        let project = if n % 3 == 0 { "/w/a" } else { "/w/b" };
        h.append(&format!("prompt {n}"), &[], project, None)
            .unwrap();
    }
    let a: Vec<String> = h
        .recent("/w/a", 4)
        .unwrap()
        .into_iter()
        .map(|e| e.display)
        .collect();
    assert_eq!(a, ["prompt 27", "prompt 24", "prompt 21", "prompt 18"]);
    assert_eq!(h.recent("/w/a", 100).unwrap().len(), 10);
    assert!(h.recent("/w/none", 5).unwrap().is_empty());
    assert!(
        History::new(&tmp.path().join("missing"))
            .recent("/w/a", 5)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn sp2_recent_reads_from_the_end_not_the_whole_file() {
    let tmp = tempfile::tempdir().unwrap();
    let h = History::new(tmp.path());
    // 64 GiB of history before the last prompts (a sparse hole: no disk is used). Reading
    // it from the start would take minutes and run out of memory.
    let f = std::fs::File::create(h.path()).unwrap();
    f.set_len(64 << 30).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(h.path())
        .unwrap();
    f.write_all(b"\n").unwrap();
    drop(f);
    for n in 0..60 {
        h.append(&format!("prompt {n}"), &[], "/w/p", None).unwrap();
    }
    let started = std::time::Instant::now();
    let recent = h.recent("/w/p", 50).unwrap();
    assert_eq!(recent.len(), 50);
    assert_eq!(recent[0].display, "prompt 59");
    assert_eq!(recent[49].display, "prompt 10");
    assert!(started.elapsed().as_secs() < 5);
}

#[test]
fn sp2_lines_longer_than_a_block_and_across_blocks_read_back_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let h = History::new(tmp.path());
    let sizes = [10, 70_000, 5, 65_536, 131_072, 1, 40_000, 64_000, 3];
    for (n, size) in sizes.iter().enumerate() {
        h.append(&format!("{n}:{}", "x".repeat(*size)), &[], "/w/p", None)
            .unwrap();
    }
    let got: Vec<String> = h
        .newest_first()
        .unwrap()
        .map(|e| e.unwrap().display)
        .collect();
    let want: Vec<String> = sizes
        .iter()
        .enumerate()
        .rev()
        .map(|(n, s)| format!("{n}:{}", "x".repeat(*s)))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn sp5_torn_history_line_is_isolated_and_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let h = History::new(tmp.path());
    h.append("before", &[], "/w/p", None).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(h.path())
        .unwrap();
    f.write_all(br#"{"display":"torn by a cra"#).unwrap();
    drop(f);
    h.append("after", &[], "/w/p", None).unwrap();
    let mut it = h.newest_first().unwrap();
    let got: Vec<String> = it.by_ref().map(|e| e.unwrap().display).collect();
    assert_eq!(
        got,
        ["after", "before"],
        "the new prompt did not fuse with the fragment"
    );
    assert_eq!(it.skipped(), 1);
}

/// Not a test on its own: the body of the appending child processes.
#[test]
fn history_append_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (dir, who) = spec.split_once('|').unwrap();
    let h = History::new(std::path::Path::new(dir));
    for n in 0..150 {
        let pad = "p".repeat((n * 97) % 3_000);
        h.append(&format!("{who} {n} {pad}"), &[], "/w/p", Some(who))
            .unwrap();
    }
}

#[test]
fn sp2_processes_appending_at_once_never_interleave() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|c| {
            Command::new(&exe)
                .args(["--exact", "history_append_child", "--test-threads=1"])
                .env(CHILD_ENV, format!("{}|child{c}", tmp.path().display()))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let h = History::new(tmp.path());
    let mut it = h.newest_first().unwrap();
    let mut next = [149i64; 4];
    for e in it.by_ref() {
        let e = e.unwrap();
        let mut words = e.display.split(' ');
        let who: usize = words.next().unwrap()["child".len()..].parse().unwrap();
        let n: i64 = words.next().unwrap().parse().unwrap();
        assert_eq!(
            n, next[who],
            "each process's prompts are all there, in order"
        );
        next[who] -= 1;
    }
    assert_eq!(next, [-1; 4]);
    assert_eq!(it.skipped(), 0, "no line was torn or fused");
}
