//! Compaction (issue 13): the conversation so far is replaced by the model's summary of
//! it, so a session can go on past its context window.
//!
//! Automatic before a request whose context would pass the threshold
//! ([`maybe_auto_compact`]); manual with `/compact [instructions]` ([`compact`] through
//! the engine). The summary request is the conversation plus [`text::SUMMARY_REQUEST`]
//! (and the user's instructions). Only once the whole summary has arrived does anything
//! change: the transcript gets the `compact_boundary` line and the summary user line in
//! the reference shape (COMPAT "Writing a compaction"), then a meta line re-attaching
//! recently read files ([`reattach`]); the app store's conversation becomes those two
//! messages; the SDK stream gets the `compact_boundary` system message. A summary request
//! that fails or is interrupted leaves the conversation and transcript as they were.
//!
//! The summary request defines the same tools as the turn's requests (the API refuses
//! tool blocks without tools, and the tool list is the start of the cached prefix).
//!
//! The `PreCompact` hook runs in [`compact`] before the request: it may
//! add instructions (joined to the summary request) or stop the compaction.

pub(crate) mod reattach;
mod text;

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use strata_bootstrap::ApiDuration;
use strata_protocol::message::{ContentBlock, Message, Role};
use strata_protocol::sdk::{
    CompactBoundaryMessage, CompactMetadata, ResultMessage, ResultSubtype, SdkMessage,
    SystemMessage,
};
use tokio_util::sync::CancellationToken;

use super::long_session::LongSession;
use super::{Run, TurnContext, conversation};
use crate::cost::{boot_usage, response_cost};
use crate::provider::{MessageAccumulator, ModelRequest, ProviderError};
use crate::record::UserLine;

/// The output budget of the summary.
const SUMMARY_MAX_TOKENS: u32 = 16_000;

/// What started a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trigger {
    /// The context passed the threshold.
    Auto,
    /// `/compact`.
    Manual,
}

impl Trigger {
    fn name(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
        }
    }
}

/// Compacts before the next request when its context would pass the threshold. A
/// failure is logged and the request goes ahead with the conversation as it was.
pub(super) async fn maybe_auto_compact(
    inner: &TurnContext<'_>,
    cancel: &CancellationToken,
    run: &mut Run,
) {
    let state = inner.store.get();
    let model = inner.model();
    let Some(threshold) = LongSession::threshold(&state, &model) else {
        return;
    };
    let tokens = inner.long.current_tokens(&state);
    // Right after a compaction (done or failed) the next one waits for a response: a
    // summary too large for the threshold would otherwise be summarised again and again,
    // and a failing summary request retried before every request.
    if tokens < threshold || !inner.long.may_auto_compact() {
        return;
    }
    drop(state);
    if let Err(e) = compact(inner, Trigger::Auto, None, cancel, run).await {
        // The request goes ahead with the conversation as it was; the turn is not an
        // error because of it (the request may well fit).
        inner.long.compaction_tried(false);
        tracing::warn!("automatic compaction failed: {e}");
        inner
            .bootstrap
            .log_error(format!("automatic compaction failed: {e}"));
    }
}

/// Compacts the conversation now; the context size before it. `Err` (phrased for the
/// user) leaves the conversation unchanged.
pub(super) async fn compact(
    inner: &TurnContext<'_>,
    trigger: Trigger,
    instructions: Option<&str>,
    cancel: &CancellationToken,
    run: &mut Run,
) -> Result<u64, String> {
    let state = inner.store.get();
    if state.messages.is_empty() {
        return Err("there is nothing to compact yet".into());
    }
    let pre_tokens = inner.long.current_tokens(&state);
    let old: Vec<Arc<Message>> = state.messages.iter().cloned().collect();
    drop(state);
    // PreCompact hooks run before anything is sent: they may add to the instructions or
    // stop the compaction (the conversation then stays as it was).
    let from_hooks =
        super::turn_hooks::pre_compact(inner, trigger.name(), instructions, cancel).await?;
    let mut request_text = text::SUMMARY_REQUEST.to_owned();
    if let Some(extra) = instructions.filter(|i| !i.trim().is_empty()) {
        request_text.push_str("\n\nThe user's instructions for this summary: ");
        request_text.push_str(extra.trim());
    }
    for extra in from_hooks.iter().filter(|e| !e.trim().is_empty()) {
        request_text.push_str("\n\nA PreCompact hook adds: ");
        request_text.push_str(extra.trim());
    }
    let mut messages = conversation::request_messages(&old);
    // A conversation may end with the model's turn or with unanswered tool results;
    // either way the request ends with the user's summary request.
    messages.push(Arc::new(Message::user_text(request_text)));
    let messages = conversation::request_messages(&messages);
    let summary = summarise(inner, messages, cancel, run).await?;
    if summary.trim().is_empty() {
        return Err("the model returned an empty summary".into());
    }

    // The summary is complete: from here on the conversation changes.
    let transcript = inner.long.transcript.display().to_string();
    let body = format!(
        "{}{}{}",
        text::SUMMARY_PREAMBLE,
        summary.trim(),
        text::summary_trailer(&transcript, trigger == Trigger::Auto)
    );
    let boundary = inner
        .recorder
        .compact_boundary(trigger.name(), pre_tokens)
        .map_err(|e| format!("the compact boundary could not be recorded: {e}"))?;
    let summary_message = Message::user_text(body);
    inner
        .recorder
        .user(
            summary_message.clone(),
            UserLine {
                compact_summary: true,
                ..UserLine::default()
            },
        )
        .map_err(|e| format!("the summary could not be recorded: {e}"))?;
    let mut new_messages = vec![Arc::new(summary_message)];
    let files = reattach::recent_reads(&old, inner.cwd);
    if let Some(attached) = reattach::attachment_text(&files) {
        let meta = Message::blocks(Role::User, vec![ContentBlock::text(attached)]);
        match inner.recorder.user(
            meta.clone(),
            UserLine {
                is_meta: true,
                ..UserLine::default()
            },
        ) {
            Ok(_) => new_messages.push(Arc::new(meta)),
            Err(e) => inner
                .bootstrap
                .log_error(format!("re-attached files could not be recorded: {e}")),
        }
    }
    let model = inner.model();
    let _ = inner.store.update(|s| {
        s.messages = new_messages.iter().cloned().collect();
        s.context_usage = LongSession::usage_for(s, &model, 0);
    });
    // Nothing of the new conversation is counted exactly yet: all of it is estimated.
    inner.long.compaction_tried(true);
    inner
        .events
        .emit(SdkMessage::System(SystemMessage::CompactBoundary(
            CompactBoundaryMessage {
                compact_metadata: CompactMetadata {
                    trigger: trigger.name().into(),
                    pre_tokens,
                },
                session_id: inner.session_id.clone(),
                uuid: boundary,
            },
        )));
    Ok(pre_tokens)
}

