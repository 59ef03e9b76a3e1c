//! The permissions domain (AS-1): the tool permission context and denial tracking.
//!
//! The context is what every tool-use decision reads: the current mode, the allow / deny /
//! ask rules grouped by where they came from, the extra directories tools may touch, and
//! whether `bypassPermissions` may be entered at all. Rules from settings files are
//! replaced wholesale when the settings change (UI-7); rules added during the session
//! (from the command line, a `/permissions` command, a "don't ask again" answer) survive
//! such a reload because they are filed under their own sources.

use std::path::Path;
use std::sync::Arc;

use strata_config::{MergedSettings, SettingsSource, UnknownPermissions};
use strata_protocol::permission::PermissionMode;
use strata_protocol::settings::Settings;

use super::permission_rules::{PermissionRule, RuleBehavior, RuleError};
use super::settings_edit::SettingsEdit;

/// Where a permission rule or an additional directory came from. The order is the order
/// rules are listed in (settings sources by precedence, then session sources).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleSource {
    /// The user settings file.
    UserSettings,
    /// The shared project settings file.
    ProjectSettings,
    /// The personal project settings file.
    LocalSettings,
    /// The `--settings` file or inline JSON.
    FlagSettings,
    /// The administrator's managed settings.
    PolicySettings,
    /// A command-line argument (`--allowed-tools`, `--add-dir`, …).
    CliArg,
    /// A slash command during the session (`/permissions`, `/add-dir`).
    Command,
    /// An answer to a permission prompt ("yes, and don't ask again this session").
    Session,
}

impl RuleSource {
    /// The rule source of a settings source.
    pub const fn from_settings(source: SettingsSource) -> Self {
        match source {
            SettingsSource::User => Self::UserSettings,
            SettingsSource::Project => Self::ProjectSettings,
            SettingsSource::Local => Self::LocalSettings,
            SettingsSource::Flag => Self::FlagSettings,
            SettingsSource::Managed => Self::PolicySettings,
        }
    }

    /// True for the sources that are settings files (reloaded on a settings change).
    pub const fn is_settings(self) -> bool {
        matches!(
            self,
            Self::UserSettings
                | Self::ProjectSettings
                | Self::LocalSettings
                | Self::FlagSettings
                | Self::PolicySettings
        )
    }
}

/// Rules of one behaviour (allow, deny or ask), grouped by source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesBySource(pub imbl::OrdMap<RuleSource, imbl::Vector<PermissionRule>>);

impl RulesBySource {
    /// Every rule, in source order.
    pub fn iter(&self) -> impl Iterator<Item = (RuleSource, &PermissionRule)> {
        self.0
            .iter()
            .flat_map(|(source, rules)| rules.iter().map(move |r| (*source, r)))
    }

    /// The rules of one source.
    pub fn of(&self, source: RuleSource) -> Option<&imbl::Vector<PermissionRule>> {
        self.0.get(&source)
    }

    /// The number of rules over all sources.
    pub fn len(&self) -> usize {
        self.0.values().map(imbl::Vector::len).sum()
    }

    /// True when there is no rule.
    pub fn is_empty(&self) -> bool {
        self.0.values().all(imbl::Vector::is_empty)
    }

    /// Adds a rule under `source` unless it is already there.
    pub fn add(&mut self, source: RuleSource, rule: PermissionRule) {
        let rules = self.0.entry(source).or_default();
        if !rules.contains(&rule) {
            rules.push_back(rule);
        }
    }

    /// Keeps the rules for which `keep` says so (sources left empty are dropped).
    pub fn retain(&mut self, mut keep: impl FnMut(RuleSource, &PermissionRule) -> bool) {
        let next: imbl::OrdMap<_, _> = self
            .0
            .iter()
            .map(|(source, rules)| {
                let kept: imbl::Vector<_> =
                    rules.iter().filter(|r| keep(*source, r)).cloned().collect();
                (*source, kept)
            })
            .filter(|(_, rules)| !rules.is_empty())
            .collect();
        self.0 = next;
    }

    /// These rules with every settings source replaced by `settings` (other sources kept).
    fn with_settings_rules(&self, settings: &RulesBySource) -> RulesBySource {
        let mut next: imbl::OrdMap<_, _> = self
            .0
            .iter()
            .filter(|(source, _)| !source.is_settings())
            .map(|(source, rules)| (*source, rules.clone()))
            .collect();
        for (source, rules) in &settings.0 {
            if !rules.is_empty() {
                next.insert(*source, rules.clone());
            }
        }
        RulesBySource(next)
    }
}

