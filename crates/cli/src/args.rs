//! The command line: the top-level flags and the subcommands. Each subcommand's own
//! arguments live beside its implementation in [`crate::commands`].

use clap::{Parser, Subcommand};

/// strata: a terminal coding agent.
#[derive(Debug, Parser)]
#[command(name = "strata", version, about, long_about = None)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Read and change settings and the global config.
    Config(crate::commands::config::ConfigArgs),
    /// List, show and rewind sessions.
    Sessions(crate::commands::sessions::SessionsArgs),
}
