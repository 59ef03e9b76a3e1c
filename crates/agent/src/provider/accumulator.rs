//! [`MessageAccumulator`]: folds [`StreamEvent`]s into an [`AssistantMessage`], and hands
//! out each content block the moment it completes.
//!
//! The query loop writes one transcript line per completed block, as the reference agent
//! does (a response with a thinking block, a text and two tool calls becomes four
//! `assistant` lines sharing `message.id`), so a crash mid-response keeps every block that
//! was finished. [`MessageAccumulator::push`] returns the block an event completed and
//! [`MessageAccumulator::line_message`] wraps it into that line's message.
//!
//! Rules:
//! - Blocks are kept by their `index` and the final content is in index order, so
//!   interleaved deltas of several open blocks (OpenAI's parallel tool calls) are fine.
//! - A tool use's input is the concatenation of its `input_json_delta` fragments, parsed
//!   when the block stops. Fragments that are not valid JSON (most often a large input
//!   cut off by the output token limit) do not fail the response: the block keeps the
//!   input `{}` and [`MessageAccumulator::invalid_input`] holds the
//!   [`AccumulatorError::InvalidToolInput`] naming the tool and where the JSON broke, for
//!   the query loop to answer the call with an error the model can read. No fragments at
//!   all keep the input the block started with (`{}` for a tool without parameters).
//! - Usage: `message_start` gives input and cache tokens; `message_delta` gives final
//!   output tokens and may repeat input and cache counts. Output tokens are always taken
//!   from the delta; any other count from the delta replaces the start's only when the
//!   delta reports it (non-zero input tokens, present cache fields), since a delta that
//!   leaves a count out means "unchanged", not zero.
//! - Events out of protocol order (a delta for a block that never started, a second
//!   `message_start`, content after `message_stop`) are errors, never silently ignored.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use strata_protocol::message::{AssistantMessage, ContentBlock, Usage};

use super::{BlockDelta, StreamEvent};

/// Why the events do not make a valid message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AccumulatorError {
    /// A tool call's streamed input is not valid JSON.
    #[error(
        "the model's call of tool {name} ({id}) has invalid JSON input at line {line}, column {column}: {reason}; input was: {input}"
    )]
    InvalidToolInput {
        /// The tool's name.
        name: String,
        /// The call's id.
        id: String,
        /// 1-based line of the input where parsing failed.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        reason: String,
        /// The input as received (cut to 200 characters).
        input: String,
    },
    /// An event arrived that the protocol does not allow at this point.
    #[error("stream events out of order: {0}")]
    OutOfOrder(String),
    /// The stream ended before the message was complete.
    #[error("the response ended early: {0}")]
    Incomplete(String),
}

/// A content block that just completed.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedBlock {
    /// The block's position in the response.
    pub index: usize,
    /// The finished block (tool inputs parsed).
    pub block: ContentBlock,
}

/// A block being streamed.
#[derive(Debug)]
struct OpenBlock {
    block: ContentBlock,
    /// Input JSON fragments of a tool use (or server tool use), concatenated.
    input_json: String,
    saw_input_json: bool,
}

/// Builds an assistant message from stream events (see the module docs).
#[derive(Debug, Default)]
pub struct MessageAccumulator {
    started: bool,
    stopped: bool,
    /// Id, model, usage and stop reason; `content` stays empty until [`Self::finish`].
    message: AssistantMessage,
    open: BTreeMap<usize, OpenBlock>,
    done: BTreeMap<usize, ContentBlock>,
    /// Tool uses whose input was not valid JSON, by tool use id.
    invalid_inputs: BTreeMap<String, AccumulatorError>,
}

