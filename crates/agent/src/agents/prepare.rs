//! Building one sub-agent: its context (SA-1 … SA-7, through
//! [`create_subagent_context`]), its tools, system prompt, model, conversation store and
//! transcript.

use std::sync::Arc;

use serde_json::Value;
use smol_str::SmolStr;
use strata_protocol::permission::PermissionMode;
use strata_session::writer::TranscriptWriter;
use strata_state::{AppState, ToolPermissionContext};
use strata_store::Store;

use super::definitions::AgentDefinition;
use super::runtime::AgentRuntime;
use super::tool::AgentInput;
use crate::context::{SubagentOptions, ToolUseContext, create_subagent_context};
use crate::permissions::PermissionEnv;
use crate::prompt::{PromptInputs, SessionPrompt, environment_text};
use crate::query::{LongSession, TurnContext, TurnHost};
use crate::record::Recorder;
use crate::tools::{Tool, ToolOutput, ToolRegistry};

/// Tools a sub-agent never gets: they act on the main conversation (its todo list, its
/// permission mode) or ask the user, which only the main agent does.
const MAIN_AGENT_ONLY: &[&str] = &[
    "TodoWrite",
    "EnterPlanMode",
    "ExitPlanMode",
    "AskUserQuestion",
];

/// Everything one sub-agent runs with.
pub(crate) struct Prepared {
    /// Its id (its task id when it runs in the background).
    pub(crate) agent_id: String,
    /// Its type.
    pub(crate) definition: AgentDefinition,
    /// What it was asked.
    pub(crate) input: AgentInput,
    /// Its context.
    pub(crate) ctx: ToolUseContext,
    /// Its tools.
    pub(crate) tools: ToolRegistry,
    /// Its conversation (a store of its own: nothing of it reaches the root).
    pub(crate) store: Store<AppState>,
    /// Its transcript, `subagents/agent-<id>.jsonl`.
    pub(crate) recorder: Recorder,
    /// Its system prompt and context count.
    pub(crate) long: LongSession,
    /// Its model and how its prompt answers change permissions.
    pub(crate) host: SubagentHost,
    /// The model it runs on.
    pub(crate) model: String,
}

/// What a sub-agent's turn asks of its session: permission updates go to the root store
/// (only a synchronous agent can be answered, and its answers are the user's), the model
/// is fixed when it starts.
pub(crate) struct SubagentHost {
    pub(crate) model: String,
    pub(crate) root: Store<AppState>,
    pub(crate) env: Arc<PermissionEnv>,
}

impl TurnHost for SubagentHost {
    fn apply_permission_updates(&self, updates: &[Value]) {
        crate::engine::apply_permission_updates(&self.root, &self.env, updates);
    }

    fn model(&self) -> String {
        self.model.clone()
    }
}

impl AgentRuntime {
    /// Prepares sub-agent `agent_id` of type `definition` for `input`, called from
    /// `parent`'s turn. `hook_context` is what SubagentStart hooks added.
    pub(crate) fn prepare(
        &self,
        parent: &TurnContext<'_>,
        agent_id: String,
        definition: AgentDefinition,
        input: AgentInput,
        is_async: bool,
        hook_context: Option<String>,
    ) -> Result<Prepared, ToolOutput> {
        let mut ctx = create_subagent_context(
            parent.agent,
            SubagentOptions {
                agent_id: SmolStr::new(&agent_id),
                is_async,
                // SA-2: a synchronous agent works for its caller and shares its setter;
                // a background one cannot touch the caller's state.
                share_set_app_state: !is_async,
                share_abort_controller: false,
                outlives_turn: is_async,
                agent_type: Some(SmolStr::new(&definition.name)),
            },
        );
        if definition.read_only {
            ctx.get_app_state = in_plan_mode(Arc::clone(&ctx.get_app_state));
        }
        let tools = tools_for(parent.tools, &definition);
        let model = input
            .model
            .clone()
            .or_else(|| definition.model.clone())
            .filter(|m| !m.trim().is_empty() && m != "inherit")
            .unwrap_or_else(|| parent.model());
        let inputs = PromptInputs {
            tools: tools.names().into_iter().map(str::to_owned).collect(),
            hook_context,
            ..parent.long.prompt.inputs()
        };
        let inputs = PromptInputs {
            replace: Some(format!(
                "{}\n\n{}",
                definition.prompt.trim_end(),
                environment_text(&inputs)
            )),
            append: None,
            ..inputs
        };
        let writer = TranscriptWriter::for_subagent(&self.layout, &agent_id).map_err(|e| {
            ToolOutput::error(format!(
                "The agent could not start: its transcript cannot be written: {e}"
            ))
        })?;
        let recorder = Recorder::sidechain(
            writer,
            self.session_id.clone(),
            self.cwd.to_string_lossy().into_owned(),
            self.git_branch.clone(),
            agent_id.clone(),
        )
        .persisting(!self.sdk.no_session_persistence);
        let long = LongSession::new(
            SessionPrompt::from_inputs(inputs),
            None,
            self.layout.subagent_transcript(&agent_id),
        );
        let store = Store::new(conversation_start(&parent.agent.app_state()));
        let host = SubagentHost {
            model: model.clone(),
            root: self.root.clone(),
            env: Arc::clone(&self.permission_env),
        };
        Ok(Prepared {
            agent_id,
            definition,
            input,
            ctx,
            tools,
            store,
            recorder,
            long,
            host,
            model,
        })
    }
}

/// The parent's tools a sub-agent of `definition` gets: those its `tools` list names
/// (all when it names none; `mcp__server` admits a server's tools), minus its
/// `disallowedTools` and the main agent's own.
fn tools_for(parent: &ToolRegistry, definition: &AgentDefinition) -> ToolRegistry {
    let allowed = definition.tools.as_deref();
    parent.filtered(|tool: &dyn Tool| {
        let name = tool.name();
        !MAIN_AGENT_ONLY.contains(&name)
            && !definition.disallowed_tools.iter().any(|d| d == name)
            && crate::tools::mcp::subagent_may_use(name, allowed)
    })
}

/// A reader that shows `parent`'s state in plan mode: a read-only agent's calls are
/// judged as plan mode judges them, whatever the session's mode.
fn in_plan_mode(parent: crate::context::StateReader) -> crate::context::StateReader {
    Arc::new(move || {
        let state = parent();
        if state.tool_permission_context.mode == PermissionMode::Plan {
            return state;
        }
        Arc::new(AppState {
            tool_permission_context: ToolPermissionContext {
                mode: PermissionMode::Plan,
                ..state.tool_permission_context.clone()
            },
            ..AppState::clone(&state)
        })
    })
}

/// The state a sub-agent's conversation store starts from: the session's settings and
/// flags as the agent sees them, with an empty conversation.
fn conversation_start(seen: &AppState) -> AppState {
    AppState {
        messages: Default::default(),
        in_progress_tool_use_ids: Default::default(),
        context_usage: Default::default(),
        ..seen.clone()
    }
}
