//! The query loop: prompt → stream the model → run its tool calls → send the results →
//! repeat until the model ends its turn (or `--max-turns`, or an interrupt).
//!
//! Every step leaves its trace in the three places the state system keeps: the app store
//! (the conversation, tool calls in progress — FX-6: nothing bypasses it), the bootstrap
//! counters (cost, API and tool time, lines changed) and the transcript (one line per
//! content block and per tool result, fsynced at the end of the turn). The same messages
//! go out through the engine's event sink as the SDK stream's shapes.
//!
//! A turn sees only its `TurnContext` (store, provider, tools, permission gate,
//! recorder, events); opening, closing and interrupting a session are the engine's, and
//! this module does not import it.
//!
//! An interrupt cancels the turn's token: the stream and running tools stop, tool calls
//! left without results get an error result, and `[Request interrupted by user]` is
//! recorded — so the conversation stays valid for the model and the session resumes
//! cleanly (COMPAT: a resumed interrupted session continues from there).

mod calls;
pub(crate) mod compact;
pub(crate) use self::compact::run_compact;
mod context;
mod conversation;
mod long_session;
pub(crate) mod ports;
mod raw_events;
mod stream;
mod turn_hooks;

use self::stream::{Streamed, stream_response};

pub(crate) use self::context::{TurnContext, TurnHost};
pub use self::long_session::LongSession;

use crate::sync::lock;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use smol_str::SmolStr;
use strata_protocol::message::{ContentBlock, Message, Role, ToolUseBlock};
use strata_protocol::sdk::{PermissionDenial, ResultMessage, ResultSubtype, SdkMessage, UserEvent};
use strata_session::model_messages::INTERRUPTED_PREFIX;
use strata_state::AppState;
use tokio_util::sync::CancellationToken;

use crate::cost::RunTotals;
use crate::record::UserLine;

/// The output budget of one response.
const MAX_OUTPUT_TOKENS: u32 = 32_000;
/// What an interrupted turn records (the reference agent's words, which resume rules key
/// on).
const INTERRUPTED_TEXT: &str = "[Request interrupted by user]";
/// The result given to tool calls a turn was interrupted before running or finishing.
const INTERRUPTED_TOOL_RESULT: &str = "The user interrupted this tool call before it finished.";

/// What one run accumulates for its `result` line.
#[derive(Default)]
struct Run {
    totals: RunTotals,
    api: Duration,
    num_turns: u32,
    denials: Vec<PermissionDenial>,
    errors: Vec<String>,
    final_text: String,
    /// Why the last response stopped, as the API names it.
    stop_reason: Option<String>,
    /// Tool calls made (a sub-agent's `totalToolUseCount`, its task's progress).
    tool_uses: u64,
    /// The tool called last.
    last_tool: Option<String>,
}

/// How a run ended.
enum Outcome {
    Success,
    MaxTurns,
    MaxBudget,
    /// `--json-schema`: no answer matched the schema in the attempts allowed.
    StructuredRetries,
    Interrupted,
    Failed,
}

/// Runs `prompt` to the end of the turn and returns its `result` line (the engine emits
/// it: a result may be held back while background agents finish). `meta`: messages
/// recorded right after the prompt as `isMeta` lines (a custom command's expanded text).
pub(crate) async fn run_turn(
    inner: &TurnContext<'_>,
    prompt: Message,
    meta: Vec<Message>,
    prompt_uuid: Option<String>,
    cancel: CancellationToken,
) -> ResultMessage {
    let started = Instant::now();
    let mut run = Run::default();
    let outcome = run_to_end(inner, prompt, meta, prompt_uuid, &cancel, &mut run).await;
    result_message(inner, outcome, run, started)
}

/// What a sub-agent's run produced (`crate::agents` turns it into the Agent tool's
/// result).
pub(crate) struct AgentRun {
    /// The final answer (the text of the last response).
    pub(crate) final_text: String,
    /// Usage and cost, by model.
    pub(crate) totals: RunTotals,
    /// Tool calls made.
    pub(crate) tool_uses: u64,
    /// `None` when it succeeded; else why not.
    pub(crate) failure: Option<AgentFailure>,
}

