//! Running a custom slash command or a skill in a session (issue 18, item 6; issue 25,
//! item 4): `/name args` becomes the command's or the skill's prompt.
//!
//! What `/name` runs is the [`SlashCatalog`]'s answer (a skill wins over a command file
//! of its name). A skill's body is given its arguments the skills' way
//! ([`expand::substitute_skill`]: `$0` is the first, `$name` a named one,
//! `${CLAUDE_SKILL_DIR}` its folder) and is preceded by its folder, as the `Skill` tool
//! gives it to the model; its `allowed-tools` and `model` hold for its turn as a
//! command's do.
//!
//! The prompt the model reads is the command's body with the arguments put in
//! ([`expand`]), each `` !`command` `` replaced by what the command printed and each
//! `@file` followed by the file's contents. Both are checked like the model's own calls
//! (a Bash call, a Read call) against the session's permission rules plus the
//! command's `allowed-tools`, and only run when the rules allow them: a prompt cannot be
//! shown in the middle of building a prompt, so anything that would ask is left out,
//! with a note saying why (fail closed).
//!
//! The invocation is recorded as the reference agent records it, in two lines: the
//! prompt line holds the command tag (`<command-message>name</command-message>`
//! `<command-name>/name</command-name>` `<command-args>…</command-args>`, a plain
//! string), and the expanded text follows it as an `isMeta` user line (the model reads
//! it; the user did not type it). A transcript moved between the two programs reads the
//! same in either. The command's `allowed-tools` are allow rules of the
//! `command` source for its turn only, and its `model` is the model of that turn; both
//! are put back when the turn ends ([`CommandTurn::finish`]).

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use smol_str::SmolStr;
use strata_protocol::message::{ContentBlock, Message, MessageContent};
use strata_state::{PermissionRule, RuleSource};
use tokio_util::sync::CancellationToken;

use super::Inner;
use crate::commands::{
    SkillCatalog, SlashCatalog, SlashCommandEntry, SlashSource, SlashTarget, expand,
};
use crate::permissions::PermissionDecision;
use crate::tools::{Bash, Read, ToolCall, ToolRegistry};

/// The most bytes of one `@file` attached to a command's prompt.
const MAX_ATTACHED_BYTES: u64 = 256 * 1024;

/// What a command changed for its turn, to be put back when the turn ends.
#[derive(Debug, Default)]
pub(super) struct CommandTurn {
    /// The allow rules added for the turn (only those that were not there already).
    rules: Vec<PermissionRule>,
    /// The model before the command's `model` replaced it.
    model: Option<Option<SmolStr>>,
}

impl CommandTurn {
    /// Puts back what the command changed.
    pub(super) fn finish(self, inner: &Inner) {
        if self.rules.is_empty() && self.model.is_none() {
            return;
        }
        let _ = inner.store.update(|s| {
            if !self.rules.is_empty() {
                let mut left = self.rules.clone();
                s.tool_permission_context
                    .always_allow_rules
                    .retain(|source, rule| {
                        if source != RuleSource::Command {
                            return true;
                        }
                        match left.iter().position(|r| r == rule) {
                            Some(i) => {
                                left.swap_remove(i);
                                false
                            }
                            None => true,
                        }
                    });
            }
            if let Some(model) = &self.model {
                s.main_loop_model = model.clone();
            }
        });
    }
}

impl Inner {
    /// The user's slash commands found when the session opened: command files and
    /// skills, one catalogue ([`SlashCatalog`]). The skills are the session's (the
    /// `Skill` tool's), held by the tool hooks.
    pub(super) fn skills(&self) -> Arc<SkillCatalog> {
        self.tool_context.hooks.skills().unwrap_or_default()
    }

