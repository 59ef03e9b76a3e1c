//! The `remote` workload (issue 17): what publishing to NATS JetStream costs a turn.
//!
//! ```text
//! cargo run --release -p strata-bench -- remote [--entries N] [--blocks N] [--turns N] [--entry-bytes N]
//! ```
//!
//! Needs `nats-server` (Debian's package). The bench starts one with JetStream file
//! storage on a free loopback port, then runs turns of one real engine (the query loop,
//! the transcript writer with its fsync at a turn's end, the store; the model played back
//! in process) two ways:
//!
//! - **baseline**: no remote — the engine's transcript mirror is switched off;
//! - **publishing**: the mirror feeds a `TranscriptPublisher` on that server (on the
//!   remote's own runtime thread, and told when a turn runs, as in the binary), with
//!   100,000 transcript entries (`--entries`, ~1 KB each, `--entry-bytes`) to publish — a
//!   long session caught up, or an outage's backlog — queued in shares (the turns' own
//!   lines queue behind).
//!
//! The two alternate in blocks (`--blocks`, 20 by default; `--turns` per block): turns
//! without the remote, and as many with it while the block's share of the entries is
//! being published (checked: still publishing when the block's turns end); every other
//! block runs the baseline second. One engine serves both, so both sides have the same
//! conversation, and whatever else the machine does falls on both. The NATS server stands
//! for another machine: it runs under the idle scheduling policy (`chrt --idle 0`) with
//! its store in memory (`/dev/shm` where there is one), so what is measured is what
//! publishing costs this machine, not what storing costs the server's. Printed as one
//! JSON line: the medians, the overhead of the medians (target: at most 5%) and the
//! median of the blocks' overheads, how fast the entries were stored, the CPU time the
//! remote's thread and the server took meanwhile, and the stream's message count, checked
//! to hold every entry and every mirrored line exactly once.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;
use strata_agent::engine::{
    Engine, EngineHandles, EngineOptions, EventSink, SdkOptions, TranscriptMirror,
};
use strata_agent::provider::{EventStream, ModelRequest, Provider, ReplayProvider};
use strata_protocol::message::{AssistantMessage, ContentBlock, Message, StopReason, Usage};
use strata_protocol::sdk::SdkMessage;
use strata_remote::{
    OutboxLimits, RemoteConnection, RemoteOptions, RemoteRuntime, TranscriptPublisher,
};
use tokio_util::sync::CancellationToken;

use crate::measure::{median, process_cpu_ms, threads_cpu_ms};

/// The issue's target: publishing adds at most this much to a turn.
const TARGET_OVERHEAD_PCT: f64 = 5.0;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let entries = crate::store::flag(args, "--entries")?.unwrap_or(100_000);
    let turns = crate::store::flag(args, "--turns")?.unwrap_or(100);
    let blocks = crate::store::flag(args, "--blocks")?.unwrap_or(20).max(1);
    let entry_bytes = crate::store::flag(args, "--entry-bytes")?.unwrap_or(1_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(workload(entries, turns, blocks, entry_bytes))
}

/// `nats-server -js` on a free loopback port; killed when dropped.
struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server() -> anyhow::Result<Server> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    // The server's store in memory: in use the server is another machine, and its disk
    // writes are not this machine's.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)?
    } else {
        tempfile::tempdir()?
    };
    // The server runs under the idle scheduling policy: in use it is another machine, and
    // what is measured is what publishing costs this one. (A nice value is not enough on
    // an EEVDF kernel: a woken turn thread still waits out the server's slice.)
    let child = Command::new("chrt")
        .args(["--idle", "0", "nats-server"])
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start nats-server (apt-get install nats-server)")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        anyhow::ensure!(Instant::now() < deadline, "nats-server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Server {
        child,
        url: format!("nats://127.0.0.1:{port}"),
        _dir: dir,
    })
}

