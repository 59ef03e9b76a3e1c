//! Background work does not survive a restart (SP-3): a resumed conversation may have
//! started background shells or agents whose end it never heard of. [`lost_tasks`] finds
//! them — a background Bash or Agent call whose result names a task id, with no task
//! notification for that id later in the conversation — so the model can be told they
//! are gone instead of waiting for notifications that will never come.
//!
//! Ids are read from the results' text, which strata and the reference agent write the
//! same way for shells (`Command running in background with ID: b…`) and which names the
//! agent for background agents (`Agent a… started in the background`, or an
//! `agentId: a…` line).

use std::sync::Arc;

use serde_json::Value;
use strata_protocol::message::{ContentBlock, Message, MessageContent, ToolResultContent};

use super::tool::is_agent_tool;

/// A task a resumed conversation started and never heard the end of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostTask {
    /// Its id.
    pub id: String,
    /// `Bash` or `Agent`.
    pub tool: &'static str,
    /// What it was (the call's description, or its command).
    pub what: String,
}

/// The background tasks `messages` started whose end they do not record. Cheap when
/// the conversation started none (one pass over the blocks, nothing copied): it runs
/// when every session resumes.
pub fn lost_tasks<'a>(
    messages: impl IntoIterator<Item = &'a Arc<Message>> + Clone,
) -> Vec<LostTask> {
    // Pass 1: background calls and the ids their results name.
    let mut started: Vec<(&str, LostTask)> = Vec::new();
    for block in blocks_of(messages.clone()) {
        match block {
            ContentBlock::ToolUse(call) if in_background(&call.input) => {
                let tool = if call.name == "Bash" {
                    "Bash"
                } else if is_agent_tool(&call.name) {
                    "Agent"
                } else {
                    continue;
                };
                let what = ["description", "command"]
                    .iter()
                    .find_map(|k| call.input.get(*k).and_then(Value::as_str))
                    .unwrap_or_default()
                    .to_owned();
                started.push((
                    call.id.as_str(),
                    LostTask {
                        id: String::new(),
                        tool,
                        what,
                    },
                ));
            }
            ContentBlock::ToolResult(result) if !started.is_empty() => {
                if let Some((_, task)) = started
                    .iter_mut()
                    .find(|(id, task)| *id == result.tool_use_id && task.id.is_empty())
                {
                    task.id = task_id_in(&result_text(result.content.as_ref())).unwrap_or_default();
                }
            }
            _ => {}
        }
    }
    started.retain(|(_, task)| !task.id.is_empty());
    if started.is_empty() {
        return Vec::new();
    }
    // Pass 2: the notifications that did come.
    let mut ended = std::collections::HashSet::new();
    let mut note = |text: &str| {
        for (_, task) in &started {
            if text.contains(&format!("<task-id>{}</task-id>", task.id)) {
                ended.insert(task.id.clone());
            }
        }
    };
    for message in messages {
        match &message.content {
            MessageContent::Text(t) => note(t),
            MessageContent::Blocks(blocks) => {
                for block in blocks {
                    if let ContentBlock::Text(t) = block {
                        note(&t.text);
                    }
                }
            }
        }
    }
    started
        .into_iter()
        .map(|(_, task)| task)
        .filter(|task| !ended.contains(&task.id))
        .collect()
}

/// Every content block of `messages`, in order.
fn blocks_of<'a>(
    messages: impl IntoIterator<Item = &'a Arc<Message>>,
) -> impl Iterator<Item = &'a ContentBlock> {
    messages.into_iter().flat_map(|m| match &m.content {
        MessageContent::Blocks(blocks) => blocks.as_slice(),
        MessageContent::Text(_) => &[],
    })
}

/// What the model is told of `lost` when the session resumes.
pub fn lost_tasks_notice(lost: &[LostTask]) -> Option<String> {
    if lost.is_empty() {
        return None;
    }
    let list: Vec<String> = lost
        .iter()
        .map(|t| format!("{} ({}: {})", t.id, t.tool, t.what))
        .collect();
    Some(format!(
        "<system-reminder>\nThe session was resumed. These background tasks were still \
         running when it last ended and are gone (background work does not survive a \
         restart): {}. No notification will come for them; start them again if they are \
         still needed.\n</system-reminder>",
        list.join(", ")
    ))
}

fn in_background(input: &Value) -> bool {
    input.get("run_in_background").and_then(Value::as_bool) == Some(true)
}

fn result_text(content: Option<&ToolResultContent>) -> String {
    match content {
        None => String::new(),
        Some(ToolResultContent::Text(t)) => t.clone(),
        Some(ToolResultContent::Blocks(blocks)) => blocks
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The task id a background call's result names.
fn task_id_in(text: &str) -> Option<String> {
    for marker in ["with ID: ", "agentId: ", "Agent "] {
        if let Some(rest) = text.split(marker).nth(1) {
            let id: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if id.len() >= 6 && id.starts_with(['a', 'b']) {
                return Some(id);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use strata_protocol::message::Role;

    fn call(id: &str, name: &str, input: Value) -> Arc<Message> {
        Arc::new(Message::blocks(
            Role::Assistant,
            vec![ContentBlock::tool_use(id, name, input)],
        ))
    }

    fn result(id: &str, text: &str) -> Arc<Message> {
        Arc::new(Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result(id, text, false)],
        ))
    }

    #[test]
    fn sp3_background_work_without_a_notification_is_lost() {
        let messages = vec![
            call(
                "t1",
                "Bash",
                json!({"command": "npm run dev", "run_in_background": true}),
            ),
            result(
                "t1",
                "Command running in background with ID: b7636e2. Output is being written to: /x",
            ),
            call(
                "t2",
                "Bash",
                json!({"command": "make", "run_in_background": true}),
            ),
            result(
                "t2",
                "Command running in background with ID: be613ab. Output is being written to: /y",
            ),
            Arc::new(Message::user_text(
                "<task-notification>\n<task-id>be613ab</task-id>\n<status>completed</status>\n</task-notification>",
            )),
            call(
                "t3",
                "Task",
                json!({"description": "Research", "prompt": "p", "run_in_background": true}),
            ),
            result("t3", "Agent a0193a7c4e1f200 started in the background."),
            call("t4", "Bash", json!({"command": "ls"})),
            result("t4", "file"),
        ];
        let lost = lost_tasks(messages.iter());
        assert_eq!(
            lost,
            vec![
                LostTask {
                    id: "b7636e2".into(),
                    tool: "Bash",
                    what: "npm run dev".into()
                },
                LostTask {
                    id: "a0193a7c4e1f200".into(),
                    tool: "Agent",
                    what: "Research".into()
                },
            ]
        );
        let notice = lost_tasks_notice(&lost).unwrap_or_default();
        assert!(notice.contains("b7636e2 (Bash: npm run dev)"), "{notice}");
        assert!(lost_tasks_notice(&[]).is_none());
    }
}
