//! SDK hook callbacks over the control protocol: a callback registered at `initialize`
//! runs as a `hook_callback` control request on stdout, answered by a `control_response`
//! with the same request id on stdin (its `response` is the hook's decision object).
//!
//! Waiting is bounded by the hook's timeout in the runtime (`strata_agent::hooks`); a
//! call still open when stdin ends is answered with an error at once, and so is every
//! later one: nobody is left to answer, and a turn must never hang on it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};
use strata_agent::hooks::{CallbackFuture, HookCallbacks};
use strata_protocol::sdk::{
    ControlRequest, ControlRequestBody, ControlResponse, ControlResponseBody, SdkMessage,
};
use tokio::sync::oneshot;

use super::output::Lines;

/// The client side of hook callbacks (see the module docs).
pub(crate) struct CallbackChannel {
    lines: Lines,
    state: Mutex<State>,
    next_id: AtomicU64,
}

#[derive(Default)]
struct State {
    pending: HashMap<String, oneshot::Sender<Result<Value, String>>>,
    closed: bool,
}

impl CallbackChannel {
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

    /// Hands the client's response to the call waiting for it; `false` when no call has
    /// that id.
    pub(crate) fn answer(&self, response: &ControlResponse) -> bool {
        let Some(waiter) = self.state().pending.remove(response.request_id()) else {
            return false;
        };
        let result = match &response.response {
            ControlResponseBody::Success { response, .. } => {
                Ok(response.clone().unwrap_or(Value::Object(Map::new())))
            }
            ControlResponseBody::Error { error, .. } => Err(error.clone()),
        };
        let _ = waiter.send(result);
        true
    }

    /// Stdin ended: fail what is open and what comes later.
    pub(crate) fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        for (_, waiter) in state.pending.drain() {
            let _ = waiter.send(Err(closed()));
        }
    }
}

fn closed() -> String {
    "the client closed its input before answering".into()
}

impl HookCallbacks for CallbackChannel {
    fn call(
        &self,
        callback_id: &str,
        input: Value,
        tool_use_id: Option<String>,
    ) -> CallbackFuture<'_> {
        let request_id = format!(
            "strata-hook-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.state();
            if state.closed {
                return Box::pin(async { Err(closed()) });
            }
            state.pending.insert(request_id.clone(), tx);
        }
        let mut body = Map::new();
        body.insert("subtype".into(), "hook_callback".into());
        body.insert("callback_id".into(), callback_id.into());
        body.insert("input".into(), input);
        body.insert(
            "tool_use_id".into(),
            tool_use_id.map_or(Value::Null, Value::String),
        );
        self.lines
            .send_json(&SdkMessage::ControlRequest(ControlRequest {
                request_id: request_id.clone(),
                request: ControlRequestBody::Other(body),
            }));
        // A call the runtime stopped waiting for (its timeout) keeps its id until the
        // client answers or stdin ends; the late answer then goes nowhere.
        Box::pin(async move { rx.await.unwrap_or_else(|_| Err(closed())) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_callback_is_a_hook_callback_request_answered_by_its_id() {
        let (lines, drain) = Lines::capture();
        let channel = CallbackChannel::new(lines);
        let call = channel.call(
            "hook_0",
            json!({"hook_event_name": "PreToolUse"}),
            Some("t1".into()),
        );
        let sent = drain();
        let request: Value = serde_json::from_str(&sent[0]).unwrap();
        assert_eq!(request["request"]["subtype"], "hook_callback");
        assert_eq!(request["request"]["callback_id"], "hook_0");
        assert_eq!(request["request"]["tool_use_id"], "t1");
        let id = request["request_id"].as_str().unwrap();
        assert!(channel.answer(&ControlResponse::success(
            id,
            Some(json!({"decision": "block"}))
        )));
        assert_eq!(call.await.unwrap(), json!({"decision": "block"}));
        assert!(
            !channel.answer(&ControlResponse::success(id, None)),
            "answered once"
        );
    }

    #[tokio::test]
    async fn calls_fail_once_stdin_is_closed() {
        let (lines, _drain) = Lines::capture();
        let channel = CallbackChannel::new(lines);
        let open = channel.call("a", json!({}), None);
        channel.close();
        assert!(open.await.unwrap_err().contains("closed"));
        assert!(channel.call("b", json!({}), None).await.is_err());
    }
}