/// The permission-relevant part of the settings, per source: what a settings reload
/// replaces in the [`ToolPermissionContext`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SettingsPermissions {
    /// `permissions.allow` by source.
    pub allow: RulesBySource,
    /// `permissions.deny` by source.
    pub deny: RulesBySource,
    /// `permissions.ask` by source.
    pub ask: RulesBySource,
    /// `permissions.additionalDirectories` with the source that added each.
    pub additional_directories: imbl::OrdMap<Arc<Path>, RuleSource>,
    /// Settings files whose rules cannot be known (see
    /// [`ToolPermissionContext::unknown_settings_rules`]).
    pub unknown: imbl::Vector<UnknownPermissions>,
}

impl SettingsPermissions {
    /// From merged settings, attributing each array element to the file it came from.
    /// Rules that do not parse are left out (see [`Self::parse_merged`]).
    pub fn from_merged(merged: &MergedSettings) -> Self {
        Self::parse_merged(merged).0
    }

    /// From merged settings, attributing each array element to the file it came from,
    /// with the rules that do not parse (left out: the settings loader has already made a
    /// file with a bad deny or ask entry unknown, and a bad allow rule only narrows).
    pub fn parse_merged(merged: &MergedSettings) -> (Self, Vec<RuleError>) {
        let mut out = Self {
            unknown: merged.unknown_permissions.iter().cloned().collect(),
            ..Self::default()
        };
        let mut errors = Vec::new();
        for entry in merged.entries() {
            let [first, key] = entry.key.as_slice() else {
                continue;
            };
            if first != "permissions" {
                continue;
            }
            let Some(items) = entry.value.as_array() else {
                continue;
            };
            for (item, from) in items.iter().zip(&entry.from) {
                let (Some(text), source) = (item.as_str(), RuleSource::from_settings(from.source))
                else {
                    continue;
                };
                errors.extend(out.add(key, source, text));
            }
        }
        (out, errors)
    }

    /// From one settings value, every rule attributed to `source` (for callers that have
    /// no per-file provenance, and for tests). Rules that do not parse are left out.
    pub fn from_settings(settings: &Settings, source: RuleSource) -> Self {
        Self::parse_settings(settings, source).0
    }

    /// [`Self::from_settings`] with the rules that do not parse.
    pub fn parse_settings(settings: &Settings, source: RuleSource) -> (Self, Vec<RuleError>) {
        let mut out = Self::default();
        let mut errors = Vec::new();
        if let Some(p) = &settings.permissions {
            for (key, list) in [
                ("allow", &p.allow),
                ("deny", &p.deny),
                ("ask", &p.ask),
                ("additionalDirectories", &p.additional_directories),
            ] {
                for text in list.iter().flatten() {
                    errors.extend(out.add(key, source, text));
                }
            }
        }
        (out, errors)
    }

    /// The rules of one behaviour.
    pub fn rules(&self, behavior: RuleBehavior) -> &RulesBySource {
        match behavior {
            RuleBehavior::Allow => &self.allow,
            RuleBehavior::Deny => &self.deny,
            RuleBehavior::Ask => &self.ask,
        }
    }

    fn add(&mut self, key: &str, source: RuleSource, text: &str) -> Option<RuleError> {
        let (list, behavior) = match key {
            "allow" => (&mut self.allow, RuleBehavior::Allow),
            "deny" => (&mut self.deny, RuleBehavior::Deny),
            "ask" => (&mut self.ask, RuleBehavior::Ask),
            "additionalDirectories" => {
                self.additional_directories
                    .entry(Arc::from(Path::new(text)))
                    .or_insert(source);
                return None;
            }
            _ => return None,
        };
        match RuleError::parse(text, source, behavior) {
            Ok(rule) => {
                list.add(source, rule);
                None
            }
            Err(e) => Some(e),
        }
    }
}

