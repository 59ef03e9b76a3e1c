//! The initial app state, computed from runtime facts (AS-5).
//!
//! Some defaults cannot be constants: the permission mode depends on how this process
//! was started (a teammate that must plan starts in `plan`), thinking and prompt
//! suggestions depend on configuration, verbose and the expanded view come back from the
//! global config. [`RuntimeFacts`] gathers those inputs explicitly, so
//! [`default_app_state`] is a pure function: no I/O, no globals, testable with values.

use std::path::PathBuf;
use std::sync::Arc;

use smol_str::SmolStr;
use strata_config::MergedSettings;
use strata_protocol::global_config::GlobalConfig;
use strata_protocol::permission::PermissionMode;
use strata_protocol::settings::Settings;

use crate::app_state::{
    AppState, ExpandedView, PermissionRule, PromptSuggestion, RuleSource, SettingsPermissions,
    ToolPermissionContext, UiState, split_rule_list,
};

/// The settings key (not typed by the schema, kept in `Settings::extra`) that turns
/// prompt suggestions off when `false`.
pub const PROMPT_SUGGESTION_SETTING: &str = "promptSuggestionEnabled";

/// What [`default_app_state`] needs to know about this process and its configuration.
///
/// Build it with [`RuntimeFacts::from_config`] from the loaded files, then set the facts
/// that come from the command line and the environment.
#[derive(Clone, Debug, Default)]
pub struct RuntimeFacts {
    /// The merged settings.
    pub settings: Arc<Settings>,
    /// The settings' permission rules and directories, per source.
    pub settings_permissions: SettingsPermissions,
    /// The global config (`config.json`).
    pub global_config: GlobalConfig,
    /// This process was spawned as a teammate of an agent team.
    pub is_teammate: bool,
    /// That teammate must present a plan before editing.
    pub plan_mode_required: bool,
    /// `--permission-mode`.
    pub permission_mode_flag: Option<PermissionMode>,
    /// The user allowed `bypassPermissions` on the command line
    /// (`--dangerously-skip-permissions` or its "allow" variant).
    pub bypass_permissions_allowed: bool,
    /// Never prompt for permissions (headless runs).
    pub avoid_permission_prompts: bool,
    /// `--allowedTools` rules.
    pub cli_allow: Vec<String>,
    /// `--disallowedTools` rules.
    pub cli_deny: Vec<String>,
    /// `--add-dir` directories.
    pub cli_additional_directories: Vec<PathBuf>,
    /// A person is at the terminal (not a script or SDK).
    pub interactive: bool,
    /// `--verbose`.
    pub verbose_flag: bool,
    /// `--model`: the main-loop model chosen for this session.
    pub model: Option<SmolStr>,
    /// `MAX_THINKING_TOKENS` from the environment, when set: `0` turns thinking off, any
    /// other value on, whatever the settings say.
    pub max_thinking_tokens: Option<u32>,
    /// An environment override for prompt suggestions
    /// (`STRATA_ENABLE_PROMPT_SUGGESTION`), when set.
    pub prompt_suggestion_override: Option<bool>,
}

impl RuntimeFacts {
    /// The facts that come from the configuration files; every command-line and
    /// environment fact at its default.
    pub fn from_config(merged: &MergedSettings, global_config: GlobalConfig) -> Self {
        Self {
            settings: Arc::new(merged.settings.clone()),
            settings_permissions: SettingsPermissions::from_merged(merged),
            global_config,
            ..Self::default()
        }
    }
}

