//! Where the query loop runs user hooks (`crate::hooks`): UserPromptSubmit before a
//! prompt is recorded, Stop when the model ends its turn, PreCompact before a
//! compaction's summary request, and, for each tool call,
//! PreToolUse before the permission decision, PermissionRequest when a prompt would be
//! shown (then Notification, when the prompt goes out), PostToolUse / PostToolUseFailure
//! after it ran. Each is a no-op without
//! registered hooks, so a session without hooks pays nothing.
//!
//! Problems of hooks that failed or timed out were already reported by the runtime;
//! here they only never block.

use serde_json::{Value, json};
use strata_protocol::message::{ContentBlock, Message, Role};
use tokio_util::sync::CancellationToken;

use super::TurnContext;
use crate::hooks::{HookEvent, HookOutcome};

/// How many times Stop hooks may send the model back to work within one turn.
const MAX_STOP_CONTINUATIONS: u32 = 8;

/// UserPromptSubmit: the prompt, with what hooks added for the model appended; `Err`
/// when a hook blocked it (the message says which and why).
pub(super) async fn user_prompt_submit(
    inner: &TurnContext<'_>,
    prompt: Message,
    cancel: &CancellationToken,
) -> Result<Message, String> {
    let Some(hooks) = inner.hooks().filter(|h| h.has(HookEvent::UserPromptSubmit)) else {
        return Ok(prompt);
    };
    let text = match &prompt.content {
        strata_protocol::message::MessageContent::Text(t) => t.clone(),
        strata_protocol::message::MessageContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let outcome = hooks
        .run(
            HookEvent::UserPromptSubmit,
            None,
            &inner.hook_session(),
            json!({"prompt": text}),
            None,
            cancel,
        )
        .await;
    if let Some(reason) = outcome.blocked.or(outcome.stop) {
        return Err(format!(
            "a UserPromptSubmit hook blocked the prompt: {reason}"
        ));
    }
    match outcome.additional_context.is_empty() {
        true => Ok(prompt),
        false => {
            let mut blocks = prompt.content.into_blocks();
            blocks.extend(
                outcome
                    .additional_context
                    .into_iter()
                    .map(ContentBlock::text),
            );
            Ok(Message::blocks(Role::User, blocks))
        }
    }
}

/// Stop: the reason to keep going when a hook blocked the stop, else `None`.
pub(super) async fn stop(
    inner: &TurnContext<'_>,
    continuations: u32,
    cancel: &CancellationToken,
) -> Option<String> {
    if continuations >= MAX_STOP_CONTINUATIONS {
        return None;
    }
    let stop_hook_active = continuations > 0;
    // A sub-agent ending its work is SubagentStop (its type is the matcher).
    let (event, matcher, input) = match &inner.agent.identity.agent_id {
        Some(agent_id) => (
            HookEvent::SubagentStop,
            inner.agent.identity.agent_type.as_deref(),
            json!({
                "stop_hook_active": stop_hook_active,
                "agent_id": agent_id.as_str(),
                "agent_type": inner.agent.identity.agent_type.as_deref(),
                "agent_transcript_path": inner.recorder.path(),
            }),
        ),
        None => (
            HookEvent::Stop,
            None,
            json!({"stop_hook_active": stop_hook_active}),
        ),
    };
    let hooks = inner.hooks().filter(|h| h.has(event))?;
    let outcome = hooks
        .run(event, matcher, &inner.hook_session(), input, None, cancel)
        .await;
    // `continue: false` ends the turn whatever else was said.
    if outcome.stop.is_some() {
        return None;
    }
    outcome.blocked
}

/// Notification: tells the hooks what the user is told (`notification_type`, e.g.
/// `permission_prompt`); their answers change nothing.
pub(super) async fn notify(
    inner: &TurnContext<'_>,
    message: &str,
    notification_type: &str,
    cancel: &CancellationToken,
) {
    if let Some(hooks) = inner.hooks().filter(|h| h.has(HookEvent::Notification)) {
        hooks
            .notification(&inner.hook_session(), message, notification_type, cancel)
            .await;
    }
}

/// PreCompact (`trigger`: `auto` or `manual`, the matcher's value): what hooks added for
/// the summary (joined to its instructions), or `Err(why)` when one stopped the
/// compaction (the conversation then stays as it is).
pub(super) async fn pre_compact(
    inner: &TurnContext<'_>,
    trigger: &str,
    instructions: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Vec<String>, String> {
    let Some(hooks) = inner.hooks().filter(|h| h.has(HookEvent::PreCompact)) else {
        return Ok(Vec::new());
    };
    let outcome = hooks
        .pre_compact(&inner.hook_session(), trigger, instructions, cancel)
        .await;
    match outcome.blocked.or(outcome.stop) {
        Some(reason) => Err(format!(
            "a PreCompact hook stopped the compaction: {reason}"
        )),
        None => Ok(outcome.additional_context),
    }
}

/// PreToolUse for one call (the matcher sees the tool's name).
pub(super) async fn pre_tool_use(
    inner: &TurnContext<'_>,
    tool_name: &str,
    input: &Value,
    tool_use_id: &str,
    cancel: &CancellationToken,
) -> HookOutcome {
    run_tool_event(
        inner,
        HookEvent::PreToolUse,
        tool_name,
        input,
        tool_use_id,
        None,
        cancel,
    )
    .await
}

/// PermissionRequest for one call about to be asked. A hook that blocks (exit code 2,
/// or a failure of a hook set to `onFailure: "block"`) denies the request, with its
/// reason for the model.
pub(super) async fn permission_request(
    inner: &TurnContext<'_>,
    tool_name: &str,
    input: &Value,
    tool_use_id: &str,
    cancel: &CancellationToken,
) -> HookOutcome {
    let mut outcome = run_tool_event(
        inner,
        HookEvent::PermissionRequest,
        tool_name,
        input,
        tool_use_id,
        None,
        cancel,
    )
    .await;
    if outcome.prompt_decision.is_none()
        && let Some(reason) = &outcome.blocked
    {
        outcome.prompt_decision = Some(crate::hooks::PromptDecision::Deny {
            message: reason.clone(),
            interrupt: false,
        });
    }
    outcome
}

/// PostToolUse (or PostToolUseFailure when `failed`) for one call that ran: text to
/// add to its result for the model, if any.
pub(super) async fn post_tool_use(
    inner: &TurnContext<'_>,
    tool_name: &str,
    input: &Value,
    tool_use_id: &str,
    output: &str,
    failed: bool,
    cancel: &CancellationToken,
) -> Option<String> {
    let (event, extra) = if failed {
        (HookEvent::PostToolUseFailure, json!({"error": output}))
    } else {
        (HookEvent::PostToolUse, json!({"tool_response": output}))
    };
    let outcome = run_tool_event(
        inner,
        event,
        tool_name,
        input,
        tool_use_id,
        Some(extra),
        cancel,
    )
    .await;
    let mut notes = Vec::new();
    if let Some(reason) = outcome.blocked {
        notes.push(format!("{} hook feedback: {reason}", event.as_str()));
    }
    notes.extend(outcome.additional_context);
    (!notes.is_empty()).then(|| notes.join("\n"))
}

async fn run_tool_event(
    inner: &TurnContext<'_>,
    event: HookEvent,
    tool_name: &str,
    input: &Value,
    tool_use_id: &str,
    extra: Option<Value>,
    cancel: &CancellationToken,
) -> HookOutcome {
    let Some(hooks) = inner.hooks().filter(|h| h.has(event)) else {
        return HookOutcome::default();
    };
    let mut fields = json!({
        "tool_name": tool_name,
        "tool_input": input,
        "tool_use_id": tool_use_id,
    });
    if let (Some(Value::Object(extra)), Value::Object(map)) = (extra, &mut fields) {
        map.extend(extra);
    }
    hooks
        .run(
            event,
            Some(tool_name),
            &inner.hook_session(),
            fields,
            Some(tool_use_id),
            cancel,
        )
        .await
}
