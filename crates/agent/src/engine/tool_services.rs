//! [`SessionHooks`]: what tools reach of the session — file history before edits (a
//! store update of the app state's file-history domain), the
//! side folder for large outputs, the todo list in the app store, the background
//! shell tasks and background agents.

use crate::sync::lock;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use smol_str::SmolStr;
use strata_protocol::permission::PermissionMode;
use strata_session::layout::SessionLayout;
use strata_session::writer::tool_results::store_tool_output;
use strata_state::{AppState, TodoItem, TodoStatus, Todos};
use strata_store::Store;

use super::file_history::{self, SessionFileHistory};
use crate::tools::ToolHooks;
use crate::tools::bash::background::ShellTasks;

/// The main agent's todo list key in [`Todos`].
pub(crate) const MAIN_AGENT: &str = "main";

/// The real [`ToolHooks`] of a session.
pub(crate) struct SessionHooks {
    /// File history's persistence port; the history is the store's.
    pub(crate) file_history: Arc<SessionFileHistory>,
    pub(crate) layout: SessionLayout,
    pub(crate) store: Store<AppState>,
    /// The uuid of the user prompt the current turn answers: edits are tracked in its
    /// snapshot.
    pub(crate) prompt_uuid: Arc<Mutex<String>>,
    /// The session's background shell tasks (their entries live in `store`).
    pub(crate) shell_tasks: Arc<ShellTasks>,
    /// The bootstrap state, where the session's plan slug lives (BS-5).
    pub(crate) bootstrap: super::BootstrapHandle,
    /// The session's sub-agents (TaskOutput and TaskStop reach background ones).
    pub(crate) agents: Arc<crate::agents::AgentRuntime>,
    /// The skills found when the session opened (the Skill tool).
    pub(crate) skills: Arc<crate::commands::SkillCatalog>,
    /// The session's provider, for small model requests (WebFetch).
    pub(crate) provider: Arc<dyn crate::provider::Provider>,
    /// The provider's default model, when neither the app state nor the settings name
    /// one.
    pub(crate) default_model: Option<String>,
}

impl SessionHooks {
    /// The session's model now (as the engine picks it: the app state's, the settings',
    /// the provider's default).
    fn main_model(&self) -> String {
        let state = self.store.get();
        state
            .main_loop_model
            .as_ref()
            .map(|m| m.to_string())
            .or_else(|| state.settings.model.clone())
            .or_else(|| self.default_model.clone())
            .unwrap_or_default()
    }
}

impl ToolHooks for SessionHooks {
    fn before_edit(&self, path: &Path) -> Result<(), String> {
        // A store update; the hub writes the backup before this returns (see
        // `crate::file_history`).
        let prompt = lock(&self.prompt_uuid).clone();
        file_history::before_edit(&self.store, &self.file_history, path, &prompt)
    }

    fn store_large_output(&self, tool_use_id: &str, content: &str) -> Result<PathBuf, String> {
        // Always stored: the tool shows the model less than the transcript's inline limit
        // (30,000 characters against 50,000 bytes), so an output in between would
        // otherwise lose what the tool cut.
        store_tool_output(&self.layout, tool_use_id, content).map_err(|e| e.to_string())
    }

    fn set_todos(&self, todos: Value) {
        let items: imbl::Vector<Arc<TodoItem>> = todos
            .as_array()
            .map(|list| list.iter().filter_map(todo_item).map(Arc::new).collect())
            .unwrap_or_default();
        let _ = self.store.set(|s| {
            if s.todos.of(MAIN_AGENT) == Some(&items) {
                return Arc::clone(s);
            }
            let mut lists = s.todos.0.clone();
            lists.insert(SmolStr::new(MAIN_AGENT), items);
            Arc::new(AppState {
                todos: Todos(lists),
                ..AppState::clone(s)
            })
        });
    }

    fn shell_tasks(&self) -> Option<Arc<ShellTasks>> {
        Some(Arc::clone(&self.shell_tasks))
    }

    fn agents(&self) -> Option<Arc<crate::agents::AgentRuntime>> {
        Some(Arc::clone(&self.agents))
    }

    fn permission_mode(&self) -> Option<PermissionMode> {
        Some(self.store.get().tool_permission_context.mode)
    }

    fn set_permission_mode(&self, mode: PermissionMode) -> Result<(), String> {
        super::change_mode(&self.store, &mode.to_string()).map_err(|e| e.to_string())
    }

    fn plan_file(&self) -> Option<PathBuf> {
        let session = self.bootstrap.session_id();
        let slug = match self.bootstrap.plan_slug(session) {
            Some(slug) => slug.to_string(),
            None => {
                let slug = crate::tools::plan_slug(session);
                self.bootstrap.set_plan_slug(session, &slug);
                slug
            }
        };
        Some(
            self.layout
                .config_dir
                .join("plans")
                .join(format!("{slug}.md")),
        )
    }

    fn skills(&self) -> Option<Arc<crate::commands::SkillCatalog>> {
        Some(Arc::clone(&self.skills))
    }

    fn session_id(&self) -> Option<String> {
        Some(self.bootstrap.session_id().to_string())
    }

    fn ask_small_model(
        &self,
        system: String,
        prompt: String,
        cancel: tokio_util::sync::CancellationToken,
    ) -> crate::tools::SmallModelFuture<'_> {
        let model = super::small_model::small_model(self.provider.as_ref(), self.main_model());
        Box::pin(super::small_model::ask(
            self.provider.as_ref(),
            &self.bootstrap,
            model,
            system,
            prompt,
            cancel,
        ))
    }

    fn web_search(
        &self,
        query: crate::tools::WebSearchQuery,
        cancel: tokio_util::sync::CancellationToken,
    ) -> crate::tools::WebSearchFuture<'_> {
        Box::pin(super::web_search::search(
            self.provider.as_ref(),
            &self.bootstrap,
            self.main_model(),
            query,
            cancel,
        ))
    }

    fn todos(&self) -> Value {
        let state = self.store.get();
        let list: Vec<Value> = state
            .todos
            .of(MAIN_AGENT)
            .map(|items| {
                items
                    .iter()
                    .map(|t| {
                        json!({
                            "content": &*t.content,
                            "status": status_name(t.status),
                            "activeForm": &*t.active_form,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Value::Array(list)
    }
}

fn todo_item(v: &Value) -> Option<TodoItem> {
    let status = match v.get("status")?.as_str()? {
        "pending" => TodoStatus::Pending,
        "in_progress" => TodoStatus::InProgress,
        "completed" => TodoStatus::Completed,
        _ => return None,
    };
    Some(TodoItem {
        content: Arc::from(v.get("content")?.as_str()?),
        status,
        active_form: Arc::from(
            v.get("activeForm")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ),
    })
}

fn status_name(status: TodoStatus) -> &'static str {
    match status {
        TodoStatus::Pending => "pending",
        TodoStatus::InProgress => "in_progress",
        TodoStatus::Completed => "completed",
    }
}
