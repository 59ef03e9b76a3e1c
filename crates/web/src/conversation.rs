//! What the page shows of a transcript line: the conversation a person follows, not the
//! record the model needs.
//!
//! A line becomes zero or more [`Item`]s: a prompt the user typed (or the slash command
//! they ran), the assistant's text, each tool call as one line (`Bash  cargo test`), a
//! permission-mode entry, a compaction. Tool results, thinking, meta messages (caveats,
//! hook output, reminders), compaction summaries and sub-agents' lines (`isSidechain`)
//! are left out: the page is a view of the main conversation, like the terminal's
//! history. A line that does not parse shows as nothing; the stream is the replica, and
//! the local transcript on the session's machine keeps the record.
//!
//! [`TitleParts`] follows the lines that name a session: the title the user chose
//! (`custom-title`) before the generated one (`ai-title`) before the first prompt, as the
//! session listing shows them.

use serde::Serialize;
use serde_json::Value;
use strata_protocol::message::{ContentBlock, MessageContent};
use strata_protocol::transcript::{Entry, MetadataEntry, UserEntry};

/// Longest one-line text kept (a tool's argument, a title), in characters.
const ONE_LINE_MAX: usize = 200;

/// One thing the page shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Item {
    /// A prompt the user typed.
    Prompt {
        /// Its text.
        text: String,
    },
    /// A slash command the user ran (`/name args`).
    Command {
        /// The command as typed.
        text: String,
    },
    /// A note of the session's (an interruption).
    Note {
        /// Its text.
        text: String,
    },
    /// The assistant's text.
    Text {
        /// The text (markdown, shown as written).
        text: String,
    },
    /// A tool call, as one line.
    Tool {
        /// The tool's name.
        name: String,
        /// Its main argument (the command, the file, the pattern…), on one line.
        summary: String,
    },
    /// The permission mode the session recorded.
    Mode {
        /// The mode's name.
        mode: String,
    },
    /// The conversation was compacted here.
    Compacted,
}

/// The items of one transcript line.
pub(crate) fn items_of_line(line: &str) -> Vec<Item> {
    match Entry::parse(line) {
        Ok(entry) => items_of(&entry),
        Err(_) => Vec::new(),
    }
}

/// The items of one parsed entry.
pub(crate) fn items_of(entry: &Entry) -> Vec<Item> {
    if entry.envelope().is_some_and(|e| e.is_sidechain) {
        return Vec::new();
    }
    match entry {
        Entry::User(user) => user_items(user),
        Entry::Assistant(assistant) => assistant
            .message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(Item::Text {
                    text: t.text.clone(),
                }),
                ContentBlock::ToolUse(call) => Some(Item::Tool {
                    name: call.name.clone(),
                    summary: tool_summary(&call.input),
                }),
                _ => None,
            })
            .collect(),
        Entry::System(system) if system.is_compact_boundary() => vec![Item::Compacted],
        Entry::Metadata(MetadataEntry::PermissionMode(e)) => vec![Item::Mode {
            mode: e.permission_mode.clone(),
        }],
        _ => Vec::new(),
    }
}

fn user_items(user: &UserEntry) -> Vec<Item> {
    if user.is_meta == Some(true) || user.is_compact_summary == Some(true) {
        return Vec::new();
    }
    let texts: Vec<&str> = match &user.message.content {
        MessageContent::Text(text) => vec![text.as_str()],
        MessageContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect(),
    };
    texts.into_iter().filter_map(prompt_item).collect()
}

/// A user text as the page shows it: a typed prompt, a command, a note, or nothing (the
/// tags the agent wraps its own messages in).
fn prompt_item(text: &str) -> Option<Item> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if t.starts_with("[Request interrupted") {
        return Some(Item::Note { text: t.to_owned() });
    }
    if t.starts_with('<') {
        let name = between(t, "<command-name>", "</command-name>")?;
        let args = between(t, "<command-args>", "</command-args>").unwrap_or("");
        let name = if name.starts_with('/') {
            name.to_owned()
        } else {
            format!("/{name}")
        };
        let text = if args.is_empty() {
            name
        } else {
            format!("{name} {args}")
        };
        return Some(Item::Command { text });
    }
    Some(Item::Prompt { text: t.to_owned() })
}

fn between<'t>(t: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let from = t.find(open)? + open.len();
    let to = t[from..].find(close)? + from;
    Some(t[from..to].trim())
}

/// The arguments a tool call is known by, most telling first.
const SUMMARY_KEYS: [&str; 10] = [
    "command",
    "file_path",
    "notebook_path",
    "path",
    "pattern",
    "url",
    "query",
    "description",
    "skill",
    "prompt",
];

/// A tool call's main argument on one line; the whole input, compact, when it has none
/// of the usual ones.
fn tool_summary(input: &Value) -> String {
    let named = SUMMARY_KEYS
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str));
    match named {
        Some(text) => one_line(text),
        None if input.as_object().is_some_and(|o| o.is_empty()) => String::new(),
        None => one_line(&input.to_string()),
    }
}

