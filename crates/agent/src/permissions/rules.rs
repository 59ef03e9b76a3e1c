//! Permission rules: `Tool` or `Tool(pattern)`, in `allow`, `deny` and `ask` lists.
//!
//! Rules come from the merged settings (`permissions.allow/deny/ask`) and from the
//! command line (`--allowedTools` adds allow rules, `--disallowedTools` deny rules).
//! An allow rule that does not parse is reported (with where it came from) and skipped:
//! leaving it out only narrows what is allowed. A deny or ask entry of a settings file
//! that does not parse makes that file's rules unusable instead (the settings loader
//! keeps its last good rules, or reports them unknown: [`RuleSet::unknown`]); one given
//! with `--disallowedTools` is reported and skipped.
//!
//! [`PermissionContext::reload_settings`] rebuilds the settings part of a context when a
//! settings file changes during the session (UI-7).

use std::fmt;

use std::sync::Arc;

use strata_config::{MergedSettings, UnknownPermissions};
use strata_protocol::permission::PermissionMode;
use strata_protocol::settings::PermissionsSettings;

use super::{PermissionContext, PermissionDecision, PermissionLaunch};

/// Where a rule came from (named in decisions and errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleSource {
    /// `permissions.allow` / `deny` / `ask` of the merged settings.
    Settings,
    /// `--allowedTools`.
    AllowedToolsFlag,
    /// `--disallowedTools`.
    DisallowedToolsFlag,
    /// An answer to a prompt during this session ("and don't ask again").
    Session,
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Settings => "settings",
            Self::AllowedToolsFlag => "--allowedTools",
            Self::DisallowedToolsFlag => "--disallowedTools",
            Self::Session => "this session",
        })
    }
}

/// What a matching rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleBehavior {
    /// Allow without asking.
    Allow,
    /// Refuse.
    Deny,
    /// Always ask (even where the mode would allow).
    Ask,
}

impl fmt::Display for RuleBehavior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Ask => "ask",
        })
    }
}

/// One rule: a tool name and an optional pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PermissionRule {
    /// The tool name (`Bash`, `Edit`, `mcp__server__tool`, or `mcp__server` for all of a
    /// server's tools).
    pub tool: String,
    /// The pattern in parentheses, if any (`npm test:*`, `src/**`). `None` means every
    /// use of the tool.
    pub pattern: Option<String>,
    /// Where it came from.
    pub source: RuleSource,
}

impl fmt::Display for PermissionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Some(p) => write!(f, "{}({p})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

/// A rule that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule {rule:?} ({origin} {behavior}): {message}")]
pub struct RuleError {
    /// The rule text as written.
    pub rule: String,
    /// Where it came from.
    pub origin: RuleSource,
    /// Which list it was in.
    pub behavior: RuleBehavior,
    /// What is wrong and how to write it.
    pub message: String,
}

impl PermissionRule {
    /// Parses `Tool` or `Tool(pattern)`. `Tool()` and `Tool(*)` mean the whole tool.
    ///
    /// ```
    /// use strata_agent::permissions::{PermissionRule, RuleSource};
    /// let r = PermissionRule::parse("Bash(npm run test:*)", RuleSource::Settings).unwrap();
    /// assert_eq!((r.tool.as_str(), r.pattern.as_deref()), ("Bash", Some("npm run test:*")));
    /// assert!(PermissionRule::parse("Bash(npm", RuleSource::Settings).is_err());
    /// ```
    pub fn parse(text: &str, source: RuleSource) -> Result<Self, String> {
        // One grammar for the agent and for the settings loader, which refuses a deny or
        // ask entry this would refuse (strata_config::rule_text).
        let (tool, pattern) = strata_config::rule_text::parse_rule(text)?;
        Ok(Self {
            tool: tool.to_owned(),
            pattern: pattern.map(str::to_owned),
            source,
        })
    }

    /// Whether the rule names `tool` (exactly, or as its MCP server prefix
    /// `mcp__server` for `mcp__server__tool`). File-tool aliases are applied by the
    /// decision, which knows what kind of tool a call is.
    pub fn names_tool(&self, tool: &str) -> bool {
        self.tool == tool
            || (self.tool.starts_with("mcp__")
                && self.tool.matches("__").count() == 1
                && tool
                    .strip_prefix(self.tool.as_str())
                    .is_some_and(|rest| rest.starts_with("__")))
    }
}

/// The rules in effect, by behaviour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// Rules that allow.
    pub allow: Vec<PermissionRule>,
    /// Rules that deny (they win over everything).
    pub deny: Vec<PermissionRule>,
    /// Rules that always ask.
    pub ask: Vec<PermissionRule>,
    /// Settings files whose rules cannot be known (they do not parse, or their
    /// `permissions` do not, and no good version was read before; see
    /// `strata_config::SettingsFiles::load`). While there is one, its deny rules might
    /// name any call: every call that no known deny rule or plan mode refuses asks (in
    /// every mode, bypass included), and is denied where no one can be asked.
    pub unknown: Vec<UnknownPermissions>,
}

