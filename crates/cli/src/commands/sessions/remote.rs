//! `strata sessions list --remote <nats-url>`: the sessions replicated on a NATS server
//! (issue 17 item 3), read from the `strata_sessions` metadata bucket, most recently
//! updated first, with the credentials and TLS of the settings' `remote` block.
//! `strata -r <id> --remote <url>` then resumes one of them here.

use serde_json::{Map, Value};

use crate::commands::output;
use crate::exit::Failure;

/// How long the listing waits for the server.
const CONNECT_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Lists the remote's sessions as a table, or as a JSON array with `json`.
pub(crate) fn list(url: &str, json: bool) -> anyhow::Result<()> {
    let config_dir =
        strata_config::paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?;
    let options = crate::remote::options(&config_dir, &cwd, None, Some(url))?
        .unwrap_or_else(|| strata_remote::RemoteOptions::from_url(url));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    let sessions = runtime
        .block_on(async {
            let connection =
                strata_remote::RemoteConnection::connect(&options, CONNECT_LIMIT).await?;
            strata_remote::list_sessions(&connection).await
        })
        .map_err(|e| Failure::failed(e.to_string()))?;
    if json {
        let rows: Vec<Value> = sessions
            .into_iter()
            .map(|(id, mut doc)| {
                doc.insert("sessionId".into(), Value::from(id));
                Value::Object(doc)
            })
            .collect();
        return output::println(&serde_json::to_string_pretty(&rows)?);
    }
    if sessions.is_empty() {
        return output::println("No sessions on the remote.");
    }
    let field = |doc: &Map<String, Value>, key: &str| {
        doc.get(key)
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_owned()
    };
    let mut table = format!(
        "{:<36}  {:<25}  {:<17}  {:<7}  CWD\n",
        "SESSION", "UPDATED", "MODE", "STATUS"
    );
    for (id, doc) in &sessions {
        table.push_str(&format!(
            "{id:<36}  {:<25}  {:<17}  {:<7}  {}\n",
            field(doc, "updated_at"),
            field(doc, "permission_mode"),
            field(doc, "status"),
            field(doc, "cwd"),
        ));
    }
    output::print(&table)
}
