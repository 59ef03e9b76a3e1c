//! The `headless` workload (issue 6 "Done when"): how fast `strata -p` gets its first
//! request onto the wire, fresh and resuming a 100 MB session, and the memory resume
//! takes.
//!
//! ```text
//! cargo build --release -p strata -p strata-bench
//! target/release/strata-bench headless                 # both lines below
//! target/release/strata-bench headless --only startup  # or --only startup-git, resume
//! target/release/strata-bench headless --only resume --shape live   # one resumed session
//! ```
//!
//! Prints one JSON object per line:
//! - `{"workload":"startup","ms":…,"runs":20,"min_ms":…,"max_ms":…}`: process start →
//!   the first model request on the wire for `strata -p "hi"`, median of 20 runs (after
//!   2 unmeasured ones that warm the page cache). Target ≤ 30 ms (the reference agent:
//!   ~440 ms).
//! - `{"workload":"startup-git",…}`: the same in a real git repository with memory files
//!   (`CLAUDE.md` with an `@import`, `AGENTS.md`, `CLAUDE.local.md`), a changed and an
//!   untracked file: the cost of the system prompt's memory files and git context
//!   (issue 13: at most 5 ms more than `startup`).
//! - `{"workload":"resume","mb":100,"ms":…,"process_ms":…,"cpu_ms":…,"peak_rss_mb":…,…}`:
//!   `strata -p --resume <id> continue` of a generated 100 MB session, median of 5 runs
//!   (`--runs N` for another count): `ms` is process start → the request carrying the
//!   restored conversation on the wire, `process_ms` process start → exit (the whole
//!   run: load, request, streamed answer, transcript flushed, teardown), `cpu_ms` the
//!   child's user + system CPU time (10 ms resolution; on a loaded machine it varies far
//!   less than the wall times), `peak_rss_mb` the child's peak resident memory (median;
//!   `max_peak_rss_mb` the largest of the runs), and the size of the request. Targets
//!   (issue 10): the whole process ≤ 300 ms and peak RSS ≤ 120 MB (the reference agent:
//!   ~2.7 s and 770 MB). `shape` says which session: `realistic` (the sessions
//!   workload's, with the real corpus's proportions: most bytes are tool outputs kept
//!   twice, progress lines and snapshots, which resume skims) and `live` (issue 25: no
//!   compact boundary and nothing but the conversation, so nearly every byte goes into
//!   the request; the same targets). `--shape realistic|live` runs one of them.
//!
//! What is measured: the real release `strata` binary (found next to this one) is spawned
//! against a model server on 127.0.0.1 that this process runs; the clock starts just
//! before `spawn` and stops when the server has read the whole request head. The server
//! then answers with a short streamed reply so the run completes normally (and is checked
//! to exit 0). Each run has its own config directory, so nothing is cached between runs
//! but the operating system's page cache.
//!
//! Peak memory is the child's `VmHWM` (its high-water resident set) read from
//! `/proc/<pid>/status` every millisecond while it runs: the value only grows, so the
//! last reading before exit is the peak of everything up to a millisecond before the
//! end (after the session was loaded, the request sent, the answer streamed and the
//! transcript flushed). Reading it needs no unsafe `wait4` call.
//!
//! The 100 MB session comes from `strata-bench sessions --generate` (the sessions
//! workload's generator: the reference format with the real corpus's proportions).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

