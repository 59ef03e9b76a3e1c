//! `strata sessions list` and `strata sessions show` through the real binary, on copies of
//! the reference agent's corpus in a temporary config directory (SP-2, SP-3, SP-4).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use serde_json::Value;

/// The reference agent's corpus (`STRATA_CORPUS_DIR`); every test that reads it starts
/// with `require_corpus!()`, which skips the test on a fresh clone.
fn corpus() -> PathBuf {
    strata_testkit::corpus::claude_code().expect("checked by require_corpus!() first")
}

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

    /// `<cfg>/projects/<this project's folder>`.
    fn project_folder(&self) -> PathBuf {
        let name: String = self
            .proj
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.cfg.join("projects").join(name)
    }

    /// Copies a corpus transcript (and its sub-agent folder) into this project; sets its
    /// modification time `age_s` seconds in the past.
    fn add(&self, corpus_file: &str, age_s: u64) -> PathBuf {
        let src = corpus().join(corpus_file);
        let dir = self.project_folder();
        fs::create_dir_all(&dir).unwrap();
        let dst = dir.join(src.file_name().unwrap());
        fs::copy(&src, &dst).unwrap();
        let side = src.with_extension("");
        if side.is_dir() {
            copy_dir(&side, &dir.join(side.file_name().unwrap()));
        }
        touch(&dst, age_s);
        dst
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("sessions")
            .args(args)
            .current_dir(&self.proj)
            .env("STRATA_CONFIG_DIR", &self.cfg)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }
}

fn touch(p: &Path, age_s: u64) {
    let f = fs::File::options().append(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(age_s))
        .unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            copy_dir(&p, &to.join(p.file_name().unwrap()));
        } else {
            fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn sp2_list_json_has_exactly_the_documented_keys_newest_first() {
    strata_testkit::require_corpus!();
    let env = Env::new();
    env.add("spotter/short.jsonl", 300);
    env.add("spotter/tool_heavy.jsonl", 100);
    env.add("spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 200);
    let rows = env.json(&["list", "--json"]);
    let rows = rows.as_array().unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap())
        .collect();
    // Newest by the `updatedAt` shown, not by the copies' modification times.
    assert_eq!(
        ids,
        [
            "4d5611e5-241a-462a-8d15-5122611a9569",
            "tool_heavy",
            "short"
        ]
    );
    for r in rows {
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "sessionId",
                "title",
                "firstPrompt",
                "messageCount",
                "createdAt",
                "updatedAt",
                "projectDir"
            ]
        );
    }
    assert_eq!(
        rows[2]["firstPrompt"],
        "mix phx.server doesnt seem to start"
    );
    assert_eq!(rows[2]["messageCount"], 9);
    assert_eq!(rows[2]["createdAt"], "2026-02-10T21:11:52.438Z");
    assert_eq!(rows[2]["projectDir"], "/home/marco/projects/spotter");
    assert_eq!(rows[0]["updatedAt"], "2026-02-12T21:03:34.206Z");
}

#[test]
fn sp2_list_shows_only_this_project_unless_all_projects() {
    strata_testkit::require_corpus!();
    let env = Env::new();
    env.add("spotter/short.jsonl", 10);
    let other = env.cfg.join("projects/-elsewhere");
    fs::create_dir_all(&other).unwrap();
    fs::copy(
        corpus().join("spotter/tool_heavy.jsonl"),
        other.join("tool_heavy.jsonl"),
    )
    .unwrap();
    // Sub-agent transcripts of the older layout are not sessions.
    fs::copy(
        corpus().join("codemie/claude/-tmp-private/agent-36541525.jsonl"),
        other.join("agent-36541525.jsonl"),
    )
    .unwrap();
    let here = env.ok(&["list"]);
    assert!(
        here.contains("short") && !here.contains("tool_heavy"),
        "{here}"
    );
    assert!(here.starts_with("SESSION"), "{here}");
    let all = env.json(&["list", "--all-projects", "--json"]);
    assert_eq!(all.as_array().unwrap().len(), 2);
    let text = env.ok(&["list", "--all-projects"]);
    assert!(text.contains("in /home/marco/projects/spotter"), "{text}");
}

#[test]
fn sp2_an_empty_project_lists_nothing_and_succeeds() {
    let env = Env::new();
    assert_eq!(env.json(&["list", "--json"]), Value::Array(vec![]));
    assert!(env.ok(&["list"]).starts_with("No sessions for "));
}

#[test]
fn sp3_show_json_of_a_corpus_session() {
    strata_testkit::require_corpus!();
    let env = Env::new();
    env.add("spotter/short.jsonl", 0);
    insta::assert_json_snapshot!("show_short", env.json(&["show", "short", "--json"]));
}

