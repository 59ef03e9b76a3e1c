//! "Acknowledged means written" (issue 16, build item 6), proven at the process level: a
//! stream-json session of the real binary, driven by the scripted mock model through
//! several tool round trips, is killed with SIGKILL at a random moment; every record the
//! client saw on stdout (`assistant` lines and `user` tool results, by uuid) must then be
//! in the transcript file. A record printed before its line was handed to the kernel is
//! what the issue found (2 of 274 kills): the client saw a tool result a resume lacks.
//!
//! Kills land at random: half the trials right after the client reads a chosen line
//! (plus 0–2 ms), where a print that ran ahead of the write would show, and half at a
//! random time from the start of the run (start-up, streaming, tools running, shut-down).
//! The seed is printed; `STRATA_KILL_SEED=<seed>` replays a run.
//!
//! With the engine printing right after queueing a line (before the writer's written
//! acknowledgement existed), 19 of 300 trials of this test lost printed records on the
//! 2-core machine under load; with it, none of 200.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod headless_support;

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use headless_support::{Env, LIMIT, folder_name};

/// Tool round trips the scripted model asks for before its final answer.
const ROUND_TRIPS: usize = 3;

/// xorshift64*: enough randomness for timing, reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What one trial found.
#[derive(Default)]
struct Outcome {
    /// Records (assistant lines and tool results) the client saw.
    printed: usize,
    /// Of those, the ones missing from the transcript: uuid and kind.
    lost: Vec<(String, String)>,
    /// The session ended on its own before the kill.
    finished_first: bool,
}

/// Where to kill.
#[derive(Clone, Copy, Debug)]
enum KillAt {
    /// Right after the client has read this many lines, plus a delay.
    AfterLine(usize, Duration),
    /// This long after the process started.
    After(Duration),
}

/// The uuids of every whole line of the session's transcript (a torn last line, the
/// record being written when the process died, is not a record).
fn transcript_uuids(env: &Env) -> HashSet<String> {
    let dir = env.cfg.join("projects").join(folder_name(&env.proj));
    let mut uuids = HashSet::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return uuids; // killed before the first record created the file
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for line in bytes.split(|&b| b == b'\n') {
            if let Ok(v) = serde_json::from_slice::<Value>(line)
                && let Some(uuid) = v["uuid"].as_str()
            {
                uuids.insert(uuid.to_owned());
            }
        }
    }
    uuids
}

/// Scripts a session: `ROUND_TRIPS` responses of text plus a Bash call, then an answer.
fn script(server: &MockServer) {
    for i in 0..ROUND_TRIPS {
        server.push(
            Reply::new()
                .id(format!("msg_{i}"))
                .usage(100, 20)
                .text(format!("Step {i}: running it."))
                .tool_use(
                    format!("toolu_{i:02}"),
                    "Bash",
                    json!({"command": format!("echo step-{i}")}),
                ),
        );
    }
    server.push(
        Reply::new()
            .id("msg_end")
            .usage(150, 10)
            .text("All steps ran."),
    );
}

