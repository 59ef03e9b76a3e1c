//! The strata agent: everything between a prompt and the model's final answer.
//!
//! The state layers below (store, app state, bootstrap, sessions) are passive; this crate
//! drives them. Every model call, tool run and permission decision flows through the app
//! store (FX-6), the bootstrap counters and the session transcript.
//!
//! - [`provider`]: model providers behind one streaming trait (Anthropic Messages API,
//!   OpenAI-compatible chat completions, replay of a recorded session).
//! - [`tools`]: the tools the model can call (Bash, Read — text, images, PDFs and
//!   notebooks —, Write, Edit, NotebookEdit, Glob, Grep, TodoWrite, TaskOutput,
//!   TaskStop, plan mode, AskUserQuestion, Skill, WebFetch, WebSearch) behind one trait.
//! - [`commands`]: the user's custom slash commands and skills (markdown files).
//! - [`permissions`]: permission modes, rules and decisions for tool calls.
//! - [`context`]: the tool-use context and sub-agent isolation (SA-1 … SA-7).
//! - [`agents`]: sub-agents at run time: the Agent tool, agent types, synchronous and
//!   background runs (issue 11).
//! - [`background`]: what a session hears of its background work (task messages, the
//!   main agent's task notifications).
//! - [`front_matter`]: markdown files with a YAML front-matter block (agents, commands,
//!   skills).
//! - [`query`]: the query loop: one turn, from a narrow context of what a turn needs
//!   (it does not know the engine).
//! - [`procs`]: every process a tool starts, under a supervisor, so none outlives strata.
//! - [`secrets`]: credentials kept out of tool processes and redacted from tool output.
//! - [`structured`]: structured output (`--json-schema`): the answer through a tool,
//!   validated against the caller's schema.
//! - [`engine`]: a session at work: opening or resuming it, running prompts through the
//!   query loop, control requests, closing it. What the CLI and SDK clients drive.

pub mod agents;
pub mod background;
pub mod commands;
pub mod context;
pub mod context_window;
mod cost;
pub mod engine;
mod file_history;
pub mod front_matter;
pub mod hooks;
pub mod permissions;
pub mod procs;
pub mod prompt;
pub mod provider;
pub mod query;
mod record;
pub mod secrets;
pub mod structured;
mod sync;
pub mod tools;
