//! The `strata` binary: parses arguments, runs one command, and turns its outcome into a
//! message and an exit code (in [`exit`], the one place that does so).
//!
//! - `strata -p …`: a headless agent run ([`headless`]);
//! - `strata config …`, `strata sessions …`: the subcommands ([`commands`]);
//! - `strata` alone: the interactive UI, which is not built yet (says so, exit code 2).

mod args;
mod commands;
mod exit;
mod headless;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = args::Cli::parse();
    init_logging();
    exit::report(run(cli))
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
        None if cli.agent.print => headless::run(cli.agent),
        None => Err(exit::Failure::usage(headless::NO_INTERACTIVE_UI).into()),
    }
}
