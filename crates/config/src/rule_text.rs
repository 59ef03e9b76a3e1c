//! The text form of a permission rule: `Tool` or `Tool(pattern)`.
//!
//! It lives here, and only here, because two places must agree on it: loading a
//! settings file (a `deny` or `ask` entry that does not parse makes the file's
//! permissions unusable, see [`crate::SettingsFiles::load`]) and the agent's rule set,
//! which parses every rule with [`parse_rule`]. What a pattern matches is the agent's
//! business; this module only splits the text.

/// What is wrong with a rule's text; the message says how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleTextError {
    /// `Tool(pattern` without the `)`.
    #[error("missing closing parenthesis; write Tool or Tool(pattern), e.g. Bash(npm test:*)")]
    MissingParenthesis,
    /// Nothing before the `(`, or an empty rule.
    #[error("no tool name; write Tool or Tool(pattern), e.g. Edit(src/**)")]
    NoToolName,
    /// A tool name with a character tool names never have.
    #[error("tool name {tool:?} contains {bad:?}; tool names are letters, digits, `_` and `-`")]
    BadToolName {
        /// The tool name as written.
        tool: String,
        /// The first character that cannot be in a tool name.
        bad: char,
    },
}

/// Splits a rule into its tool name and pattern. `Tool()` and `Tool(*)` mean the whole
/// tool (no pattern). The error says what is wrong and how to write it.
///
/// ```
/// use strata_config::rule_text::parse_rule;
/// assert_eq!(parse_rule(" Bash(npm test:*) "), Ok(("Bash", Some("npm test:*"))));
/// assert_eq!(parse_rule("Edit(*)"), Ok(("Edit", None)));
/// assert!(parse_rule("Bash(rm").is_err());
/// assert!(parse_rule("Bad Name").is_err());
/// ```
pub fn parse_rule(text: &str) -> Result<(&str, Option<&str>), RuleTextError> {
    let text = text.trim();
    let (tool, pattern) = match text.find('(') {
        None => (text, None),
        Some(open) => {
            let Some(inner) = text[open + 1..].strip_suffix(')') else {
                return Err(RuleTextError::MissingParenthesis);
            };
            (&text[..open], Some(inner.trim()))
        }
    };
    if tool.is_empty() {
        return Err(RuleTextError::NoToolName);
    }
    if let Some(bad) = tool
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
    {
        return Err(RuleTextError::BadToolName {
            tool: tool.to_owned(),
            bad,
        });
    }
    Ok((tool, pattern.filter(|p| !p.is_empty() && *p != "*")))
}
