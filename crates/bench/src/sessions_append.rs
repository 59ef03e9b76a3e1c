//! The `append` part of the `sessions` workload (issue 5 part 9): realistic transcript
//! entries of 0.5–5 KB appended through the real [`TranscriptWriter`], with a turn-end
//! fsync every 1,000 entries. Target: ≥ 200,000 entries per second on the 2-core
//! machine.
//!
//! ```text
//! cargo run --release -p strata-bench -- sessions            # the whole sessions workload
//! strata-bench sessions --append-entries 500000              # a longer append run
//! ```
//!
//! Entries alternate like a real session: assistant text and tool-use lines, user lines
//! carrying tool results, the odd progress line, each with the reference's common fields
//! and a fresh uuid. Their sizes follow the distribution of the real transcripts in the
//! shared corpus, restricted to 0.5–5 KB ([`SIZE_QUANTILES`]: half the lines are progress
//! and tool lines of ~630 bytes, a tenth are over 1.7 KB; mean about 1 KB). Serialization happens inside the
//! timed loop, on the caller's thread, as it does in the agent.
//!
//! Turn ends: every 1,000 entries the producer asks for a sync
//! ([`TranscriptWriter::request_sync`]) and goes on appending while the fsync runs, as
//! the agent does when a sub-agent or the next turn keeps writing; a collector thread
//! waits for each acknowledgement. `fsync_p50_ms`/`fsync_p99_ms` are the turn ends'
//! latencies: from the request until every entry of the turn is on disk.
//! `entries_per_sec` counts until the last entry is durable. On this machine an
//! `fdatasync` costs about 7 ms whatever its size (a virtual disk's cache flush), so a
//! producer that stopped at every turn end could never exceed ~140,000 entries per second;
//! that variant is measured too (a third as many entries) and printed under `waiting`.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;
use serde::ser::SerializeMap as _;
use serde_json::{Value, json};
use strata_session::writer::{SyncTicket, TranscriptRecord, TranscriptWriter};

/// Entries appended by default.
const DEFAULT_ENTRIES: u64 = 300_000;
/// A turn ends (and fsyncs) every this many entries.
const TURN: u64 = 1_000;
/// Line sizes at the deciles of the reference corpus's lines of 0.5–5 KB (measured on
/// `shared/corpus/claude-code`, all 30 files).
const SIZE_QUANTILES: [(f64, f64); 9] = [
    (0.0, 512.0),
    (0.1, 592.0),
    (0.2, 626.0),
    (0.5, 636.0),
    (0.6, 653.0),
    (0.7, 920.0),
    (0.8, 1_081.0),
    (0.9, 1_738.0),
    (1.0, 5_000.0),
];

/// A line size drawn from [`SIZE_QUANTILES`] for a uniform `unit` in [0, 1).
fn size_at(unit: f64) -> usize {
    let mut prev = SIZE_QUANTILES[0];
    for &(q, size) in &SIZE_QUANTILES[1..] {
        if unit <= q {
            let t = (unit - prev.0) / (q - prev.0);
            return (prev.1 + t * (size - prev.1)) as usize;
        }
        prev = (q, size);
    }
    prev.1 as usize
}

/// Distinct entry bodies generated; uuids differ on every append.
const POOL: usize = 2_048;

/// Runs the append benchmark and prints its JSON line.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let entries = parse_entries(args)?;
    let dir = std::env::temp_dir().join(format!("strata-bench-append-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = measure(&dir, entries, false).and_then(|m| {
        let waiting = measure(&dir, (entries / 3).max(TURN), true)?;
        Ok((m, waiting))
    });
    // The transcript is large; do not leave it behind, whatever happened.
    let _ = std::fs::remove_dir_all(&dir);
    let (m, waiting) = result?;
    println!(
        "{}",
        json!({
            "workload": "append",
            "entries": entries,
            "entries_per_sec": m.entries_per_sec.round(),
            "fsync_p50_ms": round3(m.fsync_p50_ms),
            "fsync_p99_ms": round3(m.fsync_p99_ms),
            "mean_entry_bytes": m.mean_entry_bytes.round(),
            "mb_per_sec": round3(m.mb_per_sec),
            "waiting": {
                "entries_per_sec": waiting.entries_per_sec.round(),
                "fsync_p50_ms": round3(waiting.fsync_p50_ms),
                "fsync_p99_ms": round3(waiting.fsync_p99_ms),
            },
        })
    );
    Ok(())
}

