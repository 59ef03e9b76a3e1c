//! Running the tool calls of one response: validate, check permission (asking when a
//! prompt is possible), run — concurrency-safe calls side by side — and account for it.
//!
//! Results come back in the order the model asked, whatever order the calls finished in.
//! A call that cannot run (unknown tool, invalid input, denied) gets an error result the
//! model can read; nothing here fails the turn.

use std::collections::HashMap;
use std::time::Instant;

use futures::future::join_all;
use strata_protocol::message::ToolUseBlock;
use strata_protocol::sdk::{PermissionDenial, PermissionResult};
use tokio_util::sync::CancellationToken;

use super::TurnContext;
use super::ports::PermissionPrompt;
use super::{INTERRUPTED_TOOL_RESULT, Run, set_in_progress};
use crate::permissions::{PermissionDecision, denial_output};
use crate::tools::{ToolCall, ToolContext, ToolOutput};

/// The result of one call.
pub(super) struct CallResult {
    pub(super) tool_use_id: String,
    pub(super) output: ToolOutput,
}

/// A call cleared to run, with its (possibly changed) input.
struct Cleared {
    index: usize,
    name: String,
    call: ToolCall,
    concurrent: bool,
}

/// Runs `uses` and returns their results in order.
pub(super) async fn run_calls(
    inner: &TurnContext<'_>,
    uses: &[ToolUseBlock],
    invalid_inputs: &HashMap<String, String>,
    cancel: &CancellationToken,
    run: &mut Run,
) -> Vec<CallResult> {
    let mut outputs: Vec<Option<ToolOutput>> = vec![None; uses.len()];
    let mut cleared = Vec::new();
    for (index, tool_use) in uses.iter().enumerate() {
        if cancel.is_cancelled() {
            break;
        }
        // Input that was not valid JSON never reaches the tool (or a permission prompt).
        if let Some(why) = invalid_inputs.get(&tool_use.id) {
            outputs[index] = Some(ToolOutput::error(why.clone()));
            continue;
        }
        match clear(inner, tool_use, cancel, run).await {
            Ok(call) => cleared.push(Cleared { index, ..call }),
            Err(output) => outputs[index] = Some(output),
        }
    }

    let mut ctx = inner.tool_context.clone();
    ctx.cancel = cancel.clone();
    // Consecutive concurrency-safe calls run together; any other call runs alone.
    let mut batch: Vec<Cleared> = Vec::new();
    for call in cleared {
        if !call.concurrent || !batch.iter().all(|c| c.concurrent) {
            run_batch(inner, &ctx, std::mem::take(&mut batch), &mut outputs).await;
        }
        batch.push(call);
    }
    run_batch(inner, &ctx, batch, &mut outputs).await;

    uses.iter()
        .zip(outputs)
        .map(|(tool_use, output)| CallResult {
            tool_use_id: tool_use.id.clone(),
            output: output.unwrap_or_else(|| ToolOutput::error(INTERRUPTED_TOOL_RESULT)),
        })
        .collect()
}

