//! The command line: the top-level flags and the subcommands. Each subcommand's own
//! arguments live beside its implementation in [`crate::commands`].
//!
//! The agent's flags follow the reference agent's names and spellings (`-p/--print`,
//! `--output-format stream-json`, `--allowedTools`, …) because scripts, CI jobs and SDKs
//! already pass them; camelCase flags also accept their kebab-case spelling.

use clap::{Args, Parser, Subcommand, ValueEnum};
use strata_agent::provider::ProviderChoice;
use strata_protocol::permission::ExternalPermissionMode;

/// The environment variables strata reads, shown under `--help`.
const ENVIRONMENT: &str = "\
Environment:
  ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN  credentials for the Anthropic Messages API
  ANTHROPIC_BASE_URL, ANTHROPIC_MODEL      its address and default model
  ANTHROPIC_DEFAULT_OPUS_MODEL (…_SONNET_…, …_HAIKU_…)  what --model opus (sonnet, haiku) means
  OPENAI_API_KEY, OPENAI_BASE_URL          an OpenAI-compatible server (llama.cpp, Ollama, vLLM)
  OPENAI_MODEL                             its default model
  STRATA_CONFIG_DIR                        the config directory (default ~/.strata)
  STRATA_MAX_RETRIES                       retries of a failed model request (default 8)
  STRATA_LOG                               what reaches stderr (default warn; e.g. debug)";

/// strata: a terminal coding agent.
#[derive(Debug, Parser)]
// `args_conflicts_with_subcommands`: after an agent flag, a word is the prompt, never a
// subcommand (`strata -p sessions` asks about sessions).
#[command(
    name = "strata",
    version,
    // `-v` too: the Python SDK checks the CLI's version with `<cli> -v`.
    disable_version_flag = true,
    about,
    long_about = None,
    args_conflicts_with_subcommands = true,
    after_help = ENVIRONMENT
)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Running the agent (the default when no subcommand is given).
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
    /// Print the version.
    #[arg(short = 'v', long = "version", visible_short_alias = 'V', action = clap::ArgAction::Version)]
    version: (),
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Read and change settings and the global config.
    Config(crate::commands::config::ConfigArgs),
    /// List, show and rewind sessions.
    Sessions(crate::commands::sessions::SessionsArgs),
    /// Configure MCP servers.
    Mcp(crate::commands::mcp::McpArgs),
    /// Trust this project, so the hooks of its own settings files run.
    Trust(crate::commands::trust::TrustArgs),
    /// Serve the live web view of the sessions on a NATS server (`--remote`).
    Serve(crate::commands::serve::ServeArgs),
}

/// What `--output-format` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// The final answer's text.
    Text,
    /// The final `result` object.
    Json,
    /// Every message, one JSON object per line (needs `--verbose` with `-p`).
    StreamJson,
}

/// What `--input-format` reads from stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum InputFormat {
    /// The prompt, as plain text.
    Text,
    /// User messages and control requests, one JSON object per line.
    StreamJson,
}

