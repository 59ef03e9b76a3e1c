//! The Bash tool: runs a command with `bash -c` in the session's working directory.
//!
//! - The working directory is shared by every call of the session: a `cd` persists while
//!   it stays in the project or an additional working directory; one that leaves them is
//!   undone after the command, and the result says so.
//! - `timeout` (milliseconds) defaults to 2 minutes, at most 10; on timeout or when the
//!   turn is cancelled, the command and every process it started are killed, `setsid`
//!   and `nohup` ones included (the command runs under a supervisor: [`crate::procs`]).
//!   Background processes that release the output run on until strata exits.
//! - stdout and stderr are captured (bounded in memory); the result keeps 30,000
//!   characters inline and offloads the whole text through
//!   [`ToolHooks::store_large_output`](super::ToolHooks::store_large_output) when longer.
//! - A non-zero exit code makes the result an error that starts with `Exit code N`.
//! - The process gets strata's environment without the credential variables, plus the
//!   context's environment overlay (without them either): [`crate::secrets`].
//!
//! The command-line lexer ([`shell`]), what a line runs through wrappers and shell strings
//! ([`analysis`]) and the read-only classifier ([`readonly`]) live here because they
//! describe shell commands; the permission rules use them too.

pub mod analysis;
mod ansi_c;
pub mod background;
mod process;
pub mod readonly;
pub mod shell;
mod wrappers;

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use self::process::{Capture, Ended, Leftovers, MAX_CAPTURE_BYTES};
use super::input::{invalid, parse};
use super::output::{MAX_INLINE_OUTPUT_CHARS, cap, char_boundary_after};
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The default timeout (2 minutes).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The largest timeout a call may ask for (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// The Bash tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bash;

#[derive(Debug, Deserialize)]
struct BashInput {
    command: String,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    run_in_background: Option<bool>,
}

impl BashInput {
    fn parse(input: &Value) -> Result<(Self, Duration), ToolOutput> {
        let parsed: Self = parse("Bash", input)?;
        if parsed.command.trim().is_empty() {
            return Err(invalid("Bash", "command", "must not be empty"));
        }
        let ms = parsed.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
        if ms == 0 || ms > MAX_TIMEOUT_MS {
            return Err(invalid(
                "Bash",
                "timeout",
                format!("must be between 1 and {MAX_TIMEOUT_MS} milliseconds, got {ms}"),
            ));
        }
        Ok((parsed, Duration::from_millis(ms)))
    }
}

const DESCRIPTION: &str = "Runs a bash command and returns its output (stdout, then stderr).\n\
\n\
- The working directory persists between calls: `cd` moves it for later commands (within \
the project and its additional directories). Prefer \
absolute paths.\n\
- `timeout` is in milliseconds: default 120000 (2 minutes), at most 600000 (10 minutes). On \
timeout the command and every process it started are killed.\n\
- Output longer than 30000 characters is cut; the full output is saved to a file whose path \
the result names.\n\
- A non-zero exit status makes the result an error that starts with `Exit code N`.\n\
- Chain dependent commands with `&&`; use `;` only when later commands should run even if \
earlier ones fail.\n\
- To find files use Glob, to search contents use Grep, to read files use Read: they are \
faster and need fewer permissions.\n\
- `description`: a few words saying what the command does, shown to the user.\n\
- `run_in_background: true` starts the command as a background task and returns its id at \
once (no timeout applies); read its output with TaskOutput and stop it with TaskStop. Use it \
for servers and long builds, not with a trailing `&`.";

impl Tool for Bash {
    fn name(&self) -> &'static str {
        "Bash"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run"},
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_MS,
                    "description": "Timeout in milliseconds (default 120000, max 600000)"
                },
                "description": {
                    "type": "string",
                    "description": "What the command does, in 5-10 words"
                },
                "run_in_background": {
                    "type": "boolean",
                    "description": "Run the command as a background task (read it with TaskOutput, stop it with TaskStop)"
                }
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, input: &Value) -> bool {
        input
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(readonly::is_read_only_command)
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        input
            .get("command")
            .and_then(Value::as_str)
            .map(|c| PermissionSubject::Command(c.to_owned()))
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        BashInput::parse(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match BashInput::parse(&call.input) {
                Ok((input, _)) if input.run_in_background == Some(true) => {
                    run_in_background(&call.id, &input, ctx)
                }
                Ok((input, timeout)) => run_bash(&call.id, &input.command, timeout, ctx).await,
                Err(err) => err,
            }
        })
    }
}