const STARTUP_RUNS: usize = 20;
const STARTUP_WARMUP: usize = 2;
const RESUME_RUNS: usize = 5;
/// What the resumed session is asked (issue 10's command: `strata -p --resume <id> continue`).
const RESUME_PROMPT: &str = "continue";
const RESUME_MB: u64 = 100;
/// The sessions resumed: see the module docs.
const RESUME_SHAPES: [&str; 2] = ["realistic", "live"];
/// A run that takes longer than this is stuck.
const RUN_LIMIT: Duration = Duration::from_secs(60);

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let only = flag(args, "--only");
    let resume_runs = match flag(args, "--runs") {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("--runs wants a positive number, not {n:?}"))?,
        None => RESUME_RUNS,
    };
    let strata = strata_binary()?;
    let work = std::env::temp_dir().join(format!("strata-bench-headless-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let result = (|| {
        let server = Server::start()?;
        if only.is_none_or(|o| o == "startup") {
            startup(&strata, &server, &work)?;
        }
        if only.is_none_or(|o| o == "startup-git") {
            startup_git(&strata, &server, &work)?;
        }
        if only.is_none_or(|o| o == "resume") {
            for shape in RESUME_SHAPES {
                if flag(args, "--shape").is_none_or(|s| s == shape) {
                    resume(&strata, &server, &work, resume_runs, shape)?;
                }
            }
        }
        Ok(())
    })();
    // The resume workload leaves 100 MB behind: never keep it.
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// The `strata` binary next to this one (both are built into the same target directory).
pub(crate) fn strata_binary() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find the strata-bench executable")?;
    let dir = me
        .parent()
        .context("strata-bench has no parent directory")?;
    let strata = dir.join(format!("strata{}", std::env::consts::EXE_SUFFIX));
    if !strata.is_file() {
        bail!(
            "the strata binary is missing next to strata-bench ({}): build it with \
             `cargo build --release -p strata` (and run the release strata-bench)",
            strata.display()
        );
    }
    Ok(strata)
}

fn startup(strata: &Path, server: &Server, work: &Path) -> anyhow::Result<()> {
    let project = work.join("startup-project");
    std::fs::create_dir_all(project.join(".git"))?;
    startup_in(strata, server, work, &project, "startup")
}

/// `strata -p hi` in a real repository (commits, a changed file, an untracked one) with
/// memory files (`CLAUDE.md` importing another, `AGENTS.md`, `CLAUDE.local.md`): what
/// building the system prompt costs at start-up (issue 13: ≤ 5 ms more than `startup`).
fn startup_git(strata: &Path, server: &Server, work: &Path) -> anyhow::Result<()> {
    let project = work.join("startup-git-project");
    std::fs::create_dir_all(project.join("src"))?;
    let git = |args: &[&str]| -> anyhow::Result<()> {
        let status = Command::new("git")
            .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
            .args(args)
            .current_dir(&project)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .context("cannot run git (needed for the startup-git workload)")?;
        if !status.success() {
            bail!("git {args:?} failed");
        }
        Ok(())
    };
    git(&["init", "-q", "-b", "main"])?;
    for i in 0..20 {
        std::fs::write(
            project.join(format!("src/f{i}.rs")),
            format!("fn f{i}() {{}}\n"),
        )?;
    }
    std::fs::write(
        project.join("CLAUDE.md"),
        "# Project rules\n\nRun the tests before committing. See @docs/style.md\n".repeat(20),
    )?;
    std::fs::create_dir_all(project.join("docs"))?;
    std::fs::write(
        project.join("docs/style.md"),
        "Four spaces, no tabs.\n".repeat(50),
    )?;
    std::fs::write(project.join("AGENTS.md"), "Be brief.\n".repeat(30))?;
    git(&["add", "."])?;
    for i in 0..5 {
        git(&[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            &format!("change number {i}"),
        ])?;
    }
    std::fs::write(project.join("src/f0.rs"), "fn changed() {}\n")?;
    std::fs::write(project.join("untracked.txt"), "new\n")?;
    std::fs::write(project.join("CLAUDE.local.md"), "My private notes.\n")?;
    startup_in(strata, server, work, &project, "startup-git")
}

fn startup_in(
    strata: &Path,
    server: &Server,
    work: &Path,
    project: &Path,
    workload: &str,
) -> anyhow::Result<()> {
    let mut samples = Vec::new();
    for i in 0..STARTUP_WARMUP + STARTUP_RUNS {
        let config = work.join(format!("{workload}-config-{i}"));
        let run = run_once(strata, server, project, &config, &["-p", "hi"])?;
        std::fs::remove_dir_all(&config)?;
        if i >= STARTUP_WARMUP {
            samples.push(run.first_request_ms);
        }
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "{}",
        json!({
            "workload": workload,
            "ms": round2(samples[samples.len() / 2]),
            "runs": samples.len(),
            "min_ms": round2(samples[0]),
            "max_ms": round2(samples[samples.len() - 1]),
        })
    );
    Ok(())
}

