//! Resume on crafted transcripts: crash damage (torn and fused lines, lost lines), large
//! files with compaction, metadata, file history, fork, `--continue` and lookup (SP-3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use strata_protocol::transcript::RawEntry;
use strata_session::chain::Repair;
use strata_session::resume::{self, LoadedSession, ResumeError};

fn user(uuid: &str, parent: Option<&str>, ts: u32, text: &str) -> String {
    format!(
        r#"{{"parentUuid":{},"isSidechain":false,"userType":"external","cwd":"/w/p","sessionId":"s1","version":"2.1.39","gitBranch":"main","type":"user","message":{{"role":"user","content":"{text}"}},"uuid":"{uuid}","timestamp":"2026-01-01T00:{:02}:{:02}.000Z"}}"#,
        parent.map_or("null".to_owned(), |p| format!("\"{p}\"")),
        ts / 60,
        ts % 60
    )
}

fn assistant(uuid: &str, parent: &str, ts: u32, msg: &str, text: &str) -> String {
    format!(
        r#"{{"parentUuid":"{parent}","isSidechain":false,"userType":"external","cwd":"/w/p","sessionId":"s1","version":"2.1.39","gitBranch":"main","message":{{"model":"claude-sonnet-4-5-20250929","id":"{msg}","type":"message","role":"assistant","content":[{{"type":"text","text":"{text}"}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}}}},"requestId":"req_{msg}","type":"assistant","uuid":"{uuid}","timestamp":"2026-01-01T00:{:02}:{:02}.000Z"}}"#,
        ts / 60,
        ts % 60
    )
}

fn boundary(uuid: &str, logical: &str, ts: u32) -> String {
    format!(
        r#"{{"parentUuid":null,"logicalParentUuid":"{logical}","isSidechain":false,"userType":"external","cwd":"/w/p","sessionId":"s1","version":"2.1.39","gitBranch":"main","type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-01T00:{:02}:{:02}.000Z","uuid":"{uuid}","level":"info","compactMetadata":{{"trigger":"auto","preTokens":1}}}}"#,
        ts / 60,
        ts % 60
    )
}

/// A conversation of `turns` prompt/answer pairs, ids `u<n>`/`a<n>`.
fn conversation(turns: u32) -> Vec<String> {
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    for n in 0..turns {
        let u = format!("u{n}");
        lines.push(user(&u, parent.as_deref(), n * 2, &format!("prompt {n}")));
        let a = format!("a{n}");
        lines.push(assistant(
            &a,
            &u,
            n * 2 + 1,
            &format!("msg_{n}"),
            &format!("answer {n}"),
        ));
        parent = Some(a);
    }
    lines
}

fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

fn uuids(s: &LoadedSession) -> Vec<String> {
    let from_file: Vec<String> = s
        .live_entries()
        .unwrap()
        .into_iter()
        .map(|e| e.uuid.unwrap())
        .collect();
    assert_eq!(from_file, s.live_uuids());
    from_file
}

#[test]
fn sp5_a_torn_final_line_loses_only_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = conversation(3);
    let last = lines.pop().unwrap();
    let p = write(tmp.path(), "s1.jsonl", &lines);
    let mut bytes = fs::read(&p).unwrap();
    bytes.extend_from_slice(&last.as_bytes()[..last.len() / 2]);
    fs::write(&p, bytes).unwrap();
    let s = LoadedSession::load(&p).unwrap();
    assert_eq!(uuids(&s), ["u0", "a0", "u1", "a1", "u2"]);
    assert_eq!(s.malformed().len(), 1);
    assert!(s.malformed()[0].torn_tail);
    assert_eq!(s.malformed()[0].line, 6);
}

#[test]
fn sp5_a_fused_line_keeps_the_whole_record_after_the_fragment() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = conversation(3);
    // A crash cut line 3 short; the next write landed right after it on the same line.
    let torn = lines[2][..40].to_owned();
    lines[3] = format!("{torn}{}", lines[3]);
    lines.remove(2);
    let p = write(tmp.path(), "s1.jsonl", &lines);
    let s = LoadedSession::load(&p).unwrap();
    let m = &s.malformed()[0];
    assert!(m.recovered_record && !m.torn_tail);
    // u1 is lost (torn); a1 survives on the fused line and the gap to a0 is bridged.
    assert_eq!(uuids(&s), ["u0", "a0", "a1", "u2", "a2"]);
    assert!(
        matches!(s.repairs(), [Repair::BridgedGap { uuid, bridged_to, .. }] if uuid == "a1" && bridged_to == "a0")
    );
}

