//! The permission updates a user chooses with an answer to a prompt ("allow, and don't
//! ask again for `npm test`"), sent as `updatedPermissions` with a `can_use_tool` answer.
//!
//! Every update takes effect at once for this session. One whose destination is a
//! settings file (`userSettings`, `projectSettings`, `localSettings`) is also written
//! there, through the same locked read-modify-write as `strata config` (a file that does
//! not parse is never written), so later sessions follow it too. Session rules live
//! here, beside the launch's rules, and are consulted with them at every check.

use std::path::PathBuf;

use serde_json::Value;
use strata_config::SettingsSource;
use strata_protocol::sdk::{PermissionUpdate, RuleBehaviorName, UpdateDestination, parse_updates};

use super::Inner;
use crate::permissions::{PermissionContext, PermissionRule, RuleSource};

/// Rules and directories added during the session.
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionPermissions {
    allow: Vec<PermissionRule>,
    deny: Vec<PermissionRule>,
    ask: Vec<PermissionRule>,
    dirs: Vec<PathBuf>,
}

impl SessionPermissions {
    fn list(&mut self, behavior: RuleBehaviorName) -> &mut Vec<PermissionRule> {
        match behavior {
            RuleBehaviorName::Allow => &mut self.allow,
            RuleBehaviorName::Deny => &mut self.deny,
            RuleBehaviorName::Ask => &mut self.ask,
        }
    }

    fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty() && self.ask.is_empty() && self.dirs.is_empty()
    }
}

fn settings_source(destination: UpdateDestination) -> Option<SettingsSource> {
    match destination {
        UpdateDestination::UserSettings => Some(SettingsSource::User),
        UpdateDestination::ProjectSettings => Some(SettingsSource::Project),
        UpdateDestination::LocalSettings => Some(SettingsSource::Local),
        UpdateDestination::Session | UpdateDestination::CliArg => None,
    }
}

fn behavior_key(behavior: RuleBehaviorName) -> &'static str {
    match behavior {
        RuleBehaviorName::Allow => "allow",
        RuleBehaviorName::Deny => "deny",
        RuleBehaviorName::Ask => "ask",
    }
}

impl Inner {
    /// The permission context of the next check: the launch's, with the session's rules
    /// and directories added.
    pub(crate) fn effective_permissions(&self) -> PermissionContext {
        let mut permissions = self.permissions.clone();
        let session = crate::sync::lock(&self.session_permissions);
        if session.is_empty() {
            return permissions;
        }
        let rules = std::sync::Arc::make_mut(&mut permissions.rules);
        rules.allow.extend(session.allow.iter().cloned());
        rules.deny.extend(session.deny.iter().cloned());
        rules.ask.extend(session.ask.iter().cloned());
        permissions
            .additional_directories
            .extend(session.dirs.iter().cloned());
        permissions
    }

    /// Applies the updates of an answer (as sent); returns what could not be applied, for
    /// the user to see.
    pub(crate) fn apply_permission_updates(&self, values: &[Value]) -> Vec<String> {
        let (updates, mut problems) = parse_updates(values);
        for update in updates {
            if let Err(problem) = self.apply_one(&update) {
                problems.push(problem);
            }
        }
        problems
    }

