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
use crate::hooks::PromptDecision;
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
    // Every call the model made counts (a sub-agent's `totalToolUseCount`), run or not.
    run.tool_uses += uses.len() as u64;
    if let Some(last) = uses.last() {
        run.last_tool = Some(last.name.clone());
    }
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

    let mut ctx = inner.agent.tools.clone();
    ctx.cancel = cancel.clone();
    // Consecutive concurrency-safe calls run together; any other call runs alone.
    let mut batch: Vec<Cleared> = Vec::new();
    for call in cleared {
        if !call.concurrent || !batch.iter().all(|c| c.concurrent) {
            run_batch(inner, &ctx, std::mem::take(&mut batch), &mut outputs, run).await;
        }
        batch.push(call);
    }
    run_batch(inner, &ctx, batch, &mut outputs, run).await;

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
    // PreToolUse runs before the permission decision: it may block, change the input
    // (checked again, and what the rules then judge), allow without a prompt or ask.
    let pre = super::turn_hooks::pre_tool_use(
        inner,
        &tool_use.name,
        &tool_use.input,
        &tool_use.id,
        cancel,
    )
    .await;
    let mut input = tool_use.input.clone();
    if let Some(updated) = pre.updated_input.clone() {
        tool.validate(&updated)?;
        input = updated;
    }
    // One snapshot of the permission context as this agent sees it (SA-4): mode, rules,
    // directories, bypass and the settings files whose rules cannot be read (fail
    // closed).
    let state = inner.agent.app_state();
    let mut ctx = state.tool_permission_context.clone();
    drop(state);
    ctx.should_avoid_permission_prompts |= inner.prompter.is_none();
    // A hook's allow stands in for the user's approval, so it is judged as if a prompt
    // could be shown (a rule's deny still denies) — except while a settings file's rules
    // cannot be read, where nothing but an explicit answer may allow (fail closed).
    if pre.permission == Some(crate::hooks::HookPermission::Allow)
        && ctx.unknown_settings_rules.is_empty()
    {
        ctx.should_avoid_permission_prompts = false;
    }
    let permissions = inner.permission_env.view(&ctx);
    let decision = permissions.check(tool.as_ref(), &input, &inner.agent.tools.cwd());
    let decision = with_hook_decision(decision, &pre, &tool_use.name, inner.prompter.is_some());
    let denied = match decision {
        PermissionDecision::Allow => None,
        PermissionDecision::Deny { reason } => Some(reason),
        PermissionDecision::Ask { reason } => match &inner.prompter {
            // A PermissionRequest hook answers in place of the prompt when it decides.
            Some(_)
                if let Some(answer) = super::turn_hooks::permission_request(
                    inner,
                    &tool_use.name,
                    &input,
                    &tool_use.id,
                    cancel,
                )
                .await
                .prompt_decision =>
            {
                match answer {
                    PromptDecision::Allow { updated_input } => {
                        if let Some(updated) = updated_input {
                            tool.validate(&updated)?;
                            input = updated;
                        }
                        None
                    }
                    PromptDecision::Deny { message, interrupt } => {
                        if interrupt {
                            cancel.cancel();
                        }
                        Some(message)
                    }
                }
            }
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
                        &inner.agent.tools.cwd(),
                    ),
                };
                // Notification: the user is about to be asked.
                super::turn_hooks::notify(
                    inner,
                    &format!("strata needs your permission to use {}", tool_use.name),
                    "permission_prompt",
                    cancel,
                )
                .await;
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
    tracing::debug!(
        tool = %tool_use.name,
        id = %tool_use.id,
        denied = ?denied,
        "permission decision"
    );
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

