//! `strata sessions rewind <session-id> --to <user-message-uuid> [--dry-run]`. Not built yet.

use clap::Args;

/// Arguments of `strata sessions rewind`.
#[derive(Debug, Args)]
pub(crate) struct RewindArgs {}

/// Runs `strata sessions rewind`.
pub(crate) fn run(_args: RewindArgs) -> anyhow::Result<()> {
    Err(crate::exit::Failure::usage("`strata sessions rewind` is not built yet").into())
}
