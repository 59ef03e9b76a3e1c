//! What a task is: its id, status, timing, and the data of each kind of task.
//!
//! Text that is shared and never edited (descriptions, commands, names) is `Arc<str>` so
//! cloning a task to change its status copies pointers, not text.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use smol_str::SmolStr;
use strata_protocol::message::Message;

/// A task's identity: a kind prefix and a time-ordered number, e.g. `a0193a7c4e1f200`.
///
/// Ids sort in creation order within a kind, so the task map iterates tasks the way a
/// task list shows them. They are unique across runs of a session (they start from the
/// wall clock), which matters because agent ids name files on disk
/// (`subagents/agent-<id>.jsonl`). Short enough to be stored inline: cloning an id never
/// allocates. The first 16 bytes are also kept as two big-endian words, so comparing two
/// ids — which the task map does on every lookup — is two integer comparisons instead of
/// a call into `memcmp` (that call was a measurable share of a task update).
#[derive(Clone)]
pub struct TaskId {
    /// The first 16 bytes, big-endian, zero-padded: they compare like the bytes.
    words: [u64; 2],
    name: SmolStr,
}

impl TaskId {
    fn new(name: SmolStr) -> Self {
        let mut head = [0u8; 16];
        let bytes = name.as_bytes();
        let n = bytes.len().min(16);
        head[..n].copy_from_slice(&bytes[..n]);
        let (hi, lo) = head.split_at(8);
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_be_bytes(w)
        };
        Self {
            words: [word(hi), word(lo)],
            name,
        }
    }
}

impl PartialEq for TaskId {
    fn eq(&self, other: &Self) -> bool {
        self.words == other.words
            && self.name.len() == other.name.len()
            && (self.name.len() <= 16 || self.name.as_bytes()[16..] == other.name.as_bytes()[16..])
    }
}

impl Eq for TaskId {}

impl std::hash::Hash for TaskId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl PartialOrd for TaskId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TaskId {
    /// Byte-wise lexicographic order, the order of the ids as text: the zero padding of a
    /// short id leaves a tie that the lengths break (a proper prefix sorts first).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.words.cmp(&other.words).then_with(|| {
            let (a, b) = (self.name.as_bytes(), other.name.as_bytes());
            if a.len() > 16 && b.len() > 16 {
                a[16..].cmp(&b[16..])
            } else {
                a.len().cmp(&b.len())
            }
        })
    }
}

/// The last number handed out, so ids made in the same millisecond still differ and
/// still increase.
static LAST_ID: AtomicU64 = AtomicU64::new(0);

impl TaskId {
    /// A new id for a task of `kind`, later than every id this process made before.
    ///
    /// ```
    /// use strata_state::tasks::TaskId;
    /// let a = TaskId::generate('a');
    /// let b = TaskId::generate('a');
    /// assert!(a < b);
    /// assert!(a.as_str().starts_with('a'));
    /// ```
    pub fn generate(prefix: char) -> Self {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        // Room for 256 ids per millisecond before the number runs ahead of the clock.
        let floor = now_ms << 8;
        let mut last = LAST_ID.load(Ordering::Relaxed);
        let number = loop {
            let next = floor.max(last + 1);
            match LAST_ID.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break next,
                Err(actual) => last = actual,
            }
        };
        Self::new(SmolStr::new(format!("{prefix}{number:013x}")))
    }

    /// An id read from elsewhere (a transcript, a command line), kept as given.
    pub fn from_string(id: impl AsRef<str>) -> Self {
        Self::new(SmolStr::new(id.as_ref()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({})", self.name)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    /// Registered, not started.
    Pending,
    /// Working.
    Running,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
    /// Stopped by the user or by strata.
    Killed,
}

impl TaskStatus {
    /// True for `Completed`, `Failed` and `Killed`: the task will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Killed)
    }
}

/// An agent's conversation as held in memory: shared messages, cheap to clone and to
/// append to.
pub type TaskMessages = imbl::Vector<Arc<Message>>;

/// One task: what every kind has in common, plus its kind's data.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskState {
    /// The task's id (also its key in the map).
    pub id: TaskId,
    /// What it does, in a few words, for task lists.
    pub description: Arc<str>,
    /// Where it is in its life.
    pub status: TaskStatus,
    /// When it started, in milliseconds since the Unix epoch.
    pub start_time_ms: u64,
    /// When it reached a terminal status.
    pub end_time_ms: Option<u64>,
    /// Why it failed, for failed tasks.
    pub error: Option<Arc<str>>,
    /// The data of this kind of task.
    pub kind: TaskKind,
}