/// The rules' decision with PreToolUse's applied: a rule's deny always stands; a hook's
/// block or deny denies; a hook's ask asks (denied when nobody can answer); a hook's
/// allow answers the prompt the rules would have shown (as the user's approval would).
fn with_hook_decision(
    decision: PermissionDecision,
    pre: &crate::hooks::HookOutcome,
    tool_name: &str,
    can_prompt: bool,
) -> PermissionDecision {
    use crate::hooks::HookPermission;
    if matches!(decision, PermissionDecision::Deny { .. }) {
        return decision;
    }
    if let Some(reason) = &pre.blocked {
        return PermissionDecision::Deny {
            reason: format!("A PreToolUse hook blocked this {tool_name} call: {reason}"),
        };
    }
    let reason = || {
        pre.permission_reason
            .clone()
            .unwrap_or_else(|| format!("A PreToolUse hook asks before this {tool_name} call."))
    };
    match (&pre.permission, decision) {
        (Some(HookPermission::Ask), _) if !can_prompt => PermissionDecision::Deny {
            reason: format!("{} No one can approve it in this session.", reason()),
        },
        (Some(HookPermission::Ask), _) => PermissionDecision::Ask { reason: reason() },
        (Some(HookPermission::Allow), PermissionDecision::Ask { .. }) => PermissionDecision::Allow,
        (_, decision) => decision,
    }
}

/// Counts a permission outcome in the running agent's denial tracking (the app state's
/// for the main agent, a sub-agent's own otherwise: SA-6); returns the counters after it.
fn record_outcome(inner: &TurnContext<'_>, denied: bool) -> crate::permissions::DenialTracking {
    inner.agent.record_permission_outcome(denied);
    inner.agent.denial_tracking()
}

/// Runs the calls of one batch side by side and stores their outputs.
async fn run_batch(
    inner: &TurnContext<'_>,
    ctx: &ToolContext,
    batch: Vec<Cleared>,
    outputs: &mut [Option<ToolOutput>],
    run: &mut Run,
) {
    if batch.is_empty() {
        return;
    }
    let ids: Vec<String> = batch.iter().map(|c| c.call.id.clone()).collect();
    let calls: Vec<(usize, String, serde_json::Value, String)> = batch
        .iter()
        .map(|c| {
            (
                c.index,
                c.name.clone(),
                c.call.input.clone(),
                c.call.id.clone(),
            )
        })
        .collect();
    set_in_progress(inner, &ids);
    let started = Instant::now();
    let results = join_all(batch.into_iter().map(|c| async move {
        // The Agent tool runs a sub-agent through this same loop (crate::agents): it needs
        // the turn, which a plain tool call does not see.
        let call_started = Instant::now();
        let id = c.call.id.clone();
        let (output, totals) = if crate::agents::is_agent_tool(&c.name) {
            inner.agents.run_call(inner, c.call).await
        } else {
            (inner.tools.call(&c.name, c.call, ctx).await, None)
        };
        tracing::debug!(
            tool = %c.name,
            id = %id,
            is_error = output.is_error,
            output_chars = output.content.len(),
            ms = call_started.elapsed().as_millis() as u64,
            "tool call"
        );
        (c.index, output, totals)
    }))
    .await;
    inner.bootstrap.add_tool_duration(started.elapsed());
    for (index, output, totals) in results {
        // A sub-agent's usage counts in its caller's result.
        if let Some(totals) = totals {
            run.totals.merge(&totals);
        }
        if output.lines_added > 0 || output.lines_removed > 0 {
            inner
                .bootstrap
                .add_lines_changed(output.lines_added, output.lines_removed);
        }
        outputs[index] = Some(output);
    }
    set_in_progress(inner, &[]);
    // PostToolUse / PostToolUseFailure: what the hooks say joins the result the model
    // reads.
    for (index, name, input, id) in calls {
        let Some(output) = outputs[index].as_mut() else {
            continue;
        };
        if let Some(note) = super::turn_hooks::post_tool_use(
            inner,
            &name,
            &input,
            &id,
            &output.content,
            output.is_error,
            &ctx.cancel,
        )
        .await
        {
            output.content.push_str("\n\n");
            output.content.push_str(&note);
        }
    }
}
