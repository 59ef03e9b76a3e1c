//! The flags the official Agent SDKs pass (`crate::args::SdkArgs`): what strata does with
//! each, read into what the session needs ([`SdkSetup`]), and the list of those it cannot
//! honour yet, which is reported once on stderr and in the `system/init` line
//! (`strata_unsupported_flags`) — never a refusal, since the SDKs pass several of them on
//! every start and would otherwise not work at all.
//!
//! | flag | what strata does |
//! |------|------------------|
//! | `--system-prompt`, `--system-prompt-file` | replace the system prompt (empty: the default) |
//! | `--append-system-prompt` | append to it |
//! | `--include-partial-messages` | `stream_event` lines with the raw API events |
//! | `--include-hook-events` | `system/hook_started` and `system/hook_response` lines |
//! | `--tools` | the only built-in tools offered (`""`: none; `default`: all) |
//! | `--session-id` | the new session's id (a UUID; an error otherwise) |
//! | `--max-budget-usd` | ends a turn with `error_max_budget_usd` once spent |
//! | `--setting-sources` | which of the user, project and local settings files load (`""`: none, as the SDKs mean it) |
//! | `--await-initialize` | accepted: strata answers `initialize` whenever it comes |
//! | `--mcp-config`, `--strict-mcp-config` | the session's MCP servers (`strata-mcp`; top-level flags) |
//! | `--max-thinking-tokens` | the thinking budget (`0`: off) |
//! | `--fallback-model` | an overloaded or unavailable model's request is sent once more, to it |
//! | `--no-session-persistence` | no transcript is written (the session cannot be resumed) |
//! | `--json-schema` | structured output: the answer validated, `structured_output` in the result |
//! | `--agents` | agent types for the Agent tool (JSON), over the agent files' |
//! | `--thinking`, `--thinking-display`, `--effort`, `--task-budget`, `--agent`, `--project-config-root`, `--plugin-dir-no-mcp`, `--resume-session-at`, `--resume-drops-turn`, `--session-mirror`, `--initialize-fields`, `--managed-settings[-in-initialize]`, `--permission-prompts`, `--channels` (the TypeScript SDK's newer flags) | reported |
//! | `--debug`, `--debug-to-stderr` | strata's debug events on stderr (a category filter is reported: not applied) |
//! | `--debug-file` | strata's debug events appended to the file |
//! | `--betas`, `--plugin-dir`, `--replay-user-messages` | reported |

use std::sync::Arc;

use strata_agent::structured::StructuredOutput;
use strata_config::SettingsSource;

use crate::args::SdkArgs;
use crate::exit::Failure;

/// What the SDK flags give the session.
#[derive(Debug, Default)]
pub(crate) struct SdkSetup {
    /// The system prompt that replaces the default (`Some("")`: the default).
    pub(crate) system_prompt: Option<String>,
    /// Appended to the system prompt.
    pub(crate) append_system_prompt: Option<String>,
    pub(crate) max_thinking_tokens: Option<u32>,
    pub(crate) include_partial_messages: bool,
    pub(crate) include_hook_events: bool,
    pub(crate) max_budget_usd: Option<f64>,
    pub(crate) session_id: Option<uuid::Uuid>,
    /// `--tools`: the only built-in tools offered (`None`: all).
    pub(crate) tools: Option<Vec<String>>,
    /// `--agents`: agent types as JSON (`{name: {description, prompt, …}}`).
    pub(crate) agents: Option<serde_json::Value>,
    /// `--fallback-model`.
    pub(crate) fallback_model: Option<String>,
    /// `--no-session-persistence`.
    pub(crate) no_session_persistence: bool,
    /// `--setting-sources`: the settings files that load (`None`: all).
    pub(crate) setting_sources: Option<Vec<SettingsSource>>,
    /// `--json-schema`: the schema every answer must match.
    pub(crate) structured_output: Option<Arc<StructuredOutput>>,
    /// The flags given that strata does not honour yet, as `--flag: why`.
    pub(crate) unsupported: Vec<String>,
}

