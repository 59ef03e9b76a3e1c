//! `strata config …`: not built yet.

use clap::Args;

/// Arguments of `strata config`.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {}

/// Runs `strata config`.
pub(crate) fn run(_args: ConfigArgs) -> anyhow::Result<()> {
    Err(crate::exit::Failure::usage("`strata config` is not built yet").into())
}