/// Whether `dir` is the project root, one of the additional working directories, or
/// inside one (the shared containment test: compared where they lead, so a link into
/// the project counts as inside).
fn inside_working_dirs(dir: &std::path::Path, ctx: &ToolContext) -> bool {
    let extra = ctx.working_dirs.get();
    std::iter::once(&ctx.project_root)
        .chain(extra.iter())
        .any(|root| strata_config::paths::resolves_within(dir, root))
}

/// Starts the command as a background shell task of the session.
fn run_in_background(id: &str, input: &BashInput, ctx: &ToolContext) -> ToolOutput {
    let Some(tasks) = ctx.hooks.shell_tasks() else {
        return ToolOutput::error(
            "Background commands need a session to keep their task and output in; this run \
             has none. Run the command in the foreground (raise `timeout` up to 600000 ms if \
             it is slow).",
        );
    };
    let mut cwd = ctx.cwd();
    if !cwd.is_dir() {
        cwd = ctx.project_root.clone();
        ctx.set_cwd(cwd.clone());
    }
    debug_panic(&input.command);
    let env = ctx.secrets.command_env(&ctx.env.snapshot());
    // The output file is a transcript side file: secrets are redacted before it is
    // written, as in every tool result.
    let redactor = std::sync::Arc::new(ctx.secrets.redactor(&ctx.env.snapshot()));
    match tasks.start(
        &input.command,
        input.description.as_deref(),
        &cwd,
        &env,
        redactor,
        &ctx.owner,
        Some(id),
    ) {
        Ok(started) => ToolOutput::ok(format!(
            "Command running in background with ID: {}. Output is being written to: {}",
            started.id,
            started.output_path.display()
        ))
        .with_detail(json!({
            "stdout": "",
            "stderr": "",
            "interrupted": false,
            "isImage": false,
            "noOutputExpected": false,
            "backgroundTaskId": started.id,
        })),
        Err(message) => ToolOutput::error(message),
    }
}