/// Why a sub-agent's run did not succeed.
pub(crate) enum AgentFailure {
    /// Cancelled (stopped, or its caller interrupted).
    Cancelled,
    /// It failed; the errors, phrased for the user.
    Failed(Vec<String>),
}

/// Runs a sub-agent's `prompt` through the loop to its end (no `result` line: the Agent
/// tool's result is its caller's).
pub(crate) async fn run_agent(
    inner: &TurnContext<'_>,
    prompt: Message,
    cancel: &CancellationToken,
) -> AgentRun {
    let mut run = Run::default();
    let outcome = run_to_end(inner, prompt, Vec::new(), None, cancel, &mut run).await;
    let failure = match outcome {
        Outcome::Success if run.errors.is_empty() => None,
        Outcome::Interrupted => Some(AgentFailure::Cancelled),
        Outcome::MaxTurns => Some(AgentFailure::Failed(
            std::iter::once(format!(
                "the agent reached its limit of {} model calls",
                run.num_turns
            ))
            .chain(run.errors.drain(..))
            .collect(),
        )),
        _ if cancel.is_cancelled() => Some(AgentFailure::Cancelled),
        _ => Some(AgentFailure::Failed(std::mem::take(&mut run.errors))),
    };
    AgentRun {
        final_text: std::mem::take(&mut run.final_text),
        totals: std::mem::take(&mut run.totals),
        tool_uses: run.tool_uses,
        failure,
    }
}

/// The turn, made durable at its end.
async fn run_to_end(
    inner: &TurnContext<'_>,
    prompt: Message,
    meta: Vec<Message>,
    prompt_uuid: Option<String>,
    cancel: &CancellationToken,
    run: &mut Run,
) -> Outcome {
    let outcome = match turn(inner, prompt, meta, prompt_uuid, cancel, run).await {
        Ok(outcome) => outcome,
        Err(message) => {
            run.errors.push(message);
            Outcome::Failed
        }
    };
    if let Err(e) = inner.recorder.turn_end() {
        run.errors
            .push(format!("the transcript could not be made durable: {e}"));
    }
    set_in_progress(inner, &[]);
    // The per-turn counters are the main agent's turn; a sub-agent runs inside one.
    if !inner.is_subagent() {
        inner.bootstrap.reset_turn();
    }
    outcome
}

/// The `result` line of a run.
fn result_message(
    inner: &TurnContext<'_>,
    outcome: Outcome,
    mut run: Run,
    started: Instant,
) -> ResultMessage {
    // An error result's first `errors` entry is the reference agent's text for it: the
    // Agent SDKs raise "Claude Code returned an error result: <errors>" from it, and
    // scripts match on it (issue 25, item 5).
    let (subtype, is_error) = match outcome {
        Outcome::Success if run.errors.is_empty() => (ResultSubtype::Success, false),
        Outcome::MaxTurns => {
            // The reference counts the turn the limit refused: `--max-turns 1` ends
            // with `num_turns` 2.
            run.num_turns += 1;
            run.errors.insert(
                0,
                format!(
                    "Reached maximum number of turns ({})",
                    inner.max_turns.unwrap_or_default()
                ),
            );
            (ResultSubtype::ErrorMaxTurns, true)
        }
        Outcome::MaxBudget => {
            // The budget as typed (`0.5`, `2`): f64's `Display` is the shortest text
            // that reads back as the number, without an exponent.
            run.errors.insert(
                0,
                format!(
                    "Reached maximum budget (${})",
                    inner.sdk.max_budget_usd.unwrap_or_default()
                ),
            );
            (ResultSubtype::ErrorMaxBudgetUsd, true)
        }
        Outcome::StructuredRetries => {
            run.errors.insert(
                0,
                format!(
                    "Failed to provide valid structured output after {} attempts",
                    crate::structured::MAX_ATTEMPTS
                ),
            );
            (ResultSubtype::ErrorMaxStructuredOutputRetries, true)
        }
        Outcome::Interrupted => {
            run.errors.push("the turn was interrupted".into());
            (ResultSubtype::ErrorDuringExecution, true)
        }
        Outcome::Success | Outcome::Failed => (ResultSubtype::ErrorDuringExecution, true),
    };
    // The answer a `--json-schema` turn gave; its JSON text is the `result` text too
    // when the model wrote none (text output prints it).
    let structured_output = inner
        .sdk
        .structured_output
        .as_ref()
        .and_then(|s| s.take_answer())
        .filter(|_| subtype == ResultSubtype::Success);
    if let Some(answer) = &structured_output
        && run.final_text.trim().is_empty()
    {
        run.final_text = answer.to_string();
    }
    ResultMessage {
        subtype,
        is_error,
        duration_ms: started.elapsed().as_millis() as u64,
        duration_api_ms: run.api.as_millis() as u64,
        num_turns: run.num_turns,
        result: (subtype == ResultSubtype::Success).then(|| run.final_text.clone()),
        session_id: inner.session_id.clone(),
        total_cost_usd: run.totals.cost_usd(),
        usage: run.totals.usage_json(),
        model_usage: run.totals.model_usage_json(),
        permission_denials: run.denials,
        errors: run.errors,
        stop_reason: run.stop_reason.take(),
        structured_output,
        background_tasks: Vec::new(),
        uuid: uuid::Uuid::new_v4().to_string(),
    }
}

