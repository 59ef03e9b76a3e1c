//! Launch → echo in a tmux pane (issue 25 item 8): how long after a terminal coding agent
//! is started a key typed at once shows in its prompt, for strata and, when it is
//! installed, Codex side by side.
//!
//! ```text
//! strata-bench tui --only launch [--launches N] [--codex PATH]
//! ```
//!
//! One private tmux server (its own socket, no configuration file) runs for the whole
//! measurement, driven through one control-mode client (`tmux -C`): a command costs the
//! server a few microseconds, where a `tmux` process per poll would take a core from the
//! program being measured. Each launch is one command line for the server,
//! `new-window -d -n <name> <program> ; send-keys -t =<name> x`, so the key is sent the
//! moment the pane exists, before the program has read its arguments; the clock starts
//! just before that line is written and stops when `capture-pane` first shows the `x` in
//! the program's prompt (`> x` for strata, `› x` for Codex): what a person who starts
//! typing at once sees. The kernel's own echo of the key, shown before a program puts
//! its terminal in raw mode, does not count: only the prompt's does.
//!
//! strata starts with a fresh config directory each time (no history, no sessions) in a
//! project with a `.git`; Codex with its API key in `auth.json` of its own home
//! (`CODEX_HOME`) so it goes straight to its prompt. One unmeasured launch of each warms
//! the page cache (and starts Codex's background server, as any earlier use would
//! have); the median of `--launches` (default 15) is reported.
//!
//! Codex is `codex` on `PATH`, or `--codex PATH`; install it for a run only, e.g.
//! `npm install --prefix /tmp/codex @openai/codex` and `--codex /tmp/codex/node_modules/.bin/codex`.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// The pane's size.
const COLS: u16 = 100;
const ROWS: u16 = 30;
/// Launches measured when `--launches` is not given.
pub(crate) const DEFAULT_LAUNCHES: usize = 15;
/// A launch whose echo has not shown by then failed.
const ECHO_LIMIT: Duration = Duration::from_secs(20);

/// The figures of one program.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchEcho {
    /// Median launch → echo, in ms.
    pub(crate) median_ms: f64,
    /// The fastest launch.
    pub(crate) min_ms: f64,
    /// The slowest launch.
    pub(crate) max_ms: f64,
    /// Launches measured.
    pub(crate) runs: usize,
}

/// A program to launch: its command line, environment and the prompt marker its echo
/// follows.
struct Program {
    argv: Vec<String>,
    env: Vec<(String, String)>,
    /// What the prompt line shows once the key is echoed.
    echoed: &'static str,
}

/// strata's launch → echo, and Codex's when `codex` is found.
pub(crate) fn measure(
    strata: &Path,
    work: &Path,
    launches: usize,
    codex: Option<PathBuf>,
) -> anyhow::Result<(LaunchEcho, Option<LaunchEcho>)> {
    let project = work.join("launch-project");
    std::fs::create_dir_all(project.join(".git"))?;
    let mut tmux = Tmux::start(work)?;
    let result = (|| {
        let mut n = 0usize;
        let strata_figures = series(&mut tmux, &project, launches, &mut n, |i| {
            let config = work.join(format!("launch-config-{i}"));
            let _ = std::fs::remove_dir_all(&config);
            std::fs::create_dir_all(&config)?;
            Ok(Program {
                argv: vec![strata.to_string_lossy().into_owned()],
                env: vec![
                    ("STRATA_CONFIG_DIR".into(), config.to_string_lossy().into()),
                    ("HOME".into(), config.to_string_lossy().into()),
                    ("ANTHROPIC_API_KEY".into(), "bench-key".into()),
                    // Nothing is asked of a model; were it, only this machine is reached.
                    ("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9".into()),
                ],
                echoed: "> x",
            })
        })?;
        let codex_figures = match codex {
            Some(codex) => {
                let home = work.join("codex-home");
                std::fs::create_dir_all(&home)?;
                std::fs::write(home.join("auth.json"), r#"{"OPENAI_API_KEY":"sk-bench"}"#)?;
                let figures = series(&mut tmux, &project, launches, &mut n, |_| {
                    Ok(Program {
                        argv: vec![codex.to_string_lossy().into_owned()],
                        env: vec![
                            ("CODEX_HOME".into(), home.to_string_lossy().into()),
                            ("HOME".into(), home.to_string_lossy().into()),
                            ("OPENAI_API_KEY".into(), "sk-bench".into()),
                            ("OPENAI_BASE_URL".into(), "http://127.0.0.1:9/v1".into()),
                        ],
                        echoed: "› x",
                    })
                });
                stop_processes_under(&home);
                Some(figures?)
            }
            None => None,
        };
        Ok((strata_figures, codex_figures))
    })();
    tmux.stop();
    result
}

/// `codex` from `--codex`, else on `PATH`.
pub(crate) fn find_codex(flag: Option<&str>) -> Option<PathBuf> {
    if let Some(path) = flag {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("codex"))
            .find(|p| p.is_file())
    })
}

