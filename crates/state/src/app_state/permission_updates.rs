//! Permission updates (`updatedPermissions` of a prompt answer, "allow, and don't ask
//! again") as transitions of the [`ToolPermissionContext`].
//!
//! Each update changes the rules or directories of the source its destination names
//! (`session` → [`RuleSource::Session`], `localSettings` → [`RuleSource::LocalSettings`],
//! …), so the change is in force for the very next decision and a later settings reload
//! keeps what the session added. An update whose destination is a settings file also
//! yields a [`SettingsEdit`] for that file, which the caller puts in the state for the
//! effects hub to persist (the call path never writes a file). Mode changes are left to
//! the caller: they go through the one mode gate, which lives with the agent.
//!
//! ```
//! use strata_protocol::sdk::{PermissionRuleValue, PermissionUpdate, RuleBehaviorName, UpdateDestination};
//! use strata_state::{RuleBehavior, RuleSource, ToolPermissionContext, apply_permission_update};
//!
//! let update = PermissionUpdate::AddRules {
//!     rules: vec![PermissionRuleValue { tool_name: "Bash".into(), rule_content: Some("npm test:*".into()) }],
//!     behavior: RuleBehaviorName::Allow,
//!     destination: UpdateDestination::LocalSettings,
//! };
//! let mut ctx = ToolPermissionContext::default();
//! let edit = apply_permission_update(&mut ctx, &update, &|d| d.to_path_buf()).unwrap();
//! let (source, rule) = ctx.rules(RuleBehavior::Allow).iter().next().unwrap();
//! assert_eq!((source, rule.to_string().as_str()), (RuleSource::LocalSettings, "Bash(npm test:*)"));
//! assert!(edit.is_some(), "the local settings file gains the rule");
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use strata_config::SettingsSource;
use strata_protocol::sdk::{PermissionUpdate, RuleBehaviorName, UpdateDestination};

use super::permission_rules::{PermissionRule, RuleBehavior};
use super::permissions::{RuleSource, ToolPermissionContext};
use super::settings_edit::{SettingsEdit, SettingsEditOp, permissions_key};

/// The rule source an update's destination files its rules under.
pub const fn destination_source(destination: UpdateDestination) -> RuleSource {
    match destination {
        UpdateDestination::UserSettings => RuleSource::UserSettings,
        UpdateDestination::ProjectSettings => RuleSource::ProjectSettings,
        UpdateDestination::LocalSettings => RuleSource::LocalSettings,
        UpdateDestination::Session => RuleSource::Session,
        UpdateDestination::CliArg => RuleSource::CliArg,
    }
}

/// The settings file an update's destination keeps its change in, if any.
pub const fn destination_file(destination: UpdateDestination) -> Option<SettingsSource> {
    match destination {
        UpdateDestination::UserSettings => Some(SettingsSource::User),
        UpdateDestination::ProjectSettings => Some(SettingsSource::Project),
        UpdateDestination::LocalSettings => Some(SettingsSource::Local),
        UpdateDestination::Session | UpdateDestination::CliArg => None,
    }
}

const fn behavior(name: RuleBehaviorName) -> RuleBehavior {
    match name {
        RuleBehaviorName::Allow => RuleBehavior::Allow,
        RuleBehaviorName::Deny => RuleBehavior::Deny,
        RuleBehaviorName::Ask => RuleBehavior::Ask,
    }
}

const fn behavior_key(name: RuleBehaviorName) -> &'static str {
    match name {
        RuleBehaviorName::Allow => "allow",
        RuleBehaviorName::Deny => "deny",
        RuleBehaviorName::Ask => "ask",
    }
}

/// Why an update was not applied (nothing of it was).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionUpdateError {
    /// A rule of the update does not parse.
    #[error("permission rule {rule:?} ignored: {reason}")]
    BadRule {
        /// The rule as sent.
        rule: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A mode change reached this function; modes go through the mode gate.
    #[error("a mode change is not a rule or directory update")]
    ModeChange,
}

