//! `strata-bench tui`: the interactive UI's targets (issue 12), one JSON line.
//!
//! Two halves:
//! - the real `strata` binary in a pseudo-terminal (a vt100 parser reads its output):
//!   the first frame with a typed character echoed, frames and CPU time while idle, the
//!   idle RSS, and the peak RSS with a resumed 100 MB session open;
//! - the UI's event loop in this process on a recording writer, with a real engine:
//!   keystroke → frame latency with a resumed 10,000- and 10-message session, frames for
//!   store updates nothing on screen selects, and a 1 MB answer streamed in 10,000
//!   deltas (frames per second at most, the text exact at the end).
//!
//! And, in a tmux pane, launch → a key typed at once echoed in the prompt, beside Codex
//! when it is installed (`tui_launch`; issue 25: ≤ 40 ms and below Codex).
//!
//! `--idle-secs N` shortens the idle measurement (the target is for 60 s);
//! `--skip-resume` leaves out the 100 MB session; `--only launch` measures only launch →
//! echo (`--launches N`, `--codex PATH`).

use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use strata_agent::engine::{Engine, EngineHandles, EngineOptions, ResumeTarget};
use strata_agent::provider::ReplayProvider;
use strata_tui::app::App;
use strata_tui::bridge::{UiEvent, UiEvents, UiPrompter};
use strata_tui::run::{Backend, event_loop};
use strata_tui::term::InlineTerminal;