/// The first line of `text`, cut to [`ONE_LINE_MAX`] characters; `…` says more was left
/// out.
pub(crate) fn one_line(text: &str) -> String {
    let trimmed = text.trim();
    let first = trimmed.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(ONE_LINE_MAX).collect();
    if out.len() < trimmed.len() {
        out.push('…');
    }
    out
}

/// What names a session, from its transcript lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TitleParts {
    custom: Option<String>,
    ai: Option<String>,
    first_prompt: Option<String>,
}

impl TitleParts {
    /// Takes in one line; returns whether the title changed.
    pub(crate) fn observe(&mut self, entry: &Entry) -> bool {
        let before = self.title();
        match entry {
            Entry::Metadata(MetadataEntry::CustomTitle(e)) => {
                self.custom = Some(one_line(&e.custom_title))
            }
            Entry::Metadata(MetadataEntry::AiTitle(e)) => self.ai = Some(one_line(&e.ai_title)),
            Entry::User(_) if self.first_prompt.is_none() => {
                self.first_prompt = items_of(entry).into_iter().find_map(|item| match item {
                    Item::Prompt { text } | Item::Command { text } => Some(one_line(&text)),
                    _ => None,
                });
            }
            _ => return false,
        }
        self.title() != before
    }

    /// The title: the user's, else the generated one, else the first prompt.
    pub(crate) fn title(&self) -> Option<String> {
        self.custom
            .clone()
            .or_else(|| self.ai.clone())
            .or_else(|| self.first_prompt.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = r#"{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"1","type":"user","message":{"role":"user","content":"run <b>the</b> tests"},"uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z"}"#;

    fn assistant(content: &str) -> String {
        format!(
            r#"{{"parentUuid":"u1","isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"1","type":"assistant","message":{{"model":"m","id":"msg_1","type":"message","role":"assistant","content":{content},"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":1,"output_tokens":1}}}},"uuid":"a1","timestamp":"2026-01-01T00:00:01.000Z"}}"#
        )
    }

    #[test]
    fn a_prompt_text_and_tool_calls_are_shown_one_line_each() {
        let mut items = items_of_line(USER);
        items.extend(items_of_line(&assistant(
            r#"[{"type":"text","text":"Running them."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo test\necho done","description":"tests"}},{"type":"tool_use","id":"t2","name":"TodoWrite","input":{"todos":[]}}]"#,
        )));
        insta::assert_json_snapshot!(items);
    }

    #[test]
    fn tool_results_meta_messages_and_sidechains_are_left_out() {
        let result = USER.replace(
            r#""content":"run <b>the</b> tests""#,
            r#""content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]"#,
        );
        assert_eq!(items_of_line(&result), vec![]);
        let meta = USER.replace(r#""type":"user","#, r#""type":"user","isMeta":true,"#);
        assert_eq!(items_of_line(&meta), vec![]);
        let side = USER.replace(r#""isSidechain":false"#, r#""isSidechain":true"#);
        assert_eq!(items_of_line(&side), vec![]);
        assert_eq!(items_of_line("not json"), vec![]);
    }

    #[test]
    fn a_command_is_shown_as_typed_and_agent_tags_are_not_shown() {
        let command = USER.replace(
            "run <b>the</b> tests",
            "<command-name>/review</command-name>\\n<command-args>src</command-args>",
        );
        assert_eq!(
            items_of_line(&command),
            vec![Item::Command {
                text: "/review src".into()
            }]
        );
        let caveat = USER.replace(
            "run <b>the</b> tests",
            "<local-command-stdout>x</local-command-stdout>",
        );
        assert_eq!(items_of_line(&caveat), vec![]);
    }

    #[test]
    fn the_permission_mode_entry_is_shown() {
        assert_eq!(
            items_of_line(r#"{"type":"permission-mode","permissionMode":"plan","sessionId":"s"}"#),
            vec![Item::Mode {
                mode: "plan".into()
            }]
        );
    }

    #[test]
    fn the_title_is_the_custom_one_else_the_ai_one_else_the_first_prompt() {
        let mut parts = TitleParts::default();
        assert!(parts.observe(&Entry::parse(USER).unwrap()));
        assert_eq!(parts.title().as_deref(), Some("run <b>the</b> tests"));
        let second = USER.replace("run <b>the</b> tests", "again");
        assert!(
            !parts.observe(&Entry::parse(&second).unwrap()),
            "the first prompt stays"
        );
        let ai = r#"{"type":"ai-title","aiTitle":"Test run","sessionId":"s"}"#;
        assert!(parts.observe(&Entry::parse(ai).unwrap()));
        let custom = r#"{"type":"custom-title","customTitle":"Mine","sessionId":"s"}"#;
        assert!(parts.observe(&Entry::parse(custom).unwrap()));
        assert!(!parts.observe(&Entry::parse(ai).unwrap()));
        assert_eq!(parts.title().as_deref(), Some("Mine"));
    }

    #[test]
    fn one_line_keeps_the_first_line_and_says_when_it_cut() {
        assert_eq!(one_line("  ls -la  "), "ls -la");
        assert_eq!(one_line("a\nb"), "a…");
        assert_eq!(one_line(&"x".repeat(300)).chars().count(), ONE_LINE_MAX + 1);
    }
}
