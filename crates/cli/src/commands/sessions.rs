//! `strata sessions …`: list the sessions of a project, show one rebuilt the way resume
//! rebuilds it, rewind a session's file edits.
//!
//! - `strata sessions list [--all-projects] [--json] [--remote <nats-url>]`
//! - `strata sessions show <session-id or path.jsonl> [--json]`
//! - `strata sessions rewind <session-id> --to <user-message-uuid> [--dry-run]`
//! - `strata sessions cleanup [--dry-run] [--json]`: delete sessions older than
//!   `cleanupPeriodDays` (also done when a session starts)
//!
//! `STRATA_CONFIG_DIR` chooses the config directory and the working directory the
//! project. An unknown id or an unreadable file is a one-line error and exit code 1.

pub(crate) mod cleanup;
mod remote;
mod rewind;

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use strata_config::paths;
use strata_protocol::message::{ContentBlock, MessageContent};
use strata_protocol::transcript::{Entry, EntryKind};
use strata_session::chain::Repair;
use strata_session::listing::{self, Listing, SessionSummary};
use strata_session::reader::MalformedLine;
use strata_session::resume::{self, LoadedSession};

use crate::commands::output;
use crate::exit::Failure;

/// Arguments of `strata sessions`.
#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// List sessions, the most recently updated first (by the UPDATED time shown).
    List(ListArgs),
    /// Show a session as resume rebuilds it: live conversation, repairs, metadata, cost.
    Show(ShowArgs),
    /// Restore the files a session edited to their state at one of its user messages.
    Rewind(rewind::RewindArgs),
    /// Delete sessions last active more than `cleanupPeriodDays` ago (default 30).
    Cleanup(cleanup::CleanupArgs),
}

/// Arguments of `strata sessions list`.
#[derive(Debug, Args)]
struct ListArgs {
    /// List the sessions of every project, not only the current one.
    #[arg(long)]
    all_projects: bool,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// List the sessions replicated on this NATS server (`nats://host:port`) instead.
    #[arg(long, value_name = "NATS_URL", conflicts_with = "all_projects")]
    remote: Option<String>,
}

/// Arguments of `strata sessions show`.
#[derive(Debug, Args)]
struct ShowArgs {
    /// A session id of this project (or any project), or the path of a .jsonl transcript.
    session: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Show this sub-agent's transcript (`subagents/agent-<id>.jsonl`) instead, read by
    /// the same rules.
    #[arg(long, value_name = "AGENT_ID")]
    agent: Option<String>,
}

/// Runs `strata sessions`.
pub(crate) fn run(args: SessionsArgs) -> anyhow::Result<()> {
    match args.command {
        SessionsCommand::List(a) => list(a),
        SessionsCommand::Show(a) => show(a),
        SessionsCommand::Rewind(a) => rewind::run(a),
        SessionsCommand::Cleanup(a) => cleanup::run(a),
    }
}

fn config_and_project() -> anyhow::Result<(PathBuf, PathBuf)> {
    let config = paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?;
    Ok((config, paths::project_root(&cwd)))
}

#[allow(clippy::print_stderr)] // warnings about skipped files go to stderr
fn list(args: ListArgs) -> anyhow::Result<()> {
    if let Some(url) = &args.remote {
        return remote::list(url, args.json);
    }
    let (config, project) = config_and_project()?;
    let mut listing = if args.all_projects {
        listing::list_all(&config)
    } else {
        listing::list_project(&config, &project)
    }
    .map_err(|e| Failure::failed(e.to_string()))?;
    order_by_shown_time(&mut listing.sessions);
    for (path, why) in &listing.unreadable {
        eprintln!("skipped unreadable transcript {}: {why}", path.display());
    }
    for s in listing.sessions.iter().filter(|s| s.skipped_lines > 0) {
        eprintln!(
            "{}: {} unreadable line(s) skipped (`strata sessions show {}` says where)",
            s.path.display(),
            s.skipped_lines,
            s.session_id
        );
    }
    if args.json {
        let rows: Vec<Value> = listing.sessions.iter().map(summary_json).collect();
        output::println(&serde_json::to_string_pretty(&rows)?)?;
    } else {
        output::print(&list_table(&listing, args.all_projects, &project))?;
    }
    Ok(())
}

