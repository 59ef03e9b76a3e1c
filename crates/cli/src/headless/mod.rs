//! Headless mode: `strata -p` for scripts, CI jobs and SDK clients (which start it
//! without `-p`).
//!
//! One run opens (or resumes) a session through the engine, runs the prompt, prints, and
//! exits 0, or 1 when the run ended in error (`is_error`). What is printed follows the
//! reference agent's SDK stream so its clients work unchanged:
//!
//! - `--output-format text`: the final result's text;
//! - `--output-format json`: the one `result` object;
//! - `--output-format stream-json` (with `--verbose`): `system/init`, then every message
//!   the engine emits (`assistant`, `user`, `system/status`, `result`), one JSON object per
//!   line, each flushed as soon as it exists ([`output`]).
//!
//! With `--input-format stream-json`, stdin carries user messages and control requests,
//! read concurrently with the running turn ([`input`], [`control`]); permission prompts
//! go to the client as `can_use_tool` requests when it asked for them
//! ([`prompter`]); end of input ends the session once the queued prompts ran.
//!
//! The official Agent SDKs start strata this way without `-p` ([`implied`]) and pass
//! flags of their own ([`sdk_flags`]: honoured, or reported once on stderr and in
//! `system/init`); hook callbacks they register at `initialize` are called with
//! `hook_callback` requests ([`callbacks`]); `session_state_changed` lines come when they
//! ask ([`states`]).
//!
//! Ctrl-C (SIGINT), SIGTERM and SIGHUP interrupt the running turn through its
//! cancellation token: the engine records the interruption and the session stays
//! resumable; the process then exits with code 128 + the signal. A second signal exits
//! at once ([`crate::signals`]; every exit stops the tools' processes first).
//!
//! Decisions worth knowing:
//! - with a prompt argument stdin is not read, so a script whose stdin stays open never
//!   hangs; without one the whole of stdin is the prompt (`git diff | strata -p`);
//! - `--permission-prompt-tool stdio` (the reference SDKs' signal that their user answers
//!   permission prompts) is the only prompt tool; without it, calls that need approval
//!   are denied and listed in `permission_denials`.

mod callbacks;
mod control;
pub(crate) mod demo;
mod input;
mod output;
mod prompter;
pub(crate) mod provider;
pub(crate) mod sdk_flags;
mod session;
mod states;

use std::fmt;
use std::io::{IsTerminal as _, Read as _};

use std::path::Path;
use strata_agent::engine::ResumeTarget;
use strata_agent::permissions::{LaunchFlags, PermissionLaunch};

use strata_config::sources::INLINE_FLAG_LABEL;
use strata_config::{ConfigError, FlagSettings, SettingsFiles, SettingsLocations, paths};

use crate::args::{AgentArgs, InputFormat, OutputFormat};
use crate::exit::Failure;

/// Where the prompts come from.
pub(crate) enum Prompts {
    /// One prompt (argument or stdin text).
    One(String),
    /// `--input-format stream-json`: user messages on stdin.
    Stream,
}

/// Everything a run needs, checked.
pub(crate) struct Setup {
    pub(crate) output: OutputFormat,
    pub(crate) prompts: Prompts,
    pub(crate) prompts_to_client: bool,
    pub(crate) provider: std::sync::Arc<dyn strata_agent::provider::Provider>,
    pub(crate) cwd: std::path::PathBuf,
    pub(crate) config_dir: std::path::PathBuf,
    pub(crate) model: Option<String>,
    pub(crate) permission: PermissionLaunch,
    pub(crate) settings_flag: Option<String>,
    /// `--mcp-config` values.
    pub(crate) mcp_config: Vec<String>,
    /// `--strict-mcp-config`.
    pub(crate) strict_mcp_config: bool,
    pub(crate) resume: Option<ResumeTarget>,
    pub(crate) fork_session: bool,
    pub(crate) max_turns: Option<u32>,
    pub(crate) verbose: bool,
    /// `--replay`'s argument, to label the run as a replay.
    pub(crate) replay: Option<String>,
    /// The settings' `apiKeyHelper`, when the provider takes its key from it; attached
    /// to the session's store once it is open.
    pub(crate) key_helper: Option<std::sync::Arc<strata_agent::provider::ApiKeyHelper>>,
    /// What the SDK flags ask for.
    pub(crate) sdk: sdk_flags::SdkSetup,
    /// `--remote` or the settings' `remote` block: the NATS server the session is
    /// replicated on.
    pub(crate) remote: Option<strata_remote::RemoteOptions>,
}

