//! `strata sessions …`: not built yet.

use clap::Args;

/// Arguments of `strata sessions`.
#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {}

/// Runs `strata sessions`.
pub(crate) fn run(_args: SessionsArgs) -> anyhow::Result<()> {
    Err(crate::exit::Failure::usage("`strata sessions` is not built yet").into())
}