/// Orders `sessions` newest first by the time the listing shows for them: the last
/// entry's timestamp (`UPDATED`, `updatedAt`). The library lists by file modification
/// time, which a copy, a `touch` or a backup restore changes without the session
/// changing, so a table sorted by it could show an older UPDATED above a newer one. A
/// session with no readable timestamp (it shows `-`) goes by its modification time.
/// Ties go by session id, descending, as the library's order does.
fn order_by_shown_time(sessions: &mut [SessionSummary]) {
    sessions.sort_by_cached_key(|s| std::cmp::Reverse((shown_time(s), s.session_id.clone())));
}

fn shown_time(s: &SessionSummary) -> std::time::SystemTime {
    s.updated_at
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(s.modified, std::time::SystemTime::from)
}

fn summary_json(s: &SessionSummary) -> Value {
    json!({
        "sessionId": s.session_id,
        "title": s.title,
        "firstPrompt": s.first_prompt,
        "messageCount": s.message_count,
        "createdAt": s.created_at,
        "updatedAt": s.updated_at,
        "projectDir": s.project(),
    })
}

fn list_table(listing: &Listing, all: bool, project: &std::path::Path) -> String {
    let mut out = String::new();
    if listing.sessions.is_empty() {
        let _ = writeln!(
            out,
            "No sessions for {}.",
            if all {
                "any project".to_owned()
            } else {
                project.display().to_string()
            }
        );
        return out;
    }
    let _ = writeln!(
        out,
        "{:<36}  {:<16}  {:<16}  {:>5}  TITLE / FIRST PROMPT",
        "SESSION", "CREATED", "UPDATED", "MSGS"
    );
    for s in &listing.sessions {
        let what = s
            .title
            .clone()
            .or_else(|| s.first_prompt.clone())
            .unwrap_or_else(|| "(no prompt)".into());
        let _ = writeln!(
            out,
            "{:<36}  {:<16}  {:<16}  {:>5}  {}",
            s.session_id,
            short_time(s.created_at.as_deref()),
            short_time(s.updated_at.as_deref()),
            s.message_count,
            one_line(&what, 80)
        );
        if all {
            let _ = writeln!(out, "{:<36}  in {}", "", s.project());
        }
    }
    out
}

/// `2026-02-12T16:02:25.284Z` → `2026-02-12 16:02`.
fn short_time(t: Option<&str>) -> String {
    match t {
        Some(t) if t.len() >= 16 => format!("{} {}", &t[..10], &t[11..16]),
        Some(t) => t.to_owned(),
        None => "-".to_owned(),
    }
}

