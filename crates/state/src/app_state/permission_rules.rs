//! Permission rules as the permission domain holds them: one rule (`Tool` or
//! `Tool(pattern)`), what a matching rule does, where it came from, and what is wrong
//! with a rule that does not parse.
//!
//! One grammar serves the whole program: the settings loader refuses a deny or ask entry
//! this refuses (`strata_config::rule_text`), so a file whose deny rules cannot be read
//! makes its permissions unknown instead of silently denying less. An allow rule that does
//! not parse is reported and left out (leaving it out only narrows what is allowed).
//! The serialized shapes of rules (SDK permission updates) stay in `strata-protocol`.

use std::fmt;
use std::sync::Arc;

use smol_str::SmolStr;

use super::permissions::RuleSource;

/// What a matching rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

impl RuleSource {
    /// How a decision names this source for a rule of `behavior`: a command-line rule
    /// names its flag (`--allowedTools` adds allow rules, `--disallowedTools` deny rules).
    ///
    /// ```
    /// use strata_state::{RuleBehavior, RuleSource};
    /// assert_eq!(RuleSource::CliArg.describe(RuleBehavior::Deny), "--disallowedTools");
    /// assert_eq!(RuleSource::LocalSettings.describe(RuleBehavior::Deny), "local settings");
    /// ```
    pub const fn describe(self, behavior: RuleBehavior) -> &'static str {
        match (self, behavior) {
            (Self::CliArg, RuleBehavior::Allow) => "--allowedTools",
            (Self::CliArg, RuleBehavior::Deny) => "--disallowedTools",
            (Self::CliArg, RuleBehavior::Ask) => "the command line",
            (Self::UserSettings, _) => "user settings",
            (Self::ProjectSettings, _) => "project settings",
            (Self::LocalSettings, _) => "local settings",
            (Self::FlagSettings, _) => "--settings",
            (Self::PolicySettings, _) => "managed settings",
            (Self::Command, _) => "a /permissions command",
            (Self::Session, _) => "this session",
        }
    }
}

/// One permission rule: `Tool` or `Tool(pattern)`, e.g. `Bash(npm test:*)`, `Read`.
///
/// The tool name and pattern are split once, when the rule is read; how the pattern
/// matches a tool use is the permission checker's business (it differs per tool).
///
/// ```
/// use strata_state::PermissionRule;
/// let rule = PermissionRule::parse("Bash(npm test:*)").unwrap();
/// assert_eq!(rule.tool_name, "Bash");
/// assert_eq!(rule.content.as_deref(), Some("npm test:*"));
/// assert_eq!(PermissionRule::parse("Read").unwrap().content, None);
/// assert!(PermissionRule::parse("Bash(npm").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PermissionRule {
    /// The rule as written.
    pub raw: Arc<str>,
    /// The tool it applies to (`Bash`, `Edit`, `mcp__server__tool`, or `mcp__server` for
    /// all of a server's tools).
    pub tool_name: SmolStr,
    /// The pattern in parentheses, if any (`npm test:*`, `src/**`). `None` means every
    /// use of the tool.
    pub content: Option<Arc<str>>,
}

impl PermissionRule {
    /// Parses `Tool` or `Tool(pattern)`. `Tool()` and `Tool(*)` mean the whole tool.
    /// The error says what is wrong and how to write the rule.
    pub fn parse(raw: &str) -> Result<Self, strata_config::rule_text::RuleTextError> {
        let (tool, pattern) = strata_config::rule_text::parse_rule(raw)?;
        Ok(Self {
            raw: Arc::from(raw),
            tool_name: SmolStr::new(tool),
            content: pattern.map(Arc::from),
        })
    }

    /// Whether the rule names `tool` (exactly, or as its MCP server prefix
    /// `mcp__server` for `mcp__server__tool`). File-tool aliases (`Edit(…)` for Write,
    /// `Read(…)` for Glob and Grep) are applied by the decision, which knows what kind of
    /// tool a call is.
    ///
    /// An MCP rule is compared in the shortened form the tools' names take past the
    /// APIs' 64 characters ([`canonical_rule_name`]), so a rule that spells a long
    /// server or tool name in full still names its tools.
    ///
    /// [`canonical_rule_name`]: strata_protocol::mcp_names::canonical_rule_name
    pub fn names_tool(&self, tool: &str) -> bool {
        let name = strata_protocol::mcp_names::canonical_rule_name(&self.tool_name);
        name == tool
            || (name.starts_with("mcp__")
                && name.matches("__").count() == 1
                && tool
                    .strip_prefix(name.as_ref())
                    .is_some_and(|rest| rest.starts_with("__")))
    }

