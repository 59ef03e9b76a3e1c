//! The `sessions` workload (issue 5 part 9): resume of 10 MB and 100 MB transcripts,
//! listing 3,000 sessions, and appending (in `sessions_append`).
//!
//! ```text
//! cargo run --release -p strata-bench -- sessions                 # every line below
//! strata-bench sessions --only resume|list|append                # one part
//! strata-bench sessions --generate <config dir> --mb 100          # one transcript to try the CLI on
//! strata-bench sessions --generate <config dir> --mb 100 --shape live   # all of it conversation
//! ```
//!
//! Prints one JSON object per line:
//! `{"workload":"resume","mb":10|100,"ms":…,"peak_rss_mb":…,"messages":…}`,
//! `{"workload":"list","sessions":3000,"ms":…}`, then the append line. Targets on the
//! 2-core machine: resume of 100 MB ≤ 250 ms with peak RSS ≤ 1.5× the file size; listing
//! 3,000 sessions ≤ 150 ms.
//!
//! Each measurement runs in a fresh process (this binary re-executed with a hidden
//! argument), so the peak resident memory (`VmHWM`) is that of loading one session, and
//! nothing is warm but the page cache. Resume is timed from before the file is opened to
//! after the live conversation has been turned into model messages: the whole of what
//! `strata --resume` does before it can send a prompt. Each is run three times; the
//! median time and the largest peak are reported.
//!
//! The transcripts are generated in the reference agent's format with the proportions
//! of the real corpus: per turn a file-history snapshot, the prompt, responses split
//! into one line per block (thinking with signature, text, parallel tool calls),
//! progress lines, tool results carrying both the model's text and the structured
//! `toolUseResult`, snapshot updates when files are edited, a `turn_duration` line; and
//! every fiftieth turn a dead branch left by a rewind. `--shape live` writes the worst
//! case for memory instead: no compact boundary and nothing but the conversation — no
//! progress, snapshots or dead branches, and tool results without the structured copy of
//! their output — so nearly every byte of the file is sent to the model on resume.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use strata_session::listing;
use strata_session::resume::LoadedSession;

