//! `strata mcp …`: the MCP server configuration, the reference agent's way.
//!
//! - `strata mcp add [--scope local|user|project] [--transport stdio|http|sse]
//!   [-e KEY=VALUE]… [-H 'Name: value']… <name> <command-or-url> [args…]`
//!   (default scope `local`: this project, in the config file, not checked in)
//! - `strata mcp remove [--scope …] <name>` (without `--scope`: local, project, user)
//! - `strata mcp list [--json]`, `strata mcp get <name> [--json]`: what a session here
//!   would start, with each server's scope and, for project servers, the approval
//! - `strata mcp approve <name>` / `strata mcp reject <name>`: the answer for a project
//!   server of `.mcp.json`, remembered for this project
//!
//! Listing reads the configuration only; a session's `/mcp` and the headless
//! `mcp_status` show the live connection status.

use clap::{Args, Subcommand, ValueEnum};
use indexmap::IndexMap;
use serde_json::{Value, json};
use strata_config::{GlobalConfigFile, paths};
use strata_mcp::{ServerConfig, sources};
use strata_state::McpConfigScope;

use crate::commands::output;
use crate::exit::Failure;

/// Arguments of `strata mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Add (or replace) a server.
    Add(AddArgs),
    /// Remove a server.
    Remove(RemoveArgs),
    /// List the configured servers.
    List(JsonFlag),
    /// Show one server's configuration.
    Get(GetArgs),
    /// Approve a project server of `.mcp.json` for this project.
    Approve(NameArg),
    /// Reject a project server of `.mcp.json` for this project.
    Reject(NameArg),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Scope {
    /// This project, in the config file (not checked in).
    Local,
    /// Every project, in the config file.
    User,
    /// This project's `.mcp.json` (checked in; needs each user's approval).
    Project,
}

