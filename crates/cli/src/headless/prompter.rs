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
use super::states::SessionStates;

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
    /// Where `requires_action` goes while a prompt waits.
    states: Option<Arc<SessionStates>>,
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

    /// Reports `requires_action` while a prompt waits, `running` once it is answered.
    pub(crate) fn report_states(&self, states: Arc<SessionStates>) {
        self.state().states = Some(states);
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
            let (turn, states) = {
                let mut state = self.state();
                if state.closed {
                    return closed_denial();
                }
                state.pending.insert(request_id.clone(), tx);
                (state.turn.clone(), state.states.clone())
            };
            if let Some(states) = &states {
                states.send("requires_action");
            }
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
                        permission_suggestions: (!prompt.suggestions.is_empty())
                            .then_some(prompt.suggestions),
                        decision_reason: Some(prompt.reason),
                    },
                }));
            let answer = async { rx.await.unwrap_or_else(|_| closed_denial()) };
            let answer = match turn {
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
            };
            if let Some(states) = &states {
                states.send("running");
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;

    fn prompt() -> PermissionPrompt {
        PermissionPrompt {
            tool_name: "Bash".into(),
            input: json!({"command": "touch x"}),
            tool_use_id: "toolu_1".into(),
            reason: "needs approval".into(),
            suggestions: Vec::new(),
        }
    }

    /// Asks once and answers with `response` (given the request id) once the request is out.
    async fn ask_and_answer(
        response: impl Fn(&str) -> ControlResponse,
    ) -> (PermissionResult, Vec<Value>) {
        let (lines, sent) = Lines::capture();
        let channel = PromptChannel::new(lines);
        let asking = channel.ask(prompt());
        let answering = async {
            loop {
                tokio::task::yield_now().await;
                // A statement of its own: the guard must be gone before `answer` locks.
                let open = channel.state().pending.keys().next().cloned();
                if let Some(id) = open {
                    assert_eq!(channel.answer(response(&id)), Answered::Prompt);
                    return;
                }
            }
        };
        let (result, ()) = tokio::join!(asking, answering);
        let out = sent()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (result, out)
    }

    #[tokio::test]
    async fn an_allow_answer_allows_and_the_request_names_the_call() {
        let (result, out) = ask_and_answer(|id| {
            ControlResponse::success(
                id,
                Some(json!({"behavior": "allow", "updatedInput": {"command": "ls"}})),
            )
        })
        .await;
        assert_eq!(
            result,
            PermissionResult::Allow {
                updated_input: Some(json!({"command": "ls"})),
                updated_permissions: None,
            }
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["request"]["subtype"], "can_use_tool");
        assert_eq!(out[0]["request"]["tool_use_id"], "toolu_1");
        assert_eq!(out[0]["request"]["decision_reason"], "needs approval");
    }

    #[tokio::test]
    async fn error_and_malformed_answers_deny_saying_why() {
        let (result, _) = ask_and_answer(|id| ControlResponse::error(id, "dialog crashed")).await;
        let PermissionResult::Deny { message, .. } = result else {
            panic!("{result:?}")
        };
        assert!(message.contains("dialog crashed"), "{message}");
        let (result, _) =
            ask_and_answer(|id| ControlResponse::success(id, Some(json!({"behavior": "maybe"}))))
                .await;
        let PermissionResult::Deny { message, .. } = result else {
            panic!("{result:?}")
        };
        assert!(message.contains("not a permission result"), "{message}");
        let (result, _) = ask_and_answer(|id| ControlResponse::success(id, None)).await;
        assert!(matches!(result, PermissionResult::Deny { .. }));
    }

    #[tokio::test]
    async fn answers_to_no_open_prompt_are_reported_as_unknown() {
        let (lines, _) = Lines::capture();
        let channel = PromptChannel::new(lines);
        assert_eq!(
            channel.answer(ControlResponse::success("nope", None)),
            Answered::Unknown
        );
    }

    #[tokio::test]
    async fn closing_denies_open_and_later_prompts() {
        let (lines, _) = Lines::capture();
        let channel = PromptChannel::new(lines);
        let open = channel.ask(prompt());
        let closing = async {
            while channel.state().pending.is_empty() {
                tokio::task::yield_now().await;
            }
            channel.close();
        };
        let (result, ()) = tokio::join!(open, closing);
        assert!(matches!(result, PermissionResult::Deny { .. }));
        let later = channel.ask(prompt()).await;
        assert!(matches!(later, PermissionResult::Deny { .. }));
    }

    #[tokio::test]
    async fn an_interrupted_turn_withdraws_its_prompt() {
        let (lines, sent) = Lines::capture();
        let channel = PromptChannel::new(lines);
        let turn = CancellationToken::new();
        channel.set_turn(Some(turn.clone()));
        let asking = channel.ask(prompt());
        let interrupting = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            turn.cancel();
        };
        let (result, ()) = tokio::join!(asking, interrupting);
        assert!(
            matches!(
                result,
                PermissionResult::Deny {
                    interrupt: true,
                    ..
                }
            ),
            "{result:?}"
        );
        let out: Vec<Value> = sent()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(
            out[1],
            json!({"type": "control_cancel_request", "request_id": out[0]["request_id"]})
        );
        assert!(channel.state().pending.is_empty());
    }
}
