//! What the app does for commands, keys and background results beyond the prompt:
//! opening the overlays (`/resume`, `/model`, Ctrl-R, Esc Esc rewind, `/permissions`,
//! `/config`, `/memory`, `/mcp`), acting on a pick, `/clear`, `/add-dir`, `!command`,
//! `$EDITOR`, and the results background tasks send back.
//!
//! Everything slow (listing sessions, a shell command) runs on a blocking task and comes
//! back as a [`UiEvent`]; nothing here waits on the event loop.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use strata_protocol::message::{ContentBlock, Message, MessageContent, Role};
use strata_state::{RuleBehavior, RuleSource};

use super::{App, EditorJob, Request, Switch};
use crate::bridge::UiEvent;
use crate::overlay::{Entry, Overlay, Purpose};
use crate::picker::SessionPicker;

/// A `!command` is stopped after this long.
const SHELL_TIMEOUT: Duration = Duration::from_secs(120);
/// At most this much of a `!command`'s output is shown.
const SHELL_OUTPUT_MAX: usize = 30_000;

/// The models offered by `/model` besides the current one (aliases resolve to the
/// family's current model).
const MODELS: [(&str, &str); 4] = [
    ("default", "the provider's or the settings' model"),
    ("opus", "Claude Opus, the most capable"),
    ("sonnet", "Claude Sonnet, for everyday work"),
    ("haiku", "Claude Haiku, the fastest"),
];

impl App {
    /// A result from a background task.
    pub(super) fn on_background_event(&mut self, event: UiEvent) {
        match event {
            UiEvent::Sessions(Ok(sessions)) => {
                let current = self.engine.session_id();
                let sessions = sessions
                    .into_iter()
                    .filter(|s| s.session_id != current && s.message_count > 0)
                    .collect();
                if let Some(o) = self.overlay.as_mut()
                    && o.purpose == Purpose::Resume
                {
                    o.set_sessions(SessionPicker::new(sessions));
                }
            }
            UiEvent::Sessions(Err(e)) => {
                self.overlay = None;
                self.notify(&format!("The sessions could not be listed: {e}"));
            }
            UiEvent::Paths(completer) => self.paths_ready(*completer),
            UiEvent::Shell { command, output } => {
                self.notify(&format!("! {command}\n{output}"));
            }
            UiEvent::StatusLine(text) => {
                let text = (!text.trim().is_empty()).then_some(text);
                if self.status_line != text {
                    self.status_line = text;
                }
            }
            UiEvent::Notice(text) => self.notify(&text),
            _ => {}
        }
        self.dirty = true;
    }

