//! The replay provider: plays back, in order, the model responses recorded in a session
//! transcript, so the whole agent runs offline and deterministically (`--replay
//! <transcript.jsonl>`, and the shipped demo session).
//!
//! Each call to [`Provider::stream`] yields the next recorded response as the events a
//! live provider would have streamed (start, each block with its deltas, stop reason and
//! usage, stop), whatever the request says: the recording decides. What the query loop
//! does with the response (running tool calls for real, with permission checks) is the
//! same as with a live model. The provider's name is `replay`, so everything that shows
//! the provider (the headless `init` line, the UI) labels the session as a replay.
//!
//! Reading a transcript (reference agent or strata format):
//! - only `assistant` lines count; lines the client made up (model `<synthetic>`) and
//!   API-error lines are skipped, and so are sub-agent lines (`isSidechain: true`) unless
//!   the file holds nothing else (a sub-agent's own transcript replays its responses);
//! - lines are grouped by `message.id` in file order (one response is written as one line
//!   per content block); a line repeated with the same `uuid` is read once;
//! - a response's blocks keep file order; its usage is the largest recorded (older writers
//!   left placeholder output counts on all but the last line); its stop reason is the last
//!   one recorded, or, when every line has none (split responses), `tool_use` if it
//!   calls a tool and `end_turn` otherwise;
//! - lines that are not valid JSON are skipped and counted ([`ReplayProvider::skipped_lines`]).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value};
use strata_protocol::message::{
    AssistantMessage, ContentBlock, StopReason, TextBlock, ThinkingBlock,
};
use strata_protocol::transcript::Entry;
use tokio_util::sync::CancellationToken;

use super::{BlockDelta, EventStream, ModelRequest, Provider, ProviderError, StreamEvent};

/// Plays back recorded responses (see the module docs).
#[derive(Debug)]
pub struct ReplayProvider {
    source: String,
    responses: Vec<AssistantMessage>,
    next: AtomicUsize,
    skipped_lines: usize,
}

impl ReplayProvider {
    /// Reads the responses recorded in the transcript at `path`.
    pub fn open(path: &Path) -> Result<Self, ProviderError> {
        let bytes = std::fs::read(path).map_err(|e| {
            ProviderError::Replay(format!(
                "cannot read the session to replay, {}: {e}",
                path.display()
            ))
        })?;
        Self::from_bytes(path.display().to_string(), &bytes)
    }

    /// Reads the responses recorded in `bytes` (a transcript's contents); `source` names
    /// it in messages (e.g. `demo` for a session built into the binary).
    pub fn from_bytes(source: impl Into<String>, bytes: &[u8]) -> Result<Self, ProviderError> {
        let source = source.into();
        let (mut responses, skipped_lines) = read_responses(bytes, false);
        if responses.is_empty() {
            (responses, _) = read_responses(bytes, true);
        }
        if responses.is_empty() {
            return Err(ProviderError::Replay(format!(
                "{source} holds no recorded model responses (no assistant lines{}); \
                 pass a session transcript (.jsonl)",
                if skipped_lines > 0 {
                    format!(", {skipped_lines} unreadable lines")
                } else {
                    String::new()
                }
            )));
        }
        Ok(Self::from_messages(source, responses).with_skipped(skipped_lines))
    }

    /// A provider that answers with `responses` in order: a scripted model for tests of
    /// the query loop that need no HTTP server.
    pub fn from_messages(source: impl Into<String>, responses: Vec<AssistantMessage>) -> Self {
        Self {
            source: source.into(),
            responses,
            next: AtomicUsize::new(0),
            skipped_lines: 0,
        }
    }

    fn with_skipped(mut self, skipped_lines: usize) -> Self {
        self.skipped_lines = skipped_lines;
        self
    }

    /// Where the responses come from (the transcript's path, or the name given).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Every recorded response, in playing order.
    pub fn responses(&self) -> &[AssistantMessage] {
        &self.responses
    }

    /// How many responses are still to be played.
    pub fn remaining(&self) -> usize {
        self.responses
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }

    /// Lines of the transcript that could not be read.
    pub fn skipped_lines(&self) -> usize {
        self.skipped_lines
    }
}