/// Whether the session has spent its `--max-budget-usd`.
fn over_budget(inner: &TurnContext<'_>) -> bool {
    inner
        .sdk
        .max_budget_usd
        .is_some_and(|budget| inner.bootstrap.total_cost_usd() >= budget)
}

/// The turn itself. `Err` carries a failure already phrased for the user.
async fn turn(
    inner: &TurnContext<'_>,
    prompt: Message,
    meta: Vec<Message>,
    chosen_uuid: Option<String>,
    cancel: &CancellationToken,
    run: &mut Run,
) -> Result<Outcome, String> {
    // An empty prompt would be sent as nothing at all (requests leave blank text out)
    // and refused by the API: it is refused here, before anything is recorded.
    if conversation::is_blank(&prompt) {
        return Err("the prompt is empty: nothing was asked".into());
    }
    // UserPromptSubmit: a hook may block the prompt (it is then neither recorded nor
    // sent) or add context for the model. A sub-agent's prompt is its caller's, not the
    // user's.
    let prompt = if inner.is_subagent() {
        prompt
    } else {
        turn_hooks::user_prompt_submit(inner, prompt, cancel).await?
    };
    if let Some(structured) = &inner.sdk.structured_output {
        structured.begin_turn();
    }
    // The prompt: recorded, snapshotted for rewind, added to the conversation.
    let mode = inner.permission_mode().to_string();
    let prompt_uuid = inner
        .recorder
        .user(
            prompt.clone(),
            UserLine {
                permission_mode: Some(mode),
                uuid: chosen_uuid,
                ..UserLine::default()
            },
        )
        .map_err(|e| format!("the prompt could not be recorded: {e}"))?;
    // A sub-agent's edits are tracked in the snapshot of the user prompt it works for.
    if !inner.is_subagent() {
        *lock(inner.prompt_uuid) = prompt_uuid.clone();
        snapshot_files(inner, &prompt_uuid);
    }
    push_message(inner, prompt);
    for message in meta {
        inner
            .recorder
            .user(
                message.clone(),
                UserLine {
                    is_meta: true,
                    ..UserLine::default()
                },
            )
            .map_err(|e| format!("the prompt could not be recorded: {e}"))?;
        push_message(inner, message);
    }

    let mut stop_continuations = 0u32;
    loop {
        if cancel.is_cancelled() {
            record_interruption(inner, &[]);
            return Ok(Outcome::Interrupted);
        }
        if inner.max_turns.is_some_and(|max| run.num_turns >= max) {
            return Ok(Outcome::MaxTurns);
        }
        if over_budget(inner) {
            return Ok(Outcome::MaxBudget);
        }
        run.num_turns += 1;
        // The tools are read again for each request: an MCP server that connected since
        // the turn began offers its tools (and its calls are found) from here on.
        let refreshed = inner.host.tools_now(inner.tools);
        let step;
        let inner = match &refreshed {
            Some(tools) => {
                step = TurnContext { tools, ..*inner };
                &step
            }
            None => inner,
        };

        deliver_notifications(inner)?;
        compact::maybe_auto_compact(inner, cancel, run).await;
        if cancel.is_cancelled() {
            record_interruption(inner, &[]);
            return Ok(Outcome::Interrupted);
        }
        let response = match stream_response(inner, cancel, run).await? {
            Streamed::Complete(response) => response,
            Streamed::Interrupted(partial) => {
                let unanswered = tool_uses(&partial);
                if !partial.is_empty() {
                    push_message(inner, Message::blocks(Role::Assistant, partial));
                }
                record_interruption(inner, &unanswered);
                return Ok(Outcome::Interrupted);
            }
        };
        let uses = tool_uses(&response.blocks);
        push_message(
            inner,
            Message::blocks(Role::Assistant, response.blocks.clone()),
        );
        if uses.is_empty() {
            run.final_text = response
                .blocks
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join("");
            // `--json-schema`: an answer in text is checked, or the model reminded to
            // answer through the tool.
            if let Some(structured) = &inner.sdk.structured_output
                && !structured.answered()
            {
                use crate::structured::TextAnswer;
                match structured.text_answer(&run.final_text) {
                    TextAnswer::Accepted => {}
                    TextAnswer::Exhausted => return Ok(Outcome::StructuredRetries),
                    TextAnswer::Remind(reminder) => {
                        let message = Message::user_text(reminder);
                        inner
                            .recorder
                            .user(message.clone(), UserLine::default())
                            .map_err(|e| format!("a reminder could not be recorded: {e}"))?;
                        push_message(inner, message);
                        continue;
                    }
                }
            }
            // Stop: a hook may send the model back to work, with its reason as the
            // next prompt (bounded: `stop_hook_active` tells the hook it already did).
            match turn_hooks::stop(inner, stop_continuations, cancel).await {
                Some(reason) => {
                    stop_continuations += 1;
                    let message = Message::user_text(reason);
                    inner
                        .recorder
                        .user(message.clone(), UserLine::default())
                        .map_err(|e| format!("a Stop hook's reason could not be recorded: {e}"))?;
                    push_message(inner, message);
                    continue;
                }
                // The session's budget is checked after the last response too: a turn
                // whose answer spent past it ends in `error_max_budget_usd`, as the
                // reference's does (a sub-agent's answer is its caller's to weigh).
                None if !inner.is_subagent() && over_budget(inner) => {
                    return Ok(Outcome::MaxBudget);
                }
                None => return Ok(Outcome::Success),
            }
        }

        let results = calls::run_calls(inner, &uses, &response.invalid_inputs, cancel, run).await;
        if let Some(task) = inner.task {
            task.progress(
                run.totals.total_tokens(),
                run.tool_uses,
                run.last_tool.clone(),
            );
        }
        let mut result_blocks = Vec::with_capacity(results.len());
        for result in results {
            let mut content = result.output.content.clone();
            if !result.output.is_error
                && let Some(nested) = touched_path(&uses, &result.tool_use_id)
                    .and_then(|p| inner.long.nested_memory(Path::new(p), inner.cwd))
            {
                content.push_str(&nested);
            }
            let mut block = ContentBlock::tool_result(
                &result.tool_use_id,
                content.clone(),
                result.output.is_error,
            );
            // Images and documents (Read of an image or a PDF, MCP results) go after
            // the text, as the tool result's blocks.
            if let ContentBlock::ToolResult(b) = &mut block
                && let Some(attached) = result.output.attachments.as_ref().filter(|a| !a.is_empty())
            {
                let mut blocks = vec![ContentBlock::text(content)];
                blocks.extend(attached.iter().cloned());
                b.content = Some(strata_protocol::message::ToolResultContent::Blocks(blocks));
            }
            let message = Message::blocks(Role::User, vec![block.clone()]);
            let detail = result.output.detail.clone();
            let uuid = inner
                .recorder
                .user(
                    message.clone(),
                    UserLine {
                        tool_use_result: detail.clone(),
                        source_assistant_uuid: response
                            .line_uuids
                            .get(&result.tool_use_id)
                            .cloned(),
                        ..UserLine::default()
                    },
                )
                .map_err(|e| format!("a tool result could not be recorded: {e}"))?;
            inner.events.emit(SdkMessage::User(UserEvent {
                message,
                parent_tool_use_id: None,
                session_id: inner.session_id.clone(),
                uuid: Some(uuid),
                tool_use_result: detail,
            }));
            result_blocks.push(block);
        }
        push_message(inner, Message::blocks(Role::User, result_blocks));
        if cancel.is_cancelled() {
            record_interruption(inner, &[]);
            return Ok(Outcome::Interrupted);
        }
        // `--json-schema`: an answer that validated ends the turn; too many that did not
        // end it in error.
        if let Some(structured) = &inner.sdk.structured_output {
            if structured.answered() {
                return Ok(Outcome::Success);
            }
            if structured.exhausted() {
                return Ok(Outcome::StructuredRetries);
            }
        }
    }
}