/// Everything a tool-use permission decision reads (AS-1).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolPermissionContext {
    /// The current mode. Changing it is FX-1's trigger.
    pub mode: PermissionMode,
    /// Rules that allow a tool use without asking.
    pub always_allow_rules: RulesBySource,
    /// Rules that deny a tool use.
    pub always_deny_rules: RulesBySource,
    /// Rules that always ask.
    pub always_ask_rules: RulesBySource,
    /// Directories outside the project the tools may use, with who added each.
    pub additional_working_directories: imbl::OrdMap<Arc<Path>, RuleSource>,
    /// Whether `bypassPermissions` may be entered (allowed on the command line and not
    /// disabled by settings, UI-6).
    pub is_bypass_permissions_mode_available: bool,
    /// Never show a permission prompt; decide automatically (headless runs, async
    /// sub-agents, SA-4).
    pub should_avoid_permission_prompts: bool,
    /// The mode to return to when plan mode is left.
    pub pre_plan_mode: Option<PermissionMode>,
    /// Settings files whose permission rules cannot be known (they do not parse, or their
    /// `permissions` do not, and no good version was read before). While there is one, its
    /// deny rules might name any call: a decision fails closed (asks, or denies where no
    /// one can be asked). Replaced with the settings on every reload.
    pub unknown_settings_rules: imbl::Vector<UnknownPermissions>,
    /// The settings-file edits the last permission update asked for (a rule kept "in
    /// local settings"), persisted once, in order, by the effects hub when a new batch
    /// appears here (compared by pointer). See [`SettingsEdit`].
    pub last_settings_edits: Option<Arc<[SettingsEdit]>>,
}

impl ToolPermissionContext {
    /// The rules of one behaviour, every source.
    pub fn rules(&self, behavior: RuleBehavior) -> &RulesBySource {
        match behavior {
            RuleBehavior::Allow => &self.always_allow_rules,
            RuleBehavior::Deny => &self.always_deny_rules,
            RuleBehavior::Ask => &self.always_ask_rules,
        }
    }

    /// The rules of one behaviour, to change (in an updater's copy of the state).
    pub fn rules_mut(&mut self, behavior: RuleBehavior) -> &mut RulesBySource {
        match behavior {
            RuleBehavior::Allow => &mut self.always_allow_rules,
            RuleBehavior::Deny => &mut self.always_deny_rules,
            RuleBehavior::Ask => &mut self.always_ask_rules,
        }
    }

    /// Whether a pattern-less deny rule removes `tool` entirely: such a tool is not
    /// offered to the model at all.
    pub fn denies_tool_entirely(&self, tool: &str) -> bool {
        self.always_deny_rules
            .iter()
            .any(|(_, r)| r.content.is_none() && r.names_tool(tool))
    }

    /// This context with its settings-file rules and directories replaced by `settings`
    /// (session, command-line and command rules kept).
    pub fn with_settings_permissions(&self, settings: &SettingsPermissions) -> Self {
        let mut dirs: imbl::OrdMap<_, _> = self
            .additional_working_directories
            .iter()
            .filter(|(_, source)| !source.is_settings())
            .map(|(dir, source)| (Arc::clone(dir), *source))
            .collect();
        for (dir, source) in &settings.additional_directories {
            dirs.entry(Arc::clone(dir)).or_insert(*source);
        }
        Self {
            always_allow_rules: self.always_allow_rules.with_settings_rules(&settings.allow),
            always_deny_rules: self.always_deny_rules.with_settings_rules(&settings.deny),
            always_ask_rules: self.always_ask_rules.with_settings_rules(&settings.ask),
            additional_working_directories: dirs,
            unknown_settings_rules: settings.unknown.clone(),
            ..self.clone()
        }
    }

    /// This context with `bypassPermissions` made unavailable, leaving that mode for
    /// `default` if it is the current one (UI-6).
    ///
    /// ```
    /// use strata_protocol::permission::PermissionMode;
    /// use strata_state::ToolPermissionContext;
    /// let ctx = ToolPermissionContext {
    ///     mode: PermissionMode::BypassPermissions,
    ///     is_bypass_permissions_mode_available: true,
    ///     ..Default::default()
    /// };
    /// let off = ctx.with_bypass_disabled();
    /// assert_eq!(off.mode, PermissionMode::Default);
    /// assert!(!off.is_bypass_permissions_mode_available);
    /// ```
    pub fn with_bypass_disabled(&self) -> Self {
        let mode = match self.mode {
            PermissionMode::BypassPermissions => PermissionMode::Default,
            other => other,
        };
        let pre_plan_mode = match self.pre_plan_mode {
            Some(PermissionMode::BypassPermissions) => Some(PermissionMode::Default),
            other => other,
        };
        Self {
            mode,
            pre_plan_mode,
            is_bypass_permissions_mode_available: false,
            ..self.clone()
        }
    }
}

/// Denials in a row after which the model is told to stop retrying.
pub const MAX_CONSECUTIVE_DENIALS: u32 = 3;
/// Denials in a session after which the model is told to stop retrying.
pub const MAX_TOTAL_DENIALS: u32 = 20;

