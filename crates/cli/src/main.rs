//! The `strata` binary: parses arguments, runs one command, and turns its outcome into a
//! message and an exit code (in [`exit`], the one place that does so).
//!
//! - `strata -p …`: a headless agent run ([`headless`]), also without `-p` when an SDK
//!   drives it (`--input-format stream-json`);
//! - `strata config …`, `strata sessions …`: the subcommands ([`commands`]);
//! - `strata` alone: the interactive terminal UI ([`interactive`]; needs a terminal);
//! - `strata __strata-supervise …` (hidden): the supervisor of one tool command, which
//!   strata starts itself (`strata_agent::procs`).
//!
//! Every exit path stops the processes the tools started ([`signals`]).

mod args;
mod commands;
mod exit;
mod headless;
mod interactive;
mod signals;

use clap::Parser;

fn main() -> std::process::ExitCode {
    // strata re-executed as the supervisor of one tool command (strata_agent::procs).
    if let Some(code) = strata_agent::procs::run_if_supervisor() {
        return code;
    }
    // Itself, even if the file on disk was replaced since it started.
    strata_agent::procs::set_supervisor_program("/proc/self/exe");
    // The processes of a supervisor a command killed come to strata, which stops them on
    // exit. Failing here (a kernel without subreapers) only loses that second line.
    let _ = strata_agent::procs::adopt_orphans();
    let cli = args::Cli::parse();
    init_logging();
    // Every way out of `run` — an answer, an error, a panic (on this thread, or in the
    // turn's task and surfacing here) — stops the tools' processes before exiting.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli)));
    signals::stop_processes();
    match outcome {
        Ok(result) => exit::report(result),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Warnings from every layer (a retried request, a settings file that cannot be used,
/// a side effect that failed) go to stderr, so a run that waits or degrades says why;
/// stdout stays the command's output. `STRATA_LOG` sets the level (`STRATA_LOG=debug`).
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("STRATA_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    // Fails only if a subscriber is already set, which nothing else does.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .with_target(false)
        .compact()
        .try_init();
}

fn run(cli: args::Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(args::Command::Config(a)) => commands::config::run(a),
        Some(args::Command::Sessions(a)) => commands::sessions::run(a),
        Some(args::Command::Mcp(a)) => commands::mcp::run(a),
        Some(args::Command::Trust(a)) => commands::trust::run(a),
        // The Agent SDKs start strata without -p (headless::implied).
        None if cli.agent.print || headless::implied(&cli.agent) => headless::run(cli.agent),
        None => interactive::run(cli.agent),
    }
}
