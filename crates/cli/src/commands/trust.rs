//! `strata trust [--revoke]`: trust the current project, so the hooks of its own settings
//! files (`.strata/settings.json`, `.strata/settings.local.json`) run.
//!
//! A project's hooks are commands that came with the checkout: they run only in a folder
//! the user trusted (`strata_agent::hooks::trust`). Trust is recorded as the reference
//! agent records it, `hasTrustDialogAccepted: true` in the config file's entry for the
//! project root, through the locked config write every other entry uses.

use clap::Args;
use serde_json::Value;
use strata_agent::hooks::trust::TRUST_KEY;
use strata_config::{GlobalConfigFile, paths};

use crate::commands::output;
use crate::exit::Failure;

/// Arguments of `strata trust`.
#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// Withdraw the trust instead: the project's hooks no longer run.
    #[arg(long)]
    revoke: bool,
}

/// Runs `strata trust`.
pub(crate) fn run(args: TrustArgs) -> anyhow::Result<()> {
    let config = paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?;
    let root = paths::project_root(&cwd);
    let key = root.to_string_lossy().into_owned();
    GlobalConfigFile::new(&config)
        .update(|c| {
            let extra = &mut c.project_mut(&key).extra;
            if args.revoke {
                extra.remove(TRUST_KEY);
            } else {
                extra.insert(TRUST_KEY.to_owned(), Value::Bool(true));
            }
        })
        .map_err(|e| Failure::failed(e.to_string()))?;
    output::println(&if args.revoke {
        format!(
            "{} is no longer trusted: its own hooks do not run",
            root.display()
        )
    } else {
        format!(
            "Trusted {}: the hooks of its .strata and .claude settings files run from the next session on",
            root.display()
        )
    })
}
