//! The `strata` binary: parses arguments, runs one command, and turns its outcome into a
//! message and an exit code (in [`exit`], the one place that does so).
//!
//! - `strata -p …`: a headless agent run ([`headless`]), also without `-p` when an SDK
//!   drives it (`--input-format stream-json`);
//! - `strata config …`, `strata sessions …`, `strata serve …` (the web view of remote
//!   sessions): the subcommands ([`commands`]);
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
mod remote;
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
    init_logging(&cli.agent.sdk);
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
///
/// The reference CLI's debug flags: `--debug` and `--debug-to-stderr` put strata's debug
/// events (each model request and response, tool call, permission decision, hook run,
/// MCP connection) on stderr; `--debug-file <path>` appends them to that file instead,
/// with times, while stderr keeps the warnings. `STRATA_LOG` still decides what reaches
/// stderr when it is set.
fn init_logging(sdk: &args::SdkArgs) {
    use tracing_subscriber::{
        EnvFilter, Layer, fmt, layer::SubscriberExt, util::SubscriberInitExt,
    };
    let debug_on_stderr = sdk.debug_to_stderr || (sdk.debug.is_some() && sdk.debug_file.is_none());
    let stderr_filter = EnvFilter::try_from_env("STRATA_LOG").unwrap_or_else(|_| {
        EnvFilter::new(if debug_on_stderr {
            DEBUG_FILTER
        } else {
            "warn"
        })
    });
    let stderr = fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .with_target(false)
        .compact()
        .with_filter(stderr_filter);
    let opened = sdk.debug_file.as_ref().map(|path| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("--debug-file {path}: {e}; debug output is not written"))
    });
    let (file, problem) = match opened {
        Some(Ok(file)) => (Some(file), None),
        Some(Err(problem)) => (None, Some(problem)),
        None => (None, None),
    };
    let file = file.map(|file| {
        fmt::layer()
            .with_writer(std::sync::Mutex::new(file))
            .with_ansi(false)
            .with_filter(EnvFilter::new(DEBUG_FILTER))
    });
    // Fails only if a subscriber is already set, which nothing else does.
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .try_init();
    if let Some(problem) = problem {
        tracing::warn!("{problem}");
    }
}

/// Debug events of strata's own crates; warnings only from the libraries beneath (their
/// debug output is the HTTP and TLS machinery's, not the session's).
const DEBUG_FILTER: &str = "warn,strata=debug,strata_agent=debug,strata_mcp=debug,\
strata_session=debug,strata_state=debug,strata_store=debug,strata_config=debug,\
strata_remote=debug,strata_web=debug,strata_tui=debug,strata_bootstrap=debug,strata_protocol=debug";

fn run(cli: args::Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(args::Command::Config(a)) => commands::config::run(a),
        Some(args::Command::Sessions(a)) => commands::sessions::run(a),
        Some(args::Command::Mcp(a)) => commands::mcp::run(a),
        Some(args::Command::Trust(a)) => commands::trust::run(a),
        Some(args::Command::Serve(a)) => commands::serve::run(a),
        // The Agent SDKs start strata without -p (headless::implied).
        None if cli.agent.print || headless::implied(&cli.agent) => headless::run(cli.agent),
        None => interactive::run(cli.agent),
    }
}
