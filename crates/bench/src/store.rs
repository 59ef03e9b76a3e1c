//! The `store` workload. Not built yet.

pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("the store workload is not built yet")
}
