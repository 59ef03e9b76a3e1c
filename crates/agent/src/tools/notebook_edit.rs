//! The NotebookEdit tool: replaces, inserts or deletes one cell of a Jupyter notebook
//! (issue 18, item 7), with the reference agent's input: `notebook_path`, `cell_id`,
//! `new_source`, `cell_type` (`code` / `markdown`) and `edit_mode` (`replace`, the
//! default, `insert`, `delete`).
//!
//! It is a file edit like Edit and Write: the `Edit(…)` permission rules and the
//! accept-edits mode apply to it (its permission subject is the notebook's path and it
//! is not read-only), the notebook must have been Read in this context and be unchanged
//! since, and [`ToolHooks::before_edit`](super::ToolHooks::before_edit) backs it up before
//! it changes, so rewind restores it. A notebook that does not parse is never written:
//! the error names its line and column. A replaced code cell loses its outputs and
//! execution count (they belonged to the old source); an inserted cell gets an id when
//! the notebook's cells have ids.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::diff::diff;
use super::files::{absolute_path, blocking_checked, check_fresh, record_read};
use super::input::{invalid, parse};
use super::notebook::{Notebook, cell_name, source_lines, source_text};
use super::read::path_subject;
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The NotebookEdit tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotebookEdit;

const NAME: &str = "NotebookEdit";

#[derive(Debug, Deserialize)]
struct NotebookEditInput {
    notebook_path: String,
    #[serde(default)]
    cell_id: Option<String>,
    new_source: String,
    #[serde(default)]
    cell_type: Option<CellType>,
    #[serde(default)]
    edit_mode: Option<EditMode>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum CellType {
    Code,
    Markdown,
}

impl CellType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Markdown => "markdown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum EditMode {
    Replace,
    Insert,
    Delete,
}

impl EditMode {
    fn as_str(self) -> &'static str {
        match self {
            Self::Replace => "replace",
            Self::Insert => "insert",
            Self::Delete => "delete",
        }
    }
}

struct Checked {
    path: PathBuf,
    cell_id: Option<String>,
    new_source: String,
    cell_type: Option<CellType>,
    mode: EditMode,
}

fn check(input: &Value) -> Result<Checked, ToolOutput> {
    let parsed: NotebookEditInput = parse(NAME, input)?;
    let path = absolute_path(NAME, "notebook_path", &parsed.notebook_path)?;
    if path.extension().is_none_or(|e| e != "ipynb") {
        return Err(invalid(
            NAME,
            "notebook_path",
            "must name a Jupyter notebook (.ipynb); use Edit for other files",
        ));
    }
    let mode = parsed.edit_mode.unwrap_or(EditMode::Replace);
    let cell_id = parsed.cell_id.filter(|id| !id.trim().is_empty());
    if mode == EditMode::Insert && parsed.cell_type.is_none() {
        return Err(invalid(
            NAME,
            "cell_type",
            "is required when inserting a cell (`code` or `markdown`)",
        ));
    }
    if mode != EditMode::Insert && cell_id.is_none() {
        return Err(invalid(
            NAME,
            "cell_id",
            format!(
                "is required to {} a cell (Read the notebook to see its cell ids)",
                mode.as_str()
            ),
        ));
    }
    Ok(Checked {
        path,
        cell_id,
        new_source: parsed.new_source,
        cell_type: parsed.cell_type,
        mode,
    })
}

const DESCRIPTION: &str = "Changes one cell of a Jupyter notebook (.ipynb).\n\
\n\
- `notebook_path` must be an absolute path, and the notebook must have been Read in this \
conversation (a notebook that changed since is refused).\n\
- `cell_id` is a cell's id as Read shows it (`cell-N` for notebooks without ids).\n\
- `edit_mode`: `replace` (the default) sets the cell's source to `new_source`, and its type \
when `cell_type` is given; `insert` adds a new cell of `cell_type` after `cell_id` (at the \
start without one); `delete` removes the cell (`new_source` is then ignored).\n\
- A replaced code cell's outputs are cleared: run the notebook again to get new ones.";

impl Tool for NotebookEdit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "notebook_path": {"type": "string", "description": "The absolute path of the notebook"},
                "cell_id": {"type": "string", "description": "The id of the cell to change, or, when inserting, the cell after which the new one goes (leave out to insert at the start)"},
                "new_source": {"type": "string", "description": "The cell's new source"},
                "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "The cell's type; required when inserting"},
                "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "description": "What to do (default replace)"}
            },
            "required": ["notebook_path", "new_source"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        path_subject(input, "notebook_path")
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let ctx2 = ctx.clone();
            blocking_checked(check(&call.input), move |c| edit_notebook(c, &ctx2)).await
        })
    }
}

