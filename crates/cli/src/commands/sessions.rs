//! `strata sessions …`: not built yet.

mod rewind;

use clap::{Args, Subcommand};

/// Arguments of `strata sessions`.
#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// Restore the files a session edited to their state at one of its user messages.
    Rewind(rewind::RewindArgs),
}

/// Runs `strata sessions`.
pub(crate) fn run(args: SessionsArgs) -> anyhow::Result<()> {
    match args.command {
        SessionsCommand::Rewind(a) => rewind::run(a),
    }
}
