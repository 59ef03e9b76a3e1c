//! Permission modes, rules and decisions for tool calls.
//!
//! Every tool call is checked before it runs: [`PermissionContext::check`] looks at the
//! mode, the rules and what the call touches ([`Tool::permission_subject`]) and returns
//! a [`PermissionDecision`]: run it, refuse it (with a reason the model reads), or ask
//! the user. The order, from strongest:
//!
//! 1. a matching **deny** rule refuses (in every mode); so does any deny rule that
//!    names a Bash command when a command's program cannot be known before it runs
//!    (`$X x`, `eval "$S"`, `echo … | sh`: it may be the denied one);
//! 2. in **plan** mode, a call that is not read-only is refused;
//! 3. while a settings file's rules cannot be read ([`RuleSet::unknown`], filled for
//!    a tool call from the app state's `ToolPermissionContext::unknown_settings_rules`),
//!    every call asks (also in bypass mode; denied where no one can be asked);
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
//! (`should_avoid_prompts`: an asynchronous sub-agent, SA-4, or headless mode without a
//! prompt channel); the reason says so. The query loop counts denials in a
//! [`DenialTracking`] and uses its message for the tool result.
//!
//! Rule names follow the reference agent: `Edit(…)` rules apply to every tool that
//! edits a file at a path (Edit, Write), `Read(…)` rules to every tool that reads one
//! (Read, Glob, Grep). See `matching` for the pattern syntax. Modes and the bypass
//! gate are in `mode`.

mod decide;
mod denials;
pub(crate) mod matching;
mod mode;
mod rules;
mod suggest;

use std::path::PathBuf;
use std::sync::Arc;

use strata_protocol::permission::PermissionMode;
use strata_protocol::settings::Settings;

pub use self::denials::{DenialTracking, MAX_CONSECUTIVE_DENIALS, MAX_TOTAL_DENIALS};
pub use self::mode::{
    BypassAvailability, InitialMode, LaunchFlags, ModeError, check_mode_change,
    enforce_bypass_availability, initial_mode, next_mode,
};
pub use self::rules::RuleSet;
pub use self::suggest::suggestions;
#[cfg(doc)]
use crate::tools::Tool;
use crate::tools::ToolOutput;

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

/// Everything a permission decision depends on besides the call itself. The app state
/// holds one (its permissions domain); cloning is cheap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionContext {
    /// The current mode.
    pub mode: PermissionMode,
    /// The rules from settings and the command line.
    pub rules: Arc<RuleSet>,
    /// The project root ("inside the project").
    pub project_root: PathBuf,
    /// More directories that count as inside (settings `additionalDirectories`,
    /// `--add-dir`), absolute.
    pub additional_directories: Vec<PathBuf>,
    /// Whether `bypassPermissions` may be used.
    pub bypass: BypassAvailability,
    /// No prompt can be shown: what would ask is denied instead (SA-4, headless
    /// without a prompt channel).
    pub should_avoid_prompts: bool,
    /// The home directory, for `~/` patterns (from the environment by default).
    pub home: Option<PathBuf>,
    /// Directories every file of which is protected wherever they are (writes always
    /// ask, see `matching::is_protected`): strata's config directory and the reference
    /// agent's, absolute. By default from the environment; the engine adds the config
    /// directory it runs with.
    pub protected_dirs: Vec<PathBuf>,
}

impl PermissionContext {
    /// A context for `project_root` in `default` mode with no rules.
    pub fn new(project_root: impl Into<PathBuf>) -> Self {
        Self {
            mode: PermissionMode::Default,
            rules: Arc::new(RuleSet::default()),
            project_root: project_root.into(),
            additional_directories: Vec::new(),
            bypass: BypassAvailability::default(),
            should_avoid_prompts: false,
            home: std::env::home_dir(),
            protected_dirs: default_protected_dirs(),
        }
    }

    /// The context a session starts with: rules from the merged `settings` and the
    /// command line, additional directories (settings first, then `--add-dir`,
    /// relative ones resolved against the project root, `~/` against home), bypass
    /// availability and the start-up mode ([`initial_mode`]). Returns the rules that
    /// did not parse and mode warnings next to the context; fails only when the
    /// command line asked for a mode that is not allowed.
    pub fn from_launch(
        project_root: impl Into<PathBuf>,
        settings: &Settings,
        launch: &PermissionLaunch,
    ) -> Result<(Self, Vec<String>), ModeError> {
        let project_root = project_root.into();
        let initial = initial_mode(launch.flags, launch.mode, settings)?;
        let permissions = settings.permissions.as_ref();
        let (by_source, mut rule_errors) = rules::unattributed(settings);
        let (rules, flag_errors) =
            RuleSet::from_sources(&by_source, &launch.allowed_tools, &launch.disallowed_tools);
        rule_errors.extend(flag_errors);
        let mut ctx = Self::new(project_root);
        let dirs: Vec<String> = permissions
            .and_then(|p| p.additional_directories.clone())
            .unwrap_or_default()
            .into_iter()
            .chain(launch.add_dirs.iter().cloned())
            .collect();
        ctx.additional_directories = dirs.iter().map(|d| ctx.absolute_dir(d)).collect();
        ctx.rules = Arc::new(rules);
        ctx.bypass = BypassAvailability::new(launch.flags, settings);
        ctx.mode = initial.mode;
        let mut warnings: Vec<String> = rule_errors.iter().map(ToString::to_string).collect();
        warnings.extend(initial.warning);
        Ok((ctx, warnings))
    }

    pub(crate) fn absolute_dir(&self, dir: &str) -> PathBuf {
        let path = match (dir.strip_prefix("~/"), &self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => self.project_root.join(dir),
        };
        crate::tools::files_normalize(&path)
    }

    /// Switches mode through the one gate ([`check_mode_change`]); on error the mode
    /// is unchanged.
    pub fn set_mode(&mut self, requested: PermissionMode) -> Result<(), ModeError> {
        self.mode = check_mode_change(requested, self.bypass)?;
        Ok(())
    }
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
