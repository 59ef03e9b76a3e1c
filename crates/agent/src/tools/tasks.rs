//! `TaskOutput` and `TaskStop`: reading and stopping the session's background tasks —
//! shell commands started by Bash with `run_in_background` ([`super::bash::background`])
//! and background agents (`crate::agents`).
//!
//! Names and inputs follow the reference agent's transcripts: `TaskOutput` takes
//! `task_id`, `block` (wait for the task to end, default true) and `timeout`
//! (milliseconds); `TaskStop` takes `task_id` (`shell_id`, the older name, is read too).
//! Both only reach tasks of their own session, so neither needs a permission of its own
//! ([`Tool::needs_permission`] is false: only a deny rule naming them stops them, plan
//! mode included). TaskOutput only reads; TaskStop changes something (it ends
//! processes), so it is not read-only and is not run concurrently with other calls.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::bash::background::{ShellEnd, ShellSnapshot, describe_end};
use super::input::{invalid, parse};
use super::output::cap;
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// TaskOutput's default wait when `block` is true (30 s).
pub(crate) const DEFAULT_TASK_OUTPUT_WAIT_MS: u64 = 30_000;
/// The longest wait TaskOutput accepts (10 minutes).
pub(crate) const MAX_TASK_OUTPUT_WAIT_MS: u64 = 600_000;

const NO_SESSION: &str =
    "Background tasks need a session; this run has none, so there are no tasks to reach.";

/// Reads a background task's new output.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskOutput;

#[derive(Debug, Deserialize)]
struct TaskOutputInput {
    task_id: String,
    #[serde(default)]
    block: Option<bool>,
    #[serde(default)]
    timeout: Option<u64>,
}

impl TaskOutputInput {
    fn parse(input: &Value) -> Result<(Self, Option<Duration>), ToolOutput> {
        let parsed: Self = parse("TaskOutput", input)?;
        if parsed.task_id.trim().is_empty() {
            return Err(invalid("TaskOutput", "task_id", "must not be empty"));
        }
        let ms = parsed.timeout.unwrap_or(DEFAULT_TASK_OUTPUT_WAIT_MS);
        if ms > MAX_TASK_OUTPUT_WAIT_MS {
            return Err(invalid(
                "TaskOutput",
                "timeout",
                format!("must be at most {MAX_TASK_OUTPUT_WAIT_MS} milliseconds, got {ms}"),
            ));
        }
        let wait = parsed
            .block
            .unwrap_or(true)
            .then(|| Duration::from_millis(ms));
        Ok((parsed, wait))
    }
}

fn status_name(end: Option<&ShellEnd>) -> &'static str {
    match end {
        None => "running",
        Some(ShellEnd::Exited(0)) => "completed",
        Some(ShellEnd::Exited(_) | ShellEnd::Failed(_)) => "failed",
        Some(ShellEnd::Killed) => "killed",
    }
}

fn render(snapshot: &ShellSnapshot, waited: bool, id: &str, ctx: &ToolContext) -> ToolOutput {
    let status = status_name(snapshot.end.as_ref());
    let retrieval = match (&snapshot.end, waited) {
        (Some(_), _) => "success",
        (None, true) => "timeout",
        (None, false) => "not_ready",
    };
    let mut output = ctx.hooks.redact(&snapshot.new_output).into_owned();
    if snapshot.dropped > 0 {
        output = format!(
            "[{} earlier bytes of new output are not shown (more arrived than is kept in \
             memory); the complete output is in {}]\n{output}",
            snapshot.dropped,
            snapshot.output_path.display()
        );
    }
    let mut parts = vec![
        format!("<retrieval_status>{retrieval}</retrieval_status>"),
        format!("<task_id>{}</task_id>", snapshot.id),
        "<task_type>local_bash</task_type>".to_owned(),
        format!("<status>{status}</status>"),
    ];
    let exit_code = match &snapshot.end {
        Some(ShellEnd::Exited(code)) => Some(*code),
        _ => None,
    };
    if let Some(code) = exit_code {
        parts.push(format!("<exit_code>{code}</exit_code>"));
    }
    if let Some(ShellEnd::Failed(why)) = &snapshot.end {
        parts.push(format!("<error>{why}</error>"));
    }
    parts.push(if output.is_empty() {
        "<output>(no new output)</output>".to_owned()
    } else {
        format!("<output>\n{}\n</output>", output.trim_end_matches('\n'))
    });
    let capped = cap(parts.join("\n\n"), id, ctx.hooks.as_ref());
    let mut task = json!({
        "task_id": snapshot.id,
        "task_type": "local_bash",
        "status": status,
        "description": snapshot.description,
        "output": output,
    });
    if let Some(code) = exit_code {
        task["exitCode"] = json!(code);
    }
    ToolOutput::ok(capped.text).with_detail(json!({
        "retrieval_status": retrieval,
        "task": task,
    }))
}