impl MessageAccumulator {
    /// An accumulator waiting for `message_start`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one event in. Returns the block this event completed, if it was a
    /// `content_block_stop`.
    pub fn push(
        &mut self,
        event: &StreamEvent,
    ) -> Result<Option<CompletedBlock>, AccumulatorError> {
        if self.stopped && !matches!(event, StreamEvent::Ping) {
            return Err(AccumulatorError::OutOfOrder(format!(
                "{} after message_stop",
                event_name(event)
            )));
        }
        if !self.started && !matches!(event, StreamEvent::MessageStart { .. } | StreamEvent::Ping) {
            return Err(AccumulatorError::OutOfOrder(format!(
                "{} before message_start",
                event_name(event)
            )));
        }
        match event {
            StreamEvent::Ping => Ok(None),
            StreamEvent::MessageStart { id, model, usage } => {
                if self.started {
                    return Err(AccumulatorError::OutOfOrder(
                        "a second message_start".into(),
                    ));
                }
                self.started = true;
                self.message.id.clone_from(id);
                self.message.model.clone_from(model);
                self.message.usage = usage.clone();
                Ok(None)
            }
            StreamEvent::ContentBlockStart { index, block } => {
                if self.open.contains_key(index) || self.done.contains_key(index) {
                    return Err(AccumulatorError::OutOfOrder(format!(
                        "content block {index} started twice"
                    )));
                }
                self.open.insert(
                    *index,
                    OpenBlock {
                        block: block.clone(),
                        input_json: String::new(),
                        saw_input_json: false,
                    },
                );
                Ok(None)
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let open = self.open.get_mut(index).ok_or_else(|| {
                    AccumulatorError::OutOfOrder(format!(
                        "a delta for content block {index}, which is not open"
                    ))
                })?;
                apply_delta(*index, open, delta)?;
                Ok(None)
            }
            StreamEvent::ContentBlockStop { index } => {
                let open = self.open.remove(index).ok_or_else(|| {
                    AccumulatorError::OutOfOrder(format!(
                        "content_block_stop for block {index}, which is not open"
                    ))
                })?;
                let (block, invalid) = close_block(open)?;
                if let (Some(err), ContentBlock::ToolUse(t)) = (invalid, &block) {
                    self.invalid_inputs.insert(t.id.clone(), err);
                }
                self.done.insert(*index, block.clone());
                Ok(Some(CompletedBlock {
                    index: *index,
                    block,
                }))
            }
            StreamEvent::MessageDelta { stop_reason, usage } => {
                if let Some(reason) = stop_reason {
                    self.message.stop_reason = Some(reason.clone());
                }
                if let Some(delta) = usage {
                    merge_usage(&mut self.message.usage, delta);
                }
                Ok(None)
            }
            StreamEvent::MessageStop => {
                if let Some(index) = self.open.keys().next() {
                    return Err(AccumulatorError::Incomplete(format!(
                        "message_stop while content block {index} was still open"
                    )));
                }
                self.stopped = true;
                Ok(None)
            }
        }
    }

    /// Why the input of tool use `id` could not be read, when it could not (the block
    /// itself carries the input `{}`).
    pub fn invalid_input(&self, id: &str) -> Option<&AccumulatorError> {
        self.invalid_inputs.get(id)
    }

    /// Whether `message_stop` was seen.
    pub fn is_complete(&self) -> bool {
        self.stopped
    }

    /// The response id from `message_start` (empty before it).
    pub fn id(&self) -> &str {
        &self.message.id
    }

    /// The model from `message_start` (empty before it).
    pub fn model(&self) -> &str {
        &self.message.model
    }

    /// Usage so far (start usage merged with any `message_delta`).
    pub fn usage(&self) -> &Usage {
        &self.message.usage
    }

    /// The transcript message for one completed block: this response's id, model and
    /// usage so far, the single block, and no stop reason, the way the reference agent
    /// writes each block of a response as its own `assistant` line.
    pub fn line_message(&self, block: &ContentBlock) -> AssistantMessage {
        AssistantMessage {
            model: self.message.model.clone(),
            id: self.message.id.clone(),
            content: vec![block.clone()],
            stop_reason: None,
            stop_sequence: None,
            usage: self.message.usage.clone(),
            extra: Map::new(),
        }
    }

    /// What has completed so far, for a response cut short (interrupted, or the stream
    /// broke): the finished blocks in order, without the ones still streaming.
    pub fn partial(&self) -> AssistantMessage {
        AssistantMessage {
            content: self.done.values().cloned().collect(),
            ..self.message.clone()
        }
    }

    /// The complete message. Fails if `message_stop` was not seen.
    pub fn finish(self) -> Result<AssistantMessage, AccumulatorError> {
        if !self.started {
            return Err(AccumulatorError::Incomplete(
                "no message_start was received".into(),
            ));
        }
        if !self.stopped {
            return Err(AccumulatorError::Incomplete(
                match self.open.keys().next() {
                    Some(index) => format!("content block {index} was still streaming"),
                    None => "no message_stop was received".into(),
                },
            ));
        }
        let mut message = self.message;
        message.content = self.done.into_values().collect();
        Ok(message)
    }
}

fn event_name(event: &StreamEvent) -> &'static str {
    match event {
        StreamEvent::MessageStart { .. } => "message_start",
        StreamEvent::ContentBlockStart { .. } => "content_block_start",
        StreamEvent::ContentBlockDelta { .. } => "content_block_delta",
        StreamEvent::ContentBlockStop { .. } => "content_block_stop",
        StreamEvent::MessageDelta { .. } => "message_delta",
        StreamEvent::MessageStop => "message_stop",
        StreamEvent::Ping => "ping",
    }
}

