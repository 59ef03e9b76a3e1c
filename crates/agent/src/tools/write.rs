//! The Write tool: creates a file or replaces its whole content.
//!
//! Replacing an existing file requires that the model read it in this context and that
//! it has not changed since (see [`files`](super::files)). Before the file changes,
//! [`ToolHooks::before_edit`](super::ToolHooks::before_edit) is called once so file
//! history can back it up; if the hook fails, nothing is written. Missing parent
//! directories are created. Existing files are rewritten in place, which keeps their
//! permissions and ownership.

use std::io::ErrorKind;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::diff::diff;
use super::files::{absolute_path, blocking_checked, check_fresh, record_read};
use super::input::parse;
use super::read::path_subject;
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The Write tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Write;

#[derive(Debug, Deserialize)]
struct WriteInput {
    file_path: String,
    content: String,
}

fn check(input: &Value) -> Result<(PathBuf, String), ToolOutput> {
    let parsed: WriteInput = parse("Write", input)?;
    let path = absolute_path("Write", "file_path", &parsed.file_path)?;
    Ok((path, parsed.content))
}

const DESCRIPTION: &str = "Writes a file, creating it (and missing parent directories) or \
replacing its whole content.\n\
\n\
- `file_path` must be an absolute path.\n\
- To replace an existing file, Read it first in this conversation; a file that changed since \
it was read is refused.\n\
- To change part of a file prefer Edit, which sends only the changed text.";

impl Tool for Write {
    fn name(&self) -> &'static str {
        "Write"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path of the file to write"},
                "content": {"type": "string", "description": "The complete new content"}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        path_subject(input, "file_path")
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let ctx2 = ctx.clone();
            blocking_checked(check(&call.input), move |(path, content)| {
                write_file(path, &content, &ctx2)
            })
            .await
        })
    }
}

fn write_file(path: PathBuf, content: &str, ctx: &ToolContext) -> ToolOutput {
    let shown = path.display().to_string();
    let original = match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return ToolOutput::error(format!("{shown} is a directory; Write needs a file path."));
        }
        Ok(meta) => {
            if let Err(err) = check_fresh(ctx, &path, &meta) {
                return err;
            }
            match std::fs::read(&path) {
                Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
                Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return ToolOutput::error(format!("Cannot access {shown}: {e}")),
    };

    if let Err(e) = ctx.hooks.before_edit(&path) {
        return ToolOutput::error(format!(
            "Not written: backing up {shown} for file history failed: {e}"
        ));
    }
    if let Some(parent) = path.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return ToolOutput::error(format!(
            "Cannot create the directory {}: {e}",
            parent.display()
        ));
    }
    if let Err(e) = std::fs::write(&path, content) {
        return ToolOutput::error(format!("Cannot write {shown}: {e}"));
    }
    record_read(ctx, &path);

    let summary = diff(original.as_deref().unwrap_or(""), content);
    let (kind, message) = match &original {
        None => ("create", format!("File created successfully at: {shown}")),
        Some(_) => (
            "update",
            format!(
                "The file {shown} has been updated ({} lines added, {} removed).",
                summary.added, summary.removed
            ),
        ),
    };
    ToolOutput {
        content: message,
        is_error: false,
        detail: Some(json!({
            "type": kind,
            "filePath": path,
            "content": content,
            "structuredPatch": summary.patch,
            "originalFile": original,
        })),
        lines_added: summary.added,
        lines_removed: summary.removed,
        ..ToolOutput::default()
    }
}
