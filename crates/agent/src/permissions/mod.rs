//! Permission modes, rules and decisions for tool calls.
//!
//! Every tool call is checked before it runs: [`Permissions::check`] looks at the mode,
//! the rules and what the call touches ([`Tool::permission_subject`]) and returns a
//! [`PermissionDecision`]: run it, refuse it (with a reason the model reads), or ask the
//! user. Mode, rules (filed under their sources), directories and bypass availability
//! come from one snapshot of the app state's [`ToolPermissionContext`] — the only
//! permission model: rules a prompt answer adds are store updates
//! (`engine::permission_updates`), settings reloads are store updates (UI-7), and the
//! settings file a rule is kept in is written by the effects hub. The session's fixed
//! facts (project root, home, protected directories) are a [`PermissionEnv`]. The order,
//! from strongest:
//!
//! 1. a matching **deny** rule refuses (in every mode); so does any deny rule that
//!    names a Bash command when a command's program cannot be known before it runs
//!    (`$X x`, `eval "$S"`, `echo … | sh`: it may be the denied one);
//! 2. in **plan** mode, a call that is not read-only is refused;
//! 3. while a settings file's rules cannot be read
//!    (`ToolPermissionContext::unknown_settings_rules`), every call asks (also in bypass mode; denied where no one can be asked);
//! 4. a matching **ask** rule asks (also in bypass mode), and so does any ask rule
//!    that names a Bash command for a command whose program is unknown;
//! 5. **bypassPermissions** (when available) allows;
//! 6. a write to a **protected path** (the agents' settings, `.git/`, shell start-up
//!    files, `.mcp.json`, …: `matching::is_protected`) asks, whatever allow rule or
//!    mode (accept-edits included) would allow it; so does a Bash command that writes
//!    one, through a redirection or a program that writes files (`tee`, `cp`, `sed
//!    -i`, …: `tools::bash::analysis::writes`);
//! 7. a matching **allow** rule allows (a compound Bash command only if every part,
//!    and every command a part runs, is allowed; a pattern never allows a command
//!    whose program is unknown), except a Bash command that writes a file only known
//!    when it runs (`> "$F"`), which asks: it may be a protected one;
//! 8. a read-only call inside the project or an additional directory is allowed (in
//!    every mode);
//! 9. in **acceptEdits**, a file edit inside the project or an additional directory is
//!    allowed;
//! 10. everything else asks.
//!
//! An "ask" becomes a deny in **dontAsk** mode and when prompts must be avoided
//! (`should_avoid_permission_prompts`: an asynchronous sub-agent, SA-4, or headless mode without a
//! prompt channel); the reason says so. The query loop counts denials in a
//! [`DenialTracking`] and uses its message for the tool result.
//!
//! Rule names follow the reference agent: `Edit(…)` rules apply to every tool that
//! edits a file at a path (Edit, Write), `Read(…)` rules to every tool that reads one
//! (Read, Glob, Grep). See `matching` for the pattern syntax. Modes and the bypass
//! gate are in `mode`.

mod command_reads;
mod decide;
mod denials;
pub(crate) mod matching;
mod mode;
mod suggest;

use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_protocol::permission::PermissionMode;
use strata_protocol::settings::Settings;
use strata_state::{RuleBehavior, RuleError, RuleSource, ToolPermissionContext, split_rule_list};

pub use self::denials::{DenialTracking, MAX_CONSECUTIVE_DENIALS, MAX_TOTAL_DENIALS};
pub use self::mode::{
    BypassAvailability, InitialMode, LaunchFlags, ModeError, check_mode_change,
    enforce_bypass_availability, initial_mode, next_mode,
};
pub use self::suggest::suggestions;
use crate::tools::{Tool, ToolOutput};

/// What to do with a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Run it.
    Allow,
    /// Do not run it; `reason` is what the model is told.
    Deny {
        /// Why (names the rule or mode).
        reason: String,
    },
    /// Ask the user; `reason` says what is being asked.
    Ask {
        /// What needs approval and why.
        reason: String,
    },
}

impl PermissionDecision {
    /// Whether the call may run.
    pub fn is_allow(&self) -> bool {
        matches!(self, Self::Allow)
    }
}

/// The facts of the session a decision reads besides the app state: the project root
/// ("inside the project"), the home directory (`~/` patterns) and the directories every
/// file of which is protected. They do not change while a session runs, so they are not
/// state; everything that does (mode, rules, directories, bypass availability, whether
/// prompts can be shown) is read from one snapshot of the store's
/// [`ToolPermissionContext`], the only permission model (issue 10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionEnv {
    /// The project root.
    pub project_root: PathBuf,
    /// The home directory, for `~/` patterns (from the environment by default).
    pub home: Option<PathBuf>,
    /// Directories every file of which is protected wherever they are (writes always
    /// ask, see `matching::is_protected`): strata's config directory and the reference
    /// agent's, absolute. By default from the environment; the engine adds the config
    /// directory it runs with.
    pub protected_dirs: Vec<PathBuf>,
    /// Directories outside the project whose files read-only tools may read without a
    /// prompt (the folders of the session's skills: their `SKILL.md` refers to them).
    pub readable_dirs: Vec<PathBuf>,
}

