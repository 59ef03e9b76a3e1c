//! Slash commands typed at the prompt (`/help`, `/exit`, …): each runs at once and
//! answers in the scrollback.

use crate::app::{App, Request};

/// A command the UI itself runs: what `/help` lists and the command menu offers, from
/// this one list so the two never disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The name, without the slash.
    pub name: &'static str,
    /// The argument as `/help` shows it: `<x>` required, `[x]` optional, empty for none.
    pub args: &'static str,
    /// What it does, in a few words.
    pub description: &'static str,
}

impl Builtin {
    /// Whether it cannot run without an argument (its hint is `<…>`).
    pub fn needs_argument(&self) -> bool {
        self.args.starts_with('<')
    }
}

const fn builtin(name: &'static str, args: &'static str, description: &'static str) -> Builtin {
    Builtin {
        name,
        args,
        description,
    }
}

/// The UI's commands, in `/help`'s order.
pub const BUILTINS: &[Builtin] = &[
    builtin("help", "", "this list"),
    builtin(
        "clear",
        "",
        "start a new session (this one stays resumable)",
    ),
    builtin(
        "resume",
        "[id]",
        "resume an earlier session (a picker without an id)",
    ),
    builtin(
        "rewind",
        "",
        "go back to before a prompt (also Esc Esc): code, conversation or both",
    ),
    builtin(
        "model",
        "[name]",
        "pick or set the model (persisted to user settings)",
    ),
    builtin(
        "permissions",
        "",
        "the permission rules by source; add or remove one",
    ),
    builtin(
        "add-dir",
        "<path>",
        "let the tools work in another directory (this session)",
    ),
    builtin(
        "config",
        "",
        "verbose output, model, permission mode, todo list",
    ),
    builtin(
        "memory",
        "",
        "the memory files (CLAUDE.md …); open one in $EDITOR",
    ),
    builtin(
        "output-style",
        "[name]",
        "list the output styles, or pick one (saved to local settings)",
    ),
    builtin("cost", "", "the cost of this session so far"),
    builtin(
        "context",
        "",
        "how full the context window is, by part (and the memory files)",
    ),
    builtin(
        "compact",
        "[notes]",
        "summarise the conversation to free the context (notes: what to keep)",
    ),
    builtin(
        "mcp",
        "",
        "the MCP servers: status, reconnect, enable or disable",
    ),
    builtin(
        "tasks",
        "",
        "background shells and agents: view, stop (x), dismiss (d); also ↓",
    ),
    builtin(
        "agents",
        "",
        "the agent types (built-in, .strata/agents, .claude/agents)",
    ),
    builtin(
        "status",
        "",
        "session id, model, permission mode, working directory",
    ),
    builtin(
        "export",
        "<file>",
        "write the conversation as markdown to <file>",
    ),
    builtin("exit", "", "leave strata (also Ctrl-D, or Ctrl-C twice)"),
];

/// The keys, for `/help` after the commands.
const KEYS: &str = "\
Keys: Enter send · Shift+Enter, \\+Enter or Ctrl-J new line · Shift+Tab permission mode
      Esc interrupt · Esc Esc rewind · Ctrl-R history search · Ctrl-G $EDITOR
      Ctrl-O transcript · Ctrl-T todos · Ctrl-L clear screen · Ctrl-Z suspend
      Ctrl-A/E line start/end · Ctrl-U/K kill to line start/end · Ctrl-W, Alt-Backspace
      kill word back · Alt-D kill word · Ctrl-Y yank · Alt-B/F, Ctrl-←/→ word left/right
      ↓ on an empty prompt: the background tasks (when any run)
      / opens the command menu (↑↓ choose · Tab complete · Enter run · Esc close)
      @path completes a file (Tab) · !command runs a shell command";

/// `/help`'s list of the UI's commands and keys (custom commands follow it).
pub fn help_text() -> String {
    let mut out = String::new();
    for b in BUILTINS {
        let usage = if b.args.is_empty() {
            format!("/{}", b.name)
        } else {
            format!("/{} {}", b.name, b.args)
        };
        out.push_str(&format!("{usage:<18} {}\n", b.description));
    }
    out.push_str(KEYS);
    out
}