    /// `prompt` expanded when it invokes a custom command or a skill: the prompt to
    /// record (the command tag), the expanded text to record after it as meta lines, and
    /// what its turn changed. Any other prompt comes back unchanged, with no meta lines.
    pub(super) async fn expand_custom_command(
        &self,
        prompt: Message,
        cancel: &CancellationToken,
    ) -> (Message, Vec<Message>, CommandTurn) {
        let text = match &prompt.content {
            MessageContent::Text(t) => t.clone(),
            MessageContent::Blocks(blocks) => blocks
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let Some((name, args)) = expand::parse_invocation(&text) else {
            return (prompt, Vec::new(), CommandTurn::default());
        };
        // The engine's own slash prompts come first: a user file cannot replace them.
        if name == "compact" {
            return (prompt, Vec::new(), CommandTurn::default());
        }
        let skills = self.skills();
        let (turn, expanded, tag_name) =
            match SlashCatalog::new(&self.commands, &skills).resolve(name) {
                None => return (prompt, Vec::new(), CommandTurn::default()),
                Some(SlashTarget::Command(command)) => {
                    let command = command.clone();
                    let turn = self.begin_command_turn(
                        &command.allowed_tools,
                        command.model.as_deref(),
                        &command.path,
                    );
                    let body = expand::substitute(&command.body, args);
                    let body = self.run_snippets(&body, cancel).await;
                    let mut expanded = vec![ContentBlock::text(body.clone())];
                    expanded.extend(
                        self.attached_files(&body)
                            .into_iter()
                            .map(ContentBlock::text),
                    );
                    (turn, expanded, command.name)
                }
                Some(SlashTarget::Skill(skill)) => {
                    let skill = skill.clone();
                    let turn = self.begin_command_turn(
                        &skill.allowed_tools,
                        skill.model.as_deref(),
                        &skill.dir.join("SKILL.md"),
                    );
                    let body = skill.expand(args, Some(&self.session_id));
                    let body = self.run_snippets(&body, cancel).await;
                    let text = skill.loaded_text(&body);
                    (turn, vec![ContentBlock::text(text)], skill.name)
                }
            };
        let tag = expand::command_tag(&tag_name, args);
        // Images or documents the client sent with the prompt stay with it.
        let given: Vec<ContentBlock> = match &prompt.content {
            MessageContent::Blocks(blocks) => blocks
                .iter()
                .filter(|b| b.as_text().is_none())
                .cloned()
                .collect(),
            MessageContent::Text(_) => Vec::new(),
        };
        let content = if given.is_empty() {
            MessageContent::Text(tag)
        } else {
            let mut blocks = vec![ContentBlock::text(tag)];
            blocks.extend(given);
            MessageContent::Blocks(blocks)
        };
        let meta = Message::blocks(prompt.role, expanded);
        (Message { content, ..prompt }, vec![meta], turn)
    }

    /// Adds a command's or skill's `allowed-tools` (read from `file`) and sets its
    /// `model`, for its turn.
    fn begin_command_turn(
        &self,
        allowed_tools: &[String],
        model: Option<&str>,
        file: &Path,
    ) -> CommandTurn {
        let mut turn = CommandTurn::default();
        let rules: Vec<PermissionRule> = allowed_tools
            .iter()
            .filter_map(|text| match PermissionRule::parse(text) {
                Ok(rule) => Some(rule),
                Err(e) => {
                    tracing::warn!(
                        "{}: allowed-tools entry `{text}` is not a rule: {e}",
                        file.display()
                    );
                    None
                }
            })
            .collect();
        let _ = self.store.update(|s| {
            for rule in rules {
                let present = s
                    .tool_permission_context
                    .always_allow_rules
                    .of(RuleSource::Command)
                    .is_some_and(|list| list.contains(&rule));
                if !present {
                    s.tool_permission_context
                        .always_allow_rules
                        .add(RuleSource::Command, rule.clone());
                    turn.rules.push(rule);
                }
            }
            if let Some(model) = model {
                turn.model = Some(s.main_loop_model.clone());
                s.main_loop_model = Some(SmolStr::new(model));
            }
        });
        turn
    }

    /// Whether the rules allow `tool` with `input` without asking anyone.
    fn allowed_without_asking(
        &self,
        tool: &dyn crate::tools::Tool,
        input: &serde_json::Value,
    ) -> Result<(), String> {
        let state = self.store.get();
        let permissions = self.permission_env.view(&state.tool_permission_context);
        match permissions.check(tool, input, &self.tool_context.cwd()) {
            PermissionDecision::Allow => Ok(()),
            PermissionDecision::Deny { reason } => Err(reason),
            PermissionDecision::Ask { reason } => Err(format!(
                "{reason}; a command's context is not asked for (add it to the command's \
                 allowed-tools or to the permission rules)"
            )),
        }
    }

    /// `body` with each `` !`command` `` replaced by its output, or by why it did not run.
    async fn run_snippets(&self, body: &str, cancel: &CancellationToken) -> String {
        let snippets = expand::shell_snippets(body);
        if snippets.is_empty() {
            return body.to_owned();
        }
        let bash = ToolRegistry::new(vec![Arc::new(Bash)]);
        let mut ctx = self.tool_context.clone();
        ctx.cancel = cancel.clone();
        let mut out = String::with_capacity(body.len());
        let mut last = 0;
        for (i, (range, command)) in snippets.into_iter().enumerate() {
            out.push_str(&body[last..range.start]);
            last = range.end;
            let input = json!({"command": command});
            let text = match self.allowed_without_asking(&Bash, &input) {
                Ok(()) => {
                    let call = ToolCall {
                        id: format!("command-context-{i}"),
                        input,
                    };
                    let output = bash.call("Bash", call, &ctx).await;
                    if output.is_error {
                        format!("[`{command}` failed: {}]", output.content.trim())
                    } else {
                        output.content.trim_end().to_owned()
                    }
                }
                Err(why) => format!("[`{command}` was not run: {why}]"),
            };
            out.push_str(&text);
        }
        out.push_str(&body[last..]);
        out
    }

    /// The contents of the files `body` mentions with `@path`, one text each; a file
    /// the rules do not let Read open is named with the reason instead.
    fn attached_files(&self, body: &str) -> Vec<String> {
        let cwd = self.tool_context.cwd();
        expand::file_mentions(body)
            .into_iter()
            .filter_map(|mention| {
                let path = cwd.join(Path::new(&mention));
                if !path.is_file() {
                    return None;
                }
                let input = json!({"file_path": path});
                Some(match self.allowed_without_asking(&Read, &input) {
                    Ok(()) => match strata_config::read_bounded(&path, MAX_ATTACHED_BYTES) {
                        Ok(Some(bytes)) => format!(
                            "Contents of {mention}:\n\n{}",
                            String::from_utf8_lossy(&bytes)
                        ),
                        Ok(None) => return None,
                        Err(e) => format!("[@{mention} could not be read: {e}]"),
                    },
                    Err(why) => format!("[@{mention} was not attached: {why}]"),
                })
            })
            .collect()
    }
}

impl super::Engine {
    /// Every slash command the user can run in this session besides the program's own
    /// (`/help`, `/compact`, …), each with its description and argument hint: custom
    /// command files, skills (those the user may invoke; a skill hides a command file of
    /// its name) and the prompts of the MCP servers connected now
    /// (`/mcp__server__prompt`). One list for every place that shows them: `/help`, the
    /// UI's command menu, `system/init`'s `slash_commands` and the SDKs' `initialize`
    /// reply. MCP prompts follow the servers, so call it again rather than keep it.
    pub fn slash_command_entries(&self) -> Vec<SlashCommandEntry> {
        let inner = &self.inner;
        let skills = inner.skills();
        let mut entries = SlashCatalog::new(&inner.commands, &skills).entries();
        let state = inner.store.get();
        entries.extend(state.mcp.commands.iter().map(|c| {
            let hint = c
                .arguments
                .iter()
                .map(|a| format!("<{a}>"))
                .collect::<Vec<_>>()
                .join(" ");
            SlashCommandEntry {
                name: strata_mcp::naming::tool_name(&c.server, &c.name),
                description: c.description.to_string(),
                argument_hint: (!hint.is_empty()).then_some(hint),
                source: SlashSource::McpPrompt {
                    server: c.server.to_string(),
                },
            }
        }));
        entries
    }

    /// The session's skills (the user's and the project's), as found when it opened:
    /// those the model loads with the `Skill` tool and those `/name` runs.
    pub fn skills(&self) -> Arc<SkillCatalog> {
        self.inner.skills()
    }
}
