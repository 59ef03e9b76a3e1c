//! The Edit tool: exact string replacement in one file.
//!
//! `old_string` must occur exactly once unless `replace_all` is set, so an edit never
//! lands on the wrong occurrence; not found, ambiguous and identical strings are errors
//! that say how to fix the call. An empty `old_string` creates a file that does not exist
//! yet (or fills an empty one). The file must have been read in this context and be
//! unchanged since; [`ToolHooks::before_edit`](super::ToolHooks::before_edit) runs once,
//! after every check passed and before the file changes.

use std::io::ErrorKind;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::diff::diff;
use super::files::{absolute_path, blocking_checked, check_fresh, record_read};
use super::input::{invalid, parse};
use super::read::path_subject;
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The Edit tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Edit;

#[derive(Debug, Deserialize)]
struct EditInput {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

struct Checked {
    path: PathBuf,
    input: EditInput,
}

fn check(input: &Value) -> Result<Checked, ToolOutput> {
    let parsed: EditInput = parse("Edit", input)?;
    let path = absolute_path("Edit", "file_path", &parsed.file_path)?;
    if parsed.old_string == parsed.new_string {
        return Err(invalid(
            "Edit",
            "new_string",
            "is identical to old_string, so there is nothing to change",
        ));
    }
    Ok(Checked {
        path,
        input: parsed,
    })
}

const DESCRIPTION: &str = "Replaces exact text in a file.\n\
\n\
- `file_path` must be an absolute path, and the file must have been Read in this conversation \
(a file that changed since is refused).\n\
- `old_string` must match the file exactly, including indentation, and occur exactly once; \
include enough surrounding lines to make it unique, or set `replace_all` to replace every \
occurrence (for renames).\n\
- Copy text from Read output without the line-number prefix.\n\
- An empty `old_string` creates a new file with `new_string` as its content.";

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "Edit"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path of the file to change"},
                "old_string": {"type": "string", "description": "The exact text to replace"},
                "new_string": {"type": "string", "description": "The text to put in its place (must differ from old_string)"},
                "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string"}
            },
            "required": ["file_path", "old_string", "new_string"],
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
            blocking_checked(check(&call.input), move |c| edit_file(c, &ctx2)).await
        })
    }
}

fn edit_file(c: Checked, ctx: &ToolContext) -> ToolOutput {
    let Checked { path, input } = c;
    let shown = path.display().to_string();
    let original: Option<String> = match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return ToolOutput::error(format!("{shown} is a directory; Edit needs a file path."));
        }
        Ok(meta) => {
            if let Err(err) = check_fresh(ctx, &path, &meta) {
                return err;
            }
            match std::fs::read(&path) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => Some(text),
                    Err(_) => {
                        return ToolOutput::error(format!(
                            "{shown} is not valid UTF-8 text; Edit cannot change it safely."
                        ));
                    }
                },
                Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return ToolOutput::error(format!("Cannot access {shown}: {e}")),
    };

    let updated = match (&original, input.old_string.is_empty()) {
        (None, true) => input.new_string.clone(),
        (None, false) => {
            return ToolOutput::error(format!(
                "File does not exist: {shown}. To create it, use Write (or Edit with an empty \
                 old_string)."
            ));
        }
        (Some(text), true) if text.is_empty() => input.new_string.clone(),
        (Some(_), true) => {
            return ToolOutput::error(format!(
                "old_string is empty but {shown} already has content. Give the exact text to \
                 replace, or use Write to replace the whole file."
            ));
        }
        (Some(text), false) => match text.matches(input.old_string.as_str()).count() {
            0 => {
                return ToolOutput::error(format!(
                    "String to replace not found in {shown}. old_string must match the file \
                     exactly, including whitespace and indentation; Read the file again to \
                     copy the current text.\nString: {}",
                    input.old_string
                ));
            }
            1 => text.replacen(input.old_string.as_str(), &input.new_string, 1),
            _ if input.replace_all => text.replace(input.old_string.as_str(), &input.new_string),
            n => {
                return ToolOutput::error(format!(
                    "Found {n} matches of old_string in {shown}, but replace_all is false. Add \
                     more surrounding lines to old_string so it matches exactly one place, or \
                     set replace_all to true to replace every occurrence.\nString: {}",
                    input.old_string
                ));
            }
        },
    };

    if let Err(e) = ctx.hooks.before_edit(&path) {
        return ToolOutput::error(format!(
            "Not edited: backing up {shown} for file history failed: {e}"
        ));
    }
    if original.is_none()
        && let Some(parent) = path.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return ToolOutput::error(format!(
            "Cannot create the directory {}: {e}",
            parent.display()
        ));
    }
    if let Err(e) = std::fs::write(&path, &updated) {
        return ToolOutput::error(format!("Cannot write {shown}: {e}"));
    }
    record_read(ctx, &path);

    let summary = diff(original.as_deref().unwrap_or(""), &updated);
    let message = match &original {
        None => format!("File created successfully at: {shown}"),
        Some(_) => format!(
            "The file {shown} has been updated ({} lines added, {} removed).",
            summary.added, summary.removed
        ),
    };
    ToolOutput {
        content: message,
        is_error: false,
        detail: Some(json!({
            "filePath": path,
            "oldString": input.old_string,
            "newString": input.new_string,
            "originalFile": original,
            "structuredPatch": summary.patch,
            "userModified": false,
            "replaceAll": input.replace_all,
        })),
        lines_added: summary.added,
        lines_removed: summary.removed,
        ..ToolOutput::default()
    }
}