/// Reads `args`; a value that cannot be meant (an unreadable prompt file, a session id
/// that is not a UUID, a negative budget) is a usage error naming the flag.
pub(crate) fn read(args: SdkArgs) -> Result<SdkSetup, Failure> {
    let mut unsupported = Vec::new();
    let mut report = |flag: &str, why: &str| unsupported.push(format!("{flag}: {why}"));
    let system_prompt = match (args.system_prompt, args.system_prompt_file) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(
                "--system-prompt and --system-prompt-file cannot be combined: give one",
            ));
        }
        (Some(prompt), None) => Some(prompt),
        (None, Some(file)) => Some(std::fs::read_to_string(&file).map_err(|e| {
            Failure::usage(format!("--system-prompt-file {file}: cannot read it: {e}"))
        })?),
        (None, None) => None,
    };
    let session_id = match args.session_id {
        Some(id) => Some(uuid::Uuid::parse_str(&id).map_err(|_| {
            Failure::usage(format!(
                "--session-id {id:?} is not a UUID (e.g. 123e4567-e89b-12d3-a456-426614174000)"
            ))
        })?),
        None => None,
    };
    if let Some(budget) = args.max_budget_usd
        && !(budget.is_finite() && budget > 0.0)
    {
        return Err(Failure::usage(format!(
            "--max-budget-usd {budget}: give a positive number of dollars"
        )));
    }
    let mut setting_sources = None;
    if let Some(sources) = &args.setting_sources {
        let mut listed: Vec<&str> = sources
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(bad) = listed
            .iter()
            .find(|s| !matches!(**s, "user" | "project" | "local"))
        {
            return Err(Failure::usage(format!(
                "--setting-sources: unknown source {bad:?}; use a comma-separated subset of \
                 user, project, local"
            )));
        }
        listed.sort_unstable();
        listed.dedup();
        setting_sources = Some(
            listed
                .iter()
                .filter_map(|s| match *s {
                    "user" => Some(SettingsSource::User),
                    "project" => Some(SettingsSource::Project),
                    "local" => Some(SettingsSource::Local),
                    _ => None,
                })
                .collect(),
        );
    }
    let simple: [(&str, bool, &str); 4] = [
        (
            "--betas",
            !args.betas.is_empty(),
            "no beta headers are sent",
        ),
        // `--debug`, `--debug-file` and `--debug-to-stderr` are honoured (main.rs's
        // logging); only the category filter is not.
        (
            "--debug",
            args.debug.as_deref().is_some_and(|f| !f.trim().is_empty()),
            "debug categories are not filtered: all of strata's debug events are written",
        ),
        (
            "--plugin-dir",
            !args.plugin_dir.is_empty(),
            "plugins are not built yet",
        ),
        (
            "--replay-user-messages",
            args.replay_user_messages,
            "user messages are not echoed",
        ),
    ];
    let not_built: [(&str, bool); 15] = [
        ("--thinking", args.thinking.is_some()),
        ("--thinking-display", args.thinking_display.is_some()),
        ("--effort", args.effort.is_some()),
        ("--task-budget", args.task_budget.is_some()),
        ("--agent", args.agent.is_some()),
        ("--project-config-root", args.project_config_root.is_some()),
        ("--plugin-dir-no-mcp", !args.plugin_dir_no_mcp.is_empty()),
        ("--resume-session-at", args.resume_session_at.is_some()),
        ("--resume-drops-turn", args.resume_drops_turn.is_some()),
        ("--session-mirror", args.session_mirror),
        ("--initialize-fields", args.initialize_fields.is_some()),
        (
            "--managed-settings-in-initialize",
            args.managed_settings_in_initialize,
        ),
        ("--managed-settings", args.managed_settings.is_some()),
        ("--permission-prompts", args.permission_prompts.is_some()),
        ("--channels", !args.channels.is_empty()),
    ];
    for (flag, given, why) in simple {
        if given {
            report(flag, why);
        }
    }
    for (flag, given) in not_built {
        if given {
            report(flag, "not built in this version of strata");
        }
    }
    let tools = tool_list(&args.tools);
    let agents = match &args.agents {
        Some(json) => Some(serde_json::from_str(json).map_err(|e| {
            Failure::usage(format!(
                "--agents: not JSON ({e}); give an object such as \
                 {{\"reviewer\": {{\"description\": \"…\", \"prompt\": \"…\"}}}}"
            ))
        })?),
        None => None,
    };
    let structured_output = match &args.json_schema {
        Some(text) => Some(Arc::new(StructuredOutput::parse(text).map_err(|e| {
            Failure::usage(format!(
                "--json-schema: {e}; give a JSON schema object such as \
                 '{{\"type\":\"object\",\"properties\":{{\"answer\":{{\"type\":\"string\"}}}}}}'"
            ))
        })?)),
        None => None,
    };
    Ok(SdkSetup {
        agents,
        no_session_persistence: args.no_session_persistence,
        setting_sources,
        fallback_model: args.fallback_model.filter(|m| !m.trim().is_empty()),
        structured_output,
        tools,
        system_prompt,
        append_system_prompt: args.append_system_prompt,
        max_thinking_tokens: args.max_thinking_tokens,
        include_partial_messages: args.include_partial_messages,
        include_hook_events: args.include_hook_events,
        max_budget_usd: args.max_budget_usd,
        session_id,
        unsupported,
    })
}

/// `--tools` values: names separated by commas or spaces; no flag or `default`: every
/// tool (`None`); an empty value: none.
fn tool_list(values: &[String]) -> Option<Vec<String>> {
    if values.is_empty() {
        return None;
    }
    let names: Vec<String> = values
        .iter()
        .flat_map(|v| v.split([',', ' ']))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    if names.iter().any(|n| n == "default") {
        return None;
    }
    Some(names)
}