fn edit_notebook(c: Checked, ctx: &ToolContext) -> ToolOutput {
    let path = &c.path;
    let shown = path.display().to_string();
    let meta = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return ToolOutput::error(format!("{shown} is a directory, not a notebook."));
        }
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::error(format!(
                "The notebook {shown} does not exist. Create it with Write (an empty notebook \
                 is {{\"cells\": [], \"metadata\": {{}}, \"nbformat\": 4, \"nbformat_minor\": 5}})."
            ));
        }
        Err(e) => return ToolOutput::error(format!("Cannot access {shown}: {e}")),
    };
    if let Err(err) = check_fresh(ctx, path, &meta) {
        return err;
    }
    let original = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    };
    let mut nb = match Notebook::parse(path, &original) {
        Ok(nb) => nb,
        Err(e) => return ToolOutput::error(format!("{e}. The notebook was not changed.")),
    };
    let language = nb.language();
    let with_ids = nb.has_cell_ids();
    let target = match &c.cell_id {
        Some(id) => match nb.find(id) {
            Some(i) => Some(i),
            None => {
                let names: Vec<String> = nb
                    .cells()
                    .iter()
                    .enumerate()
                    .map(|(i, cell)| cell_name(cell, i))
                    .take(20)
                    .collect();
                return ToolOutput::error(format!(
                    "{shown} has no cell {id:?}. Its cells: {}{}",
                    names.join(", "),
                    if nb.cells().len() > names.len() {
                        ", …"
                    } else {
                        ""
                    }
                ));
            }
        },
        None => None,
    };
    let (old_source, cell_id, cell_type) = match c.mode {
        EditMode::Replace => {
            let Some(i) = target else {
                return ToolOutput::error("a cell to replace is needed: give `cell_id`");
            };
            let cell = &mut nb.cells_mut()[i];
            let old = source_text(cell);
            let kind = c.cell_type.map_or_else(
                || {
                    cell.get("cell_type")
                        .and_then(Value::as_str)
                        .unwrap_or("code")
                        .to_owned()
                },
                |t| t.as_str().to_owned(),
            );
            if let Value::Object(fields) = cell {
                let keep_string = matches!(fields.get("source"), Some(Value::String(_)));
                let source = if keep_string {
                    Value::String(c.new_source.clone())
                } else {
                    source_lines(&c.new_source)
                };
                fields.insert("source".into(), source);
                fields.insert("cell_type".into(), json!(kind));
                shape_for_type(fields, &kind);
            }
            (old, cell_name(&nb.cells()[i], i), kind)
        }
        EditMode::Insert => {
            let kind = c.cell_type.unwrap_or(CellType::Code);
            let at = target.map_or(0, |i| i + 1);
            let mut fields = Map::new();
            fields.insert("cell_type".into(), json!(kind.as_str()));
            if with_ids {
                let id = uuid::Uuid::new_v4().simple().to_string();
                fields.insert("id".into(), json!(id[..8].to_owned()));
            }
            fields.insert("metadata".into(), json!({}));
            fields.insert("source".into(), source_lines(&c.new_source));
            shape_for_type(&mut fields, kind.as_str());
            nb.cells_mut().insert(at, Value::Object(fields));
            (
                String::new(),
                cell_name(&nb.cells()[at], at),
                kind.as_str().to_owned(),
            )
        }
        EditMode::Delete => {
            let Some(i) = target else {
                return ToolOutput::error("a cell to delete is needed: give `cell_id`");
            };
            let removed = nb.cells_mut().remove(i);
            let kind = removed
                .get("cell_type")
                .and_then(Value::as_str)
                .unwrap_or("code")
                .to_owned();
            (source_text(&removed), cell_name(&removed, i), kind)
        }
    };
    let updated = match nb.to_text() {
        Ok(t) => t,
        Err(e) => return ToolOutput::error(format!("Cannot write {shown}: {e}")),
    };
    if let Err(e) = ctx.hooks.before_edit(path) {
        return ToolOutput::error(format!(
            "Not written: backing up {shown} for file history failed: {e}"
        ));
    }
    if let Err(e) = std::fs::write(path, &updated) {
        return ToolOutput::error(format!("Cannot write {shown}: {e}"));
    }
    record_read(ctx, path);
    let new_source = if c.mode == EditMode::Delete {
        ""
    } else {
        &c.new_source
    };
    let summary = diff(&old_source, new_source);
    let message = match c.mode {
        EditMode::Replace => format!("Updated cell {cell_id} of {shown} ({cell_type})."),
        EditMode::Insert => format!("Inserted cell {cell_id} ({cell_type}) into {shown}."),
        EditMode::Delete => format!("Deleted cell {cell_id} of {shown}."),
    };
    ToolOutput {
        content: message,
        is_error: false,
        detail: Some(json!({
            "new_source": new_source,
            "cell_id": cell_id,
            "cell_type": cell_type,
            "language": language,
            "edit_mode": c.mode.as_str(),
            "error": "",
            "notebook_path": path,
        })),
        lines_added: summary.added,
        lines_removed: summary.removed,
        ..ToolOutput::default()
    }
}

/// Makes a cell's fields those of its type: a code cell has `outputs` (cleared) and
/// `execution_count` (none yet); a markdown cell has neither.
fn shape_for_type(fields: &mut Map<String, Value>, kind: &str) {
    if kind == "code" {
        fields.insert("execution_count".into(), Value::Null);
        fields.insert("outputs".into(), Value::Array(Vec::new()));
    } else {
        fields.remove("execution_count");
        fields.remove("outputs");
    }
}