impl Provider for ReplayProvider {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn stream(&self, _request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let at = self.next.fetch_add(1, Ordering::SeqCst);
        let events: Result<Vec<StreamEvent>, ProviderError> = match self.responses.get(at) {
            Some(message) => Ok(message_events(message)),
            None => Err(ProviderError::Replay(format!(
                "all {} recorded responses of {} have been played; the conversation went \
                 further than the recording",
                self.responses.len(),
                self.source
            ))),
        };
        let items: std::collections::VecDeque<Result<StreamEvent, ProviderError>> = match events {
            Ok(events) => events.into_iter().map(Ok).collect(),
            Err(e) => [Err(e)].into_iter().collect(),
        };
        Box::pin(futures::stream::unfold(
            (items, cancel, false),
            |(mut items, cancel, ended)| async move {
                if ended {
                    return None;
                }
                if cancel.is_cancelled() {
                    return Some((Err(ProviderError::Cancelled), (items, cancel, true)));
                }
                let item = items.pop_front()?;
                // Give other tasks (the UI, an interrupt) a turn between events, as a
                // network stream would.
                tokio::task::yield_now().await;
                Some((item, (items, cancel, false)))
            },
        ))
    }

    fn default_model(&self) -> Option<&str> {
        self.responses.first().map(|m| m.model.as_str())
    }
}

/// The events a provider streams for `message`: `message_start` (usage without output
/// tokens), each block started empty and filled by deltas (tool input as JSON text),
/// `message_delta` with the stop reason and full usage, `message_stop`.
pub(crate) fn message_events(message: &AssistantMessage) -> Vec<StreamEvent> {
    let mut start_usage = message.usage.clone();
    start_usage.output_tokens = 0;
    let mut events = vec![StreamEvent::MessageStart {
        id: message.id.clone(),
        model: message.model.clone(),
        usage: start_usage,
    }];
    for (index, block) in message.content.iter().enumerate() {
        let (start, deltas) = match block {
            ContentBlock::Text(t) => (
                ContentBlock::Text(TextBlock {
                    text: String::new(),
                    extra: t.extra.clone(),
                }),
                vec![BlockDelta::Text(t.text.clone())],
            ),
            ContentBlock::Thinking(t) => (
                ContentBlock::Thinking(ThinkingBlock {
                    thinking: String::new(),
                    signature: String::new(),
                    extra: t.extra.clone(),
                }),
                vec![
                    BlockDelta::Thinking(t.thinking.clone()),
                    BlockDelta::Signature(t.signature.clone()),
                ],
            ),
            ContentBlock::ToolUse(t) => {
                let mut empty = t.clone();
                empty.input = Value::Object(Map::new());
                (
                    ContentBlock::ToolUse(empty),
                    vec![BlockDelta::InputJson(t.input.to_string())],
                )
            }
            other => (other.clone(), Vec::new()),
        };
        events.push(StreamEvent::ContentBlockStart {
            index,
            block: start,
        });
        events.extend(
            deltas
                .into_iter()
                .map(|delta| StreamEvent::ContentBlockDelta { index, delta }),
        );
        events.push(StreamEvent::ContentBlockStop { index });
    }
    events.push(StreamEvent::MessageDelta {
        stop_reason: Some(message.stop_reason.clone().unwrap_or_else(|| {
            if message
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolUse(_)))
            {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            }
        })),
        usage: Some(message.usage.clone()),
    });
    events.push(StreamEvent::MessageStop);
    events
}

/// The recorded responses of a transcript (of the sub-agent lines when `sidechain`, else
/// of the others) and the number of unreadable lines.
fn read_responses(bytes: &[u8], sidechain: bool) -> (Vec<AssistantMessage>, usize) {
    let mut responses: Vec<AssistantMessage> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut seen_uuids: HashSet<String> = HashSet::new();
    let mut skipped = 0;
    for line in bytes.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // Cheap pre-filter: most lines of a transcript are not assistant lines, and
        // tool results can be large.
        if line.iter().all(u8::is_ascii_whitespace) || !contains(line, b"\"assistant\"") {
            continue;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            skipped += 1;
            continue;
        };
        let entry = match Entry::parse(text) {
            Ok(Entry::Assistant(a)) => a,
            Ok(_) => continue,
            Err(_) => {
                skipped += 1;
                continue;
            }
        };
        if entry.envelope.is_sidechain != sidechain
            || entry.message.is_synthetic()
            || entry.is_api_error_message == Some(true)
        {
            continue;
        }
        if !entry.envelope.uuid.is_empty() && !seen_uuids.insert(entry.envelope.uuid.clone()) {
            continue;
        }
        let message = entry.message;
        let slot = if message.id.is_empty() {
            None
        } else {
            by_id.get(&message.id).copied()
        };
        match slot {
            Some(i) => merge_line(&mut responses[i], message),
            None => {
                if !message.id.is_empty() {
                    by_id.insert(message.id.clone(), responses.len());
                }
                responses.push(message);
            }
        }
    }
    (responses, skipped)
}