/// One unmeasured launch, then `launches` measured ones.
fn series(
    tmux: &mut Tmux,
    project: &Path,
    launches: usize,
    n: &mut usize,
    program: impl Fn(usize) -> anyhow::Result<Program>,
) -> anyhow::Result<LaunchEcho> {
    let mut samples = Vec::new();
    for i in 0..=launches {
        *n += 1;
        let ms = tmux.launch_to_echo(&format!("launch{n}"), project, &program(i)?)?;
        if i > 0 {
            samples.push(ms);
        }
    }
    let median = crate::measure::median(&mut samples).unwrap_or(0.0);
    Ok(LaunchEcho {
        median_ms: round2(median),
        min_ms: round2(samples.first().copied().unwrap_or(0.0)),
        max_ms: round2(samples.last().copied().unwrap_or(0.0)),
        runs: samples.len(),
    })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A private tmux server and a control-mode client attached to it.
struct Tmux {
    socket: PathBuf,
    client: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Tmux {
    fn start(work: &Path) -> anyhow::Result<Self> {
        let socket = work.join("tmux.sock");
        // The server's first session only holds the control client: the programs run
        // in windows of another session, so their output is not streamed to it.
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "ctl"])
            .args(["-x", &COLS.to_string(), "-y", &ROWS.to_string(), "cat"])
            // The server's environment is every pane's: no key or endpoint of this
            // shell reaches the programs, only what each launch sets.
            .env_remove("ANTHROPIC_AUTH_TOKEN")
            .env_remove("ANTHROPIC_MODEL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("STRATA_LOG")
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .status()
            .context("cannot run tmux (the launch measurement needs it)")?;
        if !status.success() {
            bail!("tmux could not start its server");
        }
        let bench = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["new-session", "-d", "-s", "bench"])
            .args(["-x", &COLS.to_string(), "-y", &ROWS.to_string(), "cat"])
            .status()?;
        if !bench.success() {
            bail!("tmux could not open the bench session");
        }
        let mut client = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-C", "attach-session", "-t", "ctl"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start a tmux control client")?;
        let input = client
            .stdin
            .take()
            .context("the control client has no stdin")?;
        let output = BufReader::new(
            client
                .stdout
                .take()
                .context("the control client has no stdout")?,
        );
        let mut tmux = Self {
            socket,
            client,
            input,
            output,
        };
        // The attach itself answers with one (empty) block.
        tmux.block()?;
        tmux.command(&format!(
            "set-option -g remain-on-exit off ; set-option -g history-limit 0 ; \
             resize-window -t bench -x {COLS} -y {ROWS}"
        ))?;
        Ok(tmux)
    }

    /// Sends one command line; returns the output of its last command.
    fn command(&mut self, line: &str) -> anyhow::Result<Vec<String>> {
        writeln!(self.input, "{line}")?;
        self.input.flush()?;
        // A line of several commands answers with one block per command.
        let mut out = Vec::new();
        for _ in 0..line.split(" ; ").count() {
            out = self.block()?;
        }
        Ok(out)
    }

    /// Reads one `%begin … %end` block; notifications around it are skipped.
    fn block(&mut self) -> anyhow::Result<Vec<String>> {
        let mut line = String::new();
        let mut lines = Vec::new();
        let mut inside = false;
        loop {
            line.clear();
            if self.output.read_line(&mut line)? == 0 {
                bail!("the tmux control client stopped");
            }
            let text = line.trim_end_matches(['\r', '\n']);
            if !inside {
                inside = text.starts_with("%begin ");
                continue;
            }
            if text.starts_with("%end ") {
                return Ok(lines);
            }
            if text.starts_with("%error ") {
                bail!("tmux refused a command: {}", lines.join("\n"));
            }
            lines.push(text.to_owned());
        }
    }

    /// Launches `program` in a new window named `name`, types `x` into it at once and
    /// returns the ms until its prompt shows the `x`.
    fn launch_to_echo(
        &mut self,
        name: &str,
        project: &Path,
        program: &Program,
    ) -> anyhow::Result<f64> {
        let mut line = format!("new-window -d -t bench: -n {name} -c {}", quote(project));
        for (k, v) in &program.env {
            line.push_str(&format!(" -e {}", quote_str(&format!("{k}={v}"))));
        }
        for arg in &program.argv {
            line.push(' ');
            line.push_str(&quote_str(arg));
        }
        line.push_str(&format!(" ; send-keys -t =bench:{name} x"));
        let start = Instant::now();
        self.command(&line)?;
        let capture = format!("capture-pane -p -t =bench:{name}");
        let echoed = loop {
            let screen = self.command(&capture)?;
            if screen.iter().any(|l| l.contains(program.echoed)) {
                break start.elapsed();
            }
            if start.elapsed() > ECHO_LIMIT {
                bail!(
                    "{} never echoed the typed key in {ECHO_LIMIT:?}; its pane:\n{}",
                    program.argv[0],
                    screen.join("\n")
                );
            }
            std::thread::sleep(Duration::from_micros(300));
        };
        // Ctrl-C twice ends either program; the window goes when it exits, or is killed.
        let _ = self.command(&format!("send-keys -t =bench:{name} C-c C-c"));
        std::thread::sleep(Duration::from_millis(300));
        let _ = self.command(&format!("kill-window -t =bench:{name}"));
        Ok(echoed.as_secs_f64() * 1000.0)
    }

    fn stop(mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
        let _ = self.client.kill();
        let _ = self.client.wait();
    }
}

/// A path as one tmux argument.
fn quote(path: &Path) -> String {
    quote_str(&path.to_string_lossy())
}

/// A string as one tmux argument (single quotes; a quote inside is closed and escaped).
fn quote_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Stops the processes a program left running whose command line names `dir` (Codex's
/// background server lives on after its TUI exits, under its own home): only what this
/// measurement started, found by its own directory, each by its pid.
fn stop_processes_under(dir: &Path) {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}