/// The flags of an agent run (headless with `-p`).
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// The prompt (with `-p`; read from stdin when absent).
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt: Option<String>,

    /// Print the response and exit (headless mode, for scripts, CI and SDKs).
    #[arg(short = 'p', long = "print")]
    pub(crate) print: bool,

    /// What to print: the final text, the result object, or every message as JSON lines.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub(crate) output_format: OutputFormat,

    /// What stdin holds: the prompt as text, or JSON lines (user messages and control
    /// requests; needs `--output-format stream-json`).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub(crate) input_format: InputFormat,

    /// Verbose output (required for `--output-format stream-json` with `-p`).
    #[arg(long)]
    pub(crate) verbose: bool,

    /// The model for this session (else the resumed session's, the settings', or the
    /// provider's default).
    #[arg(long, value_name = "MODEL")]
    pub(crate) model: Option<String>,

    /// The permission mode to start in.
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(ExternalPermissionMode))]
    pub(crate) permission_mode: Option<ExternalPermissionMode>,

    /// Resume a session: its id, or the path of its .jsonl transcript (in the UI, no id
    /// opens the session picker).
    #[arg(short = 'r', long, value_name = "SESSION", num_args = 0..=1, default_missing_value = "")]
    pub(crate) resume: Option<String>,

    /// Continue the most recent session of this project.
    #[arg(short = 'c', long = "continue")]
    pub(crate) continue_session: bool,

    /// With --resume or --continue: continue in a copy with a new session id.
    #[arg(long)]
    pub(crate) fork_session: bool,

    /// Extra settings: a settings file, or a JSON object.
    #[arg(long, value_name = "FILE_OR_JSON")]
    pub(crate) settings: Option<String>,

    /// MCP servers: a file with an `mcpServers` object, or that JSON itself; repeatable.
    #[arg(long = "mcp-config", value_name = "FILE_OR_JSON", num_args = 1.., action = clap::ArgAction::Append)]
    pub(crate) mcp_config: Vec<String>,

    /// Use only the MCP servers of `--mcp-config` (none from `.mcp.json` or the config).
    #[arg(long = "strict-mcp-config")]
    pub(crate) strict_mcp_config: bool,

    /// Stop after this many model turns.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_turns: Option<u32>,

    /// Permission rules that allow tool calls (`Bash(git log:*)`, `Edit`, …); several
    /// per value (comma- or space-separated) or several values.
    #[arg(long = "allowedTools", visible_alias = "allowed-tools", value_name = "RULES", num_args = 1.., action = clap::ArgAction::Append)]
    pub(crate) allowed_tools: Vec<String>,

    /// Permission rules that deny tool calls (deny wins over allow).
    #[arg(long = "disallowedTools", visible_alias = "disallowed-tools", value_name = "RULES", num_args = 1.., action = clap::ArgAction::Append)]
    pub(crate) disallowed_tools: Vec<String>,

    /// More directories the tools may use as if inside the project.
    #[arg(long = "add-dir", value_name = "DIR", num_args = 1.., action = clap::ArgAction::Append)]
    pub(crate) add_dirs: Vec<String>,

    /// Start in bypassPermissions mode: no permission checks (sandboxes only).
    #[arg(long)]
    pub(crate) dangerously_skip_permissions: bool,

    /// Make bypassPermissions mode available without starting in it.
    #[arg(long)]
    pub(crate) allow_dangerously_skip_permissions: bool,

    /// Who answers permission prompts: `stdio` sends them to the stream-json client as
    /// `can_use_tool` control requests (what the reference SDKs pass).
    #[arg(long, value_name = "TOOL")]
    pub(crate) permission_prompt_tool: Option<String>,

    /// The model provider (else chosen from the environment).
    #[arg(long, value_name = "PROVIDER", value_parser = clap::value_parser!(ProviderChoice))]
    pub(crate) provider: Option<ProviderChoice>,

    /// Play back a recorded session instead of calling a model: a transcript (.jsonl), or
    /// `demo` for the demo session built into strata.
    #[arg(long, value_name = "TRANSCRIPT")]
    pub(crate) replay: Option<String>,

    /// Replicate the session on a NATS JetStream server (`nats://host:port`): its
    /// metadata and transcript; with `-r <id>`, a session this machine does not have is
    /// rebuilt from there.
    #[arg(long, value_name = "NATS_URL")]
    pub(crate) remote: Option<String>,

    /// The flags the official Agent SDKs pass ([`SdkArgs`]).
    #[command(flatten)]
    pub(crate) sdk: SdkArgs,
}

/// The flags the reference CLI accepts and the official Agent SDKs pass when they start
/// it (`claude-agent-sdk`, `@anthropic-ai/claude-agent-sdk`). Every one is accepted, in
/// both `--flag value` and `--flag=value` forms; what strata cannot honour yet is named
/// once on stderr and in `system/init` (`crate::headless::sdk_flags`), never refused.
#[derive(Debug, Args, Default)]
pub(crate) struct SdkArgs {
    /// Replace the system prompt (an empty value keeps the default, as the SDKs send it).
    #[arg(long, value_name = "PROMPT")]
    pub(crate) system_prompt: Option<String>,

    /// Replace the system prompt with a file's contents.
    #[arg(long, value_name = "FILE")]
    pub(crate) system_prompt_file: Option<String>,

    /// Append text to the system prompt.
    #[arg(long, value_name = "PROMPT")]
    pub(crate) append_system_prompt: Option<String>,

    /// With stream-json output: also emit `stream_event` lines, the model's raw stream
    /// events as they arrive.
    #[arg(long)]
    pub(crate) include_partial_messages: bool,

    /// With stream-json output: also emit hook lifecycle messages.
    #[arg(long)]
    pub(crate) include_hook_events: bool,

    /// Which settings files load: a comma-separated subset of user, project, local (empty:
    /// none of them).
    #[arg(long, value_name = "SOURCES")]
    pub(crate) setting_sources: Option<String>,

    /// Wait for the client's `initialize` control request before the `system/init` line.
    #[arg(long)]
    pub(crate) await_initialize: bool,