async fn workload(
    entries: usize,
    turns: usize,
    blocks: usize,
    entry_bytes: usize,
) -> anyhow::Result<()> {
    let server = start_server()?;
    // As the binary does: the remote's work on a runtime of its own.
    let remote_runtime = RemoteRuntime::new()?;
    let connection = RemoteConnection::start_on(
        &RemoteOptions::from_url(&server.url),
        remote_runtime.handle(),
    )
    .await?;
    tokio::time::timeout(Duration::from_secs(10), connection.ready())
        .await
        .context("nats-server did not answer")?;
    let dir = tempfile::tempdir()?;
    let publisher = Arc::new(TranscriptPublisher::spawn_with(
        connection.clone(),
        OutboxLimits::default(),
        true,
        remote_runtime.handle(),
    ));
    let mirror = Arc::new(Mirror {
        publisher: Arc::clone(&publisher),
        on: AtomicBool::new(true),
        mirrored: AtomicU64::new(0),
    });
    let engine = open(dir.path(), "publishing", Arc::clone(&mirror) as _).await?;
    let session = engine.session_id();
    let transcript = engine.transcript_path();
    publisher.attach(
        &session,
        &transcript,
        &dir.path().join("publishing-session"),
    );
    // Warm-up: code, caches, transcript files and the connection in their steady state.
    let warmup = turns.max(10);
    mirror.on.store(false, Ordering::Relaxed);
    time_turns(&engine, warmup).await?;
    mirror.on.store(true, Ordering::Relaxed);
    time_turns(&engine, warmup).await?;
    assert_drained(&publisher).await?;
    let without_remote = async |n| {
        mirror.on.store(false, Ordering::Relaxed);
        let times = time_turns(&engine, n).await;
        mirror.on.store(true, Ordering::Relaxed);
        times
    };

    // Blocks alternate: turns without the remote, and the same number of turns while a
    // share of the backlog is being published. The machine's drift (other work on it)
    // falls on both sides.
    let filler = "x".repeat(entry_bytes.saturating_sub(120));
    let per_block = entries.div_ceil(blocks);
    let (mut baseline, mut publishing) = (Vec::new(), Vec::new());
    let mut block_overheads = Vec::new();
    let mut publish_seconds = 0.0;
    let mut outlasted = true;
    let mut queued = 0;
    let remote_cpu_before = threads_cpu_ms("strata-remote").unwrap_or(0.0);
    let server_cpu_before = process_cpu_ms(server.child.id()).unwrap_or(0.0);
    for block in 0..blocks {
        // Every other block runs its baseline turns after the publishing ones (once the
        // share is published), so running second (warmer caches, or a machine still
        // busy) favours neither side.
        let base_first = block % 2 == 0;
        let mut base = if base_first {
            without_remote(turns).await?
        } else {
            Vec::new()
        };
        let started = Instant::now();
        for _ in 0..per_block.min(entries - queued) {
            let id = uuid::Uuid::new_v4().to_string();
            let line = format!(
                r#"{{"type":"assistant","uuid":"{id}","n":{queued},"message":{{"content":[{{"type":"text","text":"{filler}"}}]}}}}"#
            );
            publisher.publish(&session, &id, &line);
            queued += 1;
        }
        let mut during = time_turns(&engine, turns).await?;
        outlasted &= publisher.stats().pending > 0;
        assert_drained(&publisher).await?;
        publish_seconds += started.elapsed().as_secs_f64();
        if !base_first {
            base = without_remote(turns).await?;
        }
        if let (Some(b), Some(p)) = (median(&mut base), median(&mut during)) {
            block_overheads.push((p / b - 1.0) * 100.0);
        }
        baseline.extend(base);
        publishing.extend(during);
    }

    let remote_cpu_ms = threads_cpu_ms("strata-remote").unwrap_or(0.0) - remote_cpu_before;
    let server_cpu_ms = process_cpu_ms(server.child.id()).unwrap_or(0.0) - server_cpu_before;
    let base_ms = median(&mut baseline).unwrap_or(0.0);
    let pub_ms = median(&mut publishing).unwrap_or(0.0);
    let overhead = if base_ms > 0.0 {
        (pub_ms / base_ms - 1.0) * 100.0
    } else {
        0.0
    };
    let block_median = median(&mut block_overheads).unwrap_or(0.0);
    let lines = mirror.mirrored.load(Ordering::Relaxed);
    let mut stream = connection.ready().await.stream;
    let stored = stream.info().await?.state.messages;
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    let tenth = |v: f64| (v * 10.0).round() / 10.0;
    println!(
        "{}",
        json!({
            "workload": "remote",
            "entries": entries,
            "entry_bytes": entry_bytes,
            "blocks": blocks,
            "turns_per_block": turns,
            "baseline_turn_ms": round(base_ms),
            "publishing_turn_ms": round(pub_ms),
            "overhead_pct": tenth(overhead),
            "block_overhead_median_pct": tenth(block_median),
            "target_overhead_pct": TARGET_OVERHEAD_PCT,
            "within_target": overhead <= TARGET_OVERHEAD_PCT,
            "backlog_outlasted_the_turns": outlasted,
            "published_seconds": tenth(publish_seconds),
            "entries_per_second": (entries as f64 / publish_seconds).round(),
            "remote_thread_cpu_ms": remote_cpu_ms,
            "server_cpu_ms": server_cpu_ms,
            "stream_messages": stored,
            "expected_messages": entries as u64 + lines,
        })
    );
    anyhow::ensure!(
        stored == entries as u64 + lines,
        "the stream holds {stored} messages, expected {} (every entry and transcript line once)",
        entries as u64 + lines
    );
    anyhow::ensure!(
        outlasted,
        "a block's share of the backlog was published before its turns ended: give more \
         --entries or fewer --turns"
    );
    engine.close().await?;
    Ok(())
}

