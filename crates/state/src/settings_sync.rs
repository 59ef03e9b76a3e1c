//! Settings into the app state: the watcher's updater (UI-7) and the start-up check that
//! turns bypass-permissions off when settings forbid it (UI-6).
//!
//! Both are updaters (functions of the previous state) that hand back the previous state
//! itself when nothing changes, so a settings file touched without a real change (an
//! editor saving the same bytes, strata's own FX-2 write coming back through the watcher)
//! commits nothing and redraws nothing (ST-3).

use std::sync::Arc;

use strata_config::{MergedSettings, SettingsSource};
use strata_protocol::settings::Settings;

use crate::app_state::{AppState, SettingsPermissions};

/// The updater for a settings change reported by the watcher (UI-7).
///
/// `merged` is the fresh merge of every source (`SettingsFiles::load`). The updater
/// replaces the state's settings with it when the value differs, replaces the rules and
/// directories that came from settings files (rules added in the session are kept), and
/// disables bypass-permissions if the new settings forbid it (UI-6 also holds for
/// settings that arrive later). Returns the previous state when none of that changes.
/// `source` names the source that changed, for the log.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use strata_config::{SettingsFiles, SettingsLocations, SettingsSource};
/// use strata_state::{apply_settings_change, default_app_state, RuntimeFacts};
///
/// let dir = tempfile::tempdir().unwrap();
/// let files = SettingsFiles::new(
///     SettingsLocations::new(&dir.path().join("cfg"), dir.path()).with_managed_dir(dir.path().join("etc")));
/// let prev = Arc::new(default_app_state(RuntimeFacts::default()));
///
/// files.set_value(SettingsSource::User, &["permissions", "allow"], Some(json!(["Read"]))).unwrap();
/// let next = apply_settings_change(SettingsSource::User, &files.load())(&prev);
/// assert_eq!(next.tool_permission_context.always_allow_rules.len(), 1);
/// // Nothing changed on disk since: the same state comes back.
/// assert!(Arc::ptr_eq(&apply_settings_change(SettingsSource::User, &files.load())(&next), &next));
/// ```
pub fn apply_settings_change(
    source: SettingsSource,
    merged: &MergedSettings,
) -> impl FnOnce(&Arc<AppState>) -> Arc<AppState> + Send + 'static {
    let settings = merged.settings.clone();
    let permissions = SettingsPermissions::from_merged(merged);
    move |prev: &Arc<AppState>| {
        let settings_changed = *prev.settings != settings;
        let mut context = prev
            .tool_permission_context
            .with_settings_permissions(&permissions);
        if context.is_bypass_permissions_mode_available && settings.bypass_permissions_disabled() {
            context = context.with_bypass_disabled();
        }
        let context_changed = context != prev.tool_permission_context;
        if !settings_changed && !context_changed {
            return Arc::clone(prev);
        }
        tracing::debug!(%source, settings_changed, context_changed, "settings change applied");
        let mut next = AppState::clone(prev);
        if settings_changed {
            next.settings = Arc::new(settings);
        }
        next.tool_permission_context = context;
        Arc::new(next)
    }
}

/// The start-up check of UI-6: an updater that makes bypass-permissions unavailable (and
/// leaves that mode for `default`) when `current` settings forbid it.
///
/// Run it once the UI is up, with settings read *then*: remote or managed settings may
/// have arrived after the initial state was computed but before the UI existed, and no
/// watcher event will repeat them. [`AppStore::on_ui_ready`](crate::AppStore::on_ui_ready)
/// does this.
///
/// ```
/// use std::sync::Arc;
/// use strata_protocol::permission::PermissionMode;
/// use strata_protocol::settings::Settings;
/// use strata_state::{default_app_state, disable_bypass_if_forbidden, RuntimeFacts};
///
/// let prev = Arc::new(default_app_state(RuntimeFacts {
///     permission_mode_flag: Some(PermissionMode::BypassPermissions),
///     ..Default::default()
/// }));
/// let forbid: Settings =
///     serde_json::from_str(r#"{"permissions":{"disableBypassPermissionsMode":"disable"}}"#).unwrap();
/// let next = disable_bypass_if_forbidden(&forbid)(&prev);
/// assert_eq!(next.tool_permission_context.mode, PermissionMode::Default);
/// assert!(Arc::ptr_eq(&disable_bypass_if_forbidden(&Settings::default())(&prev), &prev));
/// ```
pub fn disable_bypass_if_forbidden(
    current: &Settings,
) -> impl FnOnce(&Arc<AppState>) -> Arc<AppState> + Send + 'static {
    let forbidden = current.bypass_permissions_disabled();
    move |prev: &Arc<AppState>| {
        if !forbidden
            || !prev
                .tool_permission_context
                .is_bypass_permissions_mode_available
        {
            return Arc::clone(prev);
        }
        tracing::info!("bypassPermissions is disabled by settings; turning it off");
        let mut next = AppState::clone(prev);
        next.tool_permission_context = prev.tool_permission_context.with_bypass_disabled();
        Arc::new(next)
    }
}