/// Whether a run without `-p` is headless all the same: the official Agent SDKs start
/// the CLI with `--output-format stream-json --verbose --input-format stream-json` and no
/// `-p`; stream-json output with stdin not a terminal means the same (a program drives
/// it).
pub(crate) fn implied(args: &AgentArgs) -> bool {
    args.input_format == InputFormat::StreamJson
        || (args.output_format == OutputFormat::StreamJson && !std::io::stdin().is_terminal())
}

/// Runs `strata -p …`.
pub(crate) fn run(mut args: AgentArgs) -> anyhow::Result<()> {
    check_flags(&args)?;
    let sdk = sdk_flags::read(std::mem::take(&mut args.sdk))?;
    if !sdk.unsupported.is_empty() {
        warn(format_args!(
            "these flags are accepted but not honoured yet: {}",
            sdk.unsupported.join("; ")
        ));
    }
    let env = |name: &str| std::env::var(name).ok();
    let config_dir = paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?;
    if let Some(flag) = &args.settings {
        check_settings_flag(flag, &config_dir, &cwd)?;
    }
    let key_helper = provider::key_helper_from(
        args.provider,
        args.replay.as_deref(),
        &env,
        &config_dir,
        &cwd,
        args.settings.as_deref(),
        sdk.setting_sources.as_deref(),
    );
    let mut provider = provider::choose(
        args.provider,
        args.replay.as_deref(),
        &env,
        key_helper.clone(),
    )?;
    if let Some(fallback) = &sdk.fallback_model {
        if args.model.as_deref() == Some(fallback.as_str()) {
            return Err(Failure::usage(format!(
                "--fallback-model {fallback} is the same as --model: give a different model \
                 to fall back to"
            ))
            .into());
        }
        provider = std::sync::Arc::new(strata_agent::provider::FallbackProvider::new(
            provider,
            fallback.clone(),
        ));
    }
    let prompts = match args.input_format {
        InputFormat::StreamJson => Prompts::Stream,
        InputFormat::Text => Prompts::One(text_prompt(args.prompt)?),
    };
    let resume = match (args.resume, args.continue_session) {
        (Some(id), _) => Some(ResumeTarget::Session(id)),
        (None, true) => Some(ResumeTarget::Continue),
        (None, false) => None,
    };
    let remote = crate::remote::options(
        &config_dir,
        &cwd,
        args.settings.as_deref(),
        args.remote.as_deref(),
    )?;
    let mut allowed_tools = args.allowed_tools;
    if args.replay.as_deref() == Some(provider::DEMO) {
        allowed_tools.extend(demo::ALLOWED_TOOLS.map(String::from));
    }
    let setup = Setup {
        output: args.output_format,
        prompts,
        prompts_to_client: args.permission_prompt_tool.is_some(),
        provider,
        cwd,
        config_dir,
        model: args.model,
        permission: PermissionLaunch {
            flags: LaunchFlags {
                dangerously_skip_permissions: args.dangerously_skip_permissions,
                allow_dangerously_skip_permissions: args.allow_dangerously_skip_permissions,
            },
            mode: args.permission_mode.map(Into::into),
            allowed_tools,
            disallowed_tools: args.disallowed_tools,
            add_dirs: args.add_dirs,
        },
        settings_flag: args.settings,
        mcp_config: args.mcp_config,
        strict_mcp_config: args.strict_mcp_config,
        resume,
        fork_session: args.fork_session,
        max_turns: args.max_turns,
        verbose: args.verbose,
        replay: args.replay,
        key_helper,
        sdk,
        remote,
    };
    // Multi-threaded: tools run in parallel and the engine may block briefly in places;
    // two workers match the machines strata is measured on and start in well under a
    // millisecond.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime.block_on(session::run(setup));
    // Work the engine left behind (a tool's blocking task) must not keep the process
    // alive once the session is closed.
    runtime.shutdown_background();
    outcome
}

