//! Permission prompts over the control protocol: `can_use_tool` requests on stdout,
//! answered by `control_response` lines on stdin.
//!
//! Used when the client said it answers prompts (`--permission-prompt-tool stdio`, which
//! the reference SDKs pass whenever their user gave a permission callback). Each prompt
//! gets a fresh request id and waits for the response with that id; the input loop hands
//! responses over through [`PromptChannel::answer`]. A prompt the engine stops waiting
//! for is withdrawn with a `control_cancel_request` so the client can close its dialog.
//! A prompt also stops waiting when the turn that asked is interrupted (an `interrupt`
//! request, Ctrl-C): it is withdrawn and answered with a denial that interrupts, so an
//! interrupt never waits for a client that is not going to answer. When stdin ends,
//! every open prompt and every later one is denied: nobody is left to answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::json;
use strata_agent::engine::{PermissionPrompt, PermissionPrompter, PromptFuture};
use strata_protocol::sdk::{
    ControlRequest, ControlRequestBody, ControlResponse, ControlResponseBody, PermissionResult,
    SdkMessage,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::output::Lines;

/// The client side of permission prompts (see the module docs).
pub(crate) struct PromptChannel {
    lines: Lines,
    state: Mutex<State>,
    next_id: AtomicU64,
}

#[derive(Default)]
struct State {
    pending: HashMap<String, oneshot::Sender<PermissionResult>>,
    closed: bool,
    /// The running turn's cancellation.
    turn: Option<CancellationToken>,
}

/// What happened to a response handed to [`PromptChannel::answer`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answered {
    /// It answered an open prompt.
    Prompt,
    /// No open prompt has that id.
    Unknown,
}

impl PromptChannel {
    pub(crate) fn new(lines: Lines) -> Arc<Self> {
        Arc::new(Self {
            lines,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(1),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; the map stays valid either way.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands the client's response to the prompt waiting for it.
    pub(crate) fn answer(&self, response: ControlResponse) -> Answered {
        let Some(waiter) = self.state().pending.remove(response.request_id()) else {
            return Answered::Unknown;
        };
        let result = match response.response {
            ControlResponseBody::Success {
                response: Some(value),
                ..
            } => serde_json::from_value::<PermissionResult>(value.clone()).unwrap_or_else(|err| {
                PermissionResult::Deny {
                    message: format!(
                        "the client's answer to the permission request is not a \
                             permission result ({err}): {value}"
                    ),
                    interrupt: false,
                }
            }),
            ControlResponseBody::Success { response: None, .. } => PermissionResult::Deny {
                message: "the client answered the permission request without a decision".into(),
                interrupt: false,
            },
            ControlResponseBody::Error { error, .. } => PermissionResult::Deny {
                message: format!("the client could not answer the permission request: {error}"),
                interrupt: false,
            },
        };
        let _ = waiter.send(result);
        Answered::Prompt
    }

    /// Sets the running turn (`None` between turns): its interruption ends the prompts it
    /// opened.
    pub(crate) fn set_turn(&self, turn: Option<CancellationToken>) {
        self.state().turn = turn;
    }

    /// Stdin ended: deny what is open and what comes later.
    pub(crate) fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        for (_, waiter) in state.pending.drain() {
            let _ = waiter.send(closed_denial());
        }
    }
}

fn closed_denial() -> PermissionResult {
    PermissionResult::Deny {
        message: "Permission was not granted: the client closed its input before answering.".into(),
        interrupt: false,
    }
}

/// Removes a prompt that is dropped unanswered and tells the client it is withdrawn.
struct Withdraw<'a> {
    channel: &'a PromptChannel,
    request_id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self
            .channel
            .state()
            .pending
            .remove(&self.request_id)
            .is_some()
        {
            self.channel.lines.send_json(&json!({
                "type": "control_cancel_request",
                "request_id": self.request_id,
            }));
        }
    }
}

impl PermissionPrompter for PromptChannel {
    fn ask(&self, prompt: PermissionPrompt) -> PromptFuture<'_> {
        Box::pin(async move {
            let n = self.next_id.fetch_add(1, Ordering::Relaxed);
            let request_id = format!("strata-can-use-tool-{n}");
            let (tx, rx) = oneshot::channel();
            let turn = {
                let mut state = self.state();
                if state.closed {
                    return closed_denial();
                }
                state.pending.insert(request_id.clone(), tx);
                state.turn.clone()
            };
            let _withdraw = Withdraw {
                channel: self,
                request_id: request_id.clone(),
            };
            self.lines
                .send_json(&SdkMessage::ControlRequest(ControlRequest {
                    request_id,
                    request: ControlRequestBody::CanUseTool {
                        tool_name: prompt.tool_name,
                        input: prompt.input,
                        tool_use_id: Some(prompt.tool_use_id),
                        permission_suggestions: None,
                        decision_reason: Some(prompt.reason),
                    },
                }));
            let answer = async { rx.await.unwrap_or_else(|_| closed_denial()) };
            match turn {
                Some(turn) => tokio::select! {
                    answer = answer => answer,
                    // Dropping `_withdraw` on the way out withdraws the request.
                    () = turn.cancelled() => PermissionResult::Deny {
                        message: "The user interrupted the turn before answering the \
                                  permission request."
                            .into(),
                        interrupt: true,
                    },
                },
                None => answer.await,
            }
        })
    }
}
