//! The rules a decision reads, in `allow`, `deny` and `ask` lists.
//!
//! The rule itself, its grammar, behaviours, sources and parse errors belong to the
//! permission domain of the app state (`strata_state::PermissionRule`, …). Rules come
//! from the merged settings (`permissions.allow/deny/ask`, each filed under the file it
//! came from) and from the command line (`--allowedTools` adds allow rules,
//! `--disallowedTools` deny rules, both filed under `RuleSource::CliArg`).
//! An allow rule that does not parse is reported (with where it came from) and skipped:
//! leaving it out only narrows what is allowed. A deny or ask entry of a settings file
//! that does not parse makes that file's rules unusable instead (the settings loader
//! keeps its last good rules, or reports them unknown: [`RuleSet::unknown`]); one given
//! with `--disallowedTools` is reported and skipped.
//!
//! [`PermissionContext::reload_settings`] rebuilds the settings part of a context when a
//! settings file changes during the session (UI-7).

use std::sync::Arc;

use strata_config::{MergedSettings, UnknownPermissions};
use strata_protocol::permission::PermissionMode;
use strata_protocol::settings::Settings;
use strata_state::{
    RuleBehavior, RuleError, RuleSource, RulesBySource, SettingsPermissions, split_rule_list,
};

use super::{PermissionContext, PermissionDecision, PermissionLaunch};

/// The rules in effect, by behaviour, each filed under its source (the permission
/// domain's [`RulesBySource`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// Rules that allow.
    pub allow: RulesBySource,
    /// Rules that deny (they win over everything).
    pub deny: RulesBySource,
    /// Rules that always ask.
    pub ask: RulesBySource,
    /// Settings files whose rules cannot be known (they do not parse, or their
    /// `permissions` do not, and no good version was read before; see
    /// `strata_config::SettingsFiles::load`). While there is one, its deny rules might
    /// name any call: every call that no known deny rule or plan mode refuses asks (in
    /// every mode, bypass included), and is denied where no one can be asked.
    pub unknown: Vec<UnknownPermissions>,
}

impl RuleSet {
    /// Builds the rule set from the settings' rules (already parsed, by source) and the
    /// `--allowedTools` / `--disallowedTools` entries (each entry may hold several rules
    /// separated by commas or spaces, see [`split_rule_list`]), filed under
    /// [`RuleSource::CliArg`]. Command-line rules that do not parse are returned as
    /// errors and left out.
    pub fn from_sources(
        settings: &SettingsPermissions,
        allowed_tools: &[String],
        disallowed_tools: &[String],
    ) -> (Self, Vec<RuleError>) {
        let mut set = Self {
            allow: settings.allow.clone(),
            deny: settings.deny.clone(),
            ask: settings.ask.clone(),
            unknown: Vec::new(),
        };
        let mut errors = Vec::new();
        for (values, behavior) in [
            (allowed_tools, RuleBehavior::Allow),
            (disallowed_tools, RuleBehavior::Deny),
        ] {
            for text in values.iter().flat_map(|s| split_rule_list(s)) {
                match RuleError::parse(&text, RuleSource::CliArg, behavior) {
                    Ok(rule) => set.list_mut(behavior).add(RuleSource::CliArg, rule),
                    Err(e) => errors.push(e),
                }
            }
        }
        (set, errors)
    }

    /// The list for `behavior`.
    pub fn list(&self, behavior: RuleBehavior) -> &RulesBySource {
        match behavior {
            RuleBehavior::Allow => &self.allow,
            RuleBehavior::Deny => &self.deny,
            RuleBehavior::Ask => &self.ask,
        }
    }

    /// The list for `behavior`, to change.
    pub fn list_mut(&mut self, behavior: RuleBehavior) -> &mut RulesBySource {
        match behavior {
            RuleBehavior::Allow => &mut self.allow,
            RuleBehavior::Deny => &mut self.deny,
            RuleBehavior::Ask => &mut self.ask,
        }
    }

    /// Whether a pattern-less deny rule removes `tool` entirely: such tools should not
    /// be offered to the model at all.
    pub fn denies_tool_entirely(&self, tool: &str) -> bool {
        self.deny
            .iter()
            .any(|(_, r)| r.content.is_none() && r.names_tool(tool))
    }
}