impl From<Scope> for McpConfigScope {
    fn from(s: Scope) -> Self {
        match s {
            Scope::Local => McpConfigScope::Local,
            Scope::User => McpConfigScope::User,
            Scope::Project => McpConfigScope::Project,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Transport {
    Stdio,
    Http,
    Sse,
}

#[derive(Debug, Args)]
struct AddArgs {
    /// Where to write it.
    #[arg(long, short = 's', value_enum, default_value = "local")]
    scope: Scope,
    /// How to reach it.
    #[arg(long, short = 't', value_enum, default_value = "stdio")]
    transport: Transport,
    /// An environment variable of a stdio server (`KEY=VALUE`; repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// A header of an HTTP server (`'Name: value'`; repeatable).
    #[arg(long = "header", short = 'H', value_name = "HEADER")]
    headers: Vec<String>,
    /// The server's name.
    name: String,
    /// The program (stdio) or the URL (http, sse).
    command_or_url: String,
    /// The program's arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

#[derive(Debug, Args)]
struct RemoveArgs {
    /// Where to remove it from (default: wherever it is, local first).
    #[arg(long, short = 's', value_enum)]
    scope: Option<Scope>,
    /// The server's name.
    name: String,
}

#[derive(Debug, Args)]
struct JsonFlag {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct GetArgs {
    /// The server's name.
    name: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct NameArg {
    /// The server's name.
    name: String,
}

fn context() -> anyhow::Result<(GlobalConfigFile, std::path::PathBuf)> {
    let config = paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?;
    Ok((GlobalConfigFile::new(&config), paths::project_root(&cwd)))
}

/// Runs `strata mcp`.
pub(crate) fn run(args: McpArgs) -> anyhow::Result<()> {
    let (global, root) = context()?;
    match args.command {
        McpCommand::Add(a) => add(&global, &root, a),
        McpCommand::Remove(a) => remove(&global, &root, &a),
        McpCommand::List(a) => list(&global, &root, a.json),
        McpCommand::Get(a) => get(&global, &root, &a.name, a.json),
        McpCommand::Approve(a) => approve(&global, &root, &a.name, true),
        McpCommand::Reject(a) => approve(&global, &root, &a.name, false),
    }
}

fn pairs(items: &[String], sep: char, what: &str) -> anyhow::Result<IndexMap<String, String>> {
    items
        .iter()
        .map(|item| {
            let (k, v) = item.split_once(sep).ok_or_else(|| {
                Failure::usage(format!(
                    "{what} {item:?} has no '{sep}'; write it as KEY{sep}VALUE"
                ))
            })?;
            Ok((k.trim().to_owned(), v.trim_start().to_owned()))
        })
        .collect()
}

fn add(global: &GlobalConfigFile, root: &std::path::Path, a: AddArgs) -> anyhow::Result<()> {
    let config = match a.transport {
        Transport::Stdio => {
            if !a.headers.is_empty() {
                return Err(Failure::usage("--header is for http and sse servers").into());
            }
            ServerConfig::Stdio {
                command: a.command_or_url,
                args: a.args,
                env: pairs(&a.env, '=', "--env")?,
            }
        }
        Transport::Http | Transport::Sse => {
            if !a.env.is_empty() || !a.args.is_empty() {
                return Err(Failure::usage("--env and arguments are for stdio servers").into());
            }
            let headers = pairs(&a.headers, ':', "--header")?;
            let url = a.command_or_url;
            if a.transport == Transport::Http {
                ServerConfig::Http { url, headers }
            } else {
                ServerConfig::Sse { url, headers }
            }
        }
    };
    let scope = McpConfigScope::from(a.scope);
    sources::add_server(global, root, scope, &a.name, &config)
        .map_err(|e| Failure::failed(e.to_string()))?;
    output::println(&format!(
        "Added MCP server {} ({config}) to the {} configuration",
        a.name,
        sources::scope_name(scope)
    ))
}

fn remove(global: &GlobalConfigFile, root: &std::path::Path, a: &RemoveArgs) -> anyhow::Result<()> {
    let scopes: Vec<McpConfigScope> = match a.scope {
        Some(s) => vec![s.into()],
        None => vec![
            McpConfigScope::Local,
            McpConfigScope::Project,
            McpConfigScope::User,
        ],
    };
    for scope in &scopes {
        match sources::remove_server(global, root, *scope, &a.name) {
            Ok(()) => {
                return output::println(&format!(
                    "Removed MCP server {} from the {} configuration",
                    a.name,
                    sources::scope_name(*scope)
                ));
            }
            Err(sources::EditError::NotFound { .. }) => {}
            Err(e) => return Err(Failure::failed(e.to_string()).into()),
        }
    }
    Err(Failure::failed(format!(
        "no MCP server named {:?} is configured here",
        a.name
    ))
    .into())
}

fn loaded(global: &GlobalConfigFile, root: &std::path::Path) -> sources::Loaded {
    sources::load(sources::Inputs {
        project_root: root,
        global,
        flags: &[],
        strict: false,
        sdk: None,
    })
}

fn entry(s: &strata_mcp::ConfiguredServer) -> Value {
    let mut v = json!({"name": s.name.as_str(), "scope": sources::scope_name(s.scope), "config": s.config.to_json()});
    if let Some(reason) = &s.blocked {
        v["notStarted"] = json!(reason);
    }
    v
}

#[allow(clippy::print_stderr)] // configuration errors go to stderr, the list to stdout
fn list(global: &GlobalConfigFile, root: &std::path::Path, json_out: bool) -> anyhow::Result<()> {
    let loaded = loaded(global, root);
    for e in &loaded.errors {
        eprintln!("strata: {e}");
    }
    if json_out {
        let list: Vec<Value> = loaded.servers.iter().map(entry).collect();
        return output::println(&serde_json::to_string_pretty(&list)?);
    }
    if loaded.servers.is_empty() {
        return output::println("No MCP servers are configured. Add one with `strata mcp add`.");
    }
    let mut text = String::new();
    for s in &loaded.servers {
        text.push_str(&format!(
            "{}: {} [{}]",
            s.name,
            s.config,
            sources::scope_name(s.scope)
        ));
        if let Some(reason) = &s.blocked {
            text.push_str(&format!(" — not started: {reason}"));
        }
        text.push('\n');
    }
    output::print(&text)
}

fn get(
    global: &GlobalConfigFile,
    root: &std::path::Path,
    name: &str,
    json_out: bool,
) -> anyhow::Result<()> {
    let loaded = loaded(global, root);
    let Some(server) = loaded.servers.iter().find(|s| s.name == name) else {
        return Err(
            Failure::failed(format!("no MCP server named {name:?} is configured here")).into(),
        );
    };
    if json_out {
        return output::println(&serde_json::to_string_pretty(&entry(server))?);
    }
    let mut text = format!(
        "{}:\n  scope: {}\n  {}\n",
        server.name,
        sources::scope_name(server.scope),
        server.config
    );
    if let Some(reason) = &server.blocked {
        text.push_str(&format!("  not started: {reason}\n"));
    }
    output::print(&text)
}

fn approve(
    global: &GlobalConfigFile,
    root: &std::path::Path,
    name: &str,
    approved: bool,
) -> anyhow::Result<()> {
    let loaded = loaded(global, root);
    if !loaded
        .servers
        .iter()
        .any(|s| s.name == name && s.scope == McpConfigScope::Project)
    {
        return Err(Failure::failed(format!(
            "{name:?} is not a server of this project's .mcp.json"
        ))
        .into());
    }
    sources::set_project_approval(global, root, name, approved)
        .map_err(|e| Failure::failed(e.to_string()))?;
    output::println(&format!(
        "{} project MCP server {name} for {}",
        if approved { "Approved" } else { "Rejected" },
        root.display()
    ))
}