fn mismatch(index: usize, delta: &str, block: &ContentBlock) -> AccumulatorError {
    AccumulatorError::OutOfOrder(format!(
        "a {delta} delta for content block {index}, which is a {} block",
        block.type_name()
    ))
}

fn apply_delta(
    index: usize,
    open: &mut OpenBlock,
    delta: &BlockDelta,
) -> Result<(), AccumulatorError> {
    match (delta, &mut open.block) {
        (BlockDelta::Text(t), ContentBlock::Text(b)) => b.text.push_str(t),
        (BlockDelta::Thinking(t), ContentBlock::Thinking(b)) => b.thinking.push_str(t),
        (BlockDelta::Signature(s), ContentBlock::Thinking(b)) => b.signature.push_str(s),
        (BlockDelta::InputJson(j), ContentBlock::ToolUse(_)) => {
            open.input_json.push_str(j);
            open.saw_input_json = true;
        }
        // Server-side tool calls (`server_tool_use`) stream their input the same way.
        (BlockDelta::InputJson(j), ContentBlock::Unknown(m)) if m.contains_key("input") => {
            open.input_json.push_str(j);
            open.saw_input_json = true;
        }
        (BlockDelta::Citation(c), ContentBlock::Text(b)) => {
            match b
                .extra
                .entry("citations")
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(list) => list.push(c.clone()),
                other => *other = Value::Array(vec![c.clone()]),
            }
        }
        (d, block) => {
            let name = match d {
                BlockDelta::Text(_) => "text",
                BlockDelta::Thinking(_) => "thinking",
                BlockDelta::Signature(_) => "signature",
                BlockDelta::InputJson(_) => "input_json",
                BlockDelta::Citation(_) => "citations",
            };
            return Err(mismatch(index, name, block));
        }
    }
    Ok(())
}

/// The finished block, and for a tool use whose input is not valid JSON the error (the
/// block then has the input `{}`).
fn close_block(
    open: OpenBlock,
) -> Result<(ContentBlock, Option<AccumulatorError>), AccumulatorError> {
    let OpenBlock {
        mut block,
        input_json,
        saw_input_json,
    } = open;
    // An empty input stream means "no arguments": keep the start's input (`{}`).
    if !saw_input_json || input_json.trim().is_empty() {
        return Ok((block, None));
    }
    let parsed = serde_json::from_str::<Value>(&input_json);
    match &mut block {
        ContentBlock::ToolUse(t) => match parsed {
            Ok(v) => t.input = v,
            Err(e) => {
                let err = AccumulatorError::InvalidToolInput {
                    name: t.name.clone(),
                    id: t.id.clone(),
                    line: e.line(),
                    column: e.column(),
                    reason: e.to_string(),
                    input: input_json.chars().take(200).collect(),
                };
                t.input = Value::Object(Map::new());
                return Ok((block, Some(err)));
            }
        },
        ContentBlock::Unknown(m) => match parsed {
            Ok(v) => {
                m.insert("input".into(), v);
            }
            Err(e) => {
                return Err(AccumulatorError::InvalidToolInput {
                    name: m
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned(),
                    id: m
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned(),
                    line: e.line(),
                    column: e.column(),
                    reason: e.to_string(),
                    input: input_json.chars().take(200).collect(),
                });
            }
        },
        _ => {}
    }
    Ok((block, None))
}

/// Merges a `message_delta`'s usage into the start's (see the module docs).
fn merge_usage(usage: &mut Usage, delta: &Usage) {
    usage.output_tokens = delta.output_tokens;
    if delta.input_tokens > 0 {
        usage.input_tokens = delta.input_tokens;
    }
    if delta.cache_creation_input_tokens.is_some() {
        usage
            .cache_creation_input_tokens
            .clone_from(&delta.cache_creation_input_tokens);
    }
    if delta.cache_read_input_tokens.is_some() {
        usage
            .cache_read_input_tokens
            .clone_from(&delta.cache_read_input_tokens);
    }
    if delta.cache_creation.is_some() {
        usage.cache_creation.clone_from(&delta.cache_creation);
    }
    if delta.service_tier.is_some() {
        usage.service_tier.clone_from(&delta.service_tier);
    }
    for (k, v) in &delta.extra {
        usage.extra.insert(k.clone(), v.clone());
    }
}

#[cfg(test)]
mod tests;
