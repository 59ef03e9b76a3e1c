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
    exit::report(run(cli))
}

fn run(cli: args::Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(args::Command::Config(a)) => commands::config::run(a),
        Some(args::Command::Sessions(a)) => commands::sessions::run(a),
        None if cli.agent.print => headless::run(cli.agent),
        None => Err(exit::Failure::usage(headless::NO_INTERACTIVE_UI).into()),
    }
}