fn resume(
    strata: &Path,
    server: &Server,
    work: &Path,
    count: usize,
    shape: &str,
) -> anyhow::Result<()> {
    let project = work.join(format!("resume-{shape}-project"));
    std::fs::create_dir_all(project.join(".git"))?;
    let config = work.join(format!("resume-{shape}-config"));
    let path = generate_shape(&config, &project, shape)?;
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the generated session has no id")?
        .to_owned();
    let file_mb = std::fs::metadata(&path)?.len() as f64 / (1024.0 * 1024.0);
    // Each run appends its prompt and answer (a few hundred bytes) to the session.
    let mut runs = Vec::new();
    for _ in 0..count {
        runs.push(run_once(
            strata,
            server,
            &project,
            &config,
            &["-p", "--resume", &id, RESUME_PROMPT],
        )?);
    }
    let messages = runs[0].request_messages;
    if messages < 100 {
        bail!("the resumed request carried only {messages} messages: the session was not restored");
    }
    let median_of = |f: fn(&Measured) -> Option<f64>| {
        let mut v: Vec<f64> = runs.iter().filter_map(f).collect();
        crate::measure::median(&mut v)
    };
    let mut ms: Vec<f64> = runs.iter().map(|r| r.first_request_ms).collect();
    ms.sort_by(f64::total_cmp);
    let peak = median_of(|r| r.peak_rss_mb).unwrap_or(0.0);
    let max_peak = runs
        .iter()
        .filter_map(|r| r.peak_rss_mb)
        .fold(0.0, f64::max);
    println!(
        "{}",
        json!({
            "workload": "resume",
            "shape": shape,
            "mb": RESUME_MB,
            "ms": round2(ms[ms.len() / 2]),
            "process_ms": median_of(|r| Some(r.exit_ms)).map(round2),
            "cpu_ms": median_of(|r| r.cpu_ms),
            "peak_rss_mb": round1(peak),
            "max_peak_rss_mb": round1(max_peak),
            "file_mb": round1(file_mb),
            "peak_rss_per_file_size": (peak / file_mb * 100.0).round() / 100.0,
            "runs": ms.len(),
            "min_ms": round2(ms[0]),
            "max_ms": round2(ms[ms.len() - 1]),
            "min_process_ms": runs.iter().map(|r| r.exit_ms).reduce(f64::min).map(round2),
            "max_process_ms": runs.iter().map(|r| r.exit_ms).reduce(f64::max).map(round2),
            "request_messages": messages,
            "request_mb": round1(runs[0].request_mb),
        })
    );
    // 100 MB each: not kept once measured.
    let _ = std::fs::remove_dir_all(&config);
    Ok(())
}

/// Generates the session with the sessions workload's generator (this binary, run in the
/// project so the session belongs to it); returns its path.
pub(crate) fn generate(config: &Path, project: &Path) -> anyhow::Result<PathBuf> {
    generate_shape(config, project, "realistic")
}

/// [`generate`] of a `shape` (`realistic` or `live`: see the module docs).
fn generate_shape(config: &Path, project: &Path, shape: &str) -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let output = Command::new(me)
        .args(["sessions", "--generate"])
        .arg(config)
        .args(["--mb", &RESUME_MB.to_string(), "--shape", shape])
        .current_dir(project)
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run the session generator")?;
    if !output.status.success() {
        bail!(
            "`strata-bench sessions --generate` failed ({})",
            output.status
        );
    }
    let line: Value = serde_json::from_slice(&output.stdout)
        .context("the session generator printed no JSON line")?;
    let path = line["generated"]
        .as_str()
        .context("the generator named no file")?;
    Ok(PathBuf::from(path))
}

struct Measured {
    first_request_ms: f64,
    /// Process start → exit.
    exit_ms: f64,
    /// The child's user + system CPU time (`None` where `/proc` cannot tell).
    cpu_ms: Option<f64>,
    peak_rss_mb: Option<f64>,
    request_messages: usize,
    request_mb: f64,
}