    /// The id of the new session (a UUID).
    #[arg(long, value_name = "UUID")]
    pub(crate) session_id: Option<String>,

    /// The model to use when the main one is overloaded.
    #[arg(long, value_name = "MODEL")]
    pub(crate) fallback_model: Option<String>,

    /// Stop with `error_max_budget_usd` once the session's cost reaches this many dollars.
    #[arg(long, value_name = "USD")]
    pub(crate) max_budget_usd: Option<f64>,

    /// The thinking budget of a response, in tokens.
    #[arg(long, value_name = "TOKENS")]
    pub(crate) max_thinking_tokens: Option<u32>,

    /// The tools the model may use (comma- or space-separated names; empty: none;
    /// `default`: all).
    #[arg(long, value_name = "TOOLS", num_args = 1.., action = clap::ArgAction::Append)]
    pub(crate) tools: Vec<String>,

    /// API beta headers to send (comma-separated).
    #[arg(long, value_name = "BETAS", num_args = 1.., action = clap::ArgAction::Append)]
    pub(crate) betas: Vec<String>,

    /// Debug output, optionally filtered by category (`--debug api,hooks`).
    #[arg(long, value_name = "FILTER", num_args = 0..=1, default_missing_value = "")]
    pub(crate) debug: Option<String>,

    /// Write debug output to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) debug_file: Option<String>,

    /// Debug output to stderr (what the TypeScript SDK passes with `DEBUG`).
    #[arg(long)]
    pub(crate) debug_to_stderr: bool,

    /// Do not write the session to disk (it cannot be resumed).
    #[arg(long)]
    pub(crate) no_session_persistence: bool,

    /// A JSON schema the final answer must match (structured output: `structured_output`
    /// in the result).
    #[arg(long, value_name = "SCHEMA")]
    pub(crate) json_schema: Option<String>,

    /// Custom sub-agents, as a JSON object `{name: {description, prompt, tools, model}}`.
    #[arg(long, value_name = "JSON")]
    pub(crate) agents: Option<String>,

    /// Load plugins from this directory; several allowed.
    #[arg(long, value_name = "DIR", action = clap::ArgAction::Append)]
    pub(crate) plugin_dir: Vec<String>,

    /// Echo the client's user messages back on stdout.
    #[arg(long)]
    pub(crate) replay_user_messages: bool,

    /// Thinking: `adaptive`, `enabled` or `disabled`.
    #[arg(long, value_name = "MODE")]
    pub(crate) thinking: Option<String>,

    /// How thinking is shown.
    #[arg(long, value_name = "DISPLAY")]
    pub(crate) thinking_display: Option<String>,

    /// The model's effort level.
    #[arg(long, value_name = "LEVEL")]
    pub(crate) effort: Option<String>,

    /// A token budget for the task.
    #[arg(long, value_name = "TOKENS")]
    pub(crate) task_budget: Option<String>,

    /// Run as this custom agent.
    #[arg(long, value_name = "NAME")]
    pub(crate) agent: Option<String>,

    /// Where the project's configuration lives.
    #[arg(long, value_name = "DIR")]
    pub(crate) project_config_root: Option<String>,

    /// Load plugins from this directory without their MCP servers; several allowed.
    #[arg(long, value_name = "DIR", action = clap::ArgAction::Append)]
    pub(crate) plugin_dir_no_mcp: Vec<String>,

    /// With --resume: resume at this message.
    #[arg(long, value_name = "UUID")]
    pub(crate) resume_session_at: Option<String>,

    /// With --resume: the turn a resume drops.
    #[arg(long, value_name = "UUID")]
    pub(crate) resume_drops_turn: Option<String>,

    /// Mirror the session to the client's session store.
    #[arg(long)]
    pub(crate) session_mirror: bool,

    /// Which fields the client sends in `initialize` instead of flags.
    #[arg(long, value_name = "FIELDS")]
    pub(crate) initialize_fields: Option<String>,

    /// Managed settings come in `initialize`.
    #[arg(long)]
    pub(crate) managed_settings_in_initialize: bool,

    /// Managed settings (a file or JSON).
    #[arg(long, value_name = "SETTINGS")]
    pub(crate) managed_settings: Option<String>,

    /// Which permission prompts the client handles.
    #[arg(long, value_name = "KINDS")]
    pub(crate) permission_prompts: Option<String>,

    /// Message channels to subscribe to; several allowed.
    #[arg(long, value_name = "CHANNEL", action = clap::ArgAction::Append)]
    pub(crate) channels: Vec<String>,
}