/// The path tool call `id` worked on (`file_path` of Read, Write, Edit; `path` of Glob
/// and Grep), for nested memory files.
fn touched_path<'a>(uses: &'a [ToolUseBlock], id: &str) -> Option<&'a str> {
    let call = uses.iter().find(|u| u.id == id)?;
    call.input
        .get("file_path")
        .or_else(|| call.input.get("path"))
        .and_then(serde_json::Value::as_str)
}

/// The tool uses among `blocks`.
pub(super) fn tool_uses(blocks: &[ContentBlock]) -> Vec<ToolUseBlock> {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u.clone()),
            _ => None,
        })
        .collect()
}

/// Gives the main agent's model the task notifications that arrived (background work
/// that ended): each becomes a user message, recorded, before the next request.
fn deliver_notifications(inner: &TurnContext<'_>) -> Result<(), String> {
    if inner.is_subagent() {
        return Ok(());
    }
    for text in inner.agents.notifications().drain() {
        let message = Message::user_text(text);
        inner
            .recorder
            .user(message.clone(), UserLine::default())
            .map_err(|e| format!("a task notification could not be recorded: {e}"))?;
        push_message(inner, message);
    }
    Ok(())
}

/// Records an interrupted turn: error results for tool calls left unanswered, then the
/// interruption notice, so the conversation stays well-formed for the next request.
fn record_interruption(inner: &TurnContext<'_>, unanswered: &[ToolUseBlock]) {
    let mut blocks: Vec<ContentBlock> = unanswered
        .iter()
        .map(|u| ContentBlock::tool_result(&u.id, INTERRUPTED_TOOL_RESULT, true))
        .collect();
    blocks.push(ContentBlock::text(INTERRUPTED_TEXT));
    debug_assert!(INTERRUPTED_TEXT.starts_with(INTERRUPTED_PREFIX));
    let message = Message::blocks(Role::User, blocks);
    if let Err(e) = inner.recorder.user(message.clone(), UserLine::default()) {
        inner
            .bootstrap
            .log_error(format!("the interruption could not be recorded: {e}"));
    }
    push_message(inner, message);
}

