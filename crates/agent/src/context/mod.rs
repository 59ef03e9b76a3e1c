//! The tool-use context, and sub-agent contexts that isolate by default (SA-1 … SA-7).
//!
//! Everything a running agent may touch reaches it through one [`ToolUseContext`]: how
//! it reads and writes the app state, the root "tasks" setter, its cancellation, what it
//! has read, its permission-denial counters, and the callbacks that drive the UI. A
//! sub-agent gets a context made by [`create_subagent_context`], which shares only what
//! the caller opts into:
//!
//! | part | sub-agent gets |
//! |---|---|
//! | state setter | a no-op, unless `share_set_app_state` (SA-2) |
//! | tasks setter | the root store's, at any depth (SA-3) |
//! | state reader | async: the parent's with `should_avoid_permission_prompts` injected; sync: the parent's (SA-4) |
//! | cancellation | a child token (cancelled with its parent, never the reverse), unless `share_abort_controller` (SA-5); a background agent's is a child of its parent's owner lifetime (`outlives_turn`), not of the turn |
//! | tool context: read-file state, working directory | copies (SA-6) |
//! | content-replacement state | a deep copy (SA-6) |
//! | nested-memory and skill sets | fresh, empty (SA-6) |
//! | denial tracking | its own counters when its setter is a no-op (SA-6) |
//! | UI callbacks | no-ops (SA-7) |
//!
//! The isolation is what lets many agents run at once: a background agent can neither
//! corrupt the parent's conversation state nor be cancelled by its own children, yet the
//! background tasks it starts are registered in the root store where the user can see and
//! stop them.

mod callbacks;
mod subagent;

use crate::sync::lock;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::tools::ToolContext;

use smol_str::SmolStr;
use strata_state::{AppState, DenialTracking};
use strata_store::{Setter, Store};
use tokio_util::sync::CancellationToken;

pub use callbacks::{ContextCallbacks, NoopCallbacks, StreamMode};
pub use subagent::{SubagentOptions, create_subagent_context};

/// A function of the previous app state to the next (the store's updater).
pub type StateUpdater = Box<dyn FnOnce(&Arc<AppState>) -> Arc<AppState> + Send>;

/// Reads the app state as this agent sees it.
pub type StateReader = Arc<dyn Fn() -> Arc<AppState> + Send + Sync>;

/// How a context writes the app state.
#[derive(Clone)]
pub enum StateWriter {
    /// Updates go to this store (the root, or a parent that shared its setter).
    Store(Setter<AppState>),
    /// Updates are dropped: an isolated sub-agent (SA-2).
    Ignore,
}

impl StateWriter {
    /// Applies `updater`, or drops it for an isolated context. True when it was applied.
    pub fn apply(&self, updater: impl FnOnce(&Arc<AppState>) -> Arc<AppState>) -> bool {
        match self {
            StateWriter::Store(setter) => {
                let _ = setter.set(updater);
                true
            }
            StateWriter::Ignore => false,
        }
    }

    /// True when updates are dropped.
    pub fn is_noop(&self) -> bool {
        matches!(self, StateWriter::Ignore)
    }
}

impl fmt::Debug for StateWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StateWriter::Store(_) => "StateWriter::Store",
            StateWriter::Ignore => "StateWriter::Ignore",
        })
    }
}

/// Tool results replaced in the conversation by a reference (large outputs stored beside
/// the transcript), by tool-use id. Shared by handle; deep-copied for sub-agents.
#[derive(Clone, Debug, Default)]
pub struct ContentReplacements(Arc<Mutex<HashMap<String, PathBuf>>>);

impl ContentReplacements {
    /// Records that the result of `tool_use_id` was stored at `path`.
    pub fn record(&self, tool_use_id: impl Into<String>, path: PathBuf) {
        lock(&self.0).insert(tool_use_id.into(), path);
    }

    /// Where the result of `tool_use_id` was stored.
    pub fn get(&self, tool_use_id: &str) -> Option<PathBuf> {
        lock(&self.0).get(tool_use_id).cloned()
    }

    /// An independent copy.
    pub fn deep_copy(&self) -> Self {
        Self(Arc::new(Mutex::new(lock(&self.0).clone())))
    }
}

/// A set of strings shared by handle (nested-memory paths loaded, skills discovered).
#[derive(Clone, Debug, Default)]
pub struct SharedSet(Arc<Mutex<HashSet<String>>>);

impl SharedSet {
    /// Adds `item`; true when it was new.
    pub fn insert(&self, item: impl Into<String>) -> bool {
        lock(&self.0).insert(item.into())
    }