impl PermissionEnv {
    /// The facts for `project_root`, the home and protected directories from the
    /// environment.
    pub fn new(project_root: impl Into<PathBuf>) -> Self {
        Self {
            project_root: project_root.into(),
            home: std::env::home_dir(),
            protected_dirs: default_protected_dirs(),
            readable_dirs: Vec::new(),
        }
    }

    /// A directory of the settings or the command line made absolute: `~/` against the
    /// home directory, a relative one against the project root, normalised.
    pub fn absolute_dir(&self, dir: &Path) -> PathBuf {
        let path = match (dir.strip_prefix("~"), &self.home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => self.project_root.join(dir),
        };
        crate::tools::files_normalize(&path)
    }

    /// The additional working directories of `state`, absolute, in the state's order.
    pub fn additional_dirs(&self, state: &ToolPermissionContext) -> Vec<PathBuf> {
        state
            .additional_working_directories
            .keys()
            .map(|d| self.absolute_dir(d))
            .collect()
    }

    /// The decision view of one store snapshot.
    pub fn view<'a>(&'a self, state: &'a ToolPermissionContext) -> Permissions<'a> {
        Permissions {
            state,
            env: self,
            additional: self.additional_dirs(state),
        }
    }

    /// Decides whether `tool` may run with `input` in the state `state` (see
    /// [`Permissions::check`]).
    pub fn check(
        &self,
        state: &ToolPermissionContext,
        tool: &dyn Tool,
        input: &Value,
        cwd: &Path,
    ) -> PermissionDecision {
        self.view(state).check(tool, input, cwd)
    }
}

/// What one decision reads: a snapshot of the store's permission context and the
/// session's [`PermissionEnv`], with the additional directories made absolute once.
#[derive(Debug, Clone)]
pub struct Permissions<'a> {
    state: &'a ToolPermissionContext,
    env: &'a PermissionEnv,
    additional: Vec<PathBuf>,
}

/// How `bypassPermissions` stands in `state` whose settings are `settings`, for the mode
/// gate ([`check_mode_change`]).
pub fn bypass_of(state: &ToolPermissionContext, settings: &Settings) -> BypassAvailability {
    BypassAvailability::from_parts(
        state.is_bypass_permissions_mode_available,
        settings.bypass_permissions_disabled(),
    )
}

/// The `--allowedTools` / `--disallowedTools` entries that do not parse (each entry may
/// hold several rules, see [`split_rule_list`]). The rules that do are filed under
/// [`RuleSource::CliArg`] in the app state (`default_app_state`).
pub fn launch_rule_errors(launch: &PermissionLaunch) -> Vec<RuleError> {
    let mut errors = Vec::new();
    for (values, behavior) in [
        (&launch.allowed_tools, RuleBehavior::Allow),
        (&launch.disallowed_tools, RuleBehavior::Deny),
    ] {
        for text in values.iter().flat_map(|s| split_rule_list(s)) {
            if let Err(e) = RuleError::parse(&text, RuleSource::CliArg, behavior) {
                errors.push(e);
            }
        }
    }
    errors
}

/// What the command line says about permissions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionLaunch {
    /// The bypass flags.
    pub flags: LaunchFlags,
    /// `--permission-mode`.
    pub mode: Option<PermissionMode>,
    /// `--allowedTools` values (each may hold several rules).
    pub allowed_tools: Vec<String>,
    /// `--disallowedTools` values.
    pub disallowed_tools: Vec<String>,
    /// `--add-dir` values.
    pub add_dirs: Vec<String>,
}

/// The tool result for a denied call: `reason`, plus the instruction to stop retrying
/// once `tracking` (already updated with this denial) reached its limit.
pub fn denial_output(reason: &str, tracking: DenialTracking) -> ToolOutput {
    ToolOutput::error(tracking.denial_message(reason))
}

/// strata's config directory (`$STRATA_CONFIG_DIR`, else `~/.strata`) and the reference
/// agent's (`$CLAUDE_CONFIG_DIR`, else `~/.claude`), made absolute.
fn default_protected_dirs() -> Vec<PathBuf> {
    let home = std::env::home_dir();
    let reference = match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => home.map(|h| h.join(".claude")),
    };
    strata_config::paths::config_dir()
        .ok()
        .into_iter()
        .chain(reference)
        .map(|d| std::path::absolute(&d).unwrap_or(d))
        .collect()
}
