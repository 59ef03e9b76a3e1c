//! Shared by the tool tests: a temp project, a recording `ToolHooks`, and a helper
//! that runs one call.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // not every test file uses every helper

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use strata_agent::tools::{Tool, ToolCall, ToolContext, ToolHooks, ToolOutput};
use tempfile::TempDir;

/// One `before_edit` call: the path and the file's content at that moment (`None` if it
/// did not exist), which proves the hook ran before the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EditCall {
    pub(crate) path: PathBuf,
    pub(crate) content_before: Option<String>,
}

/// Records every hook call.
#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) edits: Mutex<Vec<EditCall>>,
    pub(crate) stored: Mutex<Vec<(String, String)>>,
    pub(crate) todos: Mutex<Option<Value>>,
    pub(crate) store_dir: PathBuf,
    pub(crate) fail_before_edit: bool,
    /// Background shell tasks, for the tests of `run_in_background`.
    pub(crate) shell_tasks: Option<Arc<strata_agent::tools::bash::background::ShellTasks>>,
}

impl ToolHooks for Recorder {
    fn before_edit(&self, path: &Path) -> Result<(), String> {
        self.edits.lock().unwrap().push(EditCall {
            path: path.to_path_buf(),
            content_before: std::fs::read_to_string(path).ok(),
        });
        if self.fail_before_edit {
            Err("backup disk is full".to_owned())
        } else {
            Ok(())
        }
    }

    fn store_large_output(&self, tool_use_id: &str, content: &str) -> Result<PathBuf, String> {
        self.stored
            .lock()
            .unwrap()
            .push((tool_use_id.to_owned(), content.to_owned()));
        let path = self.store_dir.join(format!("{tool_use_id}.txt"));
        std::fs::write(&path, content).map_err(|e| e.to_string())?;
        Ok(path)
    }

    fn set_todos(&self, todos: Value) {
        *self.todos.lock().unwrap() = Some(todos);
    }

    fn shell_tasks(&self) -> Option<Arc<strata_agent::tools::bash::background::ShellTasks>> {
        self.shell_tasks.clone()
    }

    fn todos(&self) -> Value {
        self.todos
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(|| Value::Array(vec![]))
    }
}

impl Recorder {
    pub(crate) fn edit_calls(&self) -> Vec<EditCall> {
        self.edits.lock().unwrap().clone()
    }
}

/// A temp project (canonical path) with a context rooted there.
pub(crate) struct Project {
    pub(crate) dir: TempDir,
    pub(crate) store: TempDir,
    pub(crate) root: PathBuf,
    pub(crate) ctx: ToolContext,
    pub(crate) hooks: Arc<Recorder>,
}

impl Project {
    pub(crate) fn new() -> Self {
        Self::with_hooks(|_| {})
    }

    pub(crate) fn with_hooks(adjust: impl FnOnce(&mut Recorder)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut rec = Recorder {
            store_dir: store.path().to_path_buf(),
            ..Recorder::default()
        };
        adjust(&mut rec);
        let hooks = Arc::new(rec);
        let ctx = ToolContext::new(root.clone(), hooks.clone());
        Self {
            dir,
            store,
            root,
            ctx,
            hooks,
        }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub(crate) fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub(crate) async fn call(&self, tool: &dyn Tool, input: Value) -> ToolOutput {
        call(tool, &self.ctx, input).await
    }
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub(crate) async fn call(tool: &dyn Tool, ctx: &ToolContext, input: Value) -> ToolOutput {
    let id = format!(
        "toolu_{}",
        NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    tool.call(ToolCall { id, input }, ctx).await
}
