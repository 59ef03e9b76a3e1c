//! The TodoWrite tool: replaces the session's todo list.
//!
//! Each item has `content` (what to do), `status` (`pending`, `in_progress`,
//! `completed`) and `activeForm` (the present-continuous form shown while it runs, e.g.
//! "Running the tests"). The whole list is validated before anything changes, so a bad
//! item leaves the previous list in place; the error names the item and the field. The
//! list itself lives in app state (the todos domain), reached through
//! [`ToolHooks::set_todos`](super::ToolHooks::set_todos).
//!
//! TodoWrite touches no file and starts no process, so it counts as read-only (allowed
//! in plan mode, no permission needed); it is not concurrency-safe, because two lists
//! written at once would race for the last word.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::input::{invalid, parse};
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The TodoWrite tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWrite;

/// A todo item's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One todo item, as the model sends it and app state stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// What to do.
    pub content: String,
    /// Its state.
    pub status: TodoStatus,
    /// What is shown while it is in progress.
    #[serde(rename = "activeForm")]
    pub active_form: String,
}

#[derive(Debug, Deserialize)]
struct TodoInput {
    todos: Vec<TodoItem>,
}

fn check(input: &Value) -> Result<Vec<TodoItem>, ToolOutput> {
    let parsed: TodoInput = parse("TodoWrite", input)?;
    for (i, item) in parsed.todos.iter().enumerate() {
        if item.content.trim().is_empty() {
            return Err(invalid(
                "TodoWrite",
                &format!("todos[{i}].content"),
                "must not be empty",
            ));
        }
        if item.active_form.trim().is_empty() {
            return Err(invalid(
                "TodoWrite",
                &format!("todos[{i}].activeForm"),
                "must not be empty",
            ));
        }
    }
    Ok(parsed.todos)
}

const DESCRIPTION: &str = "Replaces the todo list for this session, to plan and track \
multi-step work so the user can follow progress.\n\
\n\
- Send the whole list every time. Each item: `content` (imperative: \"Run the tests\"), \
`status` (`pending`, `in_progress`, `completed`) and `activeForm` (present continuous: \
\"Running the tests\").\n\
- Keep exactly one item `in_progress` while working; mark an item `completed` as soon as it \
is done, not in batches.\n\
- Use it for tasks with several steps; skip it for a single trivial step.";

impl Tool for TodoWrite {
    fn name(&self) -> &'static str {
        "TodoWrite"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete, updated todo list",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "activeForm": {"type": "string", "minLength": 1}
                        },
                        "required": ["content", "status", "activeForm"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let todos = match check(&call.input) {
                Ok(t) => t,
                Err(err) => return err,
            };
            let new_todos = json!(todos);
            let old_todos = ctx.hooks.todos();
            ctx.hooks.set_todos(new_todos.clone());
            let count = |s: TodoStatus| todos.iter().filter(|t| t.status == s).count();
            ToolOutput::ok(format!(
                "Todo list updated: {} items ({} pending, {} in progress, {} completed). Keep \
                 it current as you work: mark items completed as soon as they are done.",
                todos.len(),
                count(TodoStatus::Pending),
                count(TodoStatus::InProgress),
                count(TodoStatus::Completed),
            ))
            .with_detail(json!({"oldTodos": old_todos, "newTodos": new_todos}))
        })
    }
}
