//! The scripted mock model server as a program, for test suites that are not Rust (the
//! Agent SDK compatibility suite, `scripts/sdk-compat/`): serves the replies of a script
//! file in order on 127.0.0.1 and keeps a log of the requests it got.
//!
//! ```text
//! strata-mock-server --script replies.json --requests requests.jsonl
//! ```
//!
//! It prints its base URL (for `ANTHROPIC_BASE_URL`) as the first line of stdout and
//! serves until stdin closes or it is killed. The script is a JSON array; each reply is
//! an object with any of `text` (a text block), `tool_use` (`{"id","name","input"}`),
//! `delay_ms` (wait before answering: a slow model, for interrupt tests) and `error`
//! (`{"status","type","message"}`: an API error instead of a reply). The request log is
//! rewritten with one JSON line per request body whenever a request arrives.
//!
//! The server is strict, as the library's [`MockServer::start`]: a request the real
//! API would refuse gets that API's 400 error (and a line on stderr) and uses no reply.

#![allow(clippy::print_stdout, clippy::print_stderr)] // a command-line program

use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use strata_testkit::{MockResponse, MockServer, Reply};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("strata-mock-server: {message}");
            std::process::ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut script = None;
    let mut log = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--script" => script = args.next().map(PathBuf::from),
            "--requests" => log = args.next().map(PathBuf::from),
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: --script FILE [--requests FILE]"
                ));
            }
        }
    }
    let script = script.ok_or("--script FILE is required")?;
    let text = std::fs::read_to_string(&script)
        .map_err(|e| format!("{}: cannot read it: {e}", script.display()))?;
    let replies: Vec<Value> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a JSON array of replies: {e}", script.display()))?;
    let responses = replies
        .iter()
        .enumerate()
        .map(|(i, r)| response(r).map_err(|e| format!("{} reply {i}: {e}", script.display())))
        .collect::<Result<Vec<_>, _>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let server = MockServer::start().await.map_err(|e| e.to_string())?;
        server.push_all(responses);
        println!("{}", server.url());
        let _ = std::io::stdout().flush();
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                if line.is_err() {
                    break;
                }
            }
        });
        tokio::pin!(stdin_closed);
        let mut written = 0;
        loop {
            tokio::select! {
                _ = &mut stdin_closed => return Ok(()),
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            let requests = server.requests();
            if requests.len() != written
                && let Some(log) = &log
            {
                let lines: String = requests.iter().map(|r| format!("{}\n", r.json())).collect();
                let tmp = log.with_extension("tmp");
                std::fs::write(&tmp, lines)
                    .and_then(|()| std::fs::rename(&tmp, log))
                    .map_err(|e| format!("{}: cannot write it: {e}", log.display()))?;
                written = requests.len();
            }
        }
    })
}

/// One scripted reply.
fn response(reply: &Value) -> Result<MockResponse, String> {
    if let Some(error) = reply.get("error") {
        let status = error.get("status").and_then(Value::as_u64).unwrap_or(500);
        return Ok(MockResponse::error(
            u16::try_from(status).map_err(|_| "error.status is not an HTTP status")?,
            error
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("api_error"),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("scripted error"),
        ));
    }
    let mut built = Reply::new().usage(10, 5);
    if let Some(text) = reply.get("text") {
        built = built.text(text.as_str().ok_or("\"text\" must be a string")?);
    }
    if let Some(tool) = reply.get("tool_use") {
        let field = |k: &str| {
            tool.get(k)
                .and_then(Value::as_str)
                .ok_or(format!("tool_use.{k} must be a string"))
        };
        built = built.tool_use(
            field("id")?,
            field("name")?,
            tool.get("input").cloned().unwrap_or_default(),
        );
    }
    let mut response = MockResponse::message(built.build());
    if let Some(ms) = reply.get("delay_ms").and_then(Value::as_u64) {
        response = response.delay(Duration::from_millis(ms));
    }
    Ok(response)
}
