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

    /// Resume a session: its id, or the path of its .jsonl transcript.
    #[arg(short = 'r', long, value_name = "SESSION")]
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
}
