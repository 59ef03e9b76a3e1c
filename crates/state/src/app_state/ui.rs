//! The UI domain (AS-1): view state the terminal front end renders and edits.
//!
//! Only the expanded view is persisted (FX-3, through the global config); the rest lasts
//! for the session (SP-4). The notification and elicitation queues are filled by whoever
//! needs the user's attention (settings reload errors, MCP servers asking for input) and
//! drained by the front end.

use std::sync::Arc;

use smol_str::SmolStr;

/// The UI domain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UiState {
    /// Which list is expanded under the prompt (persisted, FX-3).
    pub expanded_view: ExpandedView,
    /// The footer item selected with the arrow keys, if any.
    pub footer_selection: Option<FooterItem>,
    /// The tip shown beside the spinner while the model works.
    pub spinner_tip: Option<Arc<str>>,
    /// Overlays (dialogs, pickers) currently open, by id; key handling goes to the top one.
    pub active_overlays: imbl::OrdSet<SmolStr>,
    /// Notifications shown one at a time.
    pub notifications: Notifications,
    /// Requests from MCP servers for input from the user, in arrival order.
    pub elicitation_queue: imbl::Vector<Arc<ElicitationRequest>>,
}

/// Which list is expanded under the prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ExpandedView {
    /// Nothing expanded.
    #[default]
    None,
    /// The task (todo) list (`showExpandedTodos` in the global config).
    Tasks,
    /// The teammate tree (`showSpinnerTree` in the global config).
    Teammates,
}

impl ExpandedView {
    /// The view the global config's flags describe; the teammate tree wins if both are
    /// set, as it is the more specific view.
    pub fn from_flags(show_expanded_todos: bool, show_spinner_tree: bool) -> Self {
        if show_spinner_tree {
            Self::Teammates
        } else if show_expanded_todos {
            Self::Tasks
        } else {
            Self::None
        }
    }

    /// The `(showExpandedTodos, showSpinnerTree)` flags that persist this view (FX-3).
    ///
    /// ```
    /// use strata_state::ExpandedView;
    /// assert_eq!(ExpandedView::Tasks.flags(), (true, false));
    /// assert_eq!(ExpandedView::from_flags(false, true), ExpandedView::Teammates);
    /// ```
    pub fn flags(self) -> (bool, bool) {
        (self == Self::Tasks, self == Self::Teammates)
    }
}

/// A footer item that can take the selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FooterItem {
    /// The background task pill.
    Tasks,
    /// The teammates pill.
    Teammates,
    /// The remote-control bridge indicator.
    Bridge,
    /// The connected-IDE indicator.
    Ide,
}

/// How urgently a notification wants the screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NotificationPriority {
    /// Shown when nothing else is.
    Low,
    /// The usual.
    #[default]
    Medium,
    /// Jumps the queue.
    High,
    /// Replaces whatever is shown.
    Immediate,
}

/// One notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    /// Identifies it: a newer notification with the same key replaces an older one.
    pub key: SmolStr,
    /// What to show.
    pub text: Arc<str>,
    /// How urgent it is.
    pub priority: NotificationPriority,
    /// How long to show it, in milliseconds; `None` until dismissed.
    pub timeout_ms: Option<u64>,
}

/// The notification being shown and those waiting.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Notifications {
    /// Shown now.
    pub current: Option<Arc<Notification>>,
    /// Waiting, in the order they will be shown.
    pub queue: imbl::Vector<Arc<Notification>>,
}

impl Notifications {
    /// These notifications with `n` added: replacing one with the same key, shown at once
    /// when `Immediate` or when nothing is shown, else queued by priority (stable).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata_state::{Notification, NotificationPriority, Notifications};
    /// let note = |key: &str, priority| Notification {
    ///     key: key.into(), text: Arc::from(key), priority, timeout_ms: None };
    /// let n = Notifications::default()
    ///     .push(note("a", NotificationPriority::Medium))
    ///     .push(note("b", NotificationPriority::Low))
    ///     .push(note("c", NotificationPriority::High));
    /// assert_eq!(n.current.as_ref().unwrap().key, "a");
    /// let queued: Vec<_> = n.queue.iter().map(|n| n.key.as_str()).collect();
    /// assert_eq!(queued, ["c", "b"]);
    /// ```
    pub fn push(&self, n: Notification) -> Self {
        let n = Arc::new(n);
        let mut queue = self.queue.clone();
        queue.retain(|q| q.key != n.key);
        let replaces_current = self.current.as_ref().is_some_and(|c| c.key == n.key);
        if self.current.is_none()
            || replaces_current
            || n.priority == NotificationPriority::Immediate
        {
            if let Some(shown) = &self.current
                && !replaces_current
            {
                // The interrupted notification is shown next.
                queue.push_front(Arc::clone(shown));
            }
            return Self {
                current: Some(n),
                queue,
            };
        }
        let at = queue
            .iter()
            .position(|q| q.priority < n.priority)
            .unwrap_or(queue.len());
        queue.insert(at, n);
        Self {
            current: self.current.clone(),
            queue,
        }
    }

    /// These notifications with the current one dismissed and the next one shown.
    pub fn advance(&self) -> Self {
        let mut queue = self.queue.clone();
        let current = queue.pop_front();
        Self { current, queue }
    }
}

/// A request from an MCP server for input from the user (MCP "elicitation").
///
/// The way to answer it is a runtime handle held by that server's connection
/// ([`McpConnections`](crate::McpConnections)), reached by `server` and `id`.
#[derive(Clone, Debug, PartialEq)]
pub struct ElicitationRequest {
    /// The request's id within its server.
    pub id: SmolStr,
    /// The server asking.
    pub server: SmolStr,
    /// What it asks.
    pub message: Arc<str>,
    /// The JSON schema of the answer it wants.
    pub requested_schema: Arc<serde_json::Value>,
}