/// Adds one more line of a split response to what was read of it.
fn merge_line(response: &mut AssistantMessage, line: AssistantMessage) {
    response.content.extend(line.content);
    if line.usage.total_tokens() > response.usage.total_tokens() {
        response.usage = line.usage;
    }
    if line.stop_reason.is_some() {
        response.stop_reason = line.stop_reason;
    }
    if line.stop_sequence.is_some() {
        response.stop_sequence = line.stop_sequence;
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::provider::MessageAccumulator;

    fn line(uuid: &str, id: &str, block: &str, extra: &str) -> String {
        format!(
            r#"{{"parentUuid":null,"isSidechain":false,"type":"assistant","message":{{"model":"m","id":"{id}","type":"message","role":"assistant","content":[{block}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":3,"output_tokens":1}}}}{extra},"uuid":"{uuid}","timestamp":"2025-01-01T00:00:00.000Z"}}"#
        )
    }

    #[test]
    fn split_lines_group_by_message_id_in_file_order() {
        let text = [
            r#"{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u0","parentUuid":null,"isSidechain":false,"timestamp":"t"}"#.to_owned(),
            line("a1", "msg_1", r#"{"type":"text","text":"Looking."}"#, ""),
            line("a2", "msg_1", r#"{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}"#, ""),
            line("a2", "msg_1", r#"{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}"#, ""),
            "not json at all \"assistant\"".to_owned(),
            line("a3", "msg_2", r#"{"type":"text","text":"Done."}"#, ""),
            line("s1", "msg_3", r#"{"type":"text","text":"sub-agent"}"#, "").replace(r#""isSidechain":false"#, r#""isSidechain":true"#),
            line("x1", "msg_4", r#"{"type":"text","text":"API Error"}"#, "").replace(r#""model":"m""#, r#""model":"<synthetic>""#),
        ]
        .join("\n");
        let p = ReplayProvider::from_bytes("t", text.as_bytes()).unwrap();
        assert_eq!(p.skipped_lines(), 1);
        let r = p.responses();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].id, "msg_1");
        assert_eq!(r[0].content.len(), 2, "the repeated line is read once");
        assert_eq!(r[1].content, vec![ContentBlock::text("Done.")]);
    }

    #[test]
    fn stop_reason_is_inferred_for_split_responses() {
        let tool = ContentBlock::tool_use("t1", "Bash", serde_json::json!({"command": "ls"}));
        let m = AssistantMessage {
            id: "msg".into(),
            model: "m".into(),
            content: vec![ContentBlock::text("x"), tool],
            ..AssistantMessage::default()
        };
        let events = message_events(&m);
        assert!(events.iter().any(|e| matches!(
            e,
            StreamEvent::MessageDelta {
                stop_reason: Some(StopReason::ToolUse),
                ..
            }
        )));
    }

    #[tokio::test]
    async fn events_rebuild_the_recorded_message_and_running_out_is_a_replay_error() {
        let m = AssistantMessage {
            id: "msg_a".into(),
            model: "claude-x".into(),
            content: vec![
                ContentBlock::Thinking(ThinkingBlock {
                    thinking: "plan".into(),
                    signature: "sig".into(),
                    extra: Map::new(),
                }),
                ContentBlock::text("hello"),
                ContentBlock::tool_use("t1", "Read", serde_json::json!({"file_path": "/x"})),
            ],
            stop_reason: Some(StopReason::ToolUse),
            ..AssistantMessage::default()
        };
        let p = ReplayProvider::from_messages("test", vec![m.clone()]);
        assert_eq!(p.name(), "replay");
        let request = ModelRequest {
            model: String::new(),
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            max_tokens: 1,
            thinking_budget: None,
        };
        let mut acc = MessageAccumulator::new();
        let mut s = p.stream(request.clone(), CancellationToken::new());
        while let Some(e) = s.next().await {
            acc.push(&e.unwrap()).unwrap();
        }
        assert_eq!(acc.finish().unwrap(), m);
        let mut s = p.stream(request, CancellationToken::new());
        let err = s.next().await.unwrap().unwrap_err();
        assert!(matches!(err, ProviderError::Replay(_)), "{err}");
        assert!(
            err.to_string()
                .contains("all 1 recorded responses of test have been played")
        );
    }
}