/// Decides whether `tool_use` may run: the tool exists, its input is valid, and the
/// permission rules allow it (or someone approved it). `Err` is the call's result.
async fn clear(
    inner: &TurnContext<'_>,
    tool_use: &ToolUseBlock,
    cancel: &CancellationToken,
    run: &mut Run,
) -> Result<Cleared, ToolOutput> {
    let Some(tool) = inner.tools.get(&tool_use.name) else {
        return Err(ToolOutput::error(format!(
            "No such tool: {}. Available tools: {}",
            tool_use.name,
            inner.tools.names().join(", ")
        )));
    };
    tool.validate(&tool_use.input)?;
    // One snapshot of the store's permission context: mode, rules, directories, bypass
    // and the settings files whose rules cannot be read (fail closed).
    let state = inner.store.get();
    let mut ctx = state.tool_permission_context.clone();
    drop(state);
    ctx.should_avoid_permission_prompts |= inner.prompter.is_none();
    let permissions = inner.permission_env.view(&ctx);
    let mut input = tool_use.input.clone();
    let decision = permissions.check(tool.as_ref(), &input, &inner.tool_context.cwd());
    let denied = match decision {
        PermissionDecision::Allow => None,
        PermissionDecision::Deny { reason } => Some(reason),
        PermissionDecision::Ask { reason } => match &inner.prompter {
            Some(prompter) => {
                let prompt = PermissionPrompt {
                    tool_name: tool_use.name.clone(),
                    input: input.clone(),
                    tool_use_id: tool_use.id.clone(),
                    reason: reason.clone(),
                    suggestions: crate::permissions::suggestions(
                        tool.as_ref(),
                        &input,
                        &permissions,
                        &inner.tool_context.cwd(),
                    ),
                };
                // An interrupt must not wait for an answer that may never come.
                let answer = tokio::select! {
                    biased;
                    () = cancel.cancelled() => PermissionResult::Deny {
                        message: "The turn was interrupted before this call was approved.".into(),
                        interrupt: true,
                    },
                    answer = prompter.ask(prompt) => answer,
                };
                match answer {
                    PermissionResult::Allow {
                        updated_input,
                        updated_permissions,
                    } => {
                        if let Some(updated) = updated_input {
                            input = updated;
                        }
                        if let Some(updates) = updated_permissions {
                            inner.apply_permission_updates(&updates);
                        }
                        None
                    }
                    PermissionResult::Deny { message, interrupt } => {
                        if interrupt {
                            // "Deny and stop": the rest of the turn is cancelled too.
                            cancel.cancel();
                        }
                        Some(if message.is_empty() {
                            format!("The user denied this {} call.", tool_use.name)
                        } else {
                            message
                        })
                    }
                }
            }
            // `should_avoid_prompts` turns every ask into a deny when nobody can answer;
            // this arm is only reached if a rule set produced an ask anyway.
            None => Some(format!("{reason} No one can approve it in this session.")),
        },
    };
    let tracking = record_outcome(inner, denied.is_some());
    if let Some(reason) = denied {
        run.denials.push(PermissionDenial {
            tool_name: tool_use.name.clone(),
            tool_use_id: tool_use.id.clone(),
            tool_input: tool_use.input.clone(),
        });
        return Err(denial_output(&reason, tracking));
    }
    Ok(Cleared {
        index: 0,
        name: tool_use.name.clone(),
        concurrent: tool.is_concurrency_safe(&input),
        call: ToolCall {
            id: tool_use.id.clone(),
            input,
        },
    })
}

/// Counts a permission outcome in the app state's denial tracking; returns the counters
/// after it.
fn record_outcome(inner: &TurnContext<'_>, denied: bool) -> crate::permissions::DenialTracking {
    let mut after = Default::default();
    let _ = inner.store.update(|s| {
        let next = if denied {
            s.denial_tracking.record_denial()
        } else {
            s.denial_tracking.record_allowed()
        };
        after = next;
        if next != s.denial_tracking {
            s.denial_tracking = next;
        }
    });
    after
}

/// Runs the calls of one batch side by side and stores their outputs.
async fn run_batch(
    inner: &TurnContext<'_>,
    ctx: &ToolContext,
    batch: Vec<Cleared>,
    outputs: &mut [Option<ToolOutput>],
) {
    if batch.is_empty() {
        return;
    }
    let ids: Vec<String> = batch.iter().map(|c| c.call.id.clone()).collect();
    set_in_progress(inner, &ids);
    let started = Instant::now();
    let results = join_all(batch.into_iter().map(|c| async move {
        let output = inner.tools.call(&c.name, c.call, ctx).await;
        (c.index, output)
    }))
    .await;
    inner.bootstrap.add_tool_duration(started.elapsed());
    for (index, output) in results {
        if output.lines_added > 0 || output.lines_removed > 0 {
            inner
                .bootstrap
                .add_lines_changed(output.lines_added, output.lines_removed);
        }
        outputs[index] = Some(output);
    }
    set_in_progress(inner, &[]);
}
