//! The engine's ports as the UI implements them: everything the engine tells or asks
//! the UI arrives on one channel the event loop reads ([`UiEvent`]).
//!
//! - [`UiPrompter`]: a permission prompt becomes a dialog; the engine's call waits on a
//!   oneshot the dialog answers.
//! - [`UiEvents`]: the SDK stream the engine emits. The conversation itself is read from
//!   the store (the one copy), and a turn's end comes from the task running it; the
//!   stream only adds notices (a compaction).
//! - [`StreamingProvider`]: wraps the session's model provider and forwards each text
//!   delta as it arrives, for the live cell. The engine only stores completed blocks,
//!   so the UI sees the answer being written without a second copy of the
//!   conversation: the live text is dropped once its block is in the store.

use std::sync::Arc;

use futures::StreamExt as _;
use strata_agent::engine::{EventSink, PermissionPrompt, PermissionPrompter, PromptFuture};
use strata_agent::provider::{BlockDelta, EventStream, ModelRequest, Provider, StreamEvent};
use strata_protocol::sdk::{PermissionResult, ResultMessage, SdkMessage};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Something the engine said or asks, for the event loop.
#[derive(Debug)]
pub enum UiEvent {
    /// A content block started streaming.
    BlockStart,
    /// Text was appended to the streaming answer (or thinking, `thinking: true`).
    Delta {
        /// The text.
        text: String,
        /// It is thinking, shown only when verbose.
        thinking: bool,
    },
    /// The streaming block is complete.
    BlockStop,
    /// Output tokens so far in this response (for the spinner).
    Tokens(u64),
    /// A tool call needs approval.
    Permission(PermissionPrompt, oneshot::Sender<PermissionResult>),
    /// A turn ended.
    TurnDone(Box<ResultMessage>),
    /// The sessions for the `/resume` picker were listed (or why they could not be).
    Sessions(Result<Vec<strata_session::listing::SessionSummary>, String>),
    /// The project's paths for `@` completion were walked.
    Paths(Box<crate::picker::PathCompleter>),
    /// A `!command` ended: what it printed (stdout and stderr) and how it ended.
    Shell {
        /// The command line.
        command: String,
        /// Its output and exit status, as shown.
        output: String,
    },
    /// The `statusLine` command printed a new status.
    StatusLine(String),
    /// Something finished in the background and has a line to show.
    Notice(String),
    /// A background task ended (`system/task_notification`): its one-line summary.
    TaskEnded {
        /// What happened (`Background command "x" completed (exit code 0)`).
        summary: String,
        /// It completed (rather than failed or was stopped).
        ok: bool,
    },
}

/// The sending half, cloned into every port.
pub type UiSender = mpsc::UnboundedSender<UiEvent>;

/// Permission prompts as dialogs.
#[derive(Debug, Clone)]
pub struct UiPrompter {
    tx: UiSender,
}

impl UiPrompter {
    /// A prompter sending to `tx`.
    pub fn new(tx: UiSender) -> Self {
        Self { tx }
    }
}

impl PermissionPrompter for UiPrompter {
    fn ask(&self, prompt: PermissionPrompt) -> PromptFuture<'_> {
        let (reply, answer) = oneshot::channel();
        let sent = self.tx.send(UiEvent::Permission(prompt, reply)).is_ok();
        Box::pin(async move {
            // Fails closed: a UI that went away (or dropped the dialog) denies.
            let denied = PermissionResult::Deny {
                message: "the permission prompt was closed without an answer".into(),
                interrupt: true,
            };
            if !sent {
                return denied;
            }
            answer.await.unwrap_or(denied)
        })
    }
}

/// The engine's SDK stream, of which the UI needs only the turn ends (the rest is in the
/// store).
#[derive(Debug, Clone)]
pub struct UiEvents {
    tx: UiSender,
}

impl UiEvents {
    /// A sink sending to `tx`.
    pub fn new(tx: UiSender) -> Self {
        Self { tx }
    }
}

impl EventSink for UiEvents {
    fn emit(&self, message: SdkMessage) {
        // A turn's end comes from the task that ran it (with the same `result`), once:
        // a second copy from here could arrive after the next turn started and end that
        // one early. What else the stream says is in the store.
        use strata_protocol::sdk::{SystemMessage, TaskEndStatus};
        match message {
            SdkMessage::System(SystemMessage::CompactBoundary(_)) => {
                let _ = self
                    .tx
                    .send(UiEvent::Notice("Conversation compacted".into()));
            }
            // One line in the history; the model hears of it through the engine's
            // own notification queue.
            SdkMessage::System(SystemMessage::TaskNotification(n)) => {
                let _ = self.tx.send(UiEvent::TaskEnded {
                    summary: n.summary,
                    ok: n.status == TaskEndStatus::Completed,
                });
            }
            _ => {}
        }
    }
}

/// A provider that forwards text deltas to the UI while passing everything through.
#[derive(Debug)]
pub struct StreamingProvider {
    inner: Arc<dyn Provider>,
    tx: UiSender,
}

impl StreamingProvider {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Provider>, tx: UiSender) -> Self {
        Self { inner, tx }
    }
}

impl Provider for StreamingProvider {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let tx = self.tx.clone();
        let stream = self.inner.stream(request, cancel).inspect(move |event| {
            let Ok(event) = event else { return };
            let ui = match event {
                StreamEvent::ContentBlockStart { .. } => UiEvent::BlockStart,
                StreamEvent::ContentBlockDelta {
                    delta: BlockDelta::Text(t),
                    ..
                } => UiEvent::Delta {
                    text: t.clone(),
                    thinking: false,
                },
                StreamEvent::ContentBlockDelta {
                    delta: BlockDelta::Thinking(t),
                    ..
                } => UiEvent::Delta {
                    text: t.clone(),
                    thinking: true,
                },
                StreamEvent::ContentBlockStop { .. } => UiEvent::BlockStop,
                StreamEvent::MessageDelta {
                    usage: Some(usage), ..
                } => UiEvent::Tokens(usage.output_tokens),
                _ => return,
            };
            let _ = tx.send(ui);
        });
        Box::pin(stream)
    }

    fn api_key_source(&self) -> &'static str {
        self.inner.api_key_source()
    }

    fn default_model(&self) -> Option<&str> {
        self.inner.default_model()
    }
}