/// Takes the file-history snapshot of a prompt (the state files return to when the user
/// rewinds to it) and records it.
fn snapshot_files(inner: &TurnContext<'_>, prompt_uuid: &str) {
    // A store update; the effects hub persists it (backups, then the entry).
    if let Err(e) =
        crate::file_history::snapshot_prompt(inner.store, inner.file_history, prompt_uuid)
    {
        inner
            .bootstrap
            .log_error(format!("file-history snapshot failed: {e}"));
    }
}

/// Appends `message` to the conversation in the app store.
fn push_message(inner: &TurnContext<'_>, message: Message) {
    let message = Arc::new(message);
    let _ = inner
        .store
        .update(|s| s.messages.push_back(Arc::clone(&message)));
}

/// Publishes which tool calls are running (for the UI's spinner and tool views).
pub(crate) fn set_in_progress(inner: &TurnContext<'_>, ids: &[String]) {
    let ids: imbl::OrdSet<SmolStr> = ids.iter().map(SmolStr::from).collect();
    let _ = inner.store.set(|s| {
        if s.in_progress_tool_use_ids == ids {
            Arc::clone(s)
        } else {
            Arc::new(AppState {
                in_progress_tool_use_ids: ids.clone(),
                ..AppState::clone(s)
            })
        }
    });
}