    fn apply_one(&self, update: &PermissionUpdate) -> Result<(), String> {
        match update {
            PermissionUpdate::AddRules {
                rules,
                behavior,
                destination,
            }
            | PermissionUpdate::ReplaceRules {
                rules,
                behavior,
                destination,
            } => {
                let texts: Vec<String> = rules.iter().map(|r| r.to_rule_string()).collect();
                let parsed = texts
                    .iter()
                    .map(|t| {
                        PermissionRule::parse(t, RuleSource::Session)
                            .map_err(|e| format!("permission rule {t:?} ignored: {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let replace = matches!(update, PermissionUpdate::ReplaceRules { .. });
                {
                    let mut session = crate::sync::lock(&self.session_permissions);
                    let list = session.list(*behavior);
                    if replace {
                        list.clear();
                    }
                    for rule in parsed {
                        if !list.contains(&rule) {
                            list.push(rule);
                        }
                    }
                }
                if let Some(source) = settings_source(*destination) {
                    self.persist_rules(source, *behavior, &texts, replace)?;
                }
                Ok(())
            }
            PermissionUpdate::RemoveRules {
                rules,
                behavior,
                destination,
            } => {
                let texts: Vec<String> = rules.iter().map(|r| r.to_rule_string()).collect();
                {
                    let mut session = crate::sync::lock(&self.session_permissions);
                    session.list(*behavior).retain(|r| {
                        !texts.iter().any(|t| {
                            PermissionRule::parse(t, RuleSource::Session).as_ref() == Ok(r)
                        })
                    });
                }
                if let Some(source) = settings_source(*destination) {
                    let key = ["permissions", behavior_key(*behavior)];
                    self.edit_settings(source, |doc| {
                        for t in &texts {
                            let _ = strata_config::keypath::remove_from_array(
                                doc,
                                &key,
                                &Value::String(t.clone()),
                            );
                        }
                    })?;
                }
                Ok(())
            }
            PermissionUpdate::SetMode { mode, destination } => {
                let requested: strata_protocol::permission::PermissionMode = mode
                    .parse()
                    .map_err(|e| format!("permission mode ignored: {e}"))?;
                let allowed =
                    crate::permissions::check_mode_change(requested, self.permissions.bypass)
                        .map_err(|e| e.to_string())?;
                let _ = self.store.update(|s| {
                    if s.tool_permission_context.mode != allowed {
                        s.tool_permission_context.mode = allowed;
                    }
                });
                if let Some(source) = settings_source(*destination) {
                    let name = Value::String(mode.clone());
                    self.edit_settings(source, |doc| {
                        let _ = strata_config::keypath::set(
                            doc,
                            &["permissions", "defaultMode"],
                            name.clone(),
                        );
                    })?;
                }
                Ok(())
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
                let resolved: Vec<PathBuf> = directories.iter().map(|d| self.cwd.join(d)).collect();
                {
                    let mut session = crate::sync::lock(&self.session_permissions);
                    if add {
                        for d in &resolved {
                            if !session.dirs.contains(d) {
                                session.dirs.push(d.clone());
                            }
                        }
                    } else {
                        session.dirs.retain(|d| !resolved.contains(d));
                    }
                }
                if let Some(source) = settings_source(*destination) {
                    let key = ["permissions", "additionalDirectories"];
                    self.edit_settings(source, |doc| {
                        for d in &resolved {
                            let v = Value::String(d.display().to_string());
                            let _ = if add {
                                strata_config::keypath::add_to_array(doc, &key, v).map(drop)
                            } else {
                                strata_config::keypath::remove_from_array(doc, &key, &v).map(drop)
                            };
                        }
                    })?;
                }
                Ok(())
            }
        }
    }

    fn persist_rules(
        &self,
        source: SettingsSource,
        behavior: RuleBehaviorName,
        texts: &[String],
        replace: bool,
    ) -> Result<(), String> {
        let key = ["permissions", behavior_key(behavior)];
        self.edit_settings(source, |doc| {
            if replace {
                let _ = strata_config::keypath::set(doc, &key, Value::Array(Vec::new()));
            }
            for t in texts {
                let _ = strata_config::keypath::add_to_array(doc, &key, Value::String(t.clone()));
            }
        })
    }

    fn edit_settings(
        &self,
        source: SettingsSource,
        mut edit: impl FnMut(&mut strata_config::JsonObject),
    ) -> Result<(), String> {
        self.settings
            .update(source, |doc| edit(doc))
            .map(drop)
            .map_err(|e| {
                format!("the permission update was applied to this session but not saved: {e}")
            })
    }
}