/// Runs `/command` (without the slash).
pub fn run(app: &mut App, command: &str) -> Request {
    let (name, arg) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let arg = arg.trim();
    match name {
        "help" | "?" => {
            let custom = custom_help(&app.engine().slash_command_entries());
            app.notify(&format!("{}{custom}", help_text()));
        }
        "exit" | "quit" => return Request::Exit,
        "cost" => {
            let cost = app.footer_data().cost_usd;
            app.notify(&format!("Total cost of this session: ${cost:.4}"));
        }
        "context" => app.notify(&context_report(&app.engine().context_usage())),
        "mcp" => app.open_mcp(),
        "tasks" | "bashes" => app.open_tasks(),
        "agents" => app.list_agents(),
        "resume" | "continue" => return app.open_resume(arg),
        "clear" | "new" | "reset" => return app.clear_session(),
        "rewind" | "checkpoint" => app.open_rewind(),
        "permissions" | "allowed-tools" => app.permissions(arg),
        "add-dir" => app.add_dir(arg),
        "config" | "settings" => app.open_config(),
        "memory" => app.open_memory(),
        "output-style" => {
            let text = output_style(app.engine().session_prompt(), arg);
            app.notify(&text);
        }
        "status" => {
            let report = status_report(app);
            app.notify(&report);
        }
        "model" if arg.is_empty() => app.open_model_picker(),
        "model" => app.choose_model(arg),
        "export" if arg.is_empty() => app.notify("/export needs a file name: /export notes.md"),
        "export" => {
            let text = export_markdown(app);
            // A relative name is the session's, as `/add-dir` reads it.
            match std::fs::write(app.cwd().join(arg), text) {
                Ok(()) => app.notify(&format!("Conversation exported to {arg}")),
                Err(e) => app.notify(&format!("Could not write {arg}: {e}")),
            }
        }
        other => app.notify(&format!(
            "Unknown command /{other}. /help lists the commands."
        )),
    }
    Request::None
}

/// `/output-style [name]`: without a name, the styles (the one in force marked) and how
/// to pick one; with one, the style for the rest of the session, saved to strata's local
/// settings.
fn output_style(prompt: &strata_agent::prompt::SessionPrompt, name: &str) -> String {
    if name.is_empty() {
        let current = prompt.output_style_name();
        let (styles, warnings) = prompt.output_styles();
        let mut text = String::from("Output styles (/output-style <name> to pick one):");
        for style in styles.all() {
            let mark = if style.name.eq_ignore_ascii_case(&current) {
                "●"
            } else {
                " "
            };
            text.push_str(&format!("\n {mark} {}", style.name));
            if !style.description.is_empty() {
                text.push_str(&format!(" — {}", style.description));
            }
        }
        for warning in warnings {
            text.push_str(&format!("\n{warning}"));
        }
        return text;
    }
    match prompt.choose_output_style(name) {
        Ok(style) => format!(
            "Output style set to {} (saved to .strata/settings.local.json)",
            style.name
        ),
        Err(e) => format!("Output style not changed: {e}"),
    }
}

/// `/status`: what this session is and where it works — id, model, permission mode,
/// working directory and the directories added to it, the transcript file.
fn status_report(app: &App) -> String {
    let engine = app.engine();
    let (mode, dirs) = engine.store().with(|s| {
        let ctx = &s.tool_permission_context;
        let dirs: Vec<String> = ctx
            .additional_working_directories
            .keys()
            .map(|d| d.display().to_string())
            .collect();
        (ctx.mode, dirs)
    });
    let mut out = format!(
        "Session {}\nModel {}\nPermission mode {mode}\nWorking directory {}",
        engine.session_id(),
        engine.model(),
        app.cwd().display()
    );
    if !dirs.is_empty() {
        out.push_str(&format!("\nAdded directories {}", dirs.join(", ")));
    }
    out.push_str(&format!(
        "\nTranscript {}",
        engine.transcript_path().display()
    ));
    out
}

/// The conversation as markdown: each prompt and answer under a heading.
fn export_markdown(app: &App) -> String {
    use strata_protocol::message::{ContentBlock, MessageContent, Role};
    let mut out = String::new();
    let msgs = app.engine().store().with(|s| s.messages.clone());
    for m in &msgs {
        let texts: Vec<String> = match &m.content {
            MessageContent::Text(t) => vec![t.clone()],
            MessageContent::Blocks(b) => b
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.clone()),
                    ContentBlock::ToolUse(u) => Some(format!("`{}` {}", u.name, u.input)),
                    _ => None,
                })
                .collect(),
        };
        if texts.is_empty() {
            continue;
        }
        let who = match m.role {
            Role::User => "## User",
            Role::Assistant => "## strata",
        };
        out.push_str(&format!("{who}\n\n{}\n\n", texts.join("\n\n")));
    }
    out
}

