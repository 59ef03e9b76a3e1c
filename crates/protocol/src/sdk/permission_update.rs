//! Permission updates: what a client asks for with an "allow" answer ("yes, and don't ask
//! again for `npm test`") and what strata suggests with a `can_use_tool` request, in the
//! shapes the reference agent's SDKs use (`updatedPermissions`, `permission_suggestions`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One change to the permission rules, mode or directories.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PermissionUpdate {
    /// Add rules of one behavior.
    AddRules {
        /// The rules.
        rules: Vec<PermissionRuleValue>,
        /// What they do.
        behavior: RuleBehaviorName,
        /// Where they are kept.
        destination: UpdateDestination,
    },
    /// Replace every rule of one behavior at the destination.
    ReplaceRules {
        /// The new rules.
        rules: Vec<PermissionRuleValue>,
        /// The behavior whose rules are replaced.
        behavior: RuleBehaviorName,
        /// Where.
        destination: UpdateDestination,
    },
    /// Remove rules.
    RemoveRules {
        /// The rules.
        rules: Vec<PermissionRuleValue>,
        /// Their behavior.
        behavior: RuleBehaviorName,
        /// Where.
        destination: UpdateDestination,
    },
    /// Change the permission mode.
    SetMode {
        /// The mode's name (`acceptEdits`, …).
        mode: String,
        /// Where.
        destination: UpdateDestination,
    },
    /// Let the tools work in more directories.
    AddDirectories {
        /// The directories.
        directories: Vec<String>,
        /// Where.
        destination: UpdateDestination,
    },
    /// Take directories away again.
    RemoveDirectories {
        /// The directories.
        directories: Vec<String>,
        /// Where.
        destination: UpdateDestination,
    },
}

/// A rule as the SDKs spell it: `{"toolName":"Bash","ruleContent":"npm test:*"}` is the
/// rule `Bash(npm test:*)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRuleValue {
    /// The tool.
    pub tool_name: String,
    /// The pattern inside the parentheses, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_content: Option<String>,
}

impl PermissionRuleValue {
    /// The rule in settings syntax: `Tool` or `Tool(content)`.
    pub fn to_rule_string(&self) -> String {
        match &self.rule_content {
            Some(content) => format!("{}({content})", self.tool_name),
            None => self.tool_name.clone(),
        }
    }
}

/// What a rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleBehaviorName {
    /// Allow without asking.
    Allow,
    /// Refuse.
    Deny,
    /// Always ask.
    Ask,
}

/// Where an update is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UpdateDestination {
    /// The user settings file.
    UserSettings,
    /// The shared project settings file.
    ProjectSettings,
    /// The personal project settings file.
    LocalSettings,
    /// This session only.
    Session,
    /// As if given on the command line (this session only).
    CliArg,
}

/// Parses the updates of a list as sent (`updatedPermissions`), each on its own: one
/// that strata does not know never turns the user's "allow" into an error. Returns the
/// updates, and a description of each entry left out.
pub fn parse_updates(values: &[Value]) -> (Vec<PermissionUpdate>, Vec<String>) {
    let mut updates = Vec::new();
    let mut skipped = Vec::new();
    for v in values {
        match serde_json::from_value(v.clone()) {
            Ok(update) => updates.push(update),
            Err(e) => skipped.push(format!("permission update {v} ignored: {e}")),
        }
    }
    (updates, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn updates_parse_in_the_sdk_shapes_and_unknown_ones_are_reported() {
        let (updates, skipped) = parse_updates(&[
            json!({"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],
                   "behavior":"allow","destination":"localSettings"}),
            json!({"type":"setMode","mode":"acceptEdits","destination":"session"}),
            json!({"type":"somethingNew","destination":"session"}),
        ]);
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(
            updates[0],
            PermissionUpdate::AddRules {
                rules: vec![PermissionRuleValue {
                    tool_name: "Bash".into(),
                    rule_content: Some("npm test:*".into()),
                }],
                behavior: RuleBehaviorName::Allow,
                destination: UpdateDestination::LocalSettings,
            }
        );
        assert_eq!(
            serde_json::to_value(&updates[1]).unwrap(),
            json!({"type":"setMode","mode":"acceptEdits","destination":"session"})
        );
        let PermissionUpdate::AddRules { rules, .. } = &updates[0] else {
            panic!()
        };
        assert_eq!(rules[0].to_rule_string(), "Bash(npm test:*)");
    }
}
