//! Sub-agents at run time (issue 11): the `Agent` tool, agent types, and the runtime that
//! runs them synchronously or in the background.
//!
//! A sub-agent is another run of the same query loop with a context made by
//! [`create_subagent_context`](crate::context::create_subagent_context) — isolated by
//! default (SA-1 … SA-7) — its own system prompt (its type's), its own tool subset and
//! model, its own conversation (a store of its own) and its own transcript
//! (`<session>/subagents/agent-<id>.jsonl`, sidechain lines: the reference layout).
//!
//! - [`definitions`]: the built-in types and custom ones from agent files and SDK hosts.
//! - [`tool`]: the Agent tool's schema and input (`Task` is read as `Agent`).
//! - `runtime`: checks, hooks, synchronous runs, the limits.
//! - `prepare`: building one sub-agent.
//! - `background`: background agents as local agent tasks of the root store, their
//!   notification, stop and eviction (SL-2, SL-3).
//! - `events`: where a sub-agent's messages go.
//! - [`resume`]: background work a resumed conversation lost (SP-3).

mod background;
pub mod definitions;
mod events;
mod prepare;
pub mod resume;
mod runtime;
pub mod tool;

pub use background::{
    AgentEnd, AgentSnapshot, StopAgentError, TaskReport, describe as describe_end,
};
pub use definitions::{AgentDefinition, AgentDefinitions, AgentSource, DEFAULT_AGENT_TYPE};
pub(crate) use runtime::AgentRuntimeParts;
pub use runtime::{AgentRuntime, MAX_AGENT_DEPTH, MAX_RUNNING_AGENTS};
pub use tool::{AGENT_TOOL, Agent, AgentInput, LEGACY_AGENT_TOOL, is_agent_tool};
