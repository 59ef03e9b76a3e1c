//! Concurrent writers across processes: 16 `strata config set` processes each set their
//! own key in the same settings file 100 times while a reader checks that the file is
//! valid JSON at every read; at the end every key holds its last value. This is the
//! process-level proof of the locked read-modify-write with atomic replace (issue 3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::Value;

const WRITERS: usize = 16;
const SETS_PER_WRITER: usize = 100;

#[test]
fn sixteen_processes_set_their_own_key_100_times_and_no_key_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let cfg = base.join("cfg");
    let proj = base.join("proj");
    fs::create_dir_all(proj.join(".git")).unwrap();
    let file = proj.join(".strata/settings.local.json");
    // Start from a file with an unknown key: it must survive all the writes too.
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "{\"keepMe\": {\"nested\": [1, 2]}}\n").unwrap();

    let done = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_micros(100));
                let text = fs::read_to_string(&file).unwrap();
                let v: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("torn or invalid JSON observed: {e}\n{text}"));
                assert_eq!(v["keepMe"]["nested"], serde_json::json!([1, 2]));
                reads.fetch_add(1, Ordering::Relaxed);
            }
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (cfg, proj) = (&cfg, &proj);
                s.spawn(move || {
                    for i in 0..SETS_PER_WRITER {
                        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
                            .args(["config", "set", &format!("writer{w:02}"), &i.to_string()])
                            .current_dir(proj)
                            .env("STRATA_CONFIG_DIR", cfg)
                            .output()
                            .unwrap();
                        assert!(
                            out.status.success(),
                            "writer {w} set {i}: {}",
                            String::from_utf8_lossy(&out.stderr)
                        );
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        reader.join().unwrap();
    });
    let elapsed = started.elapsed();

    let v: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    let obj = v.as_object().unwrap();
    assert_eq!(obj.len(), WRITERS + 1, "{v}");
    for w in 0..WRITERS {
        assert_eq!(
            obj[&format!("writer{w:02}")],
            SETS_PER_WRITER - 1,
            "writer {w}"
        );
    }
    assert!(reads.load(Ordering::Relaxed) > 0);
    // Visible with `--nocapture`: the cost of 1600 locked process-level writes.
    #[allow(clippy::print_stdout)]
    {
        println!(
            "{} sets by {WRITERS} processes in {elapsed:?}, {} valid reads",
            WRITERS * SETS_PER_WRITER,
            reads.load(Ordering::Relaxed)
        );
    }
}
