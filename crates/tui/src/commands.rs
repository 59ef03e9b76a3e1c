//! Slash commands typed at the prompt (`/help`, `/exit`, …): each runs at once and
//! answers in the scrollback.

use crate::app::{App, Request};

/// The commands and what they do, for `/help`.
const HELP: &str = "\
/help              this list
/model [name]      show or change the model (persisted to user settings)
/cost              the cost of this session so far
/status            session id, model, permission mode, working directory
/export <file>     write the conversation as markdown to <file>
/exit              leave strata (also Ctrl-D, or Ctrl-C twice)
Keys: Enter send · Shift+Enter, \\+Enter or Ctrl-J new line · Shift+Tab permission mode
      Esc interrupt · Ctrl-O transcript · Ctrl-T todos · Ctrl-L redraw · Ctrl-Z suspend";

/// Runs `/command` (without the slash).
pub fn run(app: &mut App, command: &str) -> Request {
    let (name, arg) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let arg = arg.trim();
    match name {
        "help" | "?" => app.notify(HELP),
        "exit" | "quit" => return Request::Exit,
        "cost" => {
            let cost = app.footer_data().cost_usd;
            app.notify(&format!("Total cost of this session: ${cost:.4}"));
        }
        "status" => {
            let engine = app.engine().clone();
            let mode = engine.store().with(|s| s.tool_permission_context.mode);
            app.notify(&format!(
                "Session {}\nModel {}\nPermission mode {mode}",
                engine.session_id(),
                engine.model()
            ));
        }
        "model" if arg.is_empty() => {
            let model = app.engine().model();
            app.notify(&format!("Model: {model} (/model <name> changes it)"));
        }
        "model" => {
            app.engine().set_model(Some(arg.to_owned()));
            app.notify(&format!("Model set to {arg}"));
        }
        "export" if arg.is_empty() => app.notify("/export needs a file name: /export notes.md"),
        "export" => {
            let text = export_markdown(app);
            match std::fs::write(arg, text) {
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