async fn assert_drained(publisher: &TranscriptPublisher) -> anyhow::Result<()> {
    anyhow::ensure!(
        publisher.flush(Duration::from_secs(600)).await,
        "the publisher did not drain: {:?}",
        publisher.stats()
    );
    Ok(())
}

async fn open(
    root: &Path,
    name: &str,
    mirror: Arc<dyn TranscriptMirror>,
) -> anyhow::Result<Engine> {
    let project = root.join(name);
    std::fs::create_dir_all(project.join(".git"))?;
    Ok(Engine::open(EngineOptions {
        cwd: project,
        config_dir: root.join(format!("{name}-config")),
        handles: EngineHandles::private(),
        provider: Arc::new(Answer),
        model: Some("bench-model".into()),
        permission: Default::default(),
        settings_flag: None,
        resume: None,
        fork_session: false,
        max_turns: None,
        interactive: false,
        verbose: false,
        prompter: None,
        events: Arc::new(Quiet),
        system_prompt: None,
        append_system_prompt: None,
        mcp_config: Vec::new(),
        strict_mcp_config: false,
        max_thinking_tokens: None,
        sdk: SdkOptions {
            transcript_mirror: Some(mirror),
            ..SdkOptions::default()
        },
    })
    .await?)
}

/// Runs `n` turns, each timed from the prompt to its result.
async fn time_turns(engine: &Engine, n: usize) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        let result = engine
            .run_prompt(
                Message::user_text(format!("turn {i}: say ok")),
                CancellationToken::new(),
            )
            .await;
        times.push(started.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(!result.is_error, "a turn failed: {:?}", result.errors);
    }
    Ok(times)
}

/// Every line the engine writes, to the publisher (the binary's mirror does the same),
/// while `on`; off, the engine runs as without a remote.
struct Mirror {
    publisher: Arc<TranscriptPublisher>,
    on: AtomicBool,
    /// Lines handed to the publisher.
    mirrored: AtomicU64,
}

impl TranscriptMirror for Mirror {
    fn line(&self, session_id: &str, uuid: Option<&str>, json: &str) {
        if !self.on.load(Ordering::Relaxed) {
            return;
        }
        self.mirrored.fetch_add(1, Ordering::Relaxed);
        let id = uuid.map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
        self.publisher.publish(session_id, &id, json);
    }

    fn turn(&self, running: bool) {
        if self.on.load(Ordering::Relaxed) {
            self.publisher.turn(running);
        }
    }
}

/// The model answers "ok".
#[derive(Debug)]
struct Answer;

impl Provider for Answer {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let message = AssistantMessage {
            model: "bench-model".into(),
            id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
            content: vec![ContentBlock::text("ok")],
            stop_reason: Some(StopReason::EndTurn),
            stop_sequence: None,
            usage: Usage {
                input_tokens: 100,
                output_tokens: 2,
                ..Usage::default()
            },
            extra: Default::default(),
        };
        ReplayProvider::from_messages("bench", vec![message]).stream(request, cancel)
    }
}

/// The stream goes nowhere.
struct Quiet;

impl EventSink for Quiet {
    fn emit(&self, _message: SdkMessage) {}
}
