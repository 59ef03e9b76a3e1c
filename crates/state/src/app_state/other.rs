//! The remaining domains of AS-1: attribution, todos, the team inbox and the team
//! context. (File history has its own module, `file_history`, as it has updaters.)
//!
//! - Attribution tracks how much of each file the agent wrote, for commit trailers.
//! - Todos are the model's task lists (the todo tool), per agent.
//! - The inbox and team context belong to agent teams (a leader and its teammates).
//!
//! Each is filled by its feature in the agent crate; here they are plain data.

use std::path::Path;
use std::sync::Arc;

use smol_str::SmolStr;

/// What the agent contributed to each file, for attribution in commits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attribution {
    /// Per file: what strata last saw and how much of it strata wrote.
    pub files: imbl::OrdMap<Arc<Path>, FileAttribution>,
    /// Per file: its state when the session first touched it.
    pub baselines: imbl::OrdMap<Arc<Path>, FileBaseline>,
    /// The `HEAD` commit when the session started, if in a repository.
    pub starting_head: Option<SmolStr>,
    /// User prompts in the session.
    pub prompt_count: u32,
    /// Permission prompts shown in the session.
    pub permission_prompt_count: u32,
}

/// One file's attribution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileAttribution {
    /// A hash of the content strata last saw.
    pub content_hash: SmolStr,
    /// Characters of it that strata wrote.
    pub agent_chars: u64,
    /// Its modification time then, in milliseconds since the Unix epoch.
    pub mtime_ms: u64,
}

/// A file's state when the session first touched it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileBaseline {
    /// A hash of its content.
    pub content_hash: SmolStr,
    /// Its modification time, in milliseconds since the Unix epoch.
    pub mtime_ms: u64,
}

/// The model's task lists, by agent id (the main conversation uses the session id).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Todos(pub imbl::OrdMap<SmolStr, imbl::Vector<Arc<TodoItem>>>);

impl Todos {
    /// The list of one agent.
    pub fn of(&self, agent_id: &str) -> Option<&imbl::Vector<Arc<TodoItem>>> {
        self.0.get(agent_id)
    }
}

/// One todo item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TodoItem {
    /// What to do.
    pub content: Arc<str>,
    /// How far along it is.
    pub status: TodoStatus,
    /// The present-tense form shown while it is in progress ("Running tests").
    pub active_form: Arc<str>,
}

/// A todo item's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// Messages from teammates waiting to be delivered to this agent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inbox {
    /// In arrival order.
    pub messages: imbl::Vector<Arc<InboxMessage>>,
}

/// One message in the inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxMessage {
    /// Its id.
    pub id: SmolStr,
    /// The sender's name.
    pub from: SmolStr,
    /// What it says.
    pub text: Arc<str>,
    /// When it arrived, in milliseconds since the Unix epoch.
    pub received_at_ms: u64,
    /// Where it is in delivery.
    pub status: InboxStatus,
    /// The sender's display colour.
    pub color: Option<SmolStr>,
}

/// Where an inbox message is in delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InboxStatus {
    /// Waiting for the agent's next turn.
    Pending,
    /// Being delivered in the current turn.
    Processing,
    /// Delivered.
    Processed,
}

/// This process's place in an agent team.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeamContext {
    /// The team's name.
    pub team_name: SmolStr,
    /// The team file shared by its members.
    pub team_file: Arc<Path>,
    /// The leader's agent id.
    pub lead_agent_id: SmolStr,
    /// This process's agent id, when it is a teammate.
    pub self_agent_id: Option<SmolStr>,
    /// This process's agent name, when it is a teammate.
    pub self_agent_name: Option<SmolStr>,
    /// This process leads the team.
    pub is_leader: bool,
    /// The teammates, by agent id.
    pub teammates: imbl::OrdMap<SmolStr, Arc<Teammate>>,
}

/// A member of the team.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Teammate {
    /// Its name.
    pub name: SmolStr,
    /// Its agent type.
    pub agent_type: Option<SmolStr>,
    /// Its display colour.
    pub color: Option<SmolStr>,
    /// Its working directory.
    pub cwd: Arc<Path>,
    /// When it was spawned, in milliseconds since the Unix epoch.
    pub spawned_at_ms: u64,
}

/// A standalone agent's identity (a named agent session outside a team).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StandaloneAgent {
    /// Its name.
    pub name: SmolStr,
    /// Its display colour.
    pub color: Option<SmolStr>,
}
