//! Helpers for the headless tests: a private config directory and project per test, the
//! real `strata` binary pointed at a mock model server on 127.0.0.1, and a driver for
//! stream-json sessions that writes stdin and reads stdout line by line.

#![allow(dead_code, unreachable_pub)] // each test file uses part of this; `pub` is for them

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use strata_testkit::MockServer;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long any one run may take before the test fails (a hang is a bug).
pub const LIMIT: Duration = Duration::from_secs(60);

/// A temporary config directory and project (a git root) for one test.
pub struct Env {
    _tmp: tempfile::TempDir,
    pub cfg: PathBuf,
    pub proj: PathBuf,
    pub home: PathBuf,
}

impl Env {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let cfg = base.join("cfg");
        let proj = base.join("proj");
        let home = base.join("home");
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Self {
            _tmp: tmp,
            cfg,
            proj,
            home,
        }
    }

    /// `strata <args>` in the project with this config dir; talking to `server` when one
    /// is given, with no provider configured otherwise.
    pub fn command(&self, server: Option<&MockServer>, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.args(args)
            .current_dir(&self.proj)
            .env("STRATA_CONFIG_DIR", &self.cfg)
            .env("HOME", &self.home)
            .kill_on_drop(true);
        for var in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OPENAI_MODEL",
            "STRATA_MAX_RETRIES",
        ] {
            cmd.env_remove(var);
        }
        if let Some(server) = server {
            cmd.env("ANTHROPIC_BASE_URL", server.url())
                .env("ANTHROPIC_API_KEY", "test-key");
        }
        cmd
    }

    /// Runs `strata <args>` to the end with `stdin` as its input.
    pub async fn run_with(&self, server: Option<&MockServer>, args: &[&str], stdin: &str) -> Run {
        run_command(self.command(server, args), stdin).await
    }

    /// Runs `strata <args>` to the end with empty stdin.
    pub async fn run(&self, server: Option<&MockServer>, args: &[&str]) -> Run {
        self.run_with(server, args, "").await
    }

    /// The session transcripts of the project, as (path, lines).
    pub fn transcripts(&self) -> Vec<(PathBuf, Vec<Value>)> {
        let dir = self.cfg.join("projects").join(folder_name(&self.proj));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut out: Vec<(PathBuf, Vec<Value>)> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .map(|p| {
                let lines = std::fs::read_to_string(&p)
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
                (p, lines)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// Runs `cmd` to the end with `stdin` as its input.
pub async fn run_command(mut cmd: Command, stdin: &str) -> Run {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let output = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("strata finished in time")
        .unwrap();
    Run::from(output)
}

/// The project folder name of `path` (every character outside `[A-Za-z0-9]` → `-`).
pub fn folder_name(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A finished run.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Run {
    fn from(o: std::process::Output) -> Self {
        Self {
            code: o.status.code(),
            stdout: String::from_utf8(o.stdout).unwrap(),
            stderr: String::from_utf8(o.stderr).unwrap(),
        }
    }
}

impl Run {
    /// Stdout as JSON lines (every line must be one).
    pub fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// The `type` (and `subtype` for system lines) of each stdout line.
    pub fn kinds(&self) -> Vec<String> {
        self.lines().iter().map(kind).collect()
    }

    /// The last `result` line.
    pub fn result(&self) -> Value {
        let found = self
            .lines()
            .into_iter()
            .rev()
            .find(|l| l["type"] == "result");
        found.unwrap_or_else(|| panic!("no result line: {self:#?}"))
    }
}

/// `type`, or `type/subtype` for system lines and control messages.
pub fn kind(line: &Value) -> String {
    let t = line["type"].as_str().unwrap_or("?");
    match t {
        "system" => format!("system/{}", line["subtype"].as_str().unwrap_or("?")),
        "control_request" => format!(
            "control_request/{}",
            line["request"]["subtype"].as_str().unwrap_or("?")
        ),
        "control_response" => format!(
            "control_response/{}",
            line["response"]["subtype"].as_str().unwrap_or("?")
        ),
        other => other.to_owned(),
    }
}

/// A running stream-json session.
pub struct Driver {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Every line read so far.
    pub seen: Vec<Value>,
}

impl Driver {
    /// Starts `strata -p --input-format stream-json --output-format stream-json --verbose
    /// <extra>`.
    pub fn start(env: &Env, server: &MockServer, extra: &[&str]) -> Self {
        let mut args = vec![
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ];
        args.extend_from_slice(extra);
        Self::spawn(env.command(Some(server), &args))
    }

    /// Starts `cmd` as a stream-json session (its arguments as given: the Agent SDKs
    /// start strata without `-p`).
    pub fn spawn(mut cmd: Command) -> Self {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            seen: Vec::new(),
        }
    }

    /// Writes one line.
    pub async fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Sends a user message with `text`.
    pub async fn prompt(&mut self, text: &str) {
        let line = serde_json::json!({
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            "parent_tool_use_id": null,
        });
        self.send(&line.to_string()).await;
    }

    /// Sends a control request.
    pub async fn control(&mut self, id: &str, request: Value) {
        let line =
            serde_json::json!({"type": "control_request", "request_id": id, "request": request});
        self.send(&line.to_string()).await;
    }

    /// The next stdout line (fails the test after [`LIMIT`] or at end of output).
    pub async fn next(&mut self) -> Value {
        let mut line = String::new();
        let n = tokio::time::timeout(LIMIT, self.stdout.read_line(&mut line))
            .await
            .unwrap_or_else(|_| panic!("no line in time; lines so far: {:#?}", self.seen))
            .unwrap();
        assert!(n > 0, "stdout ended; lines so far: {:#?}", self.seen);
        let value: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        self.seen.push(value.clone());
        value
    }

    /// Reads lines until one matches `pred`; returns it.
    pub async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self.next().await;
            if pred(&line) {
                return line;
            }
        }
    }

    /// Reads lines until the control response to `id`.
    pub async fn response(&mut self, id: &str) -> Value {
        self.until(|l| l["type"] == "control_response" && l["response"]["request_id"] == id)
            .await
    }

    /// Reads lines until a `result`.
    pub async fn result(&mut self) -> Value {
        self.until(|l| l["type"] == "result").await
    }

    /// Closes stdin and waits for the process.
    pub async fn finish(mut self) -> Finished {
        drop(self.stdin.take());
        let mut rest = String::new();
        tokio::time::timeout(LIMIT, self.stdout.read_to_string(&mut rest))
            .await
            .expect("stdout closed in time")
            .unwrap();
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut stderr).await.unwrap();
        }
        let status = tokio::time::timeout(LIMIT, self.child.wait())
            .await
            .expect("exit in time")
            .unwrap();
        let rest: Vec<Value> = rest
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mut all = self.seen;
        all.extend(rest.iter().cloned());
        Finished {
            code: status.code(),
            rest,
            all,
            stderr,
        }
    }
}

/// A stream-json session that ended.
#[derive(Debug)]
pub struct Finished {
    /// The exit code.
    pub code: Option<i32>,
    /// The lines printed after stdin closed.
    pub rest: Vec<Value>,
    /// Every line printed.
    pub all: Vec<Value>,
    /// Everything on stderr.
    pub stderr: String,
}

/// Pids of the running processes one of whose arguments is exactly `arg` (a marker the
/// orphan tests put on a `sleep`). Zombies have an empty command line, so they are not
/// counted: they run no more.
pub fn pids_with_arg(arg: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}