/// Consecutive and total denials of tool calls. After [`MAX_CONSECUTIVE_DENIALS`] in a row
/// or [`MAX_TOTAL_DENIALS`] in a session, the denial text tells the model to stop retrying
/// and ask the user (a model whose call was denied often retries the same thing again and
/// again). A small `Copy` value with pure transitions: the app state holds it, and a
/// sub-agent whose setter is a no-op keeps its own (SA-6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DenialTracking {
    /// Denials since the last allowed tool call.
    pub consecutive: u32,
    /// Denials in this session.
    pub total: u32,
}

impl DenialTracking {
    /// After one more denial.
    #[must_use]
    pub const fn record_denial(self) -> Self {
        Self {
            consecutive: self.consecutive.saturating_add(1),
            total: self.total.saturating_add(1),
        }
    }

    /// After a tool call was allowed: the run of denials is broken. Returns `self`
    /// unchanged (equal) when there was no run, so an updater can report "no change".
    #[must_use]
    pub const fn record_allowed(self) -> Self {
        Self {
            consecutive: 0,
            total: self.total,
        }
    }

    /// Whether the model should be told to stop retrying.
    pub const fn limit_reached(self) -> bool {
        self.consecutive >= MAX_CONSECUTIVE_DENIALS || self.total >= MAX_TOTAL_DENIALS
    }

    /// The tool result text for a denial with `reason`, given the counters *after*
    /// [`Self::record_denial`]: the reason, plus the instruction to stop once the limit
    /// is reached.
    ///
    /// ```
    /// use strata_state::DenialTracking;
    /// let t = DenialTracking::default().record_denial();
    /// assert!(!t.denial_message("denied").contains("Stop"));
    /// let t = t.record_denial().record_denial();
    /// assert!(t.denial_message("denied").contains("Stop retrying"));
    /// ```
    pub fn denial_message(self, reason: &str) -> String {
        if !self.limit_reached() {
            return reason.to_owned();
        }
        let why = if self.consecutive >= MAX_CONSECUTIVE_DENIALS {
            format!("{} tool calls in a row have been denied", self.consecutive)
        } else {
            format!("{} tool calls have been denied in this session", self.total)
        };
        format!(
            "{reason}\n\n{why}. Stop retrying denied actions and do not try to work around \
             the denials. Tell the user what you were trying to do and which permission it \
             needs, and ask how they want to proceed."
        )
    }
}

#[cfg(test)]
mod denial_tests {
    use super::*;

    #[test]
    fn allowed_call_resets_only_the_run() {
        let t = DenialTracking::default().record_denial().record_denial();
        assert_eq!(
            t,
            DenialTracking {
                consecutive: 2,
                total: 2
            }
        );
        let t = t.record_allowed();
        assert_eq!(
            t,
            DenialTracking {
                consecutive: 0,
                total: 2
            }
        );
        assert_eq!(t.record_allowed(), t, "no run: unchanged");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_reload_replaces_settings_rules_and_keeps_session_rules() {
        let mut ctx = ToolPermissionContext::default();
        ctx.always_allow_rules.add(
            RuleSource::UserSettings,
            PermissionRule::parse("Read").unwrap(),
        );
        ctx.always_allow_rules.add(
            RuleSource::Session,
            PermissionRule::parse("Bash(ls)").unwrap(),
        );
        ctx.additional_working_directories
            .insert(Arc::from(Path::new("/old")), RuleSource::ProjectSettings);
        ctx.additional_working_directories
            .insert(Arc::from(Path::new("/cli")), RuleSource::CliArg);
        let settings: Settings = serde_json::from_str(
            r#"{"permissions":{"allow":["Edit"],"additionalDirectories":["/new"]}}"#,
        )
        .unwrap();
        let next = ctx.with_settings_permissions(&SettingsPermissions::from_settings(
            &settings,
            RuleSource::LocalSettings,
        ));
        let allow: Vec<_> = next
            .always_allow_rules
            .iter()
            .map(|(s, r)| (s, r.raw.to_string()))
            .collect();
        assert_eq!(
            allow,
            [
                (RuleSource::LocalSettings, "Edit".to_owned()),
                (RuleSource::Session, "Bash(ls)".to_owned())
            ]
        );
        let dirs: Vec<_> = next
            .additional_working_directories
            .keys()
            .map(|p| p.to_path_buf())
            .collect();
        assert_eq!(dirs, [Path::new("/cli"), Path::new("/new")]);
    }
}