    /// Whether two rules say the same (however they were spelled around the pattern).
    pub fn same_as(&self, other: &Self) -> bool {
        self.tool_name == other.tool_name && self.content == other.content
    }
}

impl fmt::Display for PermissionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.content {
            Some(p) => write!(f, "{}({p})", self.tool_name),
            None => f.write_str(&self.tool_name),
        }
    }
}

/// A rule that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule {rule:?} ({} {behavior}): {message}", origin.describe(*behavior))]
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

impl RuleError {
    /// Parses `text` as a rule of `behavior` from `origin`, the error naming both.
    pub fn parse(
        text: &str,
        origin: RuleSource,
        behavior: RuleBehavior,
    ) -> Result<PermissionRule, Self> {
        PermissionRule::parse(text).map_err(|e| Self {
            rule: text.to_owned(),
            origin,
            behavior,
            message: e.to_string(),
        })
    }
}

/// Splits a `--allowedTools` value into rules: commas and whitespace separate rules,
/// except inside parentheses (`"Bash(git log:*) Edit,Read"` → three rules).
///
/// ```
/// use strata_state::split_rule_list;
/// assert_eq!(split_rule_list("Bash(git log:*) Edit,Read"), ["Bash(git log:*)", "Edit", "Read"]);
/// ```
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
    use super::*;

    #[test]
    fn rules_parse_with_and_without_patterns() {
        let r = PermissionRule::parse("Edit").unwrap();
        assert_eq!(r.content, None);
        let r = PermissionRule::parse(" Read(~/.ssh/**) ").unwrap();
        assert_eq!(r.content.as_deref(), Some("~/.ssh/**"));
        assert_eq!(r.to_string(), "Read(~/.ssh/**)");
        // A pattern may itself contain parentheses.
        let r = PermissionRule::parse("Bash(echo (a))").unwrap();
        assert_eq!(r.content.as_deref(), Some("echo (a)"));
        for whole in ["Bash()", "Bash(*)"] {
            assert_eq!(PermissionRule::parse(whole).unwrap().content, None);
        }
        let r = PermissionRule::parse("  WebFetch(domain:example.com) ").unwrap();
        assert_eq!(r.tool_name, "WebFetch");
    }

    #[test]
    fn malformed_rules_say_how_to_write_them() {
        for (bad, says) in [
            ("Bash(npm", "closing parenthesis"),
            ("(x)", "no tool name"),
            ("Bad Name", "contains ' '"),
        ] {
            let err = PermissionRule::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let err = RuleError::parse("Bash(rm", RuleSource::CliArg, RuleBehavior::Deny).unwrap_err();
        assert!(
            err.to_string()
                .contains("\"Bash(rm\" (--disallowedTools deny)"),
            "{err}"
        );
    }

    #[test]
    fn mcp_server_rules_cover_the_servers_tools() {
        let r = PermissionRule::parse("mcp__github").unwrap();
        assert!(r.names_tool("mcp__github__create_issue"));
        assert!(!r.names_tool("mcp__githubx__a"));
        assert!(!r.names_tool("Bash"));
        let r = PermissionRule::parse("mcp__github__a").unwrap();
        assert!(!r.names_tool("mcp__github__a__b"));
    }

    /// Regression (review of issue 25): a deny rule naming a long MCP server in full
    /// must name its tools, whose names are shortened past 64 characters.
    #[test]
    fn regression_a_rule_naming_a_long_server_in_full_names_its_shortened_tools() {
        use strata_protocol::mcp_names::{normalize, tool_name};
        let server = "a-very-long-server-name-that-goes-on-and-on-past-48";
        let rule = PermissionRule::parse(&format!("mcp__{}", normalize(server))).unwrap();
        assert!(rule.names_tool(&tool_name(server, "echo")));
        assert!(!rule.names_tool(&tool_name("other", "echo")));
    }
}
