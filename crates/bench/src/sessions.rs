//! The `sessions` workload. Not built yet.

pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("the sessions workload is not built yet")
}
