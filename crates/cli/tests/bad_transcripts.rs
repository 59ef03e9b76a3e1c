//! Bad transcripts through the real binary (issue 16, "bad transcripts, clear words"):
//! one bad record is skipped and counted, with its own line number, by `sessions show`
//! (text and `--json`), `sessions list` and `-p --resume`; resuming a file that holds no
//! transcript line at all is an error naming the file (exit 1), and resuming one with
//! skipped lines says how many on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_testkit::{MockServer, Reply};

use headless_support::{Env, Run, folder_name, run_command};

/// Records a first session (prompt "remember 42", answer "Noted: 42.") and returns its
/// transcript.
async fn recorded_session(env: &Env, server: &MockServer) -> PathBuf {
    server.push(Reply::new().text("Noted: 42."));
    let run = env
        .run(
            Some(server),
            &["-p", "remember 42", "--output-format", "json"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    env.transcripts().remove(0).0
}

/// Inserts a raw control character (ESC) into the text of the first user prompt line,
/// returning that line's 1-based number.
fn corrupt_prompt_line(path: &Path) -> usize {
    let text = std::fs::read(path).unwrap();
    let mut lines: Vec<Vec<u8>> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    let k = lines
        .iter()
        .position(|l| l.windows(11).any(|w| w == b"remember 42"))
        .unwrap();
    let at = lines[k]
        .windows(11)
        .position(|w| w == b"remember 42")
        .unwrap()
        + 8;
    lines[k].insert(at, 0x1b);
    let mut out = lines.join(&b'\n');
    out.push(b'\n');
    std::fs::write(path, out).unwrap();
    k + 1
}

async fn sessions(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["sessions"];
    all.extend_from_slice(args);
    run_command(env.command(None, &all), "").await
}

#[tokio::test]
async fn a_raw_control_character_in_one_record_is_skipped_by_show_json_with_its_line() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let path = recorded_session(&env, &server).await;
    let bad_line = corrupt_prompt_line(&path);
    let p = path.to_str().unwrap();

    let run = sessions(&env, &["show", p, "--json"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let shown: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(shown["malformedLines"], 1, "{shown:#}");
    assert_eq!(shown["unreadableLines"][0]["line"], bad_line);
    assert!(
        shown["unreadableLines"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("control character"),
        "{shown:#}"
    );
    let texts: Vec<String> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("Noted: 42.")),
        "the good records are shown: {texts:?}"
    );

    let run = sessions(&env, &["show", p]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout
            .contains(&format!("unreadable: line {bad_line} column")),
        "{}",
        run.stdout
    );

    let run = sessions(&env, &["list", "--json"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let listed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(listed[0]["messageCount"], 1, "only the answer is a message");
    let note = format!("{}: 1 unreadable line(s) skipped", path.display());
    assert!(run.stderr.contains(&note), "{run:?}");
}

#[tokio::test]
async fn resume_of_passwd_or_an_empty_file_is_an_error_naming_the_file() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let passwd = env.proj.join("passwd");
    std::fs::write(
        &passwd,
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
    )
    .unwrap();
    let empty = env.proj.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let mut files = vec![passwd, empty];
    if Path::new("/etc/passwd").is_file() {
        files.push(PathBuf::from("/etc/passwd")); // the case the issue names
    }
    for file in &files {
        let f = file.to_str().unwrap();
        let run = env.run(Some(&server), &["-p", "hi", "--resume", f]).await;
        assert_eq!(run.code, Some(1), "{run:?}");
        assert!(
            run.stderr.contains(f) && run.stderr.contains("is not a session transcript"),
            "{run:?}"
        );
        assert!(run.stdout.is_empty(), "{run:?}");
    }
    assert!(server.requests().is_empty(), "no session was started");
    assert!(env.transcripts().is_empty(), "and none was recorded");
}

#[tokio::test]
async fn resume_of_a_mostly_garbage_file_warns_with_the_count_and_resumes_the_rest() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    let path = recorded_session(&env, &server).await;
    let good = std::fs::read_to_string(&path).unwrap();
    let garbage: String = (0..40)
        .map(|n| format!("garbage line {n} \u{1}\u{7f} {{not json\n"))
        .collect();
    std::fs::write(&path, format!("{garbage}{good}{garbage}")).unwrap();

    server.push(Reply::new().text("It was 42."));
    let p = path.to_str().unwrap();
    let run = env
        .run(Some(&server), &["-p", "which number?", "--resume", p])
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("80 unreadable line(s)") && run.stderr.contains(p),
        "{run:?}"
    );
    assert!(run.stderr.contains("line 1 column"), "{run:?}");
    let request = server.requests()[1].json().to_string();
    assert!(
        request.contains("remember 42") && request.contains("Noted: 42."),
        "the good records were resumed: {request}"
    );
    assert!(
        env.cfg
            .join("projects")
            .join(folder_name(&env.proj))
            .is_dir()
    );
}