    /// `/resume [id]`: with an id, switch at once; without, the picker (sessions of this
    /// project, newest first), listed off the event loop.
    pub fn open_resume(&mut self, arg: &str) -> Request {
        if !arg.is_empty() {
            self.switch = Some(Switch::Resume(arg.to_owned()));
            return Request::Switch;
        }
        let Some(config_dir) = self.config_dir.clone() else {
            self.notify("Sessions cannot be listed here (no config directory).");
            return Request::None;
        };
        self.overlay = Some(Overlay::sessions_loading());
        let root = PathBuf::from(&self.project);
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let listed = strata_session::listing::list_project(&config_dir, &root)
                .map(|l| l.sessions)
                .map_err(|e| e.to_string());
            let _ = tx.send(UiEvent::Sessions(listed));
        });
        Request::None
    }

    /// `/clear`: a new, empty session (the old one stays resumable).
    pub fn clear_session(&mut self) -> Request {
        self.switch = Some(Switch::New);
        Request::Switch
    }

    /// `/model` without a name: the picker.
    pub fn open_model_picker(&mut self) {
        let current = self.engine.model();
        let mut entries = vec![Entry::new(current.clone(), "current", current.clone())];
        for (name, detail) in MODELS {
            if name != current {
                entries.push(Entry::new(name, detail, name));
            }
        }
        self.overlay = Some(
            Overlay::list(Purpose::Model, "Select a model", entries)
                .with_hint("type to filter or name any model · enter use · esc close"),
        );
    }

    /// Sets the model (`default`: back to the settings' or the provider's); FX-2
    /// persists it.
    pub fn choose_model(&mut self, name: &str) {
        let name = name.trim();
        if name.is_empty() || name == "default" {
            self.engine.set_model(None);
        } else {
            self.engine.set_model(Some(name.to_owned()));
        }
        let model = self.engine.model();
        self.footer.model = model.clone();
        self.notify(&format!("Model set to {model}"));
    }

    /// Ctrl-R: search the input history.
    pub(super) fn open_history_search(&mut self) {
        let mut seen = std::collections::HashSet::new();
        // The pick is the entry's index: it comes back with the pastes behind its chips.
        let entries: Vec<Entry> = self
            .input
            .history()
            .iter()
            .enumerate()
            .filter(|(_, h)| seen.insert(h.display.as_str()))
            .map(|(i, h)| Entry::new(h.display.replace('\n', " ⏎ "), "", i.to_string()))
            .collect();
        if entries.is_empty() {
            self.footer.notice = Some("No earlier prompts".into());
            return;
        }
        self.overlay = Some(
            Overlay::list(Purpose::History, "Search the prompt history", entries)
                .with_hint("type to search · ctrl-r/↓ older · enter use · esc close"),
        );
    }

    /// Esc Esc: the prompts of the conversation, newest first, to rewind to.
    pub fn open_rewind(&mut self) {
        let points = self.rewind_points();
        if points.is_empty() {
            self.footer.notice = Some("Nothing to rewind to yet".into());
            return;
        }
        let entries = points
            .into_iter()
            .rev()
            .map(|(index, _, text)| {
                let label = text.lines().next().unwrap_or("").to_owned();
                Entry::new(label, format!("message {}", index + 1), index.to_string())
            })
            .collect();
        self.overlay = Some(
            Overlay::list(
                Purpose::RewindPrompt,
                "Rewind to before which prompt?",
                entries,
            )
            .with_hint("enter pick · esc close"),
        );
    }

    /// The prompts that can be rewound to: (index in the conversation, prompt uuid,
    /// text), oldest first. The store's prompts and the file-history snapshots (one per
    /// prompt, in order) are paired from the end; the engine checks each pair against
    /// the transcript before it changes anything.
    fn rewind_points(&self) -> Vec<(usize, String, String)> {
        let state = self.engine.store().get();
        let prompts: Vec<(usize, String)> = state
            .messages
            .iter()
            .enumerate()
            .filter_map(|(i, m)| prompt_text(m).map(|t| (i, t)))
            .collect();
        let snapshots = &state.file_history.snapshots;
        prompts
            .iter()
            .rev()
            .zip(snapshots.iter().rev())
            .map(|((i, t), s)| (*i, s.message_id.clone(), t.clone()))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    }

    /// An overlay's pick.
    pub(super) fn on_pick(&mut self, purpose: Purpose, value: String) -> Request {
        match purpose {
            Purpose::Resume => return self.open_resume(&value),
            Purpose::Model => self.choose_model(&value),
            Purpose::History => {
                if let Ok(index) = value.parse() {
                    self.input.recall(index);
                }
            }
            Purpose::RewindPrompt => self.pick_rewind_prompt(&value),
            Purpose::RewindHow { uuid, index, text } => {
                self.rewind(&uuid, index, &text, &value);
            }
            Purpose::Permissions => self.remove_rule(&value),
            Purpose::Config => return self.config_pick(&value),
            Purpose::Memory => {
                return Request::Editor(EditorJob {
                    path: PathBuf::from(value),
                    into_prompt: false,
                });
            }
            Purpose::Mcp => self.mcp_pick(&value),
            Purpose::McpApproval(name) => self.mcp_approval_pick(&name, &value),
        }
        Request::None
    }

    fn pick_rewind_prompt(&mut self, value: &str) {
        let Ok(index) = value.parse::<usize>() else {
            return;
        };
        let Some((_, uuid, text)) = self.rewind_points().into_iter().find(|p| p.0 == index) else {
            return;
        };
        let entries = vec![
            Entry::new("Restore code and conversation", "", "both"),
            Entry::new(
                "Restore conversation",
                "files stay as they are",
                "conversation",
            ),
            Entry::new("Restore code", "the conversation stays", "code"),
            Entry::new("Never mind", "", "cancel"),
        ];
        let title = format!(
            "Rewind to before “{}”",
            text.lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(60)
                .collect::<String>()
        );
        self.overlay = Some(
            Overlay::list(Purpose::RewindHow { uuid, index, text }, title, entries)
                .with_hint("enter pick · esc close"),
        );
    }

    /// Restores what `how` says (`both`, `conversation`, `code`) to the state before the
    /// prompt `uuid` (the `index`th message).
    fn rewind(&mut self, uuid: &str, index: usize, text: &str, how: &str) {
        if self.turn.is_some() {
            self.notify("A turn is running: interrupt it (Esc) before rewinding.");
            return;
        }
        let (code, conversation) = match how {
            "both" => (true, true),
            "conversation" => (false, true),
            "code" => (true, false),
            _ => return,
        };
        let mut said = Vec::new();
        if code {
            match self.engine.rewind_files(uuid, false) {
                Ok(report) => said.push(format!(
                    "Restored {} file(s) (+{} −{})",
                    report["filesChanged"].as_u64().unwrap_or(0),
                    report["insertions"].as_u64().unwrap_or(0),
                    report["deletions"].as_u64().unwrap_or(0)
                )),
                Err(e) => {
                    self.notify(&format!("The files could not be restored: {e}"));
                    return;
                }
            }
        }
        if conversation {
            match self.engine.rewind_conversation(uuid, index, text) {
                Ok(()) => {
                    said.push("Conversation rewound; the prompt is back in the editor".into());
                    self.input.set_text(text);
                }
                Err(e) => said.push(format!("The conversation could not be rewound: {e}")),
            }
        }
        self.notify(&said.join("\n"));
    }

    /// `/permissions`: with `add <allow|deny|ask> <rule>` or `remove <…>`, changes the
    /// local settings' rules; without, the rules by source (enter removes one).
    pub fn permissions(&mut self, arg: &str) {
        let mut words = arg.split_whitespace();
        let (verb, behavior) = (words.next(), words.next());
        let rule = words.collect::<Vec<_>>().join(" ");
        match (verb, behavior) {
            (None, _) => self.open_permissions(),
            (Some(v @ ("add" | "remove")), Some(b @ ("allow" | "deny" | "ask")))
                if !rule.is_empty() =>
            {
                let kind = if v == "add" {
                    "addRules"
                } else {
                    "removeRules"
                };
                self.permission_update(kind, b, &rule, "localSettings");
            }
            _ => self.notify(
                "Usage: /permissions · /permissions add <allow|deny|ask> <rule> · \
                 /permissions remove <allow|deny|ask> <rule>",
            ),
        }
    }

    fn open_permissions(&mut self) {
        let ctx = self
            .engine
            .store()
            .with(|s| s.tool_permission_context.clone());
        let mut entries = Vec::new();
        for behavior in [RuleBehavior::Allow, RuleBehavior::Ask, RuleBehavior::Deny] {
            for (source, rule) in ctx.rules(behavior).iter() {
                entries.push(Entry::new(
                    format!("{behavior} {rule}"),
                    source.describe(behavior),
                    format!("{behavior}\t{rule}\t{}", destination(source).unwrap_or("")),
                ));
            }
        }
        for (dir, source) in &ctx.additional_working_directories {
            entries.push(Entry::new(
                format!("directory {}", dir.display()),
                source.describe(RuleBehavior::Allow),
                String::new(),
            ));
        }
        if entries.is_empty() {
            self.notify(
                "No permission rules. /permissions add allow <rule> adds one to the local \
                 settings (e.g. Bash(npm test:*)).",
            );
            return;
        }
        self.overlay = Some(
            Overlay::list(Purpose::Permissions, "Permission rules", entries)
                .with_hint("enter removes the rule · esc close · /permissions add allow <rule>"),
        );
    }

    fn remove_rule(&mut self, value: &str) {
        let parts: Vec<&str> = value.split('\t').collect();
        match parts.as_slice() {
            [behavior, rule, dest] if !dest.is_empty() => {
                self.permission_update("removeRules", behavior, rule, dest);
            }
            _ => self.notify(
                "This rule comes from the command line or managed settings; it cannot be \
                 removed here.",
            ),
        }
    }

    fn permission_update(&mut self, kind: &str, behavior: &str, rule: &str, dest: &str) {
        let (tool, content) = match rule.split_once('(') {
            Some((t, rest)) => (t, rest.strip_suffix(')').map(str::to_owned)),
            None => (rule, None),
        };
        let mut value = json!({"toolName": tool});
        if let Some(c) = content {
            value["ruleContent"] = Value::String(c);
        }
        let update = json!({
            "type": kind, "rules": [value], "behavior": behavior, "destination": dest,
        });
        let problems = self.engine.update_permissions(&[update]);
        if problems.is_empty() {
            let verb = if kind == "addRules" {
                "Added"
            } else {
                "Removed"
            };
            self.notify(&format!("{verb} {behavior} rule {rule} ({dest})"));
        } else {
            self.notify(&problems.join("\n"));
        }
    }

    /// `/add-dir <path>`: the tools may work there too, for this session.
    pub fn add_dir(&mut self, arg: &str) {
        if arg.is_empty() {
            self.notify("Usage: /add-dir <directory>");
            return;
        }
        let path = self.cwd.join(arg);
        if !path.is_dir() {
            self.notify(&format!("{} is not a directory", path.display()));
            return;
        }
        let update = json!({
            "type": "addDirectories",
            "directories": [path.to_string_lossy()],
            "destination": "session",
        });
        let problems = self.engine.update_permissions(&[update]);
        if problems.is_empty() {
            self.notify(&format!(
                "Added {} as a working directory for this session",
                path.display()
            ));
        } else {
            self.notify(&problems.join("\n"));
        }
    }

    /// `/config`: the settings the UI can change.
    pub fn open_config(&mut self) {
        let (verbose, mode) = self
            .engine
            .store()
            .with(|s| (s.verbose, s.tool_permission_context.mode));
        let on = |b: bool| if b { "on" } else { "off" };
        let status = self
            .engine
            .store()
            .with(|s| crate::status_line::command_of(&s.settings))
            .unwrap_or_else(|| "(none: the statusLine setting)".into());
        let entries = vec![
            Entry::new(
                format!("Verbose output: {}", on(verbose)),
                "enter toggles",
                "verbose",
            ),
            Entry::new(
                format!("Model: {}", self.engine.model()),
                "enter picks",
                "model",
            ),
            Entry::new(format!("Permission mode: {mode}"), "enter cycles", "mode"),
            Entry::new(
                format!("Todo list shown: {}", on(self.show_todos)),
                "enter toggles",
                "todos",
            ),
            Entry::new(format!("Status line: {status}"), "", ""),
        ];
        self.overlay = Some(
            Overlay::list(Purpose::Config, "Settings", entries)
                .with_hint("enter change · esc close · `strata config` edits the files"),
        );
    }

    fn config_pick(&mut self, value: &str) -> Request {
        match value {
            "verbose" => {
                self.toggle_verbose();
                self.open_config_after_store();
            }
            "model" => self.open_model_picker(),
            "mode" => {
                self.cycle_mode();
                self.open_config_after_store();
            }
            "todos" => {
                self.show_todos = !self.show_todos;
                self.open_config();
            }
            _ => {}
        }
        Request::None
    }

    /// Reopens `/config` showing the value just changed.
    fn open_config_after_store(&mut self) {
        self.open_config();
    }

    /// `/memory`: the memory files in use (and where project and user memory go), to
    /// open in `$EDITOR`.
    pub fn open_memory(&mut self) {
        let usage = self.engine.context_usage();
        let mut entries: Vec<Entry> = Vec::new();
        let mut paths = std::collections::HashSet::new();
        for f in usage["memoryFiles"].as_array().into_iter().flatten() {
            let Some(path) = f["path"].as_str() else {
                continue;
            };
            paths.insert(path.to_owned());
            entries.push(Entry::new(
                path,
                format!(
                    "{} · {} tokens",
                    f["type"].as_str().unwrap_or("memory"),
                    f["tokens"].as_u64().unwrap_or(0)
                ),
                path,
            ));
        }
        let project = PathBuf::from(&self.project).join("CLAUDE.md");
        let mut candidates = vec![(project, "project memory (new)")];
        if let Some(dir) = &self.config_dir {
            candidates.push((dir.join("CLAUDE.md"), "user memory (new)"));
        }
        for (path, what) in candidates {
            let p = path.to_string_lossy().into_owned();
            if !paths.contains(&p) {
                entries.push(Entry::new(p.clone(), what, p));
            }
        }
        let mut warnings = self.engine.memory_warnings().to_vec();
        if !warnings.is_empty() {
            warnings.insert(0, "Memory files:".into());
            self.notify(&warnings.join("\n  ⚠ "));
        }
        self.overlay = Some(
            Overlay::list(Purpose::Memory, "Memory files", entries)
                .with_hint("enter opens in $EDITOR · esc close"),
        );
    }

    /// `/mcp`: each server with its status; enter reconnects, enables or disables.
    pub fn open_mcp(&mut self) {
        let status = self.engine.mcp_status();
        let servers = status["mcpServers"].as_array().cloned().unwrap_or_default();
        if servers.is_empty() {
            self.notify(&crate::commands::mcp_report(&status));
            return;
        }
        let mut entries = Vec::new();
        for s in &servers {
            let name = s["name"].as_str().unwrap_or("?");
            let st = s["status"].as_str().unwrap_or("?");
            let mut detail = st.to_owned();
            if let Some(e) = s["error"].as_str() {
                detail.push_str(&format!(": {e}"));
            }
            if st == "disabled" {
                entries.push(Entry::new(
                    format!("enable {name}"),
                    detail,
                    format!("enable\t{name}"),
                ));
            } else {
                entries.push(Entry::new(
                    format!("reconnect {name}"),
                    detail.clone(),
                    format!("reconnect\t{name}"),
                ));
                entries.push(Entry::new(
                    format!("disable {name}"),
                    detail,
                    format!("disable\t{name}"),
                ));
            }
        }
        self.overlay = Some(
            Overlay::list(Purpose::Mcp, "MCP servers", entries)
                .with_hint("enter do it · esc close"),
        );
    }

    fn mcp_pick(&mut self, value: &str) {
        let Some((action, name)) = value.split_once('\t') else {
            return;
        };
        let mcp = self.engine.mcp();
        let done = match action {
            "reconnect" => mcp.reconnect(name),
            "enable" => mcp.set_enabled(name, true),
            "disable" => mcp.set_enabled(name, false),
            _ => return,
        };
        match done {
            Ok(()) => self.notify(&format!("MCP server {name}: {action} requested")),
            Err(e) => self.notify(&format!("MCP server {name}: {e}")),
        }
    }

    /// Ctrl-G: the prompt in `$EDITOR` (its text comes back when the editor exits).
    pub(super) fn edit_prompt(&mut self) -> Request {
        let path = std::env::temp_dir().join(format!("strata-prompt-{}.md", std::process::id()));
        if let Err(e) = std::fs::write(&path, self.input.expanded()) {
            self.notify(&format!(
                "The prompt could not be written for the editor: {e}"
            ));
            return Request::None;
        }
        Request::Editor(EditorJob {
            path,
            into_prompt: true,
        })
    }

    /// The editor of `job` exited (`Ok`: with status 0; else why it failed, told).
    pub fn editor_done(&mut self, job: &EditorJob, result: Result<(), crate::run::EditorError>) {
        if let Err(e) = result {
            self.notify(&format!("⚠ {e}"));
        }
        if job.into_prompt {
            match std::fs::read_to_string(&job.path) {
                Ok(text) => self.input.set_text(text.trim_end_matches('\n')),
                Err(e) => self.notify(&format!("The edited prompt could not be read: {e}")),
            }
            let _ = std::fs::remove_file(&job.path);
        } else {
            self.notify(&format!("Edited {}", job.path.display()));
        }
        self.dirty = true;
    }

    /// `!command`: runs in the session's directory, off the event loop; its output is
    /// shown when it ends.
    pub(super) fn run_shell(&mut self, command: String) {
        if command.is_empty() {
            self.notify("Type a shell command after !, e.g. !git status");
            return;
        }
        let cwd = self.cwd.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let output = run_command(&command, &cwd).await;
            let _ = tx.send(UiEvent::Shell { command, output });
        });
        self.footer.notice = Some("running the command…".into());
    }
}

