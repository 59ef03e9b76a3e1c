//! The `strata` binary: parses arguments, runs one command, and turns its outcome into a
//! message and an exit code (in [`exit`], the one place that does so).

mod args;
mod commands;
mod exit;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = args::Cli::parse();
    exit::report(run(cli))
}

fn run(cli: args::Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(args::Command::Config(a)) => commands::config::run(a),
        Some(args::Command::Sessions(a)) => commands::sessions::run(a),
        None => Err(exit::Failure::usage(
            "the agent is not built yet: use `strata config …` or `strata sessions …`",
        )
        .into()),
    }
}
