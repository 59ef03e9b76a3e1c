//! Live settings (UI-7, issue 10 "Done when") through the real binary: a stream-json
//! headless session (`strata -p --input-format stream-json --output-format stream-json`)
//! against the scripted mock model, with the settings files edited from outside while it
//! runs. The next tool call obeys the new rules; a broken edit is reported once (file,
//! line, column) and changes nothing; the model and `env` (FX-5) follow the `--settings`
//! file. And settings that cannot be used fail closed (issue 16): a broken or unreadable
//! file, a malformed `--disallowedTools` rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use headless_support::{Env, LIMIT};

/// A stream-json session whose stderr is read while it runs: each applied settings
/// reload is logged there at `info` ("settings reloaded"), which is how the test knows
/// an edit has been taken in before it sends the next prompt.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Session {
    fn start(env: &Env, server: &MockServer, extra: &[&str]) -> Self {
        let mut args = vec![
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ];
        args.extend_from_slice(extra);
        let mut cmd = env.command(Some(server), &args);
        cmd.env("STRATA_LOG", "strata_state=info,warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err_lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        tokio::spawn(async move {
            while let Ok(Some(line)) = err_lines.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    async fn prompt(&mut self, text: &str) {
        let line = json!({
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            "parent_tool_use_id": null,
        });
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The stdout lines up to and including the next `result`.
    async fn turn(&mut self) -> Vec<Value> {
        let mut lines = Vec::new();
        loop {
            let line = tokio::time::timeout(LIMIT, self.stdout.next_line())
                .await
                .expect("a line in time")
                .unwrap()
                .expect("stdout still open");
            let value: Value = serde_json::from_str(&line).unwrap();
            let done = value["type"] == "result";
            lines.push(value);
            if done {
                return lines;
            }
        }
    }

    /// Waits until `count` stderr lines satisfy `pred`.
    async fn stderr_until(&self, what: &str, count: usize, pred: impl Fn(&str) -> bool) {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let seen = self
                .stderr
                .lock()
                .unwrap()
                .iter()
                .filter(|l| pred(l))
                .count();
            if seen >= count {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {what} on stderr in time; stderr: {:#?}",
                self.stderr.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the `n`-th reload of `file` was applied.
    async fn reloaded(&self, file: &Path, n: usize) {
        let file = file.display().to_string();
        self.stderr_until("settings reload", n, |l| {
            l.contains("settings reloaded") && l.contains(&file)
        })
        .await;
    }

    async fn finish(mut self) -> (Option<i32>, Vec<String>) {
        drop(self.stdin);
        while let Ok(Ok(Some(_))) = tokio::time::timeout(LIMIT, self.stdout.next_line()).await {}
        let status = tokio::time::timeout(LIMIT, self.child.wait())
            .await
            .expect("exit in time")
            .unwrap();
        // Let the stderr task read the last lines.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let stderr = self.stderr.lock().unwrap().clone();
        (status.code(), stderr)
    }
}

/// Replaces `path` the way editors and strata save (a new file renamed over the old), so
/// the watcher never sees a half-written file.
fn save(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The `tool_result` blocks of a turn's lines.
fn tool_results(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| {
            l["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

fn denied(lines: &[Value]) -> Vec<String> {
    lines.last().unwrap()["permission_denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["tool_use_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Issue 10, "Done when": a test edits `settings.local.json` during a stream-json session
/// and the next tool call obeys the new deny rule; a broken edit is reported and changes
/// nothing.
#[tokio::test]
async fn ui7_an_edit_of_local_settings_mid_session_governs_the_next_tool_call() {
    let env = Env::new();
    let local = env.proj.join(".strata/settings.local.json");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    std::fs::write(&local, r#"{"permissions": {"allow": ["Bash"]}}"#).unwrap();
    let server = MockServer::start().await.unwrap();
    for (id, file) in [("t1", "one.txt"), ("t2", "two.txt"), ("t3", "three.txt")] {
        server.push(Reply::new().tool_use(id, "Bash", json!({"command": format!("touch {file}")})));
        server.push(Reply::new().text("done"));
    }
    let mut s = Session::start(&env, &server, &[]);

    // Allowed by the file as it was at start.
    s.prompt("touch one").await;
    let turn = s.turn().await;
    assert!(denied(&turn).is_empty(), "{turn:#?}");
    assert!(env.proj.join("one.txt").exists());

    // An external edit adds a deny rule: the next call obeys it.
    save(
        &local,
        r#"{"permissions": {"allow": ["Bash"], "deny": ["Bash(touch:*)"]}}"#,
    );
    s.reloaded(&local, 1).await;
    s.prompt("touch two").await;
    let turn = s.turn().await;
    assert_eq!(denied(&turn), ["t2"], "{turn:#?}");
    let result = &tool_results(&turn)[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result.to_string().contains("Bash(touch:*)"),
        "the reason names the rule: {result}"
    );
    assert!(!env.proj.join("two.txt").exists());

    // A broken edit (it would drop the deny rule if it were read): reported with file,
    // line and column, and the last good rules stay in force.
    let broken = "{\n  \"permissions\": {\n    \"allow\": [\"Bash\"],\n    \"deny\": [],\n  }\n}\n";
    save(&local, broken);
    let report = format!("{}: line 5, column 3", local.display());
    s.stderr_until("report of the broken file", 1, |l| l.contains(&report))
        .await;
    s.reloaded(&local, 2).await;
    s.prompt("touch three").await;
    let turn = s.turn().await;
    assert_eq!(
        denied(&turn),
        ["t3"],
        "the broken edit changed nothing: {turn:#?}"
    );
    assert!(!env.proj.join("three.txt").exists());

    let (code, stderr) = s.finish().await;
    assert_eq!(code, Some(0));
    let reports: Vec<&String> = stderr.iter().filter(|l| l.contains(&report)).collect();
    assert_eq!(reports.len(), 1, "reported once: {stderr:#?}");
    assert!(reports[0].contains("last good"), "{}", reports[0]);
    assert_eq!(
        std::fs::read_to_string(&local).unwrap(),
        broken,
        "nothing is written back to a broken file"
    );
}

/// The model and `env` (FX-5) follow a `--settings` file edited mid-session.
#[tokio::test]
async fn ui7_fx5_the_settings_file_s_model_and_env_change_mid_session() {
    let env = Env::new();
    let flag = env.home.join("ci-settings.json");
    std::fs::write(&flag, r#"{"model": "claude-first"}"#).unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("first"));
    server.push(Reply::new().tool_use(
        "t1",
        "Bash",
        json!({"command": "printf %s \"$STRATA_LIVE_SETTING\" > env.txt"}),
    ));
    server.push(Reply::new().text("second"));
    let flag_arg = flag.to_str().unwrap();
    let mut s = Session::start(
        &env,
        &server,
        &["--settings", flag_arg, "--allowedTools", "Bash"],
    );
    s.prompt("hello").await;
    s.turn().await;
    save(
        &flag,
        r#"{"model": "claude-second", "env": {"STRATA_LIVE_SETTING": "live"}}"#,
    );
    s.reloaded(&flag, 1).await;
    s.prompt("again").await;
    let turn = s.turn().await;
    assert!(denied(&turn).is_empty(), "{turn:#?}");
    let requests = server.requests();
    assert_eq!(requests[0].json()["model"], "claude-first");
    assert_eq!(requests[1].json()["model"], "claude-second");
    assert_eq!(
        std::fs::read_to_string(env.proj.join("env.txt")).unwrap(),
        "live"
    );
    let (code, _) = s.finish().await;
    assert_eq!(code, Some(0));
}

/// Issue 16: a broken project settings file at start, with no good version ever read,
/// makes every tool call ask; headless, that is a denial naming file, line and column.
#[tokio::test]
async fn a_project_settings_file_with_a_trailing_comma_denies_headless_tool_calls() {
    let env = Env::new();
    let project = env.proj.join(".strata/settings.json");
    std::fs::create_dir_all(project.parent().unwrap()).unwrap();
    std::fs::write(
        &project,
        "{\"permissions\": {\"deny\": [\"Bash(touch:*)\",]}}",
    )
    .unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("t1", "Bash", json!({"command": "touch x.txt"})));
    server.push(Reply::new().text("done"));
    let mut s = Session::start(
        &env,
        &server,
        &["--allowedTools", "Bash", "--dangerously-skip-permissions"],
    );
    s.prompt("touch").await;
    let turn = s.turn().await;
    assert_eq!(denied(&turn), ["t1"], "{turn:#?}");
    let result = tool_results(&turn)[0].to_string();
    assert!(
        result.contains(&format!("{}: line 1, column", project.display())),
        "{result}"
    );
    assert!(!env.proj.join("x.txt").exists());
    let (code, stderr) = s.finish().await;
    assert_eq!(code, Some(0));
    assert!(
        stderr
            .iter()
            .any(|l| l.contains(&project.display().to_string())),
        "{stderr:#?}"
    );
}

/// Issue 16: a committed project settings file linked to `/dev/zero` grew strata to
/// 7.7 GB; now the session starts at once, says which file it refused, and fails closed.
#[cfg(unix)]
#[tokio::test]
async fn a_project_settings_link_to_dev_zero_is_refused_and_the_session_still_runs() {
    let env = Env::new();
    let project = env.proj.join(".strata/settings.json");
    std::fs::create_dir_all(project.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &project).unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("hello"));
    let started = std::time::Instant::now();
    let run = env.run(Some(&server), &["-p", "hi"]).await;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.stdout.trim(), "hello");
    assert!(
        run.stderr.contains(&project.display().to_string())
            && run.stderr.contains("character device"),
        "{}",
        run.stderr
    );
}

/// A `--settings` file that is a FIFO is refused before the session starts (exit 2),
/// like one that does not parse: the user asked for those settings.
#[cfg(unix)]
#[tokio::test]
async fn a_settings_flag_naming_a_fifo_is_a_usage_error_not_a_hang() {
    let env = Env::new();
    let fifo = env.home.join("settings.fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let server = MockServer::start().await.unwrap();
    let run = env
        .run(
            Some(&server),
            &["-p", "hi", "--settings", fifo.to_str().unwrap()],
        )
        .await;
    assert!(server.requests().is_empty(), "no session was started");
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(
        run.stderr.contains(&fifo.display().to_string()) && run.stderr.contains("FIFO"),
        "{}",
        run.stderr
    );
}

/// Issue 16: a deny rule that does not parse would deny nothing; given on the command
/// line, the session does not start.
#[tokio::test]
async fn a_malformed_disallowed_tools_rule_stops_the_session_before_anything_runs() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("t1", "Bash", json!({"command": "touch x.txt"})));
    server.push(Reply::new().text("done"));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "go",
                "--allowedTools",
                "Bash",
                "--disallowedTools",
                "Bash(touch",
            ],
        )
        .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("Bash(touch") && run.stderr.contains("--disallowedTools"),
        "{}",
        run.stderr
    );
    assert!(server.requests().is_empty());
    assert!(!env.proj.join("x.txt").exists());
}