const COLS: u16 = 100;
const ROWS: u16 = 30;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let idle_secs: u64 = args
        .iter()
        .position(|a| a == "--idle-secs")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse())
        .transpose()
        .context("--idle-secs takes a number")?
        .unwrap_or(60);
    let work = tempdir()?;
    let strata = crate::headless::strata_binary()?;
    let launches = match flag(args, "--launches") {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("--launches wants a positive number, not {n:?}"))?,
        None => crate::tui_launch::DEFAULT_LAUNCHES,
    };
    let codex = crate::tui_launch::find_codex(flag(args, "--codex"));
    let launch = crate::tui_launch::measure(&strata, &work, launches, codex);
    if flag(args, "--only") == Some("launch") || launch.is_err() {
        let _ = std::fs::remove_dir_all(&work);
    }
    let (launch, codex_launch) = launch?;
    let launch_fields = json!({
        "launch_echo_ms": launch.median_ms,
        "launch_echo_min_ms": launch.min_ms,
        "launch_echo_max_ms": launch.max_ms,
        "launches": launch.runs,
        "codex_launch_echo_ms": codex_launch.map(|c| c.median_ms),
        "codex_launch_echo_min_ms": codex_launch.map(|c| c.min_ms),
        "codex_launch_echo_max_ms": codex_launch.map(|c| c.max_ms),
    });
    if flag(args, "--only") == Some("launch") {
        let mut line = json!({"workload": "tui-launch"});
        merge(&mut line, launch_fields);
        println!("{line}");
        return Ok(());
    }
    let pty = pty_measures(&strata, &work, idle_secs)?;
    // `--skip-resume`: leave out the 100 MB session (its generator needs a release build).
    let resume_rss = if args.iter().any(|a| a == "--skip-resume") {
        None
    } else {
        resume_100mb(&strata, &work)?
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let in_process = runtime.block_on(in_process(&work))?;
    let _ = std::fs::remove_dir_all(&work);
    let mut line = json!({
            "workload": "tui",
            "first_frame_ms": pty.first_frame_ms,
            "idle_secs": idle_secs,
            "idle_frames": pty.idle_frames,
            "idle_cpu_ms": pty.idle_cpu_ms,
            "idle_rss_mb": pty.idle_rss_mb,
            "resume_100mb_rss_mb": resume_rss,
            "keystroke_p99_ms_10k": in_process.p99_10k,
            "keystroke_p99_ms_10": in_process.p99_10,
            "irrelevant_update_frames": in_process.irrelevant_frames,
            "mode_change_frames": in_process.mode_frames,
            "stream_fps_max": in_process.stream_fps_max,
            "stream_frames": in_process.stream_frames,
            "stream_exact": in_process.stream_exact,
    });
    merge(&mut line, launch_fields);
    println!("{line}");
    Ok(())
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// Adds the fields of `more` (an object) to `line` (an object).
fn merge(line: &mut serde_json::Value, more: serde_json::Value) {
    if let (Some(line), serde_json::Value::Object(more)) = (line.as_object_mut(), more) {
        line.extend(more);
    }
}

fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("strata-bench-tui-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir.canonicalize()?)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The child's user + system CPU time in ms (`/proc/<pid>/stat`, in USER_HZ = 100 ticks).
fn cpu_ms(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 * 10.0)
}

/// A `/proc/<pid>/status` field in MB (`VmRSS`, `VmHWM`).
fn status_mb(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(round2(kb / 1024.0))
}

/// `strata` running in a pseudo-terminal, its output collected by a reader thread.
struct PtyChild {
    child: Child,
    master: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
}

impl PtyChild {
    fn spawn(strata: &Path, project: &Path, config: &Path, args: &[&str]) -> anyhow::Result<Self> {
        let size = nix::pty::Winsize {
            ws_row: ROWS,
            ws_col: COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(&size, None).context("cannot open a pseudo-terminal")?;
        let slave = std::fs::File::from(pty.slave);
        let child = Command::new(strata)
            .args(args)
            .current_dir(project)
            .env("STRATA_CONFIG_DIR", config)
            .env("HOME", config)
            .env("TERM", "xterm-256color")
            .env("ANTHROPIC_API_KEY", "bench-key")
            // Nothing is asked of the model; were it, only this machine is reached.
            .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave))
            .spawn()
            .context("cannot start strata")?;
        let master = std::fs::File::from(pty.master);
        let output = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, mut answer) = (master.try_clone()?, master.try_clone()?);
        let out = Arc::clone(&output);
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                // A cursor-position query gets an answer, as a terminal would give.
                if buf[..n].windows(4).any(|w| w == b"\x1b[6n") {
                    let _ = answer.write_all(b"\x1b[1;1R");
                }
                if let Ok(mut o) = out.lock() {
                    o.extend_from_slice(&buf[..n]);
                }
            }
        });
        Ok(Self {
            child,
            master,
            output,
        })
    }

    fn bytes(&self) -> Vec<u8> {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    fn frames(&self) -> usize {
        count(&self.bytes(), b"\x1b[?2026h")
    }

    fn screen(&self) -> String {
        let mut p = vt100::Parser::new(ROWS, COLS, 0);
        p.process(&self.bytes());
        p.screen().contents()
    }

    /// Polls the screen until `done` holds; the time it held.
    fn wait(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&str) -> bool,
    ) -> anyhow::Result<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            if done(&self.screen()) {
                return Ok(Instant::now());
            }
            if Instant::now() > deadline {
                bail!("strata never showed {what}; the screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    fn stop(mut self) {
        let _ = self.master.write_all(b"\x04");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

struct PtyMeasures {
    first_frame_ms: f64,
    idle_frames: usize,
    idle_cpu_ms: Option<f64>,
    idle_rss_mb: Option<f64>,
}

/// A fresh session: exec → the prompt drawn and a typed `x` echoed; then idle.
fn pty_measures(strata: &Path, work: &Path, idle_secs: u64) -> anyhow::Result<PtyMeasures> {
    let project = work.join("fresh-project");
    std::fs::create_dir_all(project.join(".git"))?;
    let config = work.join("fresh-config");
    std::fs::create_dir_all(&config)?;
    let start = Instant::now();
    let mut ui = PtyChild::spawn(strata, &project, &config, &[])?;
    ui.wait("its prompt", Duration::from_secs(10), |s| {
        s.contains("/help for commands")
    })?;
    ui.master.write_all(b"x")?;
    let echoed = ui.wait("the typed character", Duration::from_secs(10), |s| {
        s.contains("> x")
    })?;
    let first_frame_ms = round2((echoed - start).as_secs_f64() * 1000.0);
    // Let start-up work (MCP, settings watcher) settle, then measure the quiet.
    std::thread::sleep(Duration::from_millis(500));
    let pid = ui.child.id();
    let (frames0, cpu0) = (ui.frames(), cpu_ms(pid));
    std::thread::sleep(Duration::from_secs(idle_secs));
    let idle_frames = ui.frames() - frames0;
    let idle_cpu_ms = cpu_ms(pid).zip(cpu0).map(|(a, b)| round2(a - b));
    let idle_rss_mb = status_mb(pid, "VmRSS");
    ui.stop();
    Ok(PtyMeasures {
        first_frame_ms,
        idle_frames,
        idle_cpu_ms,
        idle_rss_mb,
    })
}

/// `strata -r <id>` of a generated 100 MB session: peak RSS once its prompt is ready.
fn resume_100mb(strata: &Path, work: &Path) -> anyhow::Result<Option<f64>> {
    let project = work.join("resume-project");
    std::fs::create_dir_all(project.join(".git"))?;
    let config = work.join("resume-config");
    let path = crate::headless::generate(&config, &project)?;
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the generated session has no id")?
        .to_owned();
    let ui = PtyChild::spawn(strata, &project, &config, &["-r", &id])?;
    ui.wait(
        "the resumed session's prompt",
        Duration::from_secs(120),
        |s| s.contains("/help for commands"),
    )?;
    std::thread::sleep(Duration::from_millis(500));
    let peak = status_mb(ui.child.id(), "VmHWM");
    ui.stop();
    Ok(peak)
}

struct InProcess {
    p99_10k: f64,
    p99_10: f64,
    irrelevant_frames: u64,
    mode_frames: u64,
    stream_fps_max: usize,
    stream_frames: usize,
    stream_exact: bool,
}

/// A writer that notes when each frame begins.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Instant>>>);

impl Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = count(buf, b"\x1b[?2026h");
        if n > 0
            && let Ok(mut v) = self.0.lock()
        {
            v.extend(std::iter::repeat_n(Instant::now(), n));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes a session of `messages` alternating prompts and answers; returns its path.
fn conversation(config: &Path, project: &Path, messages: usize) -> anyhow::Result<PathBuf> {
    let dir = strata_config::paths::project_sessions_dir(config, project);
    std::fs::create_dir_all(&dir)?;
    let id = format!("00000000-0000-4000-8000-{messages:012}");
    let path = dir.join(format!("{id}.jsonl"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let mut parent: Option<String> = None;
    for i in 0..messages {
        let uuid = format!("10000000-0000-4000-8000-{i:012}");
        let ts = "2026-01-01T00:00:00.000Z";
        let line = if i % 2 == 0 {
            json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": id,
                "timestamp": ts, "cwd": project,
                "message": {"role": "user", "content": format!("prompt {i}: please look at module {i}")}})
        } else {
            json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": id,
                "timestamp": ts, "cwd": project,
                "message": {"model": "claude-sonnet-4-5", "id": format!("msg_{i}"), "type": "message",
                    "role": "assistant", "stop_reason": "end_turn",
                    "content": [{"type": "text", "text": format!("Answer {i}: the module **does** what its name says.\n\n- one point\n- another point")}],
                    "usage": {"input_tokens": 10, "output_tokens": 20}}})
        };
        writeln!(out, "{line}")?;
        parent = Some(uuid);
    }
    out.flush()?;
    Ok(path)
}

async fn engine(
    work: &Path,
    name: &str,
    resume: Option<PathBuf>,
) -> anyhow::Result<(
    Arc<Engine>,
    App,
    tokio::sync::mpsc::UnboundedReceiver<UiEvent>,
)> {
    let project = work.join(format!("{name}-project"));
    std::fs::create_dir_all(project.join(".git"))?;
    let config = work.join(format!("{name}-config"));
    std::fs::create_dir_all(&config)?;
    let resume = match resume {
        Some(_) => Some(ResumeTarget::Session(
            conversation(&config, &project, name.parse().unwrap_or(10))?
                .to_string_lossy()
                .into_owned(),
        )),
        None => None,
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let replay = r#"{"type":"assistant","uuid":"a","message":{"id":"m","role":"assistant","model":"x","content":[{"type":"text","text":"ok"}]}}"#;
    let options = EngineOptions {
        resume,
        interactive: true,
        prompter: Some(Arc::new(UiPrompter::new(tx.clone()))),
        strict_mcp_config: true,
        ..EngineOptions::new(
            project.clone(),
            config,
            EngineHandles::private(),
            Arc::new(ReplayProvider::from_bytes("bench", replay.as_bytes())?),
            Arc::new(UiEvents::new(tx.clone())),
        )
    };
    let engine = Arc::new(Engine::open(options).await?);
    let app = App::new(engine.clone(), tx, Vec::new(), None, String::new(), COLS);
    Ok((engine, app, rx))
}

/// Keystroke → frame drawn, p99 over 2,000 keys, in a resumed session of `messages`.
async fn keystroke_p99(work: &Path, messages: usize) -> anyhow::Result<f64> {
    let (_engine, mut app, _rx) = engine(work, &messages.to_string(), Some(PathBuf::new())).await?;
    let mut term = InlineTerminal::new(std::io::sink(), COLS, ROWS, true);
    app.commit_existing();
    let commit = app.take_commit();
    term.draw(&commit, &app.frame(Instant::now()))?;
    let mut samples = Vec::new();
    for i in 0..2000 {
        let code = if i % 40 == 39 {
            KeyCode::Backspace
        } else {
            KeyCode::Char('a')
        };
        let t = Instant::now();
        app.on_terminal_event(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)));
        let frame = app.frame(Instant::now());
        let commit = app.take_commit();
        term.draw(&commit, &frame)?;
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    Ok(round2(samples[samples.len() * 99 / 100]) * 1.0)
}

async fn in_process(work: &Path) -> anyhow::Result<InProcess> {
    let p99_10k = keystroke_p99(work, 10_000).await?;
    let p99_10 = keystroke_p99(work, 10).await?;
    // 1,000 updates a second to a field nothing selects, then one mode change, then a
    // 1 MB answer in 10,000 deltas.
    let (engine, mut app, mut rx) = engine(work, "loop", None).await?;
    let tx = {
        let (tx, new_rx) = tokio::sync::mpsc::unbounded_channel();
        // Deltas are fed on a channel of our own, merged with the engine's.
        let mut engine_rx = std::mem::replace(&mut rx, new_rx);
        let fwd = tx.clone();
        tokio::spawn(async move {
            while let Some(ev) = engine_rx.recv().await {
                let _ = fwd.send(ev);
            }
        });
        tx
    };
    let rec = Recorder::default();
    let mut term = InlineTerminal::new(rec.clone(), COLS, ROWS, true);
    let (keys, input) = futures::channel::mpsc::unbounded::<std::io::Result<Event>>();
    let store = engine.store().clone();
    let frames = rec.0.clone();
    let driver = async move {
        let n = || frames.lock().map(|f| f.len()).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = n();
        for _ in 0..1000 {
            let _ = store.update(|s| s.speculation_time_saved_ms += 1);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let irrelevant = n() - before;
        let before = n();
        let _ = engine.set_permission_mode("acceptEdits");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mode = n() - before;
        let before = n();
        let stream_start = Instant::now();
        let _ = tx.send(UiEvent::BlockStart);
        let chunk: String = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?-+*/=<>()[]{}#~\n"
            .chars()
            .cycle()
            .take(100)
            .collect();
        for i in 0..10_000 {
            let _ = tx.send(UiEvent::Delta {
                text: chunk.clone(),
                thinking: false,
            });
            if i % 10 == 0 {
                // About 2 s for the whole answer: a fast model's pace, far above a real one.
                tokio::time::sleep(Duration::from_micros(2000)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let stream: Vec<Instant> = frames
            .lock()
            .map(|f| f[before..].to_vec())
            .unwrap_or_default();
        let _ = keys.unbounded_send(Ok(Event::Key(KeyEvent::new(
            KeyCode::Char('d'),
            KeyModifiers::CONTROL,
        ))));
        (irrelevant as u64, mode as u64, stream, stream_start, chunk)
    };
    let (looped, (irrelevant, mode, stream, _start, chunk)) = tokio::join!(
        event_loop(&mut app, &mut term, input, &mut rx, Backend::Headless),
        driver
    );
    looped?;
    let fps_max = stream
        .iter()
        .map(|&t| {
            stream
                .iter()
                .filter(|&&u| u >= t && u < t + Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    let stream_exact = app.live_text().len() == chunk.len() * 10_000
        && app
            .live_text()
            .as_bytes()
            .chunks(chunk.len())
            .all(|c| c == chunk.as_bytes());
    Ok(InProcess {
        p99_10k,
        p99_10,
        irrelevant_frames: irrelevant,
        mode_frames: mode,
        stream_fps_max: fps_max,
        stream_frames: stream.len(),
        stream_exact,
    })
}