    /// True when `item` is in the set.
    pub fn contains(&self, item: &str) -> bool {
        lock(&self.0).contains(item)
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        lock(&self.0).len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }
}

/// Where a context's permission-denial counters live.
#[derive(Clone, Debug)]
pub enum DenialCounters {
    /// In the app state (`AppState::denial_tracking`), through the context's setter.
    AppState,
    /// The context's own counters: its setter is a no-op (SA-6).
    Local(Arc<Mutex<DenialTracking>>),
}

/// Who is running: the main agent (depth 0) or a sub-agent.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct AgentIdentity {
    /// The sub-agent's id; `None` for the main agent.
    pub agent_id: Option<SmolStr>,
    /// How many agents deep (0 = main).
    pub depth: u32,
    /// Runs in the background (its permission decisions are automatic, SA-4).
    pub is_async: bool,
    /// The sub-agent's type (`general-purpose`, `Explore`, a custom one).
    pub agent_type: Option<SmolStr>,
}

/// Everything a running agent may touch.
#[derive(Clone)]
pub struct ToolUseContext {
    /// Reads the app state as this agent sees it (SA-4).
    pub get_app_state: StateReader,
    /// Writes the app state, or drops writes (SA-2).
    pub set_app_state: StateWriter,
    /// The root store's setter, for registering and updating background tasks (SA-3).
    pub set_app_state_for_tasks: Setter<AppState>,
    /// Cancelled when this agent must stop (SA-5). The same token as `tools.cancel`.
    pub cancel: CancellationToken,
    /// What this agent's tools touch: working directory, files read (SA-6), environment
    /// overlay, session hooks.
    pub tools: ToolContext,
    /// Tool results replaced by references (SA-6).
    pub content_replacements: ContentReplacements,
    /// Nested memory files already attached (SA-6: fresh per sub-agent).
    pub loaded_nested_memory: SharedSet,
    /// Skills discovered in this agent's run (SA-6: fresh per sub-agent).
    pub discovered_skills: SharedSet,
    /// Permission-denial counters (SA-6).
    pub denials: DenialCounters,
    /// UI callbacks (SA-7: no-ops in sub-agents).
    pub callbacks: Arc<dyn ContextCallbacks>,
    /// Who this agent is.
    pub identity: AgentIdentity,
}

impl ToolUseContext {
    /// The main agent's context over the root `store`: it reads and writes the root,
    /// its denial counters live in the app state, its tools use `tools` (whose
    /// cancellation is the agent's), and `callbacks` drive the UI.
    pub fn root(
        store: &Store<AppState>,
        tools: ToolContext,
        callbacks: Arc<dyn ContextCallbacks>,
    ) -> Self {
        let reader = store.clone();
        Self {
            get_app_state: Arc::new(move || reader.get()),
            set_app_state: StateWriter::Store(store.setter()),
            set_app_state_for_tasks: store.setter(),
            cancel: tools.cancel.clone(),
            tools,
            content_replacements: ContentReplacements::default(),
            loaded_nested_memory: SharedSet::default(),
            discovered_skills: SharedSet::default(),
            denials: DenialCounters::AppState,
            callbacks,
            identity: AgentIdentity::default(),
        }
    }

    /// The app state as this agent sees it.
    pub fn app_state(&self) -> Arc<AppState> {
        (self.get_app_state)()
    }

    /// This agent's denial counters.
    pub fn denial_tracking(&self) -> DenialTracking {
        match &self.denials {
            DenialCounters::AppState => self.app_state().denial_tracking,
            DenialCounters::Local(local) => *lock(local),
        }
    }

    /// Records a permission decision in this agent's counters: a denial, or an allowed
    /// use that ends a run of denials.
    pub fn record_permission_outcome(&self, denied: bool) {
        let next = |t: DenialTracking| {
            if denied {
                t.record_denial()
            } else {
                t.record_allowed()
            }
        };
        match &self.denials {
            DenialCounters::AppState => {
                self.set_app_state.apply(|prev| {
                    let updated = next(prev.denial_tracking);
                    if updated == prev.denial_tracking {
                        Arc::clone(prev)
                    } else {
                        Arc::new(AppState {
                            denial_tracking: updated,
                            ..AppState::clone(prev)
                        })
                    }
                });
            }
            DenialCounters::Local(local) => {
                let mut counters = lock(local);
                *counters = next(*counters);
            }
        }
    }
}

impl fmt::Debug for ToolUseContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolUseContext")
            .field("identity", &self.identity)
            .field("set_app_state", &self.set_app_state)
            .field("denials", &self.denials)
            .finish_non_exhaustive()
    }
}