/// What TaskOutput says of a background agent: its status and, once it ended, its
/// answer.
fn render_agent(
    snapshot: &crate::agents::AgentSnapshot,
    waited: bool,
    id: &str,
    ctx: &ToolContext,
) -> ToolOutput {
    use strata_protocol::sdk::TaskEndStatus;
    let (retrieval, status) = match (&snapshot.end, waited) {
        (Some(end), _) => (
            "success",
            match end.status {
                TaskEndStatus::Completed => "completed",
                TaskEndStatus::Failed => "failed",
                TaskEndStatus::Stopped => "killed",
            },
        ),
        (None, true) => ("timeout", "running"),
        (None, false) => ("not_ready", "running"),
    };
    let output = snapshot
        .end
        .as_ref()
        .map(|e| e.result.clone())
        .unwrap_or_default();
    let parts = [
        format!("<retrieval_status>{retrieval}</retrieval_status>"),
        format!("<task_id>{}</task_id>", snapshot.id),
        "<task_type>local_agent</task_type>".to_owned(),
        format!("<status>{status}</status>"),
        if output.is_empty() {
            format!(
                "<output>(still working; its transcript is {})</output>",
                snapshot.transcript.display()
            )
        } else {
            format!("<output>\n{}\n</output>", output.trim_end())
        },
    ];
    let capped = cap(parts.join("\n\n"), id, ctx.hooks.as_ref());
    ToolOutput::ok(capped.text).with_detail(json!({
        "retrieval_status": retrieval,
        "task": {
            "task_id": snapshot.id,
            "task_type": "local_agent",
            "status": status,
            "description": snapshot.description,
            "output": output,
        },
    }))
}

impl Tool for TaskOutput {
    fn name(&self) -> &'static str {
        "TaskOutput"
    }

    fn description(&self) -> &'static str {
        "Reads the output of a background task (a Bash command started with \
         run_in_background): the output that arrived since the previous read, its status \
         and, once it ended, its exit code.\n\
         \n\
         - `task_id`: the id the Bash call returned.\n\
         - `block` (default true): wait until the task ends, at most `timeout` milliseconds \
         (default 30000, at most 600000); with false the call returns at once.\n\
         - The complete output is also in the task's output file, named when it started."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The task's id"},
                "block": {"type": "boolean", "description": "Wait for the task to end (default true)"},
                "timeout": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_TASK_OUTPUT_WAIT_MS,
                    "description": "Longest wait in milliseconds (default 30000)"
                }
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn needs_permission(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        TaskOutputInput::parse(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let (input, wait) = match TaskOutputInput::parse(&call.input) {
                Ok(parsed) => parsed,
                Err(err) => return err,
            };
            if let Some(agents) = ctx.hooks.agents() {
                let id = input.task_id.trim();
                let read = tokio::select! {
                    read = agents.read_agent(id, wait) => read,
                    () = ctx.cancel.cancelled() => agents.read_agent(id, None).await,
                };
                if let Some(snapshot) = read {
                    return render_agent(&snapshot, wait.is_some(), &call.id, ctx);
                }
                if let Some(path) = agents.evicted_output(id) {
                    return ToolOutput::error(format!(
                        "Agent {id} ended and was removed from the task list afterwards;                          its answer is in {}.",
                        path.display()
                    ));
                }
            }
            let Some(tasks) = ctx.hooks.shell_tasks() else {
                return ToolOutput::error(NO_SESSION);
            };
            let read = tokio::select! {
                read = tasks.read(input.task_id.trim(), wait) => read,
                // An interrupted turn stops waiting, not the task.
                () = ctx.cancel.cancelled() => tasks.read(input.task_id.trim(), None).await,
            };
            match read {
                Ok(snapshot) => render(&snapshot, wait.is_some(), &call.id, ctx),
                Err(e) => ToolOutput::error(e.to_string()),
            }
        })
    }
}

/// Stops a background task and everything it started.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskStop;

#[derive(Debug, Deserialize)]
struct TaskStopInput {
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    shell_id: Option<String>,
}

impl TaskStopInput {
    fn parse(input: &Value) -> Result<String, ToolOutput> {
        let parsed: Self = parse("TaskStop", input)?;
        parsed
            .task_id
            .or(parsed.shell_id)
            .map(|id| id.trim().to_owned())
            .filter(|id| !id.is_empty())
            .ok_or_else(|| ToolOutput::error("Invalid input for TaskStop: missing field `task_id`"))
    }
}

impl Tool for TaskStop {
    fn name(&self) -> &'static str {
        "TaskStop"
    }

    fn description(&self) -> &'static str {
        "Stops a background task of this session (a Bash command started with \
         run_in_background): its process group gets SIGTERM, and whatever it started is \
         killed if it has not exited after 2 seconds.\n\
         \n\
         - `task_id`: the id the Bash call returned."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The id of the task to stop"}
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }

    fn needs_permission(&self, _input: &Value) -> bool {
        false
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        TaskStopInput::parse(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let id = match TaskStopInput::parse(&call.input) {
                Ok(id) => id,
                Err(err) => return err,
            };
            if let Some(stopped) = match ctx.hooks.agents() {
                Some(agents) => agents.stop_agent(&id).await,
                None => None,
            } {
                return match stopped {
                    Ok(end) => ToolOutput::ok(format!(
                        "Agent {id} {}; its answer so far is in the task notification.",
                        crate::agents::describe_end(&end)
                    ))
                    .with_detail(json!({
                        "message": format!("Successfully stopped task: {id}"),
                        "task_id": id,
                        "task_type": "local_agent",
                    })),
                    Err(e) => ToolOutput::error(e.to_string()),
                };
            }
            let Some(tasks) = ctx.hooks.shell_tasks() else {
                return ToolOutput::error(NO_SESSION);
            };
            match tasks.stop(&id).await {
                Ok(end) => ToolOutput::ok(format!(
                    "Task {id} {}; none of its processes is left.",
                    describe_end(&end)
                ))
                .with_detail(json!({
                    "message": format!("Successfully stopped task: {id}"),
                    "task_id": id,
                    "task_type": "local_bash",
                })),
                Err(e) => ToolOutput::error(e.to_string()),
            }
        })
    }
}