/// The initial app state of a session (AS-5).
///
/// - Permission mode: `plan` when this process is a teammate required to plan; else
///   `--permission-mode`; else the settings' `permissions.defaultMode`; else `default`.
///   `bypassPermissions` is available when allowed on the command line or chosen as the
///   mode, unless settings disable it — then a chosen bypass mode becomes `default`.
/// - Thinking: `MAX_THINKING_TOKENS` when set, else `alwaysThinkingEnabled`, else on.
/// - Prompt suggestions: the environment override when set, else on for interactive
///   sessions unless the settings say `"promptSuggestionEnabled": false`.
/// - Verbose: `--verbose` or the global config's `verbose`; the expanded view from
///   `showExpandedTodos` / `showSpinnerTree`.
/// - Fast mode from the settings' `fastMode`; the model from `--model` (`None` means the
///   configured default).
/// - Everything else empty: no tasks, no MCP servers, speculation idle (SP-3).
///
/// ```
/// use strata_protocol::permission::PermissionMode;
/// use strata_state::{default_app_state, RuntimeFacts};
///
/// let teammate = RuntimeFacts { is_teammate: true, plan_mode_required: true, ..Default::default() };
/// assert_eq!(default_app_state(teammate).tool_permission_context.mode, PermissionMode::Plan);
/// assert_eq!(
///     default_app_state(RuntimeFacts::default()).tool_permission_context.mode,
///     PermissionMode::Default,
/// );
/// ```
pub fn default_app_state(facts: RuntimeFacts) -> AppState {
    let settings = facts.settings;
    let bypass_disabled = settings.bypass_permissions_disabled();

    let mut mode = if facts.is_teammate && facts.plan_mode_required {
        PermissionMode::Plan
    } else if let Some(flag) = facts.permission_mode_flag {
        flag
    } else {
        settings
            .default_mode()
            .map_or(PermissionMode::Default, PermissionMode::from)
    };
    let bypass_available = !bypass_disabled
        && (facts.bypass_permissions_allowed || mode == PermissionMode::BypassPermissions);
    if mode == PermissionMode::BypassPermissions && !bypass_available {
        tracing::warn!(
            "bypassPermissions is disabled by settings (permissions.disableBypassPermissionsMode); \
             starting in default mode"
        );
        mode = PermissionMode::Default;
    }

    let mut context = ToolPermissionContext {
        mode,
        is_bypass_permissions_mode_available: bypass_available,
        should_avoid_permission_prompts: facts.avoid_permission_prompts,
        ..ToolPermissionContext::default()
    }
    .with_settings_permissions(&facts.settings_permissions);
    // A rule that does not parse is reported by the session's opener (a bad
    // `--disallowedTools` stops it before anything runs).
    for rule in facts.cli_allow.iter().flat_map(|v| split_rule_list(v)) {
        if let Ok(rule) = PermissionRule::parse(&rule) {
            context.always_allow_rules.add(RuleSource::CliArg, rule);
        }
    }
    // A rule that does not parse is reported by the session's opener (a bad
    // `--disallowedTools` stops it before anything runs).
    for rule in facts.cli_deny.iter().flat_map(|v| split_rule_list(v)) {
        if let Ok(rule) = PermissionRule::parse(&rule) {
            context.always_deny_rules.add(RuleSource::CliArg, rule);
        }
    }
    for dir in &facts.cli_additional_directories {
        context
            .additional_working_directories
            .entry(Arc::from(dir.as_path()))
            .or_insert(RuleSource::CliArg);
    }

    let thinking_enabled = match facts.max_thinking_tokens {
        Some(tokens) => tokens > 0,
        None => settings.always_thinking_enabled.unwrap_or(true),
    };
    let suggestions_in_settings = settings
        .extra
        .get(PROMPT_SUGGESTION_SETTING)
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(true);
    let prompt_suggestions = facts
        .prompt_suggestion_override
        .unwrap_or(facts.interactive && suggestions_in_settings);

    let global = &facts.global_config;
    AppState {
        verbose: facts.verbose_flag || global.verbose.unwrap_or(false),
        main_loop_model: facts.model,
        thinking_enabled,
        fast_mode: settings.fast_mode.unwrap_or(false),
        settings,
        tool_permission_context: context,
        denial_tracking: Default::default(),
        tasks: Default::default(),
        mcp: Default::default(),
        plugins: Default::default(),
        ui: UiState {
            expanded_view: ExpandedView::from_flags(
                global.show_expanded_todos.unwrap_or(false),
                global.show_spinner_tree.unwrap_or(false),
            ),
            ..UiState::default()
        },
        bridge: Default::default(),
        remote: Default::default(),
        speculation: Default::default(),
        speculation_time_saved_ms: 0,
        prompt_suggestion: PromptSuggestion {
            enabled: prompt_suggestions,
            ..PromptSuggestion::default()
        },
        file_history: Default::default(),
        attribution: Default::default(),
        todos: Default::default(),
        inbox: Default::default(),
        team_context: None,
        standalone_agent: None,
        is_ultraplan_mode: false,
        messages: Default::default(),
        in_progress_tool_use_ids: Default::default(),
        context_usage: Default::default(),
        runtime: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_protocol::permission::ExternalPermissionMode;

    fn settings(json: &str) -> Arc<Settings> {
        Arc::new(serde_json::from_str(json).unwrap())
    }

    #[test]
    fn as5_teammate_required_to_plan_starts_in_plan_even_with_a_default_mode_setting() {
        let facts = RuntimeFacts {
            settings: settings(r#"{"permissions":{"defaultMode":"acceptEdits"}}"#),
            is_teammate: true,
            plan_mode_required: true,
            ..RuntimeFacts::default()
        };
        let state = default_app_state(facts);
        assert_eq!(state.tool_permission_context.mode, PermissionMode::Plan);
    }

    #[test]
    fn as5_teammate_not_required_to_plan_uses_the_settings_default_mode() {
        let facts = RuntimeFacts {
            settings: settings(r#"{"permissions":{"defaultMode":"acceptEdits"}}"#),
            is_teammate: true,
            ..RuntimeFacts::default()
        };
        let mode = default_app_state(facts).tool_permission_context.mode;
        assert_eq!(mode.external(), ExternalPermissionMode::AcceptEdits);
        let plain = RuntimeFacts {
            plan_mode_required: true, // not a teammate: the flag means nothing
            ..RuntimeFacts::default()
        };
        assert_eq!(
            default_app_state(plain).tool_permission_context.mode,
            PermissionMode::Default
        );
    }

    #[test]
    fn as5_thinking_and_prompt_suggestion_defaults_come_from_configuration() {
        let off = settings(r#"{"alwaysThinkingEnabled":false,"promptSuggestionEnabled":false}"#);
        let state = default_app_state(RuntimeFacts {
            settings: Arc::clone(&off),
            interactive: true,
            ..RuntimeFacts::default()
        });
        assert!(!state.thinking_enabled);
        assert!(!state.prompt_suggestion.enabled);

        let on = default_app_state(RuntimeFacts {
            interactive: true,
            ..RuntimeFacts::default()
        });
        assert!(on.thinking_enabled);
        assert!(on.prompt_suggestion.enabled);

        let env = default_app_state(RuntimeFacts {
            settings: off,
            max_thinking_tokens: Some(1024),
            prompt_suggestion_override: Some(true),
            ..RuntimeFacts::default()
        });
        assert!(
            env.thinking_enabled,
            "MAX_THINKING_TOKENS wins over settings"
        );
        assert!(
            env.prompt_suggestion.enabled,
            "the environment override wins"
        );
        let headless = default_app_state(RuntimeFacts::default());
        assert!(
            !headless.prompt_suggestion.enabled,
            "no suggestions without a person"
        );
    }

    #[test]
    fn as5_verbose_and_expanded_view_come_from_the_global_config() {
        let global: GlobalConfig =
            serde_json::from_str(r#"{"verbose":true,"showExpandedTodos":true}"#).unwrap();
        let state = default_app_state(RuntimeFacts {
            global_config: global,
            ..RuntimeFacts::default()
        });
        assert!(state.verbose);
        assert_eq!(state.ui.expanded_view, ExpandedView::Tasks);
    }

    #[test]
    fn as5_a_bypass_mode_disabled_by_settings_starts_as_default() {
        let state = default_app_state(RuntimeFacts {
            settings: settings(
                r#"{"permissions":{"defaultMode":"bypassPermissions","disableBypassPermissionsMode":"disable"}}"#,
            ),
            bypass_permissions_allowed: true,
            ..RuntimeFacts::default()
        });
        let ctx = &state.tool_permission_context;
        assert_eq!(ctx.mode, PermissionMode::Default);
        assert!(!ctx.is_bypass_permissions_mode_available);

        let chosen = default_app_state(RuntimeFacts {
            permission_mode_flag: Some(PermissionMode::BypassPermissions),
            ..RuntimeFacts::default()
        });
        assert!(
            chosen
                .tool_permission_context
                .is_bypass_permissions_mode_available
        );
    }

    #[test]
    fn as5_command_line_rules_are_filed_under_cli_arg() {
        let state = default_app_state(RuntimeFacts {
            settings: settings(r#"{"permissions":{"allow":["Read"]}}"#),
            settings_permissions: SettingsPermissions::from_settings(
                &serde_json::from_str(r#"{"permissions":{"allow":["Read"]}}"#).unwrap(),
                RuleSource::UserSettings,
            ),
            cli_allow: vec!["Bash(git status)".into()],
            cli_additional_directories: vec![PathBuf::from("/tmp/extra")],
            ..RuntimeFacts::default()
        });
        let ctx = &state.tool_permission_context;
        let sources: Vec<_> = ctx.always_allow_rules.iter().map(|(s, _)| s).collect();
        assert_eq!(sources, [RuleSource::UserSettings, RuleSource::CliArg]);
        assert_eq!(ctx.additional_working_directories.len(), 1);
    }
}
