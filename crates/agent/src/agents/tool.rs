//! The `Agent` tool: what the model sees of sub-agents (its schema and description) and
//! how its input is read. Running a call needs the caller's turn, so the query loop hands
//! Agent calls to `AgentRuntime::run_call` instead of
//! [`Tool::call`].
//!
//! The input is the reference agent's: `description`, `prompt`, `subagent_type`, and
//! optional `model` and `run_in_background`. Old transcripts name the tool `Task`; that
//! name is read as `Agent` (COMPAT), so a resumed session whose model calls `Task` gets
//! the same tool.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{Value, json};

use super::definitions::{AgentDefinitions, DEFAULT_AGENT_TYPE};
use crate::sync::lock;
use crate::tools::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The tool's name.
pub const AGENT_TOOL: &str = "Agent";
/// The name old transcripts use for it.
pub const LEGACY_AGENT_TOOL: &str = "Task";

/// Whether `name` is the Agent tool (under either name).
pub fn is_agent_tool(name: &str) -> bool {
    name == AGENT_TOOL || name == LEGACY_AGENT_TOOL
}

/// A call's input.
#[derive(Debug, Clone, Deserialize)]
pub struct AgentInput {
    /// A few words for task lists.
    pub description: String,
    /// The task.
    pub prompt: String,
    /// The agent type (default `general-purpose`).
    #[serde(default)]
    pub subagent_type: Option<String>,
    /// A model for this run (an alias or an id), over the type's own.
    #[serde(default)]
    pub model: Option<String>,
    /// Run in the background: the call returns at once and a notification follows.
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

impl AgentInput {
    /// Reads a call's input; `Err` is the error result the model reads.
    pub fn parse(input: &Value) -> Result<AgentInput, ToolOutput> {
        let parsed: AgentInput = crate::tools::input_parse(AGENT_TOOL, input)?;
        if parsed.prompt.trim().is_empty() {
            return Err(ToolOutput::error(
                "Invalid input for Agent: `prompt` is empty: say what the agent is to do",
            ));
        }
        Ok(parsed)
    }

    /// The agent type asked for.
    pub fn agent_type(&self) -> &str {
        self.subagent_type
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .unwrap_or(DEFAULT_AGENT_TYPE)
    }
}

/// The Agent tool. Its description lists the session's agent types.
#[derive(Debug, Clone)]
pub struct Agent {
    definitions: Arc<Mutex<AgentDefinitions>>,
}

impl Agent {
    /// The tool over the session's agent types.
    pub fn new(definitions: Arc<Mutex<AgentDefinitions>>) -> Self {
        Self { definitions }
    }
}

const DESCRIPTION: &str = "Starts a sub-agent: another agent that works on one task with \
its own conversation and tools, then reports back once.\n\
\n\
Use it for work that needs many searches, reads or commands whose details you do not need \
to keep (finding where something is implemented, researching a question across the code, \
running and fixing a test suite), or to do several independent things at once (several \
Agent calls in one response run in parallel).\n\
\n\
- `prompt`: the whole task. The agent has not seen this conversation: say everything it \
needs (paths, what was tried, what to return). Its reply is returned to you, not shown to \
the user: tell the user what matters.\n\
- `description`: 3–5 words for task lists.\n\
- `subagent_type`: which kind of agent (below; default general-purpose).\n\
- `model`: optionally another model for it (`sonnet`, `opus`, `haiku`, or an id).\n\
- `run_in_background: true`: the call returns at once with the agent's id; you are told \
when it ends (a task notification with its result). Do other work meanwhile; stop it with \
TaskStop.\n\
\n\
Agent types:";

impl Tool for Agent {
    fn name(&self) -> &'static str {
        AGENT_TOOL
    }

    fn aliases(&self) -> &'static [&'static str] {
        &[LEGACY_AGENT_TOOL]
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn describe(&self) -> Cow<'_, str> {
        let mut text = DESCRIPTION.to_owned();
        for def in lock(&self.definitions).iter() {
            text.push_str(&format!("\n- {}: {}", def.name, def.description));
            if def.read_only {
                text.push_str(" (read-only)");
            }
        }
        Cow::Owned(text)
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
                "prompt": {"type": "string", "description": "The task for the agent to perform"},
                "subagent_type": {"type": "string", "description": "The type of agent to use (default general-purpose)"},
                "model": {"type": "string", "description": "Optional model for this agent (sonnet, opus, haiku, or a model id)"},
                "run_in_background": {"type": "boolean", "description": "Run the agent in the background; you are notified when it ends"}
            },
            "required": ["description", "prompt"]
        })
    }

    // Each of the sub-agent's own calls is decided by the rules; starting one changes
    // nothing by itself (plan mode allows read-only agents to be started too).
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn needs_permission(&self, _input: &Value) -> bool {
        false
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        AgentInput::parse(input).map(|_| ())
    }

    fn call<'a>(&'a self, _call: ToolCall, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async {
            ToolOutput::error(
                "The Agent tool runs sub-agents inside a session's turn; this call came from \
                 outside one, so no agent was started.",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_input_is_the_reference_agents() {
        let input = AgentInput::parse(&json!({
            "description": "Check versions",
            "prompt": "Find them",
            "subagent_type": "Explore",
            "model": "sonnet"
        }))
        .unwrap();
        assert_eq!(input.agent_type(), "Explore");
        let input = AgentInput::parse(&json!({"description": "d", "prompt": "p"})).unwrap();
        assert_eq!(input.agent_type(), DEFAULT_AGENT_TYPE);
        assert!(AgentInput::parse(&json!({"description": "d", "prompt": " "})).is_err());
        assert!(AgentInput::parse(&json!({"prompt": "p"})).is_err());
    }

    #[test]
    fn the_description_lists_the_agent_types() {
        let tool = Agent::new(Arc::new(Mutex::new(AgentDefinitions::default())));
        let text = tool.describe();
        assert!(text.contains("- Explore: "), "{text}");
        assert!(text.contains("(read-only)"), "{text}");
        assert!(is_agent_tool("Task") && is_agent_tool("Agent") && !is_agent_tool("Bash"));
    }
}