/// One trial: run, kill at `at`, compare what stdout showed with the file.
async fn trial(at: KillAt) -> Outcome {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    script(&server);
    let mut cmd = env.command(
        Some(&server),
        &[
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "Bash(echo:*)",
        ],
    );
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let prompt = json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": "run the steps"}]},
        "parent_tool_use_id": null,
    });
    stdin
        .write_all(format!("{prompt}\n").as_bytes())
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    drop(stdin); // the session ends after this prompt unless it is killed first

    // The client: reads stdout line by line as it comes, like an SDK.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (line_tx, mut line_rx) = tokio::sync::watch::channel(0usize);
    let stdout = child.stdout.take().unwrap();
    let reader = {
        let seen = Arc::clone(&seen);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let n = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(line);
                    seen.len()
                };
                let _ = line_tx.send(n);
            }
        })
    };

    let finished_first = match at {
        KillAt::AfterLine(k, delay) => {
            let reached = tokio::time::timeout(LIMIT, line_rx.wait_for(|&n| n >= k)).await;
            // The stream ended before line k: the session finished on its own.
            let ended = !matches!(reached, Ok(Ok(_)));
            if !ended {
                spin(delay);
            }
            ended
        }
        KillAt::After(t) => {
            tokio::time::sleep(t.saturating_sub(started.elapsed())).await;
            false
        }
    };
    let finished_first = finished_first || child.try_wait().unwrap().is_some();
    let _ = child.start_kill(); // SIGKILL
    tokio::time::timeout(LIMIT, child.wait())
        .await
        .expect("strata died in time")
        .unwrap();
    tokio::time::timeout(LIMIT, reader)
        .await
        .expect("stdout closed in time")
        .unwrap();

    let in_file = transcript_uuids(&env);
    let mut outcome = Outcome {
        finished_first,
        ..Outcome::default()
    };
    for line in seen.lock().unwrap().iter() {
        // A line cut short by the kill was never seen whole by the client.
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let kind = v["type"].as_str().unwrap_or_default();
        if !matches!(kind, "assistant" | "user") {
            continue;
        }
        let uuid = v["uuid"].as_str().expect("every printed record has a uuid");
        outcome.printed += 1;
        if !in_file.contains(uuid) {
            outcome.lost.push((uuid.to_owned(), kind.to_owned()));
        }
    }
    outcome
}

/// Busy-waits `d` (a sleep this short would be rounded up to the timer's resolution).
fn spin(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Runs `trials` kills and asserts that no printed record was lost.
async fn run_trials(trials: u64) {
    let seed: u64 = std::env::var("STRATA_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("kill trials: {trials}, seed {seed} (STRATA_KILL_SEED={seed} replays them)");
    let mut rng = Rng(seed | 1);
    // init, then per round trip an assistant text, an assistant tool use and the tool
    // result, then the answer and the result line.
    let lines_per_session = 1 + 3 * ROUND_TRIPS + 2;
    // The session's length, learned from the trials that ran to the end (start-up of a
    // debug binary dominates); a guess until then.
    let mut session_ms: u64 = 400;
    let (mut printed, mut lost, mut finished) = (0, Vec::new(), 0);
    for n in 0..trials {
        let at = if n % 2 == 0 {
            KillAt::AfterLine(
                1 + rng.below(lines_per_session as u64) as usize,
                Duration::from_micros(rng.below(2_000)),
            )
        } else {
            KillAt::After(Duration::from_millis(rng.below(session_ms + 1)))
        };
        let started = Instant::now();
        let outcome = trial(at).await;
        if outcome.finished_first {
            finished += 1;
            session_ms = session_ms.max(started.elapsed().as_millis() as u64);
        }
        printed += outcome.printed;
        if !outcome.lost.is_empty() {
            eprintln!("trial {n} ({at:?}): lost {:?}", outcome.lost);
        }
        lost.extend(outcome.lost);
    }
    eprintln!(
        "kill trials: {trials}, sessions that ended before the kill: {finished}, records \
         printed: {printed}, records lost: {}",
        lost.len()
    );
    assert!(
        lost.is_empty(),
        "{} printed record(s) missing from the transcript after SIGKILL (seed {seed}): {lost:?}",
        lost.len()
    );
    assert!(printed > 0, "the trials printed records at all");
}

/// 20 kills, in the normal suite (a few seconds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_never_loses_a_record_the_client_was_shown() {
    run_trials(20).await;
}

/// The long run: 200 kills (about 35 s on 2 cores).
///
/// ```text
/// cargo nextest run -p strata --test kill_ack --run-ignored only
/// ```
///
/// `STRATA_KILL_TRIALS=<n>` changes the number of kills, `STRATA_KILL_SEED=<seed>`
/// replays a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 200 kills; run with --run-ignored only (see the doc comment)"]
async fn sigkill_never_loses_a_record_the_client_was_shown_200_trials() {
    let trials = std::env::var("STRATA_KILL_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    run_trials(trials).await;
}
