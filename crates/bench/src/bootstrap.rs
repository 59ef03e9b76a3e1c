//! The `bootstrap` workload. Not built yet.

pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("the bootstrap workload is not built yet")
}