/// The settings' rules of a merged value without per-file provenance, with the ones that
/// do not parse: filed under the local settings (the top layer a user edits). The engine
/// files them per file at once ([`PermissionContext::reload_settings`]).
pub(super) fn unattributed(settings: &Settings) -> (SettingsPermissions, Vec<RuleError>) {
    SettingsPermissions::parse_settings(settings, RuleSource::LocalSettings)
}

impl PermissionContext {
    /// Rebuilds what comes from the settings after they changed (UI-7): the rules (with
    /// the launch's `--allowedTools` / `--disallowedTools` added, as at start), the files
    /// whose rules are unknown, and the additional directories (settings', then
    /// `--add-dir`). Bypass availability only ever narrows: settings that disable it take
    /// it away; settings that stop disabling it do not give it back to a running session.
    /// The mode is not touched (the app state is its authority). Returns the rules that
    /// did not parse.
    pub fn reload_settings(
        &mut self,
        merged: &MergedSettings,
        launch: &PermissionLaunch,
    ) -> Vec<RuleError> {
        let permissions = merged.settings.permissions.as_ref();
        let (by_source, mut errors) = SettingsPermissions::parse_merged(merged);
        let (mut rules, flag_errors) =
            RuleSet::from_sources(&by_source, &launch.allowed_tools, &launch.disallowed_tools);
        errors.extend(flag_errors);
        rules.unknown = merged.unknown_permissions.clone();
        self.rules = Arc::new(rules);
        let dirs: Vec<String> = permissions
            .and_then(|p| p.additional_directories.clone())
            .unwrap_or_default()
            .into_iter()
            .chain(launch.add_dirs.iter().cloned())
            .collect();
        self.additional_directories = dirs.iter().map(|d| self.absolute_dir(d)).collect();
        if merged.settings.bypass_permissions_disabled() {
            self.bypass = self.bypass.with_settings(&merged.settings);
        }
        errors
    }

    /// The decision while a settings file's rules are unknown (`None` when every file's
    /// rules are known): deny where no one can be asked (dontAsk, headless without a
    /// prompt channel), else ask. The reason names the file, line and column.
    pub(super) fn unknown_rules_decision(
        &self,
        describe: &str,
    ) -> Option<Result<PermissionDecision, String>> {
        let unknown = self.rules.unknown.first()?;
        let reason = format!(
            "{describe} requires approval: the permission rules of the settings file {} \
             cannot be read ({unknown}), so strata cannot know whether they deny it; fix the \
             file, then strata reads it again",
            unknown.file
        );
        if self.should_avoid_prompts || self.mode == PermissionMode::DontAsk {
            return Some(Ok(PermissionDecision::Deny {
                reason: format!(
                    "{reason}. No permission prompt can be shown here, so it was denied."
                ),
            }));
        }
        Some(Err(reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_sources_are_merged_and_bad_rules_reported() {
        let settings: Settings = serde_json::from_str(
            r#"{"permissions":{"allow":["Read","Bash(git log:*)"],"deny":["Bash(rm"],"ask":["Write"]}}"#,
        )
        .unwrap();
        let (by_source, settings_errors) = unattributed(&settings);
        let (set, errors) = RuleSet::from_sources(
            &by_source,
            &["Bash(npm test:*) Edit,Glob".to_owned()],
            &["WebFetch".to_owned(), "Bash(x".to_owned()],
        );
        let names = |l: &RulesBySource| l.iter().map(|(_, r)| r.to_string()).collect::<Vec<_>>();
        assert_eq!(
            names(&set.allow),
            [
                "Read",
                "Bash(git log:*)",
                "Bash(npm test:*)",
                "Edit",
                "Glob"
            ]
        );
        assert_eq!(names(&set.deny), ["WebFetch"]);
        assert_eq!(names(&set.ask), ["Write"]);
        let sources: Vec<_> = set.deny.iter().map(|(s, _)| s).collect();
        assert_eq!(sources, [RuleSource::CliArg]);
        assert_eq!(settings_errors.len(), 1);
        let msg = settings_errors[0].to_string();
        assert!(
            msg.contains("\"Bash(rm\"") && msg.contains("local settings deny"),
            "{msg}"
        );
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].to_string().contains("--disallowedTools deny"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn whole_tool_deny_is_detected() {
        let (set, _) = RuleSet::from_sources(
            &SettingsPermissions::default(),
            &[],
            &["Bash".into(), "Edit(x)".into()],
        );
        assert!(set.denies_tool_entirely("Bash"));
        assert!(!set.denies_tool_entirely("Edit"));
    }
}