/// The larger sessions: every key but the messages' bodies (kept to type and uuid).
#[test]
fn sp3_show_json_of_sessions_with_compaction_and_subagents() {
    strata_testkit::require_corpus!();
    let env = Env::new();
    for (file, name) in [
        (
            "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
            "show_4d5611e5",
        ),
        (
            "codemie/claude/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
            "show_4c2ddfdc",
        ),
    ] {
        let path = env.add(file, 0);
        if file.starts_with("codemie/claude/-tmp-private") {
            for agent in ["agent-36541525.jsonl", "agent-50243ee8.jsonl"] {
                fs::copy(
                    corpus().join("codemie/claude/-tmp-private").join(agent),
                    path.with_file_name(agent),
                )
                .unwrap();
            }
        }
        let mut v = env.json(&["show", path.to_str().unwrap(), "--json"]);
        let brief: Vec<Value> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                Value::String(format!(
                    "{} {}",
                    m["type"].as_str().unwrap(),
                    m["uuid"].as_str().unwrap()
                ))
            })
            .collect();
        v["messages"] = Value::Array(brief);
        insta::assert_json_snapshot!(name, v);
    }
}

#[test]
fn sp3_show_by_id_finds_sessions_of_other_projects_too() {
    strata_testkit::require_corpus!();
    let env = Env::new();
    let other = env.cfg.join("projects/-elsewhere");
    fs::create_dir_all(&other).unwrap();
    fs::copy(
        corpus().join("spotter/tool_heavy.jsonl"),
        other.join("tool_heavy.jsonl"),
    )
    .unwrap();
    let v = env.json(&["show", "tool_heavy", "--json"]);
    assert_eq!(v["sessionId"], "tool_heavy");
}

#[test]
fn sp3_unknown_ids_and_unreadable_files_are_one_line_errors_with_exit_1() {
    strata_testkit::require_corpus!();
    let env = Env::new();
    env.add("spotter/short.jsonl", 0);
    let out = env.run(&["show", "no-such-session"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no-such-session"), "{err}");

    let dir_not_file = env.proj.join("dir.jsonl");
    fs::create_dir_all(&dir_not_file).unwrap();
    let out = env.run(&["show", dir_not_file.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("dir.jsonl"), "{err}");
    assert!(out.stdout.is_empty());
}

/// A crash left a torn line in the middle (fused with the next record) and lost a line:
/// show keeps everything it can and says what it repaired.
#[test]
fn sp3_show_reports_repairs_and_unreadable_lines() {
    strata_testkit::require_corpus!();
    let env = Env::new();
    let src = fs::read_to_string(corpus().join("spotter/tool_heavy.jsonl")).unwrap();
    let mut lines: Vec<String> = src.lines().map(str::to_owned).collect();
    // Line 11 (the second prompt) loses its end and fuses with line 12 (the answer to
    // it); line 20 (a later prompt) is lost altogether.
    assert!(lines[10].contains("\"uuid\":\"4e7e59aa") && lines[19].contains("\"uuid\":\"faf199ff"));
    let torn = lines[10][..lines[10].len() / 2].to_owned();
    lines[11] = format!("{torn}{}", lines[11]);
    lines.remove(10);
    lines.remove(18);
    let dir = env.project_folder();
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("broken.jsonl"), lines.join("\n") + "\n").unwrap();

    let v = env.json(&["show", "broken", "--json"]);
    assert_eq!(v["malformedLines"], 1);
    let repairs = v["repairs"].as_array().unwrap();
    assert_eq!(repairs.len(), 2, "{}", v["repairs"]);
    assert!(repairs.iter().all(|r| r["kind"] == "bridgedGap"));
    // Nothing before the gaps is lost: the conversation still starts at the first prompt.
    assert!(
        v["messages"][0]
            .to_string()
            .contains("start phoenix in background")
    );
    let text = env.ok(&["show", "broken"]);
    assert!(text.contains("repaired:"), "{text}");
    assert!(
        text.contains("a torn fragment was skipped and the record after it kept"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "terminal escapes from the transcript are not printed"
    );
}

/// Regression: `strata sessions show … | head` panicked ("failed printing to stdout:
/// Broken pipe") once the reader closed the pipe. A reader that stops early has what it
/// wanted: exit 0, nothing on stderr.
#[test]
fn regression_show_into_a_pipe_closed_early_exits_quietly() {
    strata_testkit::require_corpus!();
    use std::io::Read;
    use std::process::Stdio;

    let env = Env::new();
    env.add("spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", 0);
    for args in [
        &["show", "fa812bfe-b295-4cca-9c2f-fdf01028cb46", "--json"][..],
        &["show", "fa812bfe-b295-4cca-9c2f-fdf01028cb46"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("sessions")
            .args(args)
            .current_dir(&env.proj)
            .env("STRATA_CONFIG_DIR", &env.cfg)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is dropped here: the rest of the output meets a closed pipe.
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {:?}", out.status);
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}