/// Applies one rule or directory `update` to `ctx`, and returns the settings-file edit it
/// asks for (`None` for the session and command-line destinations). `resolve` makes a
/// directory absolute the way the session does (against the project root, `~/` against
/// home); directories are compared resolved, so removing `../lib` removes the
/// `/work/lib` a settings file listed. A rule that does not parse rejects the whole
/// update, leaving `ctx` as it was.
pub fn apply_permission_update(
    ctx: &mut ToolPermissionContext,
    update: &PermissionUpdate,
    resolve: &dyn Fn(&Path) -> PathBuf,
) -> Result<Option<SettingsEdit>, PermissionUpdateError> {
    match update {
        PermissionUpdate::AddRules {
            rules,
            behavior: name,
            destination,
        }
        | PermissionUpdate::ReplaceRules {
            rules,
            behavior: name,
            destination,
        }
        | PermissionUpdate::RemoveRules {
            rules,
            behavior: name,
            destination,
        } => {
            let texts: Vec<String> = rules.iter().map(|r| r.to_rule_string()).collect();
            let parsed = texts
                .iter()
                .map(|t| {
                    PermissionRule::parse(t).map_err(|e| PermissionUpdateError::BadRule {
                        rule: t.clone(),
                        reason: e.to_string(),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let source = destination_source(*destination);
            let list = ctx.rules_mut(behavior(*name));
            let key = permissions_key(behavior_key(*name));
            let values = texts.into_iter().map(Value::String);
            let ops = match update {
                PermissionUpdate::RemoveRules { .. } => {
                    list.retain(|s, r| s != source || !parsed.iter().any(|gone| r.same_as(gone)));
                    values
                        .map(|value| SettingsEditOp::RemoveFromArray {
                            key: key.clone(),
                            value,
                        })
                        .collect()
                }
                PermissionUpdate::ReplaceRules { .. } => {
                    list.retain(|s, _| s != source);
                    for rule in parsed {
                        list.add(source, rule);
                    }
                    vec![SettingsEditOp::Set {
                        key,
                        value: Value::Array(values.collect()),
                    }]
                }
                _ => {
                    for rule in parsed {
                        list.add(source, rule);
                    }
                    values
                        .map(|value| SettingsEditOp::AddToArray {
                            key: key.clone(),
                            value,
                        })
                        .collect()
                }
            };
            Ok(edit(*destination, ops))
        }
        PermissionUpdate::AddDirectories {
            directories,
            destination,
        }
        | PermissionUpdate::RemoveDirectories {
            directories,
            destination,
        } => {
            let add = matches!(update, PermissionUpdate::AddDirectories { .. });
            let source = destination_source(*destination);
            let resolved: Vec<PathBuf> =
                directories.iter().map(|d| resolve(Path::new(d))).collect();
            let key = permissions_key("additionalDirectories");
            let dirs = &mut ctx.additional_working_directories;
            if add {
                for d in &resolved {
                    let known = dirs.keys().any(|k| resolve(k) == *d);
                    if !known {
                        dirs.insert(Arc::from(d.as_path()), source);
                    }
                }
            } else {
                let gone: Vec<Arc<Path>> = dirs
                    .iter()
                    .filter(|(k, s)| **s == source && resolved.contains(&resolve(k)))
                    .map(|(k, _)| Arc::clone(k))
                    .collect();
                for k in gone {
                    dirs.remove(&k);
                }
            }
            let ops = resolved
                .iter()
                .map(|d| {
                    let value = Value::String(d.display().to_string());
                    if add {
                        SettingsEditOp::AddToArray {
                            key: key.clone(),
                            value,
                        }
                    } else {
                        SettingsEditOp::RemoveFromArray {
                            key: key.clone(),
                            value,
                        }
                    }
                })
                .collect();
            Ok(edit(*destination, ops))
        }
        PermissionUpdate::SetMode { .. } => Err(PermissionUpdateError::ModeChange),
    }
}

/// The edit of `destination`'s settings file, if it names one.
fn edit(destination: UpdateDestination, ops: Vec<SettingsEditOp>) -> Option<SettingsEdit> {
    destination_file(destination).map(|source| SettingsEdit { source, ops })
}

/// The settings edit a mode change kept in `destination` asks for (the file's
/// `permissions.defaultMode`), if it names a settings file.
pub fn default_mode_edit(destination: UpdateDestination, mode: &str) -> Option<SettingsEdit> {
    edit(
        destination,
        vec![SettingsEditOp::Set {
            key: permissions_key("defaultMode"),
            value: Value::String(mode.to_owned()),
        }],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_protocol::sdk::PermissionRuleValue;

    fn rules(texts: &[(&str, Option<&str>)]) -> Vec<PermissionRuleValue> {
        texts
            .iter()
            .map(|(t, c)| PermissionRuleValue {
                tool_name: (*t).to_owned(),
                rule_content: c.map(str::to_owned),
            })
            .collect()
    }

    fn allow(ctx: &ToolPermissionContext) -> Vec<(RuleSource, String)> {
        ctx.always_allow_rules
            .iter()
            .map(|(s, r)| (s, r.to_string()))
            .collect()
    }

    #[test]
    fn a_removal_takes_only_the_destinations_rule_and_edits_its_file() {
        let mut ctx = ToolPermissionContext::default();
        for source in [RuleSource::LocalSettings, RuleSource::Session] {
            ctx.always_allow_rules
                .add(source, PermissionRule::parse("Bash(touch:*)").unwrap());
        }
        let update = PermissionUpdate::RemoveRules {
            rules: rules(&[("Bash", Some("touch:*"))]),
            behavior: RuleBehaviorName::Allow,
            destination: UpdateDestination::LocalSettings,
        };
        let edit = apply_permission_update(&mut ctx, &update, &|d| d.to_path_buf())
            .unwrap()
            .unwrap();
        assert_eq!(allow(&ctx), [(RuleSource::Session, "Bash(touch:*)".into())]);
        assert_eq!(edit.source, SettingsSource::Local);
        assert_eq!(
            edit.ops,
            [SettingsEditOp::RemoveFromArray {
                key: permissions_key("allow"),
                value: Value::String("Bash(touch:*)".into())
            }]
        );
    }

    #[test]
    fn a_replacement_keeps_other_sources_and_sets_the_whole_list() {
        let mut ctx = ToolPermissionContext::default();
        ctx.always_deny_rules.add(
            RuleSource::CliArg,
            PermissionRule::parse("WebFetch").unwrap(),
        );
        ctx.always_deny_rules.add(
            RuleSource::ProjectSettings,
            PermissionRule::parse("Bash(rm:*)").unwrap(),
        );
        let update = PermissionUpdate::ReplaceRules {
            rules: rules(&[("Bash", Some("curl:*"))]),
            behavior: RuleBehaviorName::Deny,
            destination: UpdateDestination::ProjectSettings,
        };
        let edit = apply_permission_update(&mut ctx, &update, &|d| d.to_path_buf())
            .unwrap()
            .unwrap();
        let deny: Vec<_> = ctx
            .always_deny_rules
            .iter()
            .map(|(s, r)| (s, r.to_string()))
            .collect();
        assert_eq!(
            deny,
            [
                (RuleSource::ProjectSettings, "Bash(curl:*)".to_owned()),
                (RuleSource::CliArg, "WebFetch".to_owned())
            ]
        );
        assert!(matches!(&edit.ops[..], [SettingsEditOp::Set { .. }]));
    }

    #[test]
    fn a_bad_rule_rejects_the_update_and_changes_nothing() {
        let mut ctx = ToolPermissionContext::default();
        let update = PermissionUpdate::AddRules {
            rules: rules(&[("Read", None), ("Bash tool", Some("x"))]),
            behavior: RuleBehaviorName::Allow,
            destination: UpdateDestination::Session,
        };
        let before = ctx.clone();
        let err = apply_permission_update(&mut ctx, &update, &|d| d.to_path_buf()).unwrap_err();
        assert!(
            matches!(err, PermissionUpdateError::BadRule { .. }),
            "{err}"
        );
        assert_eq!(ctx, before);
    }

    #[test]
    fn directories_are_compared_resolved_and_session_ones_need_no_file() {
        let mut ctx = ToolPermissionContext::default();
        ctx.additional_working_directories
            .insert(Arc::from(Path::new("../lib")), RuleSource::Session);
        let resolve = |d: &Path| -> PathBuf {
            if d.is_absolute() {
                d.to_path_buf()
            } else {
                Path::new("/work").join(d.strip_prefix("..").unwrap_or(d))
            }
        };
        let add = PermissionUpdate::AddDirectories {
            directories: vec!["/work/lib".into(), "/data".into()],
            destination: UpdateDestination::Session,
        };
        assert_eq!(
            apply_permission_update(&mut ctx, &add, &resolve).unwrap(),
            None
        );
        assert_eq!(
            ctx.additional_working_directories.len(),
            2,
            "/work/lib was known"
        );
        let remove = PermissionUpdate::RemoveDirectories {
            directories: vec!["/work/lib".into()],
            destination: UpdateDestination::Session,
        };
        apply_permission_update(&mut ctx, &remove, &resolve).unwrap();
        let left: Vec<_> = ctx.additional_working_directories.keys().cloned().collect();
        assert_eq!(left, [Arc::from(Path::new("/data"))]);
    }
}
