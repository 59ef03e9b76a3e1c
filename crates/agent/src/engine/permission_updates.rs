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
use strata_state::{PermissionRule, RuleBehavior, RuleSource};

use crate::permissions::PermissionContext;

/// The changes made to the permission rules and directories during the session.
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionPermissions {
    /// Rules added, with their behavior and where the client asked them kept.
    added: Vec<(RuleBehaviorName, UpdateDestination, PermissionRule)>,
    /// Rules of the launch (settings, flags) taken out of effect by a removal or a
    /// replacement.
    removed: Vec<(RuleBehaviorName, PermissionRule)>,
    dirs: Vec<PathBuf>,
}

/// Whether two rules say the same (wherever they came from).
fn same(a: &PermissionRule, b: &PermissionRule) -> bool {
    a.same_as(b)
}

impl SessionPermissions {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.dirs.is_empty()
    }

    fn add(&mut self, behavior: RuleBehaviorName, to: UpdateDestination, rule: PermissionRule) {
        self.removed
            .retain(|(b, r)| !(*b == behavior && same(r, &rule)));
        if !self
            .added
            .iter()
            .any(|(b, d, r)| *b == behavior && *d == to && same(r, &rule))
        {
            self.added.push((behavior, to, rule));
        }
    }

    fn remove(&mut self, behavior: RuleBehaviorName, rule: PermissionRule) {
        self.added
            .retain(|(b, _, r)| !(*b == behavior && same(r, &rule)));
        if !self
            .removed
            .iter()
            .any(|(b, r)| *b == behavior && same(r, &rule))
        {
            self.removed.push((behavior, rule));
        }
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
    /// The permission context of the next check: the live settings' and the launch's,
    /// with the session's rules and directories added.
    pub(crate) fn effective_permissions(&self) -> PermissionContext {
        let mut permissions = self.permissions.current();
        let session = crate::sync::lock(&self.session_permissions);
        if session.is_empty() {
            return permissions;
        }
        let rules = std::sync::Arc::make_mut(&mut permissions.rules);
        for (behavior, list) in [
            (RuleBehaviorName::Allow, RuleBehavior::Allow),
            (RuleBehaviorName::Deny, RuleBehavior::Deny),
            (RuleBehaviorName::Ask, RuleBehavior::Ask),
        ] {
            let list = rules.list_mut(list);
            list.retain(|_, r| {
                !session
                    .removed
                    .iter()
                    .any(|(b, gone)| *b == behavior && same(r, gone))
            });
            for (_, _, rule) in session.added.iter().filter(|(b, _, _)| *b == behavior) {
                list.add(RuleSource::Session, rule.clone());
            }
        }
        permissions
            .additional_directories
            .extend(session.dirs.iter().cloned());
        permissions
    }

    /// Applies the updates of an answer (as sent); what cannot be applied is reported on
    /// stderr. Settings writes lock and fsync, so on a multi-thread runtime they run off
    /// the async workers.
    pub(crate) fn apply_permission_updates(&self, values: &[Value]) {
        let apply = || {
            let (updates, mut problems) = parse_updates(values);
            for update in updates {
                if let Err(problem) = self.apply_one(&update) {
                    problems.push(problem);
                }
            }
            problems
        };
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let problems = if multi_thread {
            tokio::task::block_in_place(apply)
        } else {
            apply()
        };
        for problem in problems {
            tracing::warn!("{problem}");
        }
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
                let parsed = parse_rules(&texts)?;
                let replace = matches!(update, PermissionUpdate::ReplaceRules { .. });
                let source = settings_source(*destination);
                // What the file held before a replacement: those rules (read at launch)
                // go out of effect now, as the file loses them.
                let replaced = match (replace, source) {
                    (true, Some(source)) => {
                        parse_rules(&self.settings_rules(source, *behavior)).unwrap_or_default()
                    }
                    _ => Vec::new(),
                };
                {
                    let mut session = crate::sync::lock(&self.session_permissions);
                    if replace {
                        session
                            .added
                            .retain(|(b, d, _)| !(*b == *behavior && *d == *destination));
                        for rule in replaced {
                            session.remove(*behavior, rule);
                        }
                    }
                    for rule in parsed {
                        session.add(*behavior, *destination, rule);
                    }
                }
                if let Some(source) = source {
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
                    for rule in parse_rules(&texts)? {
                        session.remove(*behavior, rule);
                    }
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
                self.set_permission_mode(mode)
                    .map_err(|e| format!("permission mode ignored: {e}"))?;
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
                let resolved: Vec<PathBuf> = directories
                    .iter()
                    .map(|d| self.permissions.absolute_dir(d))
                    .collect();
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
                {
                    // Bash may now stay in (or must now leave) these directories too.
                    let mut dirs = crate::sync::lock(&self.tool_context.working_dirs);
                    if add {
                        for d in &resolved {
                            if !dirs.contains(d) {
                                dirs.push(d.clone());
                            }
                        }
                    } else {
                        dirs.retain(|d| !resolved.contains(d));
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

    /// The rules of one behavior a settings file holds now (none when it cannot be read).
    fn settings_rules(&self, source: SettingsSource, behavior: RuleBehaviorName) -> Vec<String> {
        let Ok(Some(doc)) = self.settings.read_source(source) else {
            return Vec::new();
        };
        doc.get("permissions")
            .and_then(|p| p.get(behavior_key(behavior)))
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
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

fn parse_rules(texts: &[String]) -> Result<Vec<PermissionRule>, String> {
    texts
        .iter()
        .map(|t| {
            PermissionRule::parse(t).map_err(|e| format!("permission rule {t:?} ignored: {e}"))
        })
        .collect()
}
