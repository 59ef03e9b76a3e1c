//! Streaming one model response of the query loop: each completed
//! block becomes its own assistant transcript line and SDK message as it arrives, usage and
//! cost are counted when the response ends, and an interrupt keeps the blocks that
//! completed.

use std::collections::HashMap;
use std::time::Instant;

use futures::StreamExt;
use strata_bootstrap::ApiDuration;
use strata_protocol::message::ContentBlock;
use strata_protocol::sdk::{AssistantEvent, SdkMessage};
use tokio_util::sync::CancellationToken;

use super::{
    LongSession, MAX_OUTPUT_TOKENS, Run, TurnContext, conversation, raw_events, tool_uses,
};
use crate::cost::{boot_usage, response_cost};
use crate::provider::{MessageAccumulator, ModelRequest, ProviderError, StreamEvent};

/// A complete response: its blocks, and the transcript uuid of each tool use's line.
pub(super) struct Response {
    pub(super) blocks: Vec<ContentBlock>,
    pub(super) line_uuids: HashMap<String, String>,
    /// Tool calls whose input was not valid JSON: the error result each gets.
    pub(super) invalid_inputs: HashMap<String, String>,
}

pub(super) enum Streamed {
    Complete(Response),
    /// Cut short by an interrupt: the blocks that completed.
    Interrupted(Vec<ContentBlock>),
}

/// Streams one response: each completed block is recorded as its own assistant line and
/// emitted; usage and cost are counted when the response ends.
pub(super) async fn stream_response(
    inner: &TurnContext<'_>,
    cancel: &CancellationToken,
    run: &mut Run,
) -> Result<Streamed, String> {
    let state = inner.store.get();
    let mode = inner.permission_mode();
    let request = ModelRequest {
        model: inner.model(),
        system: inner.long.prompt.current(mode).text.clone(),
        messages: conversation::request_messages(&state.messages),
        tools: inner.tools.definitions(),
        max_tokens: MAX_OUTPUT_TOKENS,
        thinking_budget: inner.long.thinking_budget(&state),
    };
    let sent_messages = state.messages.len();
    drop(state);
    tracing::debug!(
        provider = inner.provider.name(),
        model = %request.model,
        messages = request.messages.len(),
        tools = request.tools.len(),
        system_chars = request.system.len(),
        thinking_budget = ?request.thinking_budget,
        "model request"
    );
    let started = Instant::now();
    let mut stream = inner.provider.stream(request, cancel.clone());
    let mut acc = MessageAccumulator::new();
    let mut lines = BlockLines::default();
    let outcome = loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => break Err(ProviderError::Cancelled),
            event = stream.next() => event,
        };
        let event = match event {
            None => break Ok(()),
            Some(Err(e)) => break Err(e),
            Some(Ok(event)) => event,
        };
        if inner.sdk.include_partial_messages {
            raw_events::emit(inner, &event);
        }
        match acc.push(&event) {
            Ok(Some(completed)) => lines.completed(inner, &acc, completed.block)?,
            // The next block starts (the held one is out at once, as a server sends a
            // block's stop and the next start together), or the final usage is known
            // and the held block carries it.
            Ok(None)
                if matches!(
                    event,
                    StreamEvent::ContentBlockStart { .. } | StreamEvent::MessageDelta { .. }
                ) =>
            {
                lines.flush(inner, &acc)?;
            }
            Ok(None) => {}
            Err(e) => {
                break Err(ProviderError::Protocol {
                    provider: inner.provider.name(),
                    message: e.to_string(),
                });
            }
        }
    };
    // A response cut short keeps every block that completed, with the usage known so far.
    lines.flush(inner, &acc)?;
    let BlockLines {
        done, line_uuids, ..
    } = lines;
    let elapsed = started.elapsed();
    run.api += elapsed;
    tracing::debug!(
        id = acc.id(),
        complete = acc.is_complete(),
        stop_reason = ?acc.partial().stop_reason,
        blocks = done.len(),
        input_tokens = acc.usage().input_tokens,
        cache_read = acc.usage().cache_read_input_tokens.unwrap_or(0),
        output_tokens = acc.usage().output_tokens,
        ms = elapsed.as_millis() as u64,
        error = ?outcome.as_ref().err(),
        "model response"
    );
    if acc.is_complete() {
        run.stop_reason = acc
            .partial()
            .stop_reason
            .and_then(|r| serde_json::to_value(r).ok())
            .and_then(|v| v.as_str().map(str::to_owned));
    }
    // Whatever was streamed was paid for: count it even when the response broke off.
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
        record_context_usage(inner, &model, &usage, sent_messages);
    }
    match outcome {
        Ok(()) if acc.is_complete() => {
            let invalid_inputs = tool_uses(&done)
                .iter()
                .filter_map(|u| {
                    let err = acc.invalid_input(&u.id)?;
                    Some((u.id.clone(), invalid_input_text(err)))
                })
                .collect();
            Ok(Streamed::Complete(Response {
                blocks: done,
                line_uuids,
                invalid_inputs,
            }))
        }
        Ok(()) => Err(format!(
            "the {} stream ended before the response was complete",
            inner.provider.name()
        )),
        Err(ProviderError::Cancelled) => Ok(Streamed::Interrupted(done)),
        Err(e) => Err(e.to_string()),
    }
}