/// `s` on one line, without control characters (transcripts hold terminal escapes that
/// must not reach the user's terminal), shortened to `max` characters.
fn one_line(s: &str, max: usize) -> String {
    let clean: String = s
        .chars()
        .filter(|c| !c.is_control() || c.is_whitespace())
        .collect();
    let flat: String = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

fn show(args: ShowArgs) -> anyhow::Result<()> {
    let (config, project) = config_and_project()?;
    let path = resume::resolve(&config, &project, &args.session)
        .map_err(|e| Failure::failed(e.to_string()))?;
    let mut s = LoadedSession::load(&path).map_err(|e| Failure::failed(e.to_string()))?;
    if let Some(agent) = &args.agent {
        let agent = agent.trim().trim_start_matches("agent-");
        let Some(found) = s.subagents.iter().find(|a| a.agent_id == agent) else {
            let known: Vec<&str> = s.subagents.iter().map(|a| a.agent_id.as_str()).collect();
            return Err(Failure::failed(if known.is_empty() {
                format!("session {} has no sub-agent transcripts", s.session_id)
            } else {
                format!(
                    "session {} has no sub-agent {agent}; its sub-agents: {}",
                    s.session_id,
                    known.join(", ")
                )
            })
            .into());
        };
        let path = found.path.clone();
        s = LoadedSession::load(&path).map_err(|e| Failure::failed(e.to_string()))?;
    }
    if args.json {
        output::println(&serde_json::to_string_pretty(&show_json(&s)?)?)?;
    } else {
        output::print(&show_text(&s)?)?;
    }
    Ok(())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShowJson {
    session_id: String,
    leaf_uuid: Option<String>,
    messages: Vec<Box<RawValue>>,
    repairs: Vec<Value>,
    metadata: Value,
    usage: Value,
    /// How many lines were skipped (`unreadableLines.len()`).
    malformed_lines: usize,
    /// Each skipped line: `line`, `column`, `reason` (left out when there is none, so
    /// the report of an intact session is unchanged).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unreadable_lines: Vec<Value>,
    subagents: Vec<Value>,
}

/// serde's message without its position ("at line 1 column …": serde sees one line
/// alone, so its line number is never the file's).
fn serde_reason(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let position = format!(" at line {} column {}", err.line(), err.column());
    text.strip_suffix(&position).unwrap_or(&text).to_owned()
}

/// One skipped line as `show --json` reports it.
fn unreadable_json(l: &MalformedLine) -> Value {
    json!({
        "line": l.line,
        "column": l.column,
        "reason": l.reason,
        "tornTail": l.torn_tail,
        "recoveredRecord": l.recovered_record,
    })
}

fn show_json(s: &LoadedSession) -> anyhow::Result<ShowJson> {
    let mut messages = Vec::new();
    let mut unreadable: Vec<Value> = s.malformed().iter().map(unreadable_json).collect();
    for e in s
        .live_entries()
        .map_err(|e| Failure::failed(e.to_string()))?
    {
        if matches!(
            e.kind,
            EntryKind::User | EntryKind::Assistant | EntryKind::System
        ) {
            // The reader has already checked every line; should serde still refuse one,
            // it is one bad record, skipped and counted with its own line number, never
            // the end of the whole report.
            match RawValue::from_string(e.json) {
                Ok(raw) => messages.push(raw),
                Err(err) => unreadable.push(json!({
                    "line": e.line,
                    "column": err.column(),
                    "reason": serde_reason(&err),
                    "tornTail": false,
                    "recoveredRecord": false,
                })),
            }
        }
    }
    unreadable.sort_by_key(|v| v["line"].as_u64());
    let m = &s.metadata;
    let pr_link = m.pr_link.as_ref().map(
        |p| json!({"prNumber": p.pr_number, "prUrl": p.pr_url, "prRepository": p.pr_repository}),
    );
    let mut by_model = Map::new();
    for (model, u) in &s.usage.by_model {
        by_model.insert(
            model.clone(),
            json!({
                "inputTokens": u.input_tokens,
                "outputTokens": u.output_tokens,
                "cacheReadInputTokens": u.cache_read_input_tokens,
                "cacheCreationInputTokens": u.cache_creation_input_tokens,
                "costUSD": u.cost_usd,
            }),
        );
    }
    Ok(ShowJson {
        session_id: s.session_id.clone(),
        leaf_uuid: s.leaf_uuid(),
        messages,
        repairs: s.repairs().iter().map(repair_json).collect(),
        metadata: json!({
            "customTitle": m.custom_title,
            "aiTitle": m.ai_title,
            "tag": m.tag,
            "agentName": m.agent_name,
            "agentColor": m.agent_color,
            "permissionMode": m.permission_mode,
            "worktree": m.worktree,
            "prLink": pr_link,
        }),
        usage: json!({"byModel": by_model, "totalCostUSD": s.usage.total_cost_usd}),
        malformed_lines: unreadable.len(),
        unreadable_lines: unreadable,
        subagents: s
            .subagents
            .iter()
            .map(|a| json!({"agentId": a.agent_id, "messageCount": a.message_count}))
            .collect(),
    })
}

fn repair_json(r: &Repair) -> Value {
    match r {
        Repair::BridgedGap {
            line,
            uuid,
            missing_parent,
            bridged_to,
            bridged_to_line,
        } => json!({
            "kind": "bridgedGap",
            "line": line,
            "uuid": uuid,
            "missingParent": missing_parent,
            "bridgedTo": bridged_to,
            "bridgedToLine": bridged_to_line,
        }),
        Repair::CycleStopped { line, uuid } => {
            json!({"kind": "cycleStopped", "line": line, "uuid": uuid})
        }
    }
}

fn repair_text(r: &Repair) -> String {
    match r {
        Repair::BridgedGap {
            line,
            missing_parent,
            bridged_to_line,
            ..
        } => format!(
            "line {line} names a parent that is not in the file ({missing_parent}); \
             the conversation continues at line {bridged_to_line} instead of losing what came before"
        ),
        Repair::CycleStopped { line, .. } => {
            format!(
                "line {line} leads back into the conversation (a cycle); earlier entries were left out"
            )
        }
    }
}

fn show_text(s: &LoadedSession) -> anyhow::Result<String> {
    let mut out = String::new();
    let m = &s.metadata;
    let _ = writeln!(out, "Session {}", s.session_id);
    let _ = writeln!(out, "  file:       {}", s.path.display());
    if let Some(t) = m.title() {
        let _ = writeln!(out, "  title:      {t}");
    }
    if let Some(cwd) = s.cwd() {
        let _ = writeln!(out, "  project:    {cwd}");
    }
    for (label, v) in [
        ("tag", &m.tag),
        ("agent", &m.agent_name),
        ("colour", &m.agent_color),
        ("mode", &m.permission_mode),
    ] {
        if let Some(v) = v {
            let _ = writeln!(out, "  {:<11} {v}", format!("{label}:"));
        }
    }
    if let Some(p) = &m.pr_link {
        let _ = writeln!(out, "  pr:         #{} {}", p.pr_number, p.pr_url);
    }
    let _ = writeln!(
        out,
        "  messages:   {} live ({} entries)",
        s.message_count(),
        s.chain.len()
    );
    if let Some(leaf) = s.leaf_uuid() {
        let _ = writeln!(out, "  leaf:       {leaf}");
    }
    let _ = writeln!(out, "  cost:       ${:.4}", s.usage.total_cost_usd);
    for (model, u) in &s.usage.by_model {
        let _ = writeln!(
            out,
            "    {model}: {} in, {} out, {} cache read, {} cache write, ${:.4}",
            u.input_tokens,
            u.output_tokens,
            u.cache_read_input_tokens,
            u.cache_creation_input_tokens,
            u.cost_usd
        );
    }
    for a in &s.subagents {
        let _ = writeln!(
            out,
            "  sub-agent:  {} ({} messages)",
            a.agent_id, a.message_count
        );
    }
    for r in s.repairs() {
        let _ = writeln!(out, "  repaired:   {}", repair_text(r));
    }
    for l in s.malformed() {
        let what = if l.recovered_record {
            "a torn fragment was skipped and the record after it kept"
        } else if l.torn_tail {
            "the last line was cut short (torn) and skipped"
        } else {
            "skipped"
        };
        let _ = writeln!(
            out,
            "  unreadable: line {} column {}: {} ({what})",
            l.line, l.column, l.reason
        );
    }
    let _ = writeln!(out);
    for e in s
        .live_entries()
        .map_err(|e| Failure::failed(e.to_string()))?
    {
        if let Some(line) = entry_line(&e.json) {
            let _ = writeln!(out, "{line}");
        }
    }
    Ok(out)
}

/// One line describing a live entry; `None` for entries not worth showing.
fn entry_line(json: &str) -> Option<String> {
    let entry = Entry::parse(json).ok()?;
    let (who, text) = match entry {
        Entry::User(u) => {
            let text = match &u.message.content {
                MessageContent::Text(t) => t.clone(),
                MessageContent::Blocks(b) => blocks_text(b),
            };
            (
                if u.is_meta == Some(true) {
                    "user (meta)"
                } else {
                    "user"
                },
                text,
            )
        }
        Entry::Assistant(a) => ("assistant", blocks_text(&a.message.content)),
        Entry::System(s) => (
            "system",
            format!(
                "{}: {}",
                s.subtype.unwrap_or_default(),
                s.content.unwrap_or_default()
            ),
        ),
        _ => return None,
    };
    let text = one_line(&text, 110);
    if text.is_empty() {
        return None;
    }
    Some(format!("[{who}] {text}"))
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.trim().to_owned(),
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => {
                "(thinking)".to_owned()
            }
            ContentBlock::ToolUse(u) => format!("→ {}", u.name),
            ContentBlock::ToolResult(r) => {
                if r.is_error == Some(true) {
                    "← tool error".to_owned()
                } else {
                    "← tool result".to_owned()
                }
            }
            ContentBlock::Image(_) => "(image)".to_owned(),
            ContentBlock::Unknown(m) => format!(
                "({})",
                m.get("type").and_then(Value::as_str).unwrap_or("block")
            ),
        })
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