const RESUME_CHILD: &str = "--resume-child";
const LIST_CHILD: &str = "--list-child";
const RUNS: usize = 3;
/// Sessions in the listing workload.
const LIST_SESSIONS: usize = 3_000;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    match args.first().map(String::as_str) {
        Some(RESUME_CHILD) => return resume_child(args.get(1).context("missing path")?),
        Some(LIST_CHILD) => {
            return list_child(
                args.get(1).context("missing config dir")?,
                args.get(2).context("missing project")?,
            );
        }
        _ => {}
    }
    if let Some(dir) = flag(args, "--generate") {
        let mb: u64 = flag(args, "--mb")
            .unwrap_or("10")
            .parse()
            .context("--mb needs a number of megabytes")?;
        let outputs = match flag(args, "--shape") {
            None | Some("realistic") => Outputs::Realistic,
            Some("live") => Outputs::Live,
            Some(other) => bail!("--shape is realistic or live, not {other:?}"),
        };
        let cwd = std::env::current_dir()?;
        let root = strata_config::paths::project_root(&cwd);
        let path = generate_into_config(Path::new(dir), &root, mb, outputs)?;
        println!("{}", json!({"generated": path, "mb": mb, "project": root}));
        return Ok(());
    }
    let only = flag(args, "--only");
    let work = std::env::temp_dir().join(format!("strata-bench-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let result = measure_all(&work, only);
    // Hundreds of megabytes: never leave them behind.
    let _ = std::fs::remove_dir_all(&work);
    result?;
    if only.is_none_or(|o| o == "append") {
        crate::sessions_append::run(args)?;
    }
    Ok(())
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn measure_all(work: &Path, only: Option<&str>) -> anyhow::Result<()> {
    let root = Path::new("/bench/project");
    let resume = only.is_none_or(|o| o == "resume");
    for mb in [10, 100].into_iter().filter(|_| resume) {
        let cfg = work.join(format!("resume-{mb}"));
        let path = generate_into_config(&cfg, root, mb, Outputs::Realistic)?;
        let size = std::fs::metadata(&path)?.len() as f64 / (1024.0 * 1024.0);
        let mut runs: Vec<Value> = (0..RUNS)
            .map(|_| child(&[RESUME_CHILD, path_str(&path)?]))
            .collect::<Result<_, _>>()?;
        runs.sort_by(|a, b| {
            a["ms"]
                .as_f64()
                .unwrap_or(0.0)
                .total_cmp(&b["ms"].as_f64().unwrap_or(0.0))
        });
        let peak = runs
            .iter()
            .filter_map(|r| r["peak_rss_mb"].as_f64())
            .fold(0.0, f64::max);
        let median = &runs[RUNS / 2];
        println!(
            "{}",
            json!({
                "workload": "resume",
                "mb": mb,
                "ms": median["ms"],
                "peak_rss_mb": round1(peak),
                "messages": median["messages"],
                "file_mb": round1(size),
                "peak_rss_per_file_size": (peak / size * 100.0).round() / 100.0,
                "load_ms": median["load_ms"],
                "model_messages_ms": median["model_messages_ms"],
                "cpu_ms": median["cpu_ms"],
            })
        );
        std::fs::remove_dir_all(&cfg)?;
    }

    if only.is_some_and(|o| o != "list") {
        return Ok(());
    }
    let cfg = work.join("list");
    let list_root = Path::new("/bench/listing");
    let dir = strata_config::paths::project_sessions_dir(&cfg, list_root);
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng(0x5eed_1157);
    let mut total = 0u64;
    for i in 0..LIST_SESSIONS {
        // Mostly short sessions, one in five long: 2–7 or 10–50 turns.
        let turns = if rng.below(5) == 0 {
            10 + rng.below(41)
        } else {
            2 + rng.below(6)
        } as usize;
        let id = uuid(&mut Rng::seeded(i as u64));
        let p = dir.join(format!("{id}.jsonl"));
        total += write_transcript(
            &p,
            &id,
            "/bench/listing",
            Size::Turns(turns),
            Outputs::Small,
            &mut rng,
        )?;
    }
    // The first listing reads every transcript and writes the project's index; the ones
    // after it (what a user meets every day) read only the index and `stat` the files.
    let cold = child(&[LIST_CHILD, path_str(&cfg)?, path_str(list_root)?])?;
    let mut runs: Vec<Value> = (0..RUNS)
        .map(|_| child(&[LIST_CHILD, path_str(&cfg)?, path_str(list_root)?]))
        .collect::<Result<_, _>>()?;
    runs.sort_by(|a, b| {
        a["ms"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&b["ms"].as_f64().unwrap_or(0.0))
    });
    let median = &runs[RUNS / 2];
    for r in runs.iter().chain([&cold]) {
        if r["sessions"] != json!(LIST_SESSIONS) {
            bail!(
                "the listing found {} sessions, not {LIST_SESSIONS}",
                r["sessions"]
            );
        }
    }
    println!(
        "{}",
        json!({
            "workload": "list",
            "sessions": LIST_SESSIONS,
            "ms": median["ms"],
            "cold_ms": cold["ms"],
            "total_mb": round1(total as f64 / (1024.0 * 1024.0)),
        })
    );
    Ok(())
}

fn path_str(p: &Path) -> anyhow::Result<&str> {
    p.to_str()
        .context("the temporary directory's path is not UTF-8")
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Runs this binary with `args` after `sessions` and parses its one JSON line.
fn child(args: &[&str]) -> anyhow::Result<Value> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe).arg("sessions").args(args).output()?;
    if !out.status.success() {
        bail!(
            "{:?} failed: {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("{args:?} printed no JSON"))
}

/// In the fresh process: load the session, rebuild everything, and report.
fn resume_child(path: &str) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut session = LoadedSession::load(Path::new(path))?;
    let loaded = start.elapsed();
    let conversation = session.model_messages();
    let total = start.elapsed();
    if conversation.messages.is_empty()
        || !session.repairs().is_empty()
        || !session.malformed().is_empty()
    {
        bail!("the generated session did not resume cleanly");
    }
    println!(
        "{}",
        json!({
            "ms": round1(total.as_secs_f64() * 1000.0),
            "load_ms": round1(loaded.as_secs_f64() * 1000.0),
            "model_messages_ms": round1((total - loaded).as_secs_f64() * 1000.0),
            "messages": session.message_count(),
            "peak_rss_mb": crate::measure::peak_rss_mb(),
            "cpu_ms": cpu_ms(),
        })
    );
    Ok(())
}

/// CPU time this process used so far (user + system, both threads), in milliseconds,
/// from `/proc/self/stat` (10 ms resolution). On a shared machine the wall time of a run
/// depends on what else runs; this does much less.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks * 10.0)
}

/// In the fresh process: list the project's sessions.
fn list_child(config: &str, project: &str) -> anyhow::Result<()> {
    let start = Instant::now();
    let l = listing::list_project(Path::new(config), Path::new(project))?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    println!(
        "{}",
        json!({"ms": round1(ms), "sessions": l.sessions.len()})
    );
    Ok(())
}

/// Writes a transcript of about `mb` megabytes into a config directory's layout for the
/// project at `root`; returns its path.
fn generate_into_config(
    config: &Path,
    root: &Path,
    mb: u64,
    outputs: Outputs,
) -> anyhow::Result<PathBuf> {
    let dir = strata_config::paths::project_sessions_dir(config, root);
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng(0xC0FFEE ^ mb);
    let id = uuid(&mut rng);
    let path = dir.join(format!("{id}.jsonl"));
    let cwd = root.to_string_lossy().into_owned();
    write_transcript(
        &path,
        &id,
        &cwd,
        Size::Bytes(mb * 1024 * 1024),
        outputs,
        &mut rng,
    )?;
    Ok(path)
}

#[derive(Clone, Copy)]
enum Size {
    Bytes(u64),
    Turns(usize),
}

#[derive(Clone, Copy, PartialEq)]
enum Outputs {
    /// Tool outputs of 0.5–12 KB, as in coding sessions.
    Realistic,
    /// Short outputs, for many small sessions.
    Small,
    /// Realistic outputs, and nothing but the conversation: no progress lines, file
    /// snapshots or dead branches, no structured copy of a tool's output. Every line is
    /// live and nearly every byte is sent to the model on resume.
    Live,
}

/// A deterministic xorshift generator: the same transcripts on every run.
struct Rng(u64);

impl Rng {
    /// A generator whose sequence differs for every `seed` (splitmix64 of it).
    fn seeded(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Self(z ^ (z >> 31))
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0 | 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn uuid(rng: &mut Rng) -> String {
    let (a, b) = (rng.next(), rng.next());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

fn ts(second: u64) -> String {
    let (d, s) = (second / 86_400, second % 86_400);
    format!(
        "2026-01-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        1 + d % 28,
        s / 3600,
        (s / 60) % 60,
        s % 60,
        (second * 7) % 1000
    )
}

const WORDS: &[&str] = &[
    "the",
    "session",
    "resume",
    "fn",
    "let",
    "match",
    "Some(x)",
    "=>",
    "return",
    "error",
    "file",
    "path",
    "\"quoted\"",
    "config",
    "state",
    "{",
    "}",
    "impl",
    "struct",
    "pub",
    "use",
    "crate::",
    "self",
    "Ok(())",
    "// comment",
    "value",
    "\\escaped\\",
    "tab\there",
    "ünïcödé",
    "transcript",
    "chain",
    "leaf",
    "parent",
    "uuid",
];

/// Code- or prose-like text of about `len` bytes with newlines, quotes and escapes.
fn text(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(9) == 0 { '\n' } else { ' ' });
    }
    s
}

fn q(s: &str) -> String {
    // Serializing a string cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

/// The writer of one transcript, keeping the running state a session has.
struct Gen<'a> {
    out: BufWriter<std::fs::File>,
    rng: &'a mut Rng,
    session: String,
    cwd: String,
    clock: u64,
    written: u64,
    files: Vec<(String, u32)>,
    outputs: Outputs,
}

impl Gen<'_> {
    fn line(&mut self, l: &str) -> anyhow::Result<()> {
        self.out.write_all(l.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.written += l.len() as u64 + 1;
        Ok(())
    }

    /// `len`, or a quarter of it for the small sessions of the listing workload.
    fn scaled(&self, len: usize) -> usize {
        if self.outputs == Outputs::Small {
            len / 4
        } else {
            len
        }
    }

    fn head(&mut self, parent: Option<&str>) -> String {
        format!(
            r#"{{"parentUuid":{},"isSidechain":false,"userType":"external","cwd":{},"sessionId":"{}","version":"2.1.39","gitBranch":"main","slug":"bench-generated-session""#,
            parent.map_or("null".to_owned(), q),
            q(&self.cwd),
            self.session
        )
    }

    fn tick(&mut self) -> String {
        self.clock += 1 + self.rng.below(3);
        ts(self.clock)
    }

    fn snapshot(&mut self, message: &str, update: bool) -> anyhow::Result<()> {
        let mut files = String::new();
        for (i, (path, v)) in self.files.iter().enumerate() {
            let _ = write!(
                files,
                r#"{}{}:{{"backupFileName":"{:016x}@v{v}","version":{v},"backupTime":"{}"}}"#,
                if i > 0 { "," } else { "" },
                q(path),
                (i as u64 + 1) * 0x9e37_79b9_7f4a_7c15,
                ts(self.clock)
            );
        }
        let id = if update {
            uuid(self.rng)
        } else {
            message.to_owned()
        };
        let l = format!(
            r#"{{"type":"file-history-snapshot","messageId":"{id}","snapshot":{{"messageId":"{message}","trackedFileBackups":{{{files}}},"timestamp":"{}"}},"isSnapshotUpdate":{update}}}"#,
            ts(self.clock)
        );
        self.line(&l)
    }

    fn user_prompt(&mut self, parent: Option<&str>) -> anyhow::Result<String> {
        let id = uuid(self.rng);
        if self.outputs != Outputs::Live {
            self.snapshot(&id, false)?;
        }
        let len = 60 + self.rng.below(400) as usize;
        let prompt = text(self.rng, len);
        let head = self.head(parent);
        let t = self.tick();
        let l = format!(
            r#"{head},"type":"user","message":{{"role":"user","content":{}}},"uuid":"{id}","timestamp":"{t}","thinkingMetadata":{{"maxThinkingTokens":31999}},"todos":[],"permissionMode":"default"}}"#,
            q(&prompt)
        );
        self.line(&l)?;
        Ok(id)
    }

    fn assistant(
        &mut self,
        parent: &str,
        msg: &str,
        block: &str,
        last: bool,
    ) -> anyhow::Result<String> {
        let id = uuid(self.rng);
        let head = self.head(Some(parent));
        let t = self.tick();
        let out_tokens = if last { 40 + self.rng.below(900) } else { 1 };
        let stop = if last { r#""tool_use""# } else { "null" };
        let l = format!(
            r#"{head},"message":{{"model":"claude-opus-4-6","id":"{msg}","type":"message","role":"assistant","content":[{block}],"stop_reason":{stop},"stop_sequence":null,"usage":{{"input_tokens":3,"cache_creation_input_tokens":{},"cache_read_input_tokens":{},"cache_creation":{{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":{}}},"output_tokens":{out_tokens},"service_tier":"standard","inference_geo":"global"}}}},"requestId":"req_{}","type":"assistant","uuid":"{id}","timestamp":"{t}"}}"#,
            self.rng.below(4000),
            20_000 + self.rng.below(100_000),
            self.rng.below(4000),
            &msg[4..]
        );
        self.line(&l)?;
        Ok(id)
    }

    fn progress(&mut self, parent: &str, tool: &str) -> anyhow::Result<String> {
        let id = uuid(self.rng);
        let head = self.head(Some(parent));
        let t = self.tick();
        let l = format!(
            r#"{head},"type":"progress","data":{{"type":"hook_progress","hookEvent":"PreToolUse","hookName":"PreToolUse:Bash","command":"$HOME/.claude/hooks/guard.sh {}"}},"toolUseID":"{tool}","parentToolUseID":"{tool}","uuid":"{id}","timestamp":"{t}"}}"#,
            {
                let len = 300 + self.rng.below(1500) as usize;
                let len = self.scaled(len);
                text(self.rng, len).replace(['"', '\\', '\n', '\t'], "_")
            }
        );
        self.line(&l)?;
        Ok(id)
    }

    fn result(&mut self, parent: &str, tool: &str, name: &str) -> anyhow::Result<String> {
        let id = uuid(self.rng);
        let len = match self.outputs {
            Outputs::Realistic | Outputs::Live => 500 + self.rng.below(11_500) as usize,
            Outputs::Small => 100 + self.rng.below(600) as usize,
        };
        let output = text(self.rng, len);
        let structured = if self.outputs == Outputs::Live {
            r#"{"interrupted":false,"isImage":false}"#.to_owned()
        } else if name == "Edit" {
            // The reference keeps the whole original file and the patch for the UI.
            let len = 2 * len + self.rng.below(4000) as usize;
            let original = text(self.rng, len);
            format!(
                r#"{{"filePath":"/bench/project/src/lib.rs","oldString":{},"newString":{},"originalFile":{},"structuredPatch":[{{"oldStart":1,"oldLines":3,"newStart":1,"newLines":4,"lines":{}}}],"userModified":false,"replaceAll":false}}"#,
                q(&output.chars().take(200).collect::<String>()),
                q("new text"),
                q(&original),
                serde_json::to_string(&output.lines().take(12).collect::<Vec<_>>())
                    .unwrap_or_default()
            )
        } else if name == "Read" {
            format!(
                r#"{{"type":"text","file":{{"filePath":"/bench/project/src/lib.rs","content":{},"numLines":{},"startLine":1,"totalLines":{}}}}}"#,
                q(&output),
                output.lines().count(),
                output.lines().count()
            )
        } else {
            format!(
                r#"{{"stdout":{},"stderr":"","interrupted":false,"isImage":false}}"#,
                q(&output)
            )
        };
        let head = self.head(Some(parent));
        let t = self.tick();
        let l = format!(
            r#"{head},"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{tool}","type":"tool_result","content":{},"is_error":false}}]}},"uuid":"{id}","timestamp":"{t}","toolUseResult":{structured},"sourceToolAssistantUUID":"{parent}"}}"#,
            q(&output)
        );
        self.line(&l)?;
        Ok(id)
    }

    /// One turn: a prompt, 1–3 rounds of tool calls (some parallel), a final answer.
    fn turn(&mut self, parent: Option<&str>) -> anyhow::Result<String> {
        let mut last = self.user_prompt(parent)?;
        let rounds = 1 + self.rng.below(3);
        for _ in 0..rounds {
            let msg = format!("msg_{}", &uuid(self.rng)[..24].replace('-', ""));
            let len = 200 + self.rng.below(1200) as usize;
            let len = self.scaled(len);
            let thinking = text(self.rng, len);
            let sig: String = (0..300)
                .map(|i| (b'A' + ((i * 7 + self.clock as usize) % 26) as u8) as char)
                .collect();
            last = self.assistant(
                &last,
                &msg,
                &format!(
                    r#"{{"type":"thinking","thinking":{},"signature":"{sig}"}}"#,
                    q(&thinking)
                ),
                false,
            )?;
            let len = 80 + self.rng.below(500) as usize;
            let say = text(self.rng, len);
            last = self.assistant(
                &last,
                &msg,
                &format!(r#"{{"type":"text","text":{}}}"#, q(&say)),
                false,
            )?;
            let parallel = if self.rng.below(10) < 3 {
                2 + self.rng.below(2)
            } else {
                1
            };
            let mut calls = Vec::new();
            for k in 0..parallel {
                let tool = format!("toolu_{}", &uuid(self.rng).replace('-', "")[..24]);
                let name = ["Read", "Bash", "Grep", "Edit"][self.rng.below(4) as usize];
                let input = match name {
                    "Edit" => format!(
                        r#"{{"file_path":"/bench/project/src/f{}.rs","old_string":{},"new_string":{}}}"#,
                        self.rng.below(40),
                        q(&text(self.rng, 300)),
                        q(&text(self.rng, 400))
                    ),
                    _ => format!(
                        r#"{{"command":{},"description":"look around"}}"#,
                        q(&text(self.rng, 60))
                    ),
                };
                let block = format!(
                    r#"{{"type":"tool_use","id":"{tool}","name":"{name}","input":{input},"caller":{{"type":"direct"}}}}"#
                );
                last = self.assistant(&last, &msg, &block, k + 1 == parallel)?;
                calls.push((last.clone(), tool, name));
            }
            // Each tool reports progress and its result hangs off its own tool-use line;
            // the conversation continues from the last result (the reference's shape for
            // parallel calls: earlier results hang off the walked chain).
            let live = self.outputs == Outputs::Live;
            for (use_line, tool, _) in calls.iter().filter(|_| !live) {
                let mut p = self.progress(use_line, tool)?;
                for _ in 0..3 {
                    p = self.progress(&p, tool)?;
                }
            }
            for (use_line, tool, name) in &calls {
                last = self.result(use_line, tool, name)?;
                if *name == "Edit" && self.outputs != Outputs::Live {
                    // Sessions track a few dozen files; later edits bump their versions.
                    let n = self.files.len();
                    if n < 24 {
                        self.files.push((format!("src/f{n}.rs"), 1));
                    } else {
                        let k = self.rng.below(n as u64) as usize;
                        self.files[k].1 += 1;
                    }
                    let message = uuid(self.rng);
                    self.snapshot(&message, true)?;
                }
            }
        }
        let msg = format!("msg_{}", &uuid(self.rng)[..24].replace('-', ""));
        let len = 150 + self.rng.below(700) as usize;
        let done = text(self.rng, len);
        last = self.assistant(
            &last,
            &msg,
            &format!(r#"{{"type":"text","text":{}}}"#, q(&done)),
            true,
        )?;
        let head = self.head(Some(&last));
        let t = self.tick();
        let id = uuid(self.rng);
        let l = format!(
            r#"{head},"type":"system","subtype":"turn_duration","durationMs":{},"timestamp":"{t}","uuid":"{id}","isMeta":false}}"#,
            self.rng.below(90_000)
        );
        self.line(&l)?;
        Ok(id)
    }
}

/// Writes one generated transcript; returns its size in bytes.
fn write_transcript(
    path: &Path,
    session: &str,
    cwd: &str,
    size: Size,
    outputs: Outputs,
    rng: &mut Rng,
) -> anyhow::Result<u64> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut g = Gen {
        out: BufWriter::with_capacity(1 << 20, file),
        rng,
        session: session.to_owned(),
        cwd: cwd.to_owned(),
        clock: 0,
        written: 0,
        files: vec![("src/lib.rs".to_owned(), 1)],
        outputs,
    };
    let mut last: Option<String> = None;
    let mut turn = 0usize;
    loop {
        let done = match size {
            Size::Bytes(b) => g.written >= b,
            Size::Turns(n) => turn >= n,
        };
        if done {
            break;
        }
        if turn % 50 == 49 && outputs != Outputs::Live {
            // A rewind: this turn is abandoned and the next one starts from the same point,
            // later in time, so the old branch is dead.
            g.turn(last.as_deref())?;
        }
        last = Some(g.turn(last.as_deref())?);
        turn += 1;
    }
    g.out.flush()?;
    if outputs != Outputs::Small {
        // On disk before it is measured, so the kernel's writeback of a freshly written
        // 100 MB file does not compete with the resume being timed.
        g.out.get_ref().sync_all()?;
    }
    Ok(g.written)
}