/// Runs `command` with `sh -c` in `cwd`, stdin closed; stdout then stderr, cut to a
/// readable size, and the exit status when it is not 0.
async fn run_command(command: &str, cwd: &std::path::Path) -> String {
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(SHELL_TIMEOUT, child).await {
        Err(_) => return format!("(stopped after {}s)", SHELL_TIMEOUT.as_secs()),
        Ok(Err(e)) => return format!("(could not run: {e})"),
        Ok(Ok(out)) => out,
    };
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if text.len() > SHELL_OUTPUT_MAX {
        let mut cut = SHELL_OUTPUT_MAX;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (output cut)");
    }
    let text = text.trim_end().to_owned();
    match out.status.code() {
        Some(0) => text,
        Some(code) => format!("{text}\n(exit status {code})"),
        None => format!("{text}\n(killed by a signal)"),
    }
}

/// The text of a user prompt (a user message with text and no tool result).
fn prompt_text(m: &Message) -> Option<String> {
    if m.role != Role::User {
        return None;
    }
    match &m.content {
        MessageContent::Text(t) => Some(t.clone()),
        MessageContent::Blocks(blocks) => {
            if blocks
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult(_)))
            {
                return None;
            }
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
    }
}

/// The permission-update destination that owns rules of `source` (`None`: the command
/// line, `--settings` and managed settings, which a session cannot change).
fn destination(source: RuleSource) -> Option<&'static str> {
    match source {
        RuleSource::UserSettings => Some("userSettings"),
        RuleSource::ProjectSettings => Some("projectSettings"),
        RuleSource::LocalSettings => Some("localSettings"),
        RuleSource::Session | RuleSource::Command => Some("session"),
        RuleSource::CliArg | RuleSource::FlagSettings | RuleSource::PolicySettings => None,
    }
}
