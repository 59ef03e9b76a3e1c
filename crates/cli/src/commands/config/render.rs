//! How `strata config` prints values: the one place that writes to stdout.
//!
//! Output goes through a locked stdout and a closed pipe (`strata config list | head`) ends
//! the output quietly instead of panicking as `println!` would.

use std::io::{self, Write};

use serde_json::Value;

/// One line of `strata config list`.
#[derive(Debug, serde::Serialize)]
pub(super) struct Row {
    /// Dotted key.
    pub(super) key: String,
    /// The effective value.
    pub(super) value: Value,
    /// For an array, the source of each element; otherwise the one source that won.
    pub(super) sources: Vec<String>,
    /// The files matching `sources`, item for item.
    pub(super) files: Vec<String>,
}

/// `get`: strings print as themselves (handy in scripts), everything else as compact JSON;
/// with `json`, always JSON.
pub(super) fn print_value(value: &Value, json: bool) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match value {
        Value::String(s) if !json => writeln!(out, "{s}"),
        other => writeln!(out, "{other}"),
    }
}

/// `list`: `key = value  [source, …]` lines, or a JSON array of rows.
pub(super) fn print_rows(rows: &[Row], json: bool) -> io::Result<()> {
    let mut out = io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, rows)?;
        return writeln!(out);
    }
    for row in rows {
        writeln!(
            out,
            "{} = {}  [{}]",
            row.key,
            row.value,
            distinct(&row.sources).join(", ")
        )?;
    }
    Ok(())
}

fn distinct(items: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for i in items {
        if !out.contains(&i.as_str()) {
            out.push(i);
        }
    }
    out
}