/// Records each completed block of a response as its own assistant line and emits it.
///
/// A completed block is held back until the next block starts or the response's final
/// usage arrives (`message_delta`), which servers send right after a block's stop:
/// `message_start` reports no output tokens, so the last line written at its block's stop
/// would leave them out of the transcript, and the cost rebuilt from it on resume would
/// miss them. Lines of one response share `message.id`, and readers keep the largest
/// usage among them, so the last line carries the whole response's usage.
#[derive(Default)]
struct BlockLines {
    held: Option<ContentBlock>,
    done: Vec<ContentBlock>,
    line_uuids: HashMap<String, String>,
}

impl BlockLines {
    fn completed(
        &mut self,
        inner: &TurnContext<'_>,
        acc: &MessageAccumulator,
        block: ContentBlock,
    ) -> Result<(), String> {
        self.flush(inner, acc)?;
        self.held = Some(block);
        Ok(())
    }

    fn flush(&mut self, inner: &TurnContext<'_>, acc: &MessageAccumulator) -> Result<(), String> {
        let Some(block) = self.held.take() else {
            return Ok(());
        };
        let line = acc.line_message(&block);
        let uuid = inner
            .recorder
            .assistant(line.clone(), None)
            .map_err(|e| format!("a response could not be recorded: {e}"))?;
        if let ContentBlock::ToolUse(tool_use) = &block {
            self.line_uuids.insert(tool_use.id.clone(), uuid.clone());
        }
        inner.events.emit(SdkMessage::Assistant(AssistantEvent {
            message: line,
            parent_tool_use_id: None,
            session_id: inner.session_id.clone(),
            uuid,
        }));
        self.done.push(block);
        Ok(())
    }
}

/// What the model reads when its call's input was not valid JSON.
fn invalid_input_text(err: &crate::provider::AccumulatorError) -> String {
    format!(
        "{err}. Nothing was run. The input was probably cut off by the output token limit: \
         call the tool again with complete input (split a large file into smaller writes)."
    )
}

/// Puts the context size of the last request in the app state (issue 13: input + cache
/// read + cache creation + output). The response's own message is pushed right after,
/// and its output tokens are counted here: it counts as covered.
fn record_context_usage(
    inner: &TurnContext<'_>,
    model: &str,
    usage: &strata_protocol::message::Usage,
    sent_messages: usize,
) {
    let tokens = crate::context_window::usage_tokens(usage);
    let _ = inner.store.update(|s| {
        let next = LongSession::usage_for(s, model, tokens);
        if s.context_usage != next {
            s.context_usage = next;
        }
    });
    inner.long.counted(sent_messages + 1);
}
