//! The permission updates a user chooses with an answer to a prompt ("allow, and don't
//! ask again for `npm test`"), sent as `updatedPermissions` with a `can_use_tool` answer.
//!
//! The updates of one answer are one store update: the rules and directories change in
//! the app state's permission context, filed under the source the destination names
//! (`strata_state::apply_permission_update`), so the next decision obeys them and a
//! settings reload keeps what the session added. A mode change goes through the one mode
//! gate inside the same update. What is to be kept in a settings file (`userSettings`,
//! `projectSettings`, `localSettings`) is recorded in the state as settings edits, and the
//! effects hub writes them — through the same locked read-modify-write as `strata config`,
//! never into a file that does not parse — so later sessions follow them too. Nothing
//! here writes a file.

use std::sync::Arc;

use serde_json::Value;
use strata_protocol::permission::PermissionMode;
use strata_protocol::sdk::{PermissionUpdate, parse_updates};
use strata_state::{SettingsEdit, apply_permission_update, default_mode_edit};

use super::Inner;
use crate::permissions::{bypass_of, check_mode_change};

impl Inner {
    /// Applies the updates of an answer (as sent) in one store update; what cannot be
    /// applied is reported on stderr. The effects hub saves what goes to settings files
    /// (it locks and fsyncs), so on a multi-thread runtime the update runs off the async
    /// workers.
    pub(crate) fn apply_permission_updates(&self, values: &[Value]) {
        apply_permission_updates(&self.store, &self.permission_env, values);
    }

    /// [`Inner::apply_permission_updates`], returning the problems instead of logging
    /// them (a UI command shows them to the user).
    pub(crate) fn apply_permission_updates_reporting(&self, values: &[Value]) -> Vec<String> {
        apply_reporting(&self.store, &self.permission_env, values)
    }
}

/// [`Inner::apply_permission_updates`] on `store` with `env`: a synchronous sub-agent's
/// prompt answers change the session's permissions the same way.
pub(crate) fn apply_permission_updates(
    store: &strata_store::Store<strata_state::AppState>,
    env: &Arc<crate::permissions::PermissionEnv>,
    values: &[Value],
) {
    report(apply_reporting(store, env, values));
}

/// Applies the updates and returns what could not be applied.
fn apply_reporting(
    store: &strata_store::Store<strata_state::AppState>,
    env: &Arc<crate::permissions::PermissionEnv>,
    values: &[Value],
) -> Vec<String> {
    let (updates, mut problems) = parse_updates(values);
    if updates.is_empty() {
        return problems;
    }
    let env = Arc::clone(env);
    let resolve = move |d: &std::path::Path| env.absolute_dir(d);
    let apply = || {
        let mut found = Vec::new();
        let _ = store.update(|s| {
            found.clear();
            let mut edits: Vec<SettingsEdit> = Vec::new();
            let mut ctx = s.tool_permission_context.clone();
            for update in &updates {
                match update {
                    PermissionUpdate::SetMode { mode, destination } => {
                        let bypass = bypass_of(&ctx, &s.settings);
                        match mode
                            .parse::<PermissionMode>()
                            .map_err(|e| e.to_string())
                            .and_then(|m| check_mode_change(m, bypass).map_err(|e| e.to_string()))
                        {
                            Ok(allowed) => {
                                ctx.mode = allowed;
                                edits.extend(default_mode_edit(*destination, mode));
                            }
                            Err(e) => found.push(format!("permission mode ignored: {e}")),
                        }
                    }
                    other => match apply_permission_update(&mut ctx, other, &resolve) {
                        Ok(edit) => edits.extend(edit),
                        Err(e) => found.push(e.to_string()),
                    },
                }
            }
            if !edits.is_empty() {
                ctx.last_settings_edits = Some(Arc::from(edits));
            }
            if ctx != s.tool_permission_context {
                s.tool_permission_context = ctx;
            }
        });
        found
    };
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    problems.extend(if multi_thread {
        tokio::task::block_in_place(apply)
    } else {
        apply()
    });
    problems
}

fn report(problems: Vec<String>) {
    for problem in problems {
        tracing::warn!("{problem}");
    }
}