/// `/context`: the window's use by part, then the memory files, from the engine's
/// `get_context_usage` report.
fn context_report(usage: &serde_json::Value) -> String {
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let mut out = format!(
        "Context: {} of {} tokens ({:.0}%)",
        n(&usage["totalTokens"]),
        n(&usage["maxTokens"]),
        usage["percentage"].as_f64().unwrap_or(0.0)
    );
    for c in usage["categories"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "\n  {:<14} {:>8}",
            c["name"].as_str().unwrap_or("?"),
            n(&c["tokens"])
        ));
    }
    let files = usage["memoryFiles"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !files.is_empty() {
        out.push_str("\nMemory files:");
        for f in files {
            out.push_str(&format!(
                "\n  {} ({} tokens)",
                f["path"].as_str().unwrap_or("?"),
                n(&f["tokens"])
            ));
        }
    }
    out
}

/// The user's own commands for `/help` (command files, skills, MCP prompts: the
/// engine's one list): name, argument hint, description and where each comes from;
/// empty without any.
fn custom_help(entries: &[strata_agent::commands::SlashCommandEntry]) -> String {
    let mut out = String::new();
    if entries.is_empty() {
        return out;
    }
    out.push_str("\nCustom commands and skills:");
    for c in entries {
        let usage = match &c.argument_hint {
            Some(hint) => format!("/{} {hint}", c.name),
            None => format!("/{}", c.name),
        };
        out.push_str(&format!(
            "\n{usage:<18} {} ({})",
            c.description,
            c.source.label()
        ));
    }
    out
}

/// `/mcp`: each server with its status (and why it failed), from the store.
pub(crate) fn mcp_report(status: &serde_json::Value) -> String {
    let servers = status["mcpServers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if servers.is_empty() {
        return "No MCP servers are configured (.mcp.json, `strata mcp add`, --mcp-config).".into();
    }
    let mut out = String::from("MCP servers:");
    for s in servers {
        out.push_str(&format!(
            "\n  {} — {}",
            s["name"].as_str().unwrap_or("?"),
            s["status"].as_str().unwrap_or("?")
        ));
        if let Some(tools) = s["tools"].as_u64() {
            out.push_str(&format!(", {tools} tools"));
        }
        if let Some(error) = s["error"].as_str() {
            out.push_str(&format!(": {error}"));
        }
    }
    out
}

#[cfg(test)]
mod report_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn context_lists_the_parts_and_the_memory_files() {
        let text = context_report(&json!({
            "totalTokens": 1500, "maxTokens": 200000, "percentage": 1,
            "categories": [{"name": "System prompt", "tokens": 900}, {"name": "Messages", "tokens": 600}],
            "memoryFiles": [{"path": "/p/CLAUDE.md", "type": "Project", "tokens": 40}]
        }));
        assert!(
            text.starts_with("Context: 1500 of 200000 tokens (1%)"),
            "{text}"
        );
        assert!(
            text.contains("System prompt") && text.contains("900"),
            "{text}"
        );
        assert!(text.contains("/p/CLAUDE.md (40 tokens)"), "{text}");
    }

    #[test]
    fn i25_3_output_style_lists_the_styles_and_picks_one_saved_to_local_settings() {
        let dir = tempfile::tempdir().unwrap();
        let (root, config) = (dir.path().join("proj"), dir.path().join("cfg"));
        std::fs::create_dir_all(&root).unwrap();
        let prompt =
            strata_agent::prompt::SessionPrompt::gather(&root, &root, &config, vec![], None, None);
        let list = output_style(&prompt, "");
        assert!(list.contains("● default"), "{list}");
        assert!(
            list.contains("  Explanatory — ") && list.contains("  Learning — "),
            "{list}"
        );
        let picked = output_style(&prompt, "explanatory");
        assert!(
            picked.starts_with("Output style set to Explanatory"),
            "{picked}"
        );
        assert!(output_style(&prompt, "").contains("● Explanatory"));
        let local = std::fs::read_to_string(root.join(".strata/settings.local.json")).unwrap();
        assert!(local.contains(r#""outputStyle": "Explanatory""#), "{local}");
        let unknown = output_style(&prompt, "nope");
        assert!(unknown.starts_with("Output style not changed"), "{unknown}");
    }

    #[test]
    fn mcp_lists_servers_with_status_and_failure() {
        assert!(mcp_report(&json!({"mcpServers": []})).contains("No MCP servers"));
        let text = mcp_report(&json!({"mcpServers": [
            {"name": "fs", "status": "connected", "tools": 3},
            {"name": "bad", "status": "failed", "error": "exited with 1"}
        ]}));
        assert!(text.contains("fs — connected, 3 tools"), "{text}");
        assert!(text.contains("bad — failed: exited with 1"), "{text}");
    }
}