/// Streams the summary request and returns its text. Its cost is counted; nothing is
/// recorded in the transcript (the summary line is written by the caller).
async fn summarise(
    inner: &TurnContext<'_>,
    messages: Vec<Arc<Message>>,
    cancel: &CancellationToken,
    run: &mut Run,
) -> Result<String, String> {
    let request = ModelRequest {
        model: inner.model(),
        system: text::SUMMARY_SYSTEM.to_owned(),
        messages,
        // The turn's tools, in the order the turn sends them: the Messages API refuses a
        // request whose messages hold `tool_use` or `tool_result` blocks and that
        // defines no tools (issue 25), and the same tool list keeps the prompt cache's
        // prefix of the conversation's requests. The summary request asks for text
        // only; a tool call in the answer would be ignored (only text is kept).
        tools: inner.tools.definitions(),
        max_tokens: SUMMARY_MAX_TOKENS,
        thinking_budget: None,
    };
    let started = Instant::now();
    let mut stream = inner.provider.stream(request, cancel.clone());
    let mut acc = MessageAccumulator::new();
    let mut text = String::new();
    let outcome = loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => break Err(ProviderError::Cancelled),
            event = stream.next() => event,
        };
        match event {
            None => break Ok(()),
            Some(Err(e)) => break Err(e),
            Some(Ok(event)) => match acc.push(&event) {
                Ok(Some(done)) => {
                    if let Some(t) = done.block.as_text() {
                        text.push_str(t);
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    break Err(ProviderError::Protocol {
                        provider: inner.provider.name(),
                        message: e.to_string(),
                    });
                }
            },
        }
    };
    let elapsed = started.elapsed();
    run.api += elapsed;
    if !acc.id().is_empty() {
        let model = acc.model().to_owned();
        let usage = acc.usage().clone();
        let cost = response_cost(&model, &usage);
        inner.bootstrap.add_cost(
            cost,
            &model,
            boot_usage(&usage),
            ApiDuration::single(elapsed),
        );
        run.totals.add(&model, &usage, cost);
    }
    match outcome {
        Ok(()) if acc.is_complete() => Ok(text),
        Ok(()) => Err("the summary stream ended before it was complete".into()),
        Err(ProviderError::Cancelled) => Err("the compaction was interrupted".into()),
        Err(e) => Err(format!("the summary request failed: {e}")),
    }
}

/// Runs `/compact [instructions]` and returns (and emits) its `result` line; a failed
/// compaction leaves the conversation as it was and is an error result.
pub(crate) async fn run_compact(
    inner: &TurnContext<'_>,
    instructions: Option<&str>,
    cancel: CancellationToken,
) -> ResultMessage {
    let started = Instant::now();
    let mut run = Run::default();
    let outcome = compact(inner, Trigger::Manual, instructions, &cancel, &mut run).await;
    if let Err(e) = inner.recorder.turn_end() {
        run.errors
            .push(format!("the transcript could not be made durable: {e}"));
    }
    let ok = match outcome {
        Ok(_) => run.errors.is_empty(),
        Err(e) => {
            run.errors.push(e);
            false
        }
    };
    let subtype = if ok {
        ResultSubtype::Success
    } else {
        ResultSubtype::ErrorDuringExecution
    };
    let result = ResultMessage {
        subtype,
        is_error: !ok,
        duration_ms: started.elapsed().as_millis() as u64,
        duration_api_ms: run.api.as_millis() as u64,
        num_turns: 0,
        result: ok.then(|| "Conversation compacted".to_owned()),
        session_id: inner.session_id.clone(),
        total_cost_usd: run.totals.cost_usd(),
        usage: run.totals.usage_json(),
        model_usage: run.totals.model_usage_json(),
        permission_denials: run.denials,
        errors: run.errors,
        stop_reason: run.stop_reason.take(),
        structured_output: None,
        background_tasks: Vec::new(),
        uuid: uuid::Uuid::new_v4().to_string(),
    };
    inner.events.emit(SdkMessage::Result(result.clone()));
    result
}
