//! `strata sessions list` orders sessions by the time it shows (issue 10, item 8): the
//! `UPDATED` column of the table and `updatedAt` of `--json` are the last entry's
//! timestamp, so the newest by that time comes first, whatever the files' modification
//! times say (a copy, a `touch` or a restored backup changes those alone). Generated
//! transcripts only: these tests need no corpus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::Value;

struct Env {
    _tmp: tempfile::TempDir,
    cfg: PathBuf,
    proj: PathBuf,
}

impl Env {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let cfg = base.join("cfg");
        let proj = base.join("proj");
        fs::create_dir_all(proj.join(".git")).unwrap();
        Self {
            _tmp: tmp,
            cfg,
            proj,
        }
    }

    /// Writes session `id` with one user message per timestamp in `times` (none: a
    /// session with no timestamp at all) and sets its modification time `age_s` seconds
    /// in the past.
    fn session(&self, id: &str, times: &[&str], age_s: u64) {
        let folder: String = self
            .proj
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let dir = self.cfg.join("projects").join(folder);
        fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        let mut parent = Value::Null;
        if times.is_empty() {
            text.push_str(&format!(
                "{{\"parentUuid\":null,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"untimed {id}\"}},\"uuid\":\"{id}-0\",\"sessionId\":\"{id}\"}}\n"
            ));
        }
        for (n, t) in times.iter().enumerate() {
            let uuid = format!("{id}-{n}");
            let line = serde_json::json!({
                "parentUuid": parent,
                "type": "user",
                "message": {"role": "user", "content": format!("prompt {n} of {id}")},
                "uuid": uuid,
                "timestamp": t,
                "sessionId": id,
                "cwd": self.proj.to_string_lossy(),
            });
            text.push_str(&line.to_string());
            text.push('\n');
            parent = Value::String(uuid);
        }
        let path = dir.join(format!("{id}.jsonl"));
        fs::write(&path, text).unwrap();
        let f = fs::File::options().append(true).open(&path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(age_s))
            .unwrap();
    }

    fn list(&self, args: &[&str]) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["sessions", "list"])
            .args(args)
            .current_dir(&self.proj)
            .env("STRATA_CONFIG_DIR", &self.cfg)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

/// Three sessions whose modification times run the other way round from their last
/// entries' timestamps.
fn contradicting_sessions() -> Env {
    let env = Env::new();
    env.session(
        "old-but-touched",
        &["2026-01-01T10:00:00.000Z", "2026-01-01T11:00:00.000Z"],
        10,
    );
    env.session(
        "middle",
        &["2026-01-01T09:00:00.000Z", "2026-02-01T08:30:00.000Z"],
        500,
    );
    // Started before `middle`, updated after it: the last entry counts, not the first.
    env.session(
        "newest-update",
        &["2025-12-01T00:00:00.000Z", "2026-03-01T12:00:00+01:00"],
        900,
    );
    env
}

#[test]
fn list_json_is_ordered_by_the_updated_at_it_shows() {
    let env = contradicting_sessions();
    let rows: Value = serde_json::from_str(&env.list(&["--json"])).unwrap();
    let rows = rows.as_array().unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["newest-update", "middle", "old-but-touched"]);
    let shown: Vec<&str> = rows
        .iter()
        .map(|r| r["updatedAt"].as_str().unwrap())
        .collect();
    assert_eq!(
        shown,
        [
            "2026-03-01T12:00:00+01:00",
            "2026-02-01T08:30:00.000Z",
            "2026-01-01T11:00:00.000Z"
        ]
    );
}

#[test]
fn list_table_rows_run_from_the_newest_updated_time_down() {
    let env = contradicting_sessions();
    let table = env.list(&[]);
    let rows: Vec<(&str, String)> = table
        .lines()
        .skip(1) // the header
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // SESSION, CREATED (date time), UPDATED (date time), …
            (cols[0], format!("{} {}", cols[3], cols[4]))
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("newest-update", "2026-03-01 12:00".to_owned()),
            ("middle", "2026-02-01 08:30".to_owned()),
            ("old-but-touched", "2026-01-01 11:00".to_owned()),
        ],
        "{table}"
    );
}

/// A session without any timestamp shows `-`; it is placed by its modification time
/// among the others (here: newer than all of them).
#[test]
fn a_session_without_timestamps_goes_by_its_modification_time() {
    let env = contradicting_sessions();
    env.session("untimed", &[], 0);
    let rows: Value = serde_json::from_str(&env.list(&["--json"])).unwrap();
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["untimed", "newest-update", "middle", "old-but-touched"]
    );
}