#[test]
fn sp3_a_lost_line_keeps_all_earlier_history_and_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = conversation(4);
    lines.remove(4); // u2
    let p = write(tmp.path(), "s1.jsonl", &lines);
    let s = LoadedSession::load(&p).unwrap();
    assert_eq!(
        uuids(&s),
        ["u0", "a0", "u1", "a1", "a2", "u3", "a3"],
        "the reference agent keeps a2, u3, a3 only"
    );
    assert_eq!(s.repairs().len(), 1);
    assert!(s.malformed().is_empty());
}

#[test]
fn sp3_metadata_last_wins_and_custom_title_beats_ai_title() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = conversation(2);
    lines.insert(
        1,
        r#"{"type":"custom-title","customTitle":"mine","sessionId":"s1"}"#.into(),
    );
    lines.push(r#"{"type":"ai-title","aiTitle":"generated","sessionId":"s1"}"#.into());
    lines.push(r#"{"type":"tag","tag":"old","sessionId":"s1"}"#.into());
    lines.push(r#"{"type":"tag","tag":"new","sessionId":"s1"}"#.into());
    lines.push(r#"{"type":"agent-name","agentName":"reviewer","sessionId":"s1"}"#.into());
    lines.push(r#"{"type":"agent-color","agentColor":"blue","sessionId":"s1"}"#.into());
    lines.push(
        r#"{"type":"permission-mode","permissionMode":"acceptEdits","sessionId":"s1"}"#.into(),
    );
    lines.push(r#"{"type":"worktree-state","worktreeSession":{"worktreePath":"/w/p-wt","worktreeBranch":"wt"},"sessionId":"s1"}"#.into());
    lines.push(r#"{"type":"pr-link","sessionId":"s1","prNumber":12,"prUrl":"https://example.invalid/pr/12","prRepository":"o/r","timestamp":"2026-01-01T00:00:09.000Z"}"#.into());
    lines.push(r#"{"type":"summary","summary":"about a1","leafUuid":"a1"}"#.into());
    lines.push(r#"{"type":"summary","summary":"another session","leafUuid":"zzz"}"#.into());
    lines.push(r#"{"type":"future-kind","x":1}"#.into());
    let s = LoadedSession::load(&write(tmp.path(), "s1.jsonl", &lines)).unwrap();
    let m = &s.metadata;
    assert_eq!(m.title(), Some("mine"));
    assert_eq!(m.ai_title.as_deref(), Some("generated"));
    assert_eq!(m.tag.as_deref(), Some("new"));
    assert_eq!(
        (m.agent_name.as_deref(), m.agent_color.as_deref()),
        (Some("reviewer"), Some("blue"))
    );
    assert_eq!(m.permission_mode.as_deref(), Some("acceptEdits"));
    assert_eq!(m.worktree.as_ref().unwrap()["worktreeBranch"], "wt");
    assert_eq!(m.pr_link.as_ref().unwrap().pr_number, 12);
    assert_eq!(m.summary.as_deref(), Some("about a1"));
    assert!(s.malformed().is_empty());
}

#[test]
fn sp3_file_history_snapshots_of_dead_branches_are_not_live() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = |msg: &str, file: &str, v: u32| {
        format!(
            r#"{{"type":"file-history-snapshot","messageId":"{msg}","snapshot":{{"messageId":"{msg}","trackedFileBackups":{{"{file}":{{"backupFileName":"abc@v{v}","version":{v},"backupTime":"t"}}}},"timestamp":"t"}},"isSnapshotUpdate":false}}"#
        )
    };
    let lines = vec![
        snap("u0", "a.txt", 1),
        user("u0", None, 0, "p0"),
        assistant("a0", "u0", 1, "m0", "x"),
        snap("dead", "b.txt", 1),
        user("dead", Some("a0"), 2, "old branch"),
        snap("u1", "a.txt", 2),
        user("u1", Some("a0"), 3, "new branch"),
        assistant("a1", "u1", 4, "m1", "y"),
    ];
    let s = LoadedSession::load(&write(tmp.path(), "s1.jsonl", &lines)).unwrap();
    let live: Vec<&str> = s
        .file_history
        .iter()
        .map(|f| f.message_id.as_str())
        .collect();
    assert_eq!(live, ["u0", "u1"]);
    assert_eq!(s.file_history[1].tracked_file_backups["a.txt"].version, 2);
    assert_eq!(s.latest_snapshot.as_ref().unwrap().message_id, "u1");
}

fn big_compacted(dir: &Path, pad: usize) -> (PathBuf, Vec<String>) {
    // ~10 MB before the boundary, a short live conversation after it.
    let padding = "x".repeat(pad);
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    let mut n = 0;
    while lines.iter().map(String::len).sum::<usize>() < 10 << 20 {
        let u = format!("old-u{n}");
        lines.push(user(&u, parent.as_deref(), 0, &padding));
        let a = format!("old-a{n}");
        lines.push(assistant(&a, &u, 1, &format!("old-m{n}"), "a"));
        parent = Some(a);
        n += 1;
    }
    lines.push(
        r#"{"type":"custom-title","customTitle":"before the boundary","sessionId":"s1"}"#.into(),
    );
    lines.push(boundary("b", parent.as_deref().unwrap(), 30));
    lines.push(user("s", Some("b"), 31, "summary of before"));
    lines.push(assistant("a", "s", 32, "m-live", "live answer"));
    (write(dir, "s1.jsonl", &lines), lines)
}

#[test]
fn sp3_large_files_skip_parsing_before_the_last_boundary_but_keep_its_metadata_and_cost() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, lines) = big_compacted(tmp.path(), 2000);
    let s = LoadedSession::load(&p).unwrap();
    assert!(s.skipped_bytes() > 9 << 20, "{}", s.skipped_bytes());
    assert_eq!(uuids(&s), ["b", "s", "a"]);
    assert_eq!(s.metadata.title(), Some("before the boundary"));
    let expected_requests = lines
        .iter()
        .filter(|l| l.contains("\"type\":\"assistant\""))
        .count() as u64;
    assert_eq!(
        s.usage.by_model["claude-sonnet-4-5-20250929"].requests,
        expected_requests
    );
}

#[test]
fn sp3_a_chain_reaching_behind_the_boundary_is_read_in_full() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, mut lines) = big_compacted(tmp.path(), 2000);
    // The live line after the boundary lost its parent: bridging needs the earlier lines.
    let n = lines.len();
    lines[n - 2] = user("s", Some("lost"), 31, "summary of before");
    lines.remove(n - 3); // the boundary itself is gone
    fs::write(&p, lines.join("\n") + "\n").unwrap();
    let s = LoadedSession::load(&p).unwrap();
    assert_eq!(s.skipped_bytes(), 0);
    assert!(
        uuids(&s).len() > 100,
        "history before the lost line is kept"
    );
}

#[test]
fn sp3_fork_copies_every_entry_under_a_new_id_keeping_unknown_fields_and_linking_backups() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cfg");
    let proj = cfg.join("projects/-w-p");
    let mut lines = conversation(2);
    lines.insert(1, r#"{"parentUuid":"u0","isSidechain":false,"sessionId":"s1","type":"user","zUnknown":{"b":[1.50,{"k":null}]},"message":{"role":"user","content":"x"},"uuid":"odd","timestamp":"2026-01-01T00:00:00.500Z"}"#.into());
    lines.push(r#"{"type":"brand-new-kind","sessionId":"s1","payload":"\u00e9"}"#.into());
    lines.push(r#"{"type":"summary","summary":"s","leafUuid":"a1"}"#.into());
    let src = write(&proj, "s1.jsonl", &lines);
    let sub = write(&proj.join("s1/subagents"), "agent-x1.jsonl", &[r#"{"parentUuid":null,"isSidechain":true,"sessionId":"s1","agentId":"x1","type":"user","message":{"role":"user","content":"task"},"uuid":"x","timestamp":"t"}"#.to_owned()]);
    let fh = cfg.join("file-history/s1");
    fs::create_dir_all(&fh).unwrap();
    fs::write(fh.join("0123456789abcdef@v1"), "old contents").unwrap();
    write(
        &proj.join("s1/tool-results"),
        "toolu_1.txt",
        &["big output".to_owned()],
    );

    let out = resume::fork(&cfg, &src, "s2").unwrap();
    assert_eq!(out.path, proj.join("s2.jsonl"));
    assert_eq!(
        (out.entries_copied, out.subagents_copied, out.files_linked),
        (lines.len(), 1, 2)
    );
    let copied = fs::read_to_string(&out.path).unwrap();
    let copied: Vec<&str> = copied.lines().collect();
    assert_eq!(copied.len(), lines.len());
    for (orig, new) in lines.iter().zip(&copied) {
        let (o, n) = (
            RawEntry::parse(orig).unwrap(),
            RawEntry::parse(new).unwrap(),
        );
        assert_eq!(
            o.keys().collect::<Vec<_>>(),
            n.keys().collect::<Vec<_>>(),
            "key order kept"
        );
        for k in o.keys() {
            if k == "sessionId" {
                assert_eq!(n.get_str(k).as_deref(), Some("s2"));
            } else {
                assert_eq!(
                    o.get(k).unwrap().get(),
                    n.get(k).unwrap().get(),
                    "{k} kept byte for byte"
                );
            }
        }
    }
    assert!(copied[1].contains(r#""zUnknown":{"b":[1.50,{"k":null}]}"#));
    let sub_copy = fs::read_to_string(proj.join("s2/subagents/agent-x1.jsonl")).unwrap();
    assert!(sub_copy.contains(r#""sessionId":"s2""#));
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let a = fs::metadata(fh.join("0123456789abcdef@v1")).unwrap();
        let b = fs::metadata(cfg.join("file-history/s2/0123456789abcdef@v1")).unwrap();
        assert_eq!(a.ino(), b.ino(), "backups are hard-linked, not copied");
        assert_eq!(fs::metadata(&out.path).unwrap().mode() & 0o777, 0o600);
    }
    // The fork resumes to the same conversation.
    let (a, b) = (
        LoadedSession::load(&src).unwrap(),
        LoadedSession::load(&out.path).unwrap(),
    );
    assert_eq!(uuids(&a), uuids(&b));
    assert!(
        sub.exists(),
        "the source's sub-agent transcript is left in place"
    );
    // Forking onto an existing session is refused and changes nothing.
    let before = fs::read(&out.path).unwrap();
    assert!(matches!(
        resume::fork(&cfg, &src, "s2"),
        Err(ResumeError::Exists { .. })
    ));
    assert_eq!(fs::read(&out.path).unwrap(), before);
}

fn set_age(p: &Path, secs: u64) {
    let f = fs::File::options().append(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs))
        .unwrap();
}

#[test]
fn sp3_continue_picks_the_newest_main_session_by_mtime() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("proj");
    let old = write(&proj, "old.jsonl", &conversation(1));
    set_age(&old, 300);
    let newer = write(&proj, "newer.jsonl", &conversation(2));
    set_age(&newer, 200);
    // Newer still, but not candidates: a legacy sub-agent file, a sidechain-only file,
    // and a file with metadata only.
    let agent = write(&proj, "agent-abc.jsonl", &conversation(1));
    set_age(&agent, 10);
    let side: Vec<String> = conversation(1)
        .iter()
        .map(|l| l.replace("\"isSidechain\":false", "\"isSidechain\":true"))
        .collect();
    let side = write(&proj, "side.jsonl", &side);
    set_age(&side, 20);
    let meta = write(
        &proj,
        "meta.jsonl",
        &[r#"{"type":"summary","summary":"s","leafUuid":"x"}"#.to_owned()],
    );
    set_age(&meta, 30);
    assert_eq!(resume::latest_in_project(&proj).unwrap(), Some(newer));
    assert_eq!(
        resume::latest_in_project(&tmp.path().join("missing")).unwrap(),
        None
    );
}

#[test]
fn sp3_continue_judges_large_files_by_their_head_and_tail_only() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("proj");
    let mut lines = conversation(1);
    // 300 KB of unreadable bytes in the middle are never looked at.
    lines.push("\u{1}".repeat(300 * 1024));
    lines.extend(conversation(1));
    let p = write(&proj, "big.jsonl", &lines);
    assert_eq!(resume::latest_in_project(&proj).unwrap(), Some(p));
}

#[test]
fn sp3_sessions_are_found_by_id_or_path() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cfg");
    let root = Path::new("/w/p");
    let here = write(&cfg.join("projects/-w-p"), "s1.jsonl", &conversation(1));
    let there = write(&cfg.join("projects/-other"), "s9.jsonl", &conversation(1));
    assert_eq!(resume::find_by_id(&cfg, root, "s1").unwrap(), here);
    assert_eq!(resume::find_by_id(&cfg, root, "s9").unwrap(), there);
    assert_eq!(
        resume::resolve(&cfg, root, here.to_str().unwrap()).unwrap(),
        here
    );
    assert!(matches!(
        resume::resolve(&cfg, root, "nope"),
        Err(ResumeError::UnknownSession { .. })
    ));
    assert!(matches!(
        resume::resolve(&cfg, root, "/no/such.jsonl"),
        Err(ResumeError::NoSuchFile { .. })
    ));
    assert!(matches!(
        resume::find_by_id(&cfg, root, ".."),
        Err(ResumeError::InvalidId { .. })
    ));
    let err = resume::resolve(&cfg, root, "nope").unwrap_err().to_string();
    assert!(err.contains("nope") && !err.contains('\n'), "{err}");
}
