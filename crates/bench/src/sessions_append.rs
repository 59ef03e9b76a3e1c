//! The `append` part of the `sessions` workload. Not built yet.

/// Runs the append benchmark and prints its JSON line.
#[allow(dead_code)]
pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("the sessions append workload is not built yet")
}
