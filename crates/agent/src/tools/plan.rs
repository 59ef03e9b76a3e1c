//! Plan mode for the model: EnterPlanMode and ExitPlanMode (issue 18, item 3).
//!
//! EnterPlanMode switches the session to plan mode, where only read-only tools run.
//! ExitPlanMode presents the plan for the user's approval: it is a question to the user
//! ([`Tool::asks_the_user`]), so the permission check always asks (the UI's dialog, or
//! the SDK client's `can_use_tool` request in headless mode) and a run nobody can answer
//! denies it. Once approved, the plan is saved where the reference agent keeps plans,
//! `<config>/plans/<plan slug>.md` (the slug is the session's, kept in the bootstrap state:
//! BS-5), and the mode leaves plan mode. Both switches go through the session's one mode
//! gate ([`ToolHooks::set_permission_mode`](super::ToolHooks::set_permission_mode)), so
//! FX-1 reports them to the SDK status stream and the remote like any mode change.
//!
//! An approval that already set a mode (the answer's `setMode` update, e.g. acceptEdits)
//! is kept; otherwise the session returns to `default`.

use serde::Deserialize;
use serde_json::{Value, json};
use strata_protocol::permission::PermissionMode;

use super::input::parse;
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The EnterPlanMode tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnterPlanMode;

/// The ExitPlanMode tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExitPlanMode;

const ENTER_DESCRIPTION: &str = "Switches this session to plan mode, to explore the code \
and design an approach before changing anything.\n\
\n\
- Use it for non-trivial work where the approach is unclear, several files change, or the \
user should agree on the design first. Skip it for small, obvious changes.\n\
- In plan mode only read-only tools run (Read, Glob, Grep, read-only Bash); edits and \
commands that change things are denied.\n\
- When the plan is ready, present it with ExitPlanMode for the user's approval.";

const EXIT_DESCRIPTION: &str = "Presents your plan to the user for approval and, once they \
approve it, leaves plan mode so you can carry it out.\n\
\n\
- Call it only in plan mode, when the plan is complete: the concrete steps, the files to \
change, and how the result will be checked.\n\
- Pass the plan as markdown in `plan`; it is saved to the session's plan file. Without \
`plan`, the plan file you wrote is presented.\n\
- Use it for planning implementation work, not for research questions: answer those \
directly.\n\
- If the user rejects the plan, revise it with their feedback and present it again.";

#[derive(Debug, Deserialize)]
struct EnterInput {}

#[derive(Debug, Deserialize)]
struct ExitInput {
    #[serde(default)]
    plan: Option<String>,
}

/// A plan slug for `session`: three words, stable for the session id, named like the
/// reference agent's plan files (`adjective-adjective-noun`).
pub(crate) fn plan_slug(session: uuid::Uuid) -> String {
    const FIRST: [&str; 16] = [
        "amber", "brisk", "calm", "deft", "eager", "fair", "gentle", "hardy", "ivory", "jolly",
        "keen", "lucid", "mellow", "noble", "quiet", "rapid",
    ];
    const SECOND: [&str; 16] = [
        "drifting",
        "gliding",
        "humming",
        "leaping",
        "meandering",
        "nesting",
        "orbiting",
        "pacing",
        "rambling",
        "sailing",
        "soaring",
        "spinning",
        "strolling",
        "turning",
        "wading",
        "winding",
    ];
    const NOUN: [&str; 16] = [
        "acorn", "beacon", "canyon", "delta", "ember", "fjord", "glacier", "harbor", "island",
        "lagoon", "meadow", "nebula", "orchard", "prairie", "quarry", "river",
    ];
    let b = session.as_bytes();
    format!(
        "{}-{}-{}",
        FIRST[usize::from(b[0] % 16)],
        SECOND[usize::from(b[1] % 16)],
        NOUN[usize::from(b[2] % 16)]
    )
}

impl Tool for EnterPlanMode {
    fn name(&self) -> &'static str {
        "EnterPlanMode"
    }

    fn description(&self) -> &'static str {
        ENTER_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    // Entering plan mode only takes permissions away: no prompt is needed.
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        parse::<EnterInput>("EnterPlanMode", input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            if let Err(e) = self.validate(&call.input) {
                return e;
            }
            let message = "Entered plan mode. Explore the code with read-only tools and \
                           design the approach; do not change files yet. When the plan is \
                           ready, present it with ExitPlanMode for the user's approval.";
            if ctx.hooks.permission_mode() == Some(PermissionMode::Plan) {
                return ToolOutput::ok(format!("Already in plan mode. {message}"))
                    .with_detail(json!({"message": "Already in plan mode."}));
            }
            match ctx.hooks.set_permission_mode(PermissionMode::Plan) {
                Ok(()) => ToolOutput::ok(message).with_detail(json!({"message": message})),
                Err(e) => ToolOutput::error(format!("Could not enter plan mode: {e}")),
            }
        })
    }
}

fn check_exit(input: &Value) -> Result<Option<String>, ToolOutput> {
    let parsed: ExitInput = parse("ExitPlanMode", input)?;
    Ok(parsed.plan.filter(|p| !p.trim().is_empty()))
}

impl Tool for ExitPlanMode {
    fn name(&self) -> &'static str {
        "ExitPlanMode"
    }

    fn description(&self) -> &'static str {
        EXIT_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {
                    "type": "string",
                    "description": "The plan to present, as markdown (saved to the session's plan file)"
                }
            }
        })
    }

    // Runs in plan mode (it is how plan mode ends); the approval is the user's answer.
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    fn asks_the_user(&self) -> bool {
        true
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check_exit(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let given = match check_exit(&call.input) {
                Ok(p) => p,
                Err(e) => return e,
            };
            let mode = ctx.hooks.permission_mode();
            // Called outside plan mode (and not just switched out of it by the approval's
            // own `setMode`, which is applied before this runs) there is nothing to leave.
            let Some(file) = ctx.hooks.plan_file() else {
                return ToolOutput::error(
                    "ExitPlanMode needs a session to save the plan in; this run has none.",
                );
            };
            let plan = match given {
                Some(plan) => {
                    if let Err(e) = save(&file, &plan) {
                        return ToolOutput::error(format!(
                            "The plan could not be saved to {}: {e}. Nothing changed; still \
                             in plan mode.",
                            file.display()
                        ));
                    }
                    plan
                }
                None => match std::fs::read_to_string(&file) {
                    Ok(p) if !p.trim().is_empty() => p,
                    _ => {
                        return ToolOutput::error(format!(
                            "Invalid input for ExitPlanMode: no plan to present. Pass the plan \
                             as markdown in `plan` (or write it to {} first).",
                            file.display()
                        ));
                    }
                },
            };
            if mode == Some(PermissionMode::Plan)
                && let Err(e) = ctx.hooks.set_permission_mode(PermissionMode::Default)
            {
                return ToolOutput::error(format!("Could not leave plan mode: {e}"));
            }
            let path = file.display().to_string();
            ToolOutput::ok(format!(
                "The user approved your plan. You can now start carrying it out; keep the todo \
                 list current as you work.\n\nThe plan was saved to: {path}\n\n## Approved plan\n\
                 {plan}"
            ))
            .with_detail(json!({"plan": plan, "isAgent": false, "filePath": path}))
        })
    }
}

fn save(file: &std::path::Path, plan: &str) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(file, plan)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
