//! The `tasks` workload. Not built yet.

pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("the tasks workload is not built yet")
}