impl RuleSet {
    /// Builds the rule set from the merged settings' `permissions` and the
    /// `--allowedTools` / `--disallowedTools` entries (each entry may hold several rules
    /// separated by commas or spaces, see [`split_rule_list`]). Rules that do not parse
    /// are returned as errors and left out.
    pub fn from_sources(
        settings: Option<&PermissionsSettings>,
        allowed_tools: &[String],
        disallowed_tools: &[String],
    ) -> (Self, Vec<RuleError>) {
        let mut set = Self::default();
        let mut errors = Vec::new();
        let mut add = |texts: &mut dyn Iterator<Item = String>, behavior, source| {
            for text in texts {
                match PermissionRule::parse(&text, source) {
                    Ok(rule) => set.list_mut(behavior).push(rule),
                    Err(message) => errors.push(RuleError {
                        rule: text,
                        origin: source,
                        behavior,
                        message,
                    }),
                }
            }
        };
        if let Some(p) = settings {
            let lists = [
                (&p.allow, RuleBehavior::Allow),
                (&p.deny, RuleBehavior::Deny),
                (&p.ask, RuleBehavior::Ask),
            ];
            for (list, behavior) in lists {
                let mut it = list.iter().flatten().cloned();
                add(&mut it, behavior, RuleSource::Settings);
            }
        }
        let mut allowed = allowed_tools.iter().flat_map(|s| split_rule_list(s));
        add(
            &mut allowed,
            RuleBehavior::Allow,
            RuleSource::AllowedToolsFlag,
        );
        let mut disallowed = disallowed_tools.iter().flat_map(|s| split_rule_list(s));
        add(
            &mut disallowed,
            RuleBehavior::Deny,
            RuleSource::DisallowedToolsFlag,
        );
        (set, errors)
    }

    /// The list for `behavior`.
    pub fn list(&self, behavior: RuleBehavior) -> &[PermissionRule] {
        match behavior {
            RuleBehavior::Allow => &self.allow,
            RuleBehavior::Deny => &self.deny,
            RuleBehavior::Ask => &self.ask,
        }
    }

    fn list_mut(&mut self, behavior: RuleBehavior) -> &mut Vec<PermissionRule> {
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
            .any(|r| r.pattern.is_none() && r.names_tool(tool))
    }
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
        let (mut rules, errors) =
            RuleSet::from_sources(permissions, &launch.allowed_tools, &launch.disallowed_tools);
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

/// Splits a `--allowedTools` value into rules: commas and whitespace separate rules,
/// except inside parentheses (`"Bash(git log:*) Edit,Read"` → three rules).
pub fn split_rule_list(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in value.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                if !current.trim().is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                current.clear();
            }
            _ => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use strata_protocol::settings::Settings;

    use super::*;

    #[test]
    fn rules_parse_with_and_without_patterns() {
        let r = PermissionRule::parse("Edit", RuleSource::Settings).unwrap();
        assert_eq!(r.pattern, None);
        let r = PermissionRule::parse(" Read(~/.ssh/**) ", RuleSource::Settings).unwrap();
        assert_eq!(r.pattern.as_deref(), Some("~/.ssh/**"));
        assert_eq!(r.to_string(), "Read(~/.ssh/**)");
        // A pattern may itself contain parentheses.
        let r = PermissionRule::parse("Bash(echo (a))", RuleSource::Settings).unwrap();
        assert_eq!(r.pattern.as_deref(), Some("echo (a)"));
        for whole in ["Bash()", "Bash(*)"] {
            assert_eq!(
                PermissionRule::parse(whole, RuleSource::Settings)
                    .unwrap()
                    .pattern,
                None
            );
        }
    }

    #[test]
    fn malformed_rules_say_how_to_write_them() {
        for (bad, says) in [
            ("Bash(npm", "closing parenthesis"),
            ("(x)", "no tool name"),
            ("Bad Name", "contains ' '"),
        ] {
            let err = PermissionRule::parse(bad, RuleSource::Settings).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn rule_sources_are_merged_and_bad_rules_reported() {
        let settings: Settings = serde_json::from_str(
            r#"{"permissions":{"allow":["Read","Bash(git log:*)"],"deny":["Bash(rm"],"ask":["Write"]}}"#,
        )
        .unwrap();
        let (set, errors) = RuleSet::from_sources(
            settings.permissions.as_ref(),
            &["Bash(npm test:*) Edit,Glob".to_owned()],
            &["WebFetch".to_owned()],
        );
        let names = |l: &[PermissionRule]| l.iter().map(ToString::to_string).collect::<Vec<_>>();
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
        assert_eq!(set.deny[0].source, RuleSource::DisallowedToolsFlag);
        assert_eq!(errors.len(), 1);
        let msg = errors[0].to_string();
        assert!(
            msg.contains("\"Bash(rm\"") && msg.contains("settings deny"),
            "{msg}"
        );
    }

    #[test]
    fn mcp_server_rules_cover_the_servers_tools() {
        let r = PermissionRule::parse("mcp__github", RuleSource::Settings).unwrap();
        assert!(r.names_tool("mcp__github__create_issue"));
        assert!(!r.names_tool("mcp__githubx__a"));
        assert!(!r.names_tool("Bash"));
        let r = PermissionRule::parse("mcp__github__a", RuleSource::Settings).unwrap();
        assert!(!r.names_tool("mcp__github__a__b"));
    }

    #[test]
    fn whole_tool_deny_is_detected() {
        let (set, _) = RuleSet::from_sources(None, &[], &["Bash".into(), "Edit(x)".into()]);
        assert!(set.denies_tool_entirely("Bash"));
        assert!(!set.denies_tool_entirely("Edit"));
    }
}