fn parse_entries(args: &[String]) -> anyhow::Result<u64> {
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--append-entries" {
            let v = it.next().context("--append-entries needs a number")?;
            return v
                .parse()
                .with_context(|| format!("--append-entries {v}: not a number"));
        }
    }
    Ok(DEFAULT_ENTRIES)
}

struct Measured {
    entries_per_sec: f64,
    fsync_p50_ms: f64,
    fsync_p99_ms: f64,
    mean_entry_bytes: f64,
    mb_per_sec: f64,
}

/// Appends `entries` entries with a turn end every [`TURN`]; with `wait_each_turn` the
/// producer blocks on every turn end, else a collector thread waits for them.
fn measure(dir: &std::path::Path, entries: u64, wait_each_turn: bool) -> anyhow::Result<Measured> {
    let pool = entry_pool();
    let path = dir.join(format!(
        "{:08x}-0000-4000-8000-000000000000.jsonl",
        u64::from(wait_each_turn)
    ));
    let writer = TranscriptWriter::open(&path)?;
    let (to_collector, tickets) = std::sync::mpsc::channel::<(Instant, SyncTicket)>();
    let collector = std::thread::spawn(move || -> anyhow::Result<Vec<Duration>> {
        let mut latencies = Vec::new();
        for (asked, ticket) in tickets {
            ticket.wait()?;
            latencies.push(asked.elapsed());
        }
        Ok(latencies)
    });
    let mut fsyncs: Vec<Duration> = Vec::with_capacity((entries / TURN) as usize + 1);
    let start = Instant::now();
    for n in 0..entries {
        let uuid = uuid_like(n);
        writer.append(&WithUuid {
            body: &pool[(n as usize) % POOL],
            uuid: &uuid,
        })?;
        if (n + 1) % TURN == 0 {
            let asked = Instant::now();
            let ticket = writer.request_sync()?;
            if wait_each_turn {
                ticket.wait()?;
                fsyncs.push(asked.elapsed());
            } else {
                to_collector
                    .send((asked, ticket))
                    .map_err(|_| anyhow::anyhow!("the collector stopped"))?;
            }
        }
    }
    drop(to_collector);
    writer.turn_end()?;
    let elapsed = start.elapsed();
    fsyncs.extend(
        collector
            .join()
            .map_err(|_| anyhow::anyhow!("the collector panicked"))??,
    );
    writer.close()?;
    let bytes = std::fs::metadata(&path)?.len() as f64;
    std::fs::remove_file(&path)?;
    fsyncs.sort();
    let pct = |p: f64| {
        fsyncs
            .get(((fsyncs.len() as f64 - 1.0) * p).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    Ok(Measured {
        entries_per_sec: entries as f64 / elapsed.as_secs_f64(),
        fsync_p50_ms: pct(0.50),
        fsync_p99_ms: pct(0.99),
        mean_entry_bytes: bytes / entries.max(1) as f64,
        mb_per_sec: bytes / (1024.0 * 1024.0) / elapsed.as_secs_f64(),
    })
}

/// A pooled entry body written with its own uuid (in the body's key position), as the
/// agent writes a freshly built entry: no copy of the body is made.
struct WithUuid<'a> {
    body: &'a Value,
    uuid: &'a str,
}

impl Serialize for WithUuid<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(fields) = self.body.as_object() else {
            return self.body.serialize(s);
        };
        let mut map = s.serialize_map(Some(fields.len()))?;
        for (key, value) in fields {
            if key == "uuid" {
                map.serialize_entry(key, self.uuid)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl TranscriptRecord for WithUuid<'_> {
    fn starts_transcript(&self) -> bool {
        self.body.starts_transcript()
    }
}

/// Entry bodies of the reference's shapes, sized by [`size_at`].
fn entry_pool() -> Vec<Value> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    (0..POOL)
        .map(|i| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let unit = (rng >> 11) as f64 / (1u64 << 53) as f64;
            let target = size_at(unit);
            let envelope = |kind: &str| {
                json!({
                    "parentUuid": uuid_like(i as u64 + 1_000_000),
                    "isSidechain": false,
                    "userType": "external",
                    "cwd": "/home/user/projects/example",
                    "sessionId": "00000000-0000-4000-8000-000000000000",
                    "version": "2.1.39",
                    "gitBranch": "main",
                    "type": kind,
                })
            };
            let mut e = match i % 4 {
                0 => {
                    let mut e = envelope("assistant");
                    e["message"] = json!({
                        "model": "claude-sonnet-4-5-20250929",
                        "id": format!("msg_{i:024}"),
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "text", "text": ""}],
                        "stop_reason": null,
                        "usage": {"input_tokens": 3, "cache_creation_input_tokens": 1_200,
                                  "cache_read_input_tokens": 24_000, "output_tokens": 310},
                    });
                    e["requestId"] = json!(format!("req_{i:024}"));
                    e
                }
                1 => {
                    let mut e = envelope("assistant");
                    e["message"] = json!({
                        "model": "claude-sonnet-4-5-20250929",
                        "id": format!("msg_{i:024}"),
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": format!("toolu_{i:020}"),
                                     "name": "Edit", "input": {"file_path": "/home/user/projects/example/src/lib.rs",
                                     "old_string": "", "new_string": ""}}],
                        "stop_reason": "tool_use",
                    });
                    e
                }
                2 => {
                    let mut e = envelope("user");
                    e["message"] = json!({"role": "user", "content": [
                        {"tool_use_id": format!("toolu_{i:020}"), "type": "tool_result", "content": ""}]});
                    e
                }
                _ => {
                    let mut e = envelope("progress");
                    e["data"] = json!({"type": "bash_progress", "output": "", "elapsedTimeSeconds": 3});
                    e["toolUseID"] = json!(format!("toolu_{i:020}"));
                    e
                }
            };
            e["uuid"] = json!(uuid_like(0));
            e["timestamp"] = json!("2026-02-12T14:12:01.123Z");
            let base = serde_json::to_string(&e).map(|s| s.len()).unwrap_or(0) + 50;
            let filler = text(target.saturating_sub(base), i);
            let slot = match i % 4 {
                0 => &mut e["message"]["content"][0]["text"],
                1 => &mut e["message"]["content"][0]["input"]["new_string"],
                2 => &mut e["message"]["content"][0]["content"],
                _ => &mut e["data"]["output"],
            };
            *slot = Value::String(filler);
            e
        })
        .collect()
}

/// Prose-like text with newlines and quotes (which JSON must escape), `len` bytes.
fn text(len: usize, seed: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "file",
        "returns",
        "\"value\"",
        "error",
        "fn",
        "test",
        "passes",
        "\n",
        "config",
        "let",
        "=",
        "{",
        "}",
        "path",
        "ok",
        "tool",
        "result\t",
        "session",
        "writer",
    ];
    let mut s = String::with_capacity(len + 16);
    let mut k = seed;
    while s.len() < len {
        k = k
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        s.push_str(WORDS[(k >> 33) % WORDS.len()]);
        s.push(' ');
    }
    s.truncate(len);
    s
}

fn uuid_like(n: u64) -> String {
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        n >> 32,
        (n >> 16) & 0xffff,
        n & 0xfff,
        n % 0xfff,
        n
    )
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