impl TaskState {
    /// The task's id.
    pub fn id(&self) -> &TaskId {
        &self.id
    }

    /// A new pending task of `kind`.
    pub fn new(
        id: TaskId,
        description: impl Into<Arc<str>>,
        start_time_ms: u64,
        kind: TaskKind,
    ) -> Self {
        Self {
            id,
            description: description.into(),
            status: TaskStatus::Pending,
            start_time_ms,
            end_time_ms: None,
            error: None,
            kind,
        }
    }
}

/// The data that differs between kinds of task.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskKind {
    /// A shell command running in the background.
    LocalShell(LocalShell),
    /// A sub-agent running in this process on its own transcript.
    LocalAgent(LocalAgent),
    /// A teammate agent in this process, addressable by name.
    InProcessTeammate(InProcessTeammate),
    /// An agent running in a remote session.
    RemoteAgent(RemoteAgent),
}

/// A background shell command.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalShell {
    /// The command line.
    pub command: Arc<str>,
    /// Its process id once spawned.
    pub pid: Option<u32>,
    /// Its exit code once it ended.
    pub exit_code: Option<i32>,
    /// Where its output is written.
    pub output_file: Option<Arc<Path>>,
}

/// A local sub-agent (SL-3's memory discipline applies to these).
#[derive(Clone, Debug, PartialEq)]
pub struct LocalAgent {
    /// The agent's id (names its transcript `subagents/agent-<id>.jsonl`).
    pub agent_id: SmolStr,
    /// The agent type the model asked for (`general-purpose`, `Explore`, …).
    pub agent_type: Option<Arc<str>>,
    /// Its conversation, loaded only while retained (viewed); empty otherwise.
    pub messages: TaskMessages,
    /// Someone is viewing it: do not evict, keep messages loaded.
    pub retain: bool,
    /// `messages` were loaded from its transcript on disk.
    pub disk_loaded: bool,
    /// When a finished, released task may be removed (ms since the epoch).
    pub evict_after_ms: Option<u64>,
    /// How far it has got (a task list shows it).
    pub progress: AgentProgress,
}

/// A running agent's totals so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentProgress {
    /// Tool calls made.
    pub tool_uses: u64,
    /// Tokens of its model responses (input, cache and output).
    pub tokens: u64,
    /// The tool it called last.
    pub last_tool: Option<Arc<str>>,
}

/// A teammate running in this process.
#[derive(Clone, Debug, PartialEq)]
pub struct InProcessTeammate {
    /// Its name (what the user types after `@`).
    pub name: SmolStr,
    /// The colour its name is shown in.
    pub color: Option<SmolStr>,
    /// Its conversation.
    pub messages: TaskMessages,
    /// It must present a plan before editing (its permission mode starts as `plan`).
    pub plan_mode_required: bool,
}

/// An agent in a remote session.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteAgent {
    /// Where the remote session can be opened.
    pub session_url: Arc<str>,
}

#[cfg(test)]
mod compare_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        /// Ids compare and equal exactly as their text does, short or long, with NULs.
        fn ids_compare_like_their_text(a in "[a-c0\u{0}]{0,30}", b in "[a-c0\u{0}]{0,30}") {
            let (x, y) = (TaskId::from_string(&a), TaskId::from_string(&b));
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            prop_assert_eq!(x == y, a == b);
        }
    }
}