/// Runs strata once; returns when it exited (successfully, or this fails).
fn run_once(
    strata: &Path,
    server: &Server,
    project: &Path,
    config: &Path,
    args: &[&str],
) -> anyhow::Result<Measured> {
    server.drain();
    let mut cmd = Command::new(strata);
    cmd.args(args)
        .current_dir(project)
        .env("STRATA_CONFIG_DIR", config)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "bench")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let cpu_before = crate::measure::children_cpu_ms();
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", strata.display()))?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = None;
    let (status, exit_ms) = loop {
        if let Some(kb) = vm_hwm_kb(&status_file) {
            peak = Some(kb);
        }
        if let Some(status) = child.try_wait()? {
            break (status, start.elapsed().as_secs_f64() * 1000.0);
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            bail!(
                "strata {} did not finish within {RUN_LIMIT:?}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // `try_wait` reaped the child, so its CPU time is in this process's children's.
    let cpu_ms = crate::measure::children_cpu_ms()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    if !status.success() {
        bail!(
            "strata {} failed ({status}): {}",
            args.join(" "),
            stderr.trim()
        );
    }
    let request = server
        .requests
        .recv_timeout(Duration::from_secs(1))
        .context("strata finished without sending a request")?;
    Ok(Measured {
        first_request_ms: request.at.duration_since(start).as_secs_f64() * 1000.0,
        exit_ms,
        cpu_ms,
        peak_rss_mb: peak.map(|kb| kb as f64 / 1024.0),
        request_messages: request.messages(),
        request_mb: request.body.len() as f64 / (1024.0 * 1024.0),
    })
}

fn vm_hwm_kb(status_file: &str) -> Option<u64> {
    let status = std::fs::read_to_string(status_file).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A request as the server saw it.
struct Seen {
    /// When its whole head had arrived.
    at: Instant,
    /// Its body.
    body: Vec<u8>,
}

impl Seen {
    /// How many messages the body carried.
    fn messages(&self) -> usize {
        serde_json::from_slice::<Value>(&self.body)
            .ok()
            .and_then(|b| b["messages"].as_array().map(Vec::len))
            .unwrap_or(0)
    }
}

/// A minimal Messages API server on 127.0.0.1: it timestamps each request's head and
/// answers every request with the same short streamed reply.
struct Server {
    port: u16,
    requests: mpsc::Receiver<Seen>,
}

impl Server {
    fn start() -> anyhow::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let (tx, requests) = mpsc::channel();
        std::thread::Builder::new()
            .name("bench-model-server".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    let tx = tx.clone();
                    // One thread per connection: strata may open a second one while the first
                    // is still being answered.
                    let _ = std::thread::Builder::new().spawn(move || {
                        let _ = serve(stream, &tx);
                    });
                }
            })?;
        Ok(Self { port, requests })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Forgets requests left from an earlier run.
    fn drain(&self) {
        while self.requests.try_recv().is_ok() {}
    }
}

/// Serves the requests of one connection.
fn serve(stream: TcpStream, seen: &mpsc::Sender<Seen>) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let mut content_length = 0usize;
        let mut line = String::new();
        let mut first = true;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(()); // the client closed the connection
            }
            if line == "\r\n" && !first {
                break;
            }
            first = false;
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                content_length = value.trim().parse().unwrap_or(0);
            }
        }
        let at = Instant::now();
        let mut body = vec![0; content_length];
        reader.read_exact(&mut body)?;
        // Answered at once; the body is parsed (to count its messages) after strata has
        // exited, so parsing 28 MB here does not compete with the run being measured.
        let sse = reply();
        write!(
            writer,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{sse}",
            sse.len()
        )?;
        writer.flush()?;
        let _ = seen.send(Seen { at, body });
    }
}

/// A complete streamed answer: one text block, `end_turn`.
fn reply() -> String {
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message",
                "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "ok"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                "stop_sequence": null}, "usage": {"output_tokens": 2}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}