async fn run_bash(id: &str, command: &str, timeout: Duration, ctx: &ToolContext) -> ToolOutput {
    let mut notes = Vec::new();
    let mut cwd = ctx.cwd();
    if !cwd.is_dir() {
        notes.push(format!(
            "[The working directory {} no longer exists; the command ran in the project root \
             {} instead.]",
            cwd.display(),
            ctx.project_root.display()
        ));
        cwd = ctx.project_root.clone();
        ctx.set_cwd(cwd.clone());
    }
    debug_panic(command);
    let env = ctx.secrets.command_env(&ctx.env.snapshot());
    let outcome = match process::run(command, &cwd, &env, timeout, &ctx.cancel).await {
        Ok(outcome) => outcome,
        Err(err) => {
            return ToolOutput::error(format!("Could not start bash in {}: {err}", cwd.display()));
        }
    };
    if let Some(dir) = &outcome.final_cwd
        && *dir != cwd
    {
        if inside_working_dirs(dir, ctx) {
            ctx.set_cwd(dir.clone());
        } else {
            // A `cd` out of the project would make every later relative path and
            // "inside the project" judgement about somewhere else.
            notes.push(format!(
                "[The command left the shell in {}, outside the project: later commands \
                 start in {} again.]",
                dir.display(),
                cwd.display()
            ));
        }
    }

    // Redacted before anything cuts them (the inline cap, the detail's clip).
    let redact = |s: String| ctx.hooks.redact(&s).into_owned();
    let stdout = redact(text_of(&outcome.stdout, "stdout"));
    let stderr = redact(text_of(&outcome.stderr, "stderr"));
    let mut body: Vec<&str> = Vec::new();
    if !stdout.is_empty() {
        body.push(&stdout);
    }
    if !stderr.is_empty() {
        body.push(&stderr);
    }
    match outcome.leftovers {
        Leftovers::None => {}
        Leftovers::Stopped { confirmed: true } => notes.push(
            "[Background processes still holding the command's output were stopped when it \
             finished.]"
                .to_owned(),
        ),
        Leftovers::Stopped { confirmed: false } => notes.push(format!(
            "[Background processes still holding the command's output were sent SIGKILL when \
             it finished, but had not all exited {} s later.]",
            process_stop_wait_secs()
        )),
        Leftovers::Running(n) => notes.push(format!(
            "[{n} background process{} started by the command {} still running (output not \
             captured); strata stops {} when it exits.]",
            if n == 1 { "" } else { "es" },
            if n == 1 { "is" } else { "are" },
            if n == 1 { "it" } else { "them" },
        )),
    }
    let (header, is_error, interrupted, exit_code) = match outcome.ended {
        Ended::Exited(0) => (None, false, false, Some(0)),
        Ended::Exited(code) => (Some(format!("Exit code {code}")), true, false, Some(code)),
        Ended::Signaled(sig) => (
            Some(format!("Exit code {} (killed by signal {sig})", 128 + sig)),
            true,
            false,
            Some(128 + sig),
        ),
        Ended::TimedOut { confirmed } => (
            Some(format!(
                "Command timed out after {} ms; {}",
                timeout.as_millis(),
                stopped(confirmed)
            )),
            true,
            false,
            None,
        ),
        Ended::Cancelled { confirmed } => (
            Some(format!(
                "Command interrupted by the user; {}",
                stopped(confirmed)
            )),
            true,
            true,
            None,
        ),
        Ended::Lost => (
            Some(format!(
                "The command's supervisor process was killed before the command ended; \
                 processes the command started may still be running{}.",
                if crate::procs::adopting() {
                    " (strata stops them when it exits)"
                } else {
                    ""
                }
            )),
            true,
            false,
            None,
        ),
    };
    let mut parts: Vec<&str> = header.iter().map(String::as_str).collect();
    parts.extend(body);
    parts.extend(notes.iter().map(String::as_str));
    let capped = cap(parts.join("\n"), id, ctx.hooks.as_ref());

    let mut detail = json!({
        "stdout": clip(&stdout),
        "stderr": clip(&stderr),
        "interrupted": interrupted,
        "isImage": false,
        "timedOut": matches!(outcome.ended, Ended::TimedOut { .. }),
    });
    if let Some(code) = exit_code {
        detail["exitCode"] = json!(code);
    }
    if let Some(path) = &capped.stored_at {
        detail["fullOutputPath"] = json!(path);
    }
    ToolOutput {
        content: capped.text,
        is_error,
        detail: Some(detail),
        ..ToolOutput::default()
    }
}

/// What a stop did, said only as far as it is known.
fn stopped(confirmed: bool) -> String {
    if confirmed {
        "it and every process it started were killed.".to_owned()
    } else {
        format!(
            "it and every process it started were sent SIGKILL, but had not all exited {} s \
             later.",
            process_stop_wait_secs()
        )
    }
}

fn process_stop_wait_secs() -> u64 {
    crate::procs::STOP_WAIT.as_secs()
}

/// Debug builds only: a command equal to `STRATA_DEBUG_PANIC_COMMAND` panics instead of
/// running, so the process tests can prove that a panic of strata leaves no process of
/// the session behind. Release builds never read the variable.
fn debug_panic(command: &str) {
    if cfg!(debug_assertions)
        && std::env::var("STRATA_DEBUG_PANIC_COMMAND").is_ok_and(|c| !c.is_empty() && c == command)
    {
        panic!("STRATA_DEBUG_PANIC_COMMAND: a test asked strata to panic here");
    }
}

/// A captured stream as text: invalid UTF-8 replaced, trailing newlines removed, and a
/// note when the in-memory bound dropped bytes.
fn text_of(c: &Capture, stream: &str) -> String {
    let mut s = String::from_utf8_lossy(&c.bytes).into_owned();
    let trimmed = s.trim_end_matches(['\n', '\r']).len();
    s.truncate(trimmed);
    if c.dropped > 0 {
        s.push_str(&format!(
            "\n[{} more bytes of {stream} were discarded: only the first {} MiB are kept.]",
            c.dropped,
            MAX_CAPTURE_BYTES / (1024 * 1024)
        ));
    }
    s
}

/// The transcript detail keeps at most the inline cap of each stream.
fn clip(s: &str) -> &str {
    match char_boundary_after(s, MAX_INLINE_OUTPUT_CHARS) {
        Some(cut) => &s[..cut],
        None => s,
    }
}