/// Flag combinations that cannot work, as usage errors (exit code 2).
fn check_flags(args: &AgentArgs) -> Result<(), Failure> {
    if args.output_format == OutputFormat::StreamJson && !args.verbose {
        return Err(Failure::usage(
            "--output-format stream-json with -p/--print needs --verbose (as in the reference \
             agent): add --verbose",
        ));
    }
    if args.input_format == InputFormat::StreamJson {
        if args.output_format != OutputFormat::StreamJson {
            return Err(Failure::usage(
                "--input-format stream-json needs --output-format stream-json (answers to \
                 control requests are JSON lines)",
            ));
        }
        if args.prompt.is_some() {
            return Err(Failure::usage(
                "--input-format stream-json reads its prompts from stdin as user messages: \
                 drop the prompt argument",
            ));
        }
    }
    if args.resume.is_some() && args.continue_session {
        return Err(Failure::usage(
            "--resume and --continue cannot be combined: --resume <id> picks a session, \
             --continue the newest one",
        ));
    }
    if args.resume.as_deref().is_some_and(|r| r.trim().is_empty()) {
        return Err(Failure::usage(
            "--resume needs a session id (or the path of its .jsonl) in headless mode; \
             `strata sessions list` shows them, and `strata -r` alone opens the picker in \
             the interactive UI",
        ));
    }
    if args.fork_session && args.resume.is_none() && !args.continue_session {
        return Err(Failure::usage(
            "--fork-session needs --resume <id> or --continue",
        ));
    }
    match args.permission_prompt_tool.as_deref() {
        None => {}
        Some("stdio") if args.input_format == InputFormat::StreamJson => {}
        Some("stdio") => {
            return Err(Failure::usage(
                "--permission-prompt-tool stdio needs --input-format stream-json: the answers \
                 to permission prompts come on stdin",
            ));
        }
        Some(other) => {
            return Err(Failure::usage(format!(
                "--permission-prompt-tool {other:?} is not supported: strata sends permission \
                 prompts over the control protocol only (--permission-prompt-tool stdio)"
            )));
        }
    }
    Ok(())
}

/// `--settings` that cannot be read or does not parse is an error (exit code 2), not a
/// warning: running without settings the user asked for (deny rules among them) would be
/// worse than not running. Settings files found on disk stay warnings, as everywhere.
pub(crate) fn check_settings_flag(
    flag: &str,
    config_dir: &Path,
    cwd: &Path,
) -> Result<(), Failure> {
    let locations = SettingsLocations::new(config_dir, &paths::project_root(cwd))
        .with_flag(FlagSettings::from_arg(flag));
    let flag_file = match &locations.flag {
        Some(FlagSettings::File(path)) => Some(path.clone()),
        _ => None,
    };
    let label = match &flag_file {
        Some(path) => path.display().to_string(),
        None => INLINE_FLAG_LABEL.to_owned(),
    };
    let merged = SettingsFiles::new(locations).load();
    let problem = merged.errors.iter().find(|e| match e {
        ConfigError::Parse(p) => p.file == label,
        ConfigError::Io { path, .. }
        | ConfigError::NotARegularFile { file: path, .. }
        | ConfigError::TooLarge { file: path, .. } => Some(path) == flag_file.as_ref(),
        _ => false,
    });
    match problem {
        Some(problem) => Err(Failure::usage(format!(
            "{problem}\nFix the --settings value (a settings file, or a JSON object) or drop it."
        ))),
        None => Ok(()),
    }
}

/// The prompt of a text-input run: the argument, else all of stdin.
fn text_prompt(argument: Option<String>) -> Result<String, Failure> {
    let prompt = match argument {
        Some(prompt) => prompt,
        None => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                return Err(Failure::usage(
                    "-p/--print needs a prompt: give it as an argument (strata -p \"…\") or \
                     pipe it on stdin",
                ));
            }
            let mut text = String::new();
            stdin
                .read_to_string(&mut text)
                .map_err(|e| Failure::failed(format!("cannot read the prompt from stdin: {e}")))?;
            // `echo q | strata -p` means the prompt `q`: the line end is the pipe's, not
            // the user's (inner line breaks and leading indentation stay).
            let kept = text.trim_end_matches(['\n', '\r']).len();
            text.truncate(kept);
            text
        }
    };
    if prompt.trim().is_empty() {
        return Err(Failure::usage(
            "the prompt is empty: give it as an argument (strata -p \"…\") or on stdin",
        ));
    }
    Ok(prompt)
}

/// Reports a problem that does not end the run on stderr.
#[allow(clippy::print_stderr)] // the one place headless mode talks to stderr
pub(crate) fn warn(message: fmt::Arguments<'_>) {
    eprintln!("strata: {message}");
}
