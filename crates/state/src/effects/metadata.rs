//! FX-7: the reverse bridge, from a remote session's metadata back to the app state.
//!
//! FX-1 keeps the remote session's metadata in step with the app state. When a worker
//! restarts (or attaches to an existing remote session), the remote metadata is the
//! record of what the session was doing; [`external_metadata_to_app_state`] turns it into
//! an updater for the store. Applying it goes through the store like every other change,
//! so FX-1 runs again and confirms the mode to the remote side (a harmless echo).

use std::sync::Arc;

use strata_protocol::permission::PermissionMode;

use super::ports::SessionExternalMetadata;
use crate::app_state::AppState;

/// An updater that applies `metadata`'s permission mode and ultraplan flag (FX-7).
///
/// Only keys of the right type count (`permission_mode` a string, `is_ultraplan_mode` a
/// boolean); anything else, `null` included, leaves that field alone. An unknown mode
/// name is logged and ignored. A `bypassPermissions` mode is applied only where this
/// process may enter it (UI-6: settings can forbid it, and remote data must not get
/// around that). When nothing would change, the updater returns the previous state, so
/// the store commits and notifies nothing (ST-3).
///
/// ```
/// use strata_protocol::permission::PermissionMode;
/// use strata_state::{default_app_state, external_metadata_to_app_state, RuntimeFacts,
///                    SessionExternalMetadata};
/// use std::sync::Arc;
///
/// let metadata: SessionExternalMetadata =
///     serde_json::from_str(r#"{"permission_mode":"plan","is_ultraplan_mode":true}"#).unwrap();
/// let prev = Arc::new(default_app_state(RuntimeFacts::default()));
/// let next = external_metadata_to_app_state(&metadata)(&prev);
/// assert_eq!(next.tool_permission_context.mode, PermissionMode::Plan);
/// assert!(next.is_ultraplan_mode);
/// // Applying it again changes nothing: the very same state comes back.
/// assert!(Arc::ptr_eq(&external_metadata_to_app_state(&metadata)(&next), &next));
/// ```
pub fn external_metadata_to_app_state(
    metadata: &SessionExternalMetadata,
) -> impl FnOnce(&Arc<AppState>) -> Arc<AppState> + Send + 'static {
    let mode = metadata
        .permission_mode()
        .and_then(|name| match name.parse::<PermissionMode>() {
            Ok(mode) => Some(mode),
            Err(error) => {
                tracing::warn!(
                    %error,
                    "remote session metadata names an unknown permission mode; keeping the current mode"
                );
                None
            }
        });
    let ultraplan = metadata.is_ultraplan_mode();
    move |prev: &Arc<AppState>| {
        let context = &prev.tool_permission_context;
        let mode = mode.filter(|&m| {
            let allowed = m != PermissionMode::BypassPermissions
                || context.is_bypass_permissions_mode_available;
            if !allowed {
                tracing::warn!(
                    "remote session metadata asks for bypassPermissions, which is not available \
                     in this session; keeping the current mode"
                );
            }
            allowed && m != context.mode
        });
        let ultraplan = ultraplan.filter(|&u| u != prev.is_ultraplan_mode);
        if mode.is_none() && ultraplan.is_none() {
            return Arc::clone(prev);
        }
        let mut next = AppState::clone(prev);
        if let Some(mode) = mode {
            next.tool_permission_context.mode = mode;
        }
        if let Some(ultraplan) = ultraplan {
            next.is_ultraplan_mode = ultraplan;
        }
        Arc::new(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RuntimeFacts, default_app_state};

    fn metadata(json: &str) -> SessionExternalMetadata {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn fx7_values_of_the_wrong_type_and_unknown_modes_leave_the_state_alone() {
        let prev = Arc::new(default_app_state(RuntimeFacts::default()));
        for json in [
            r#"{}"#,
            r#"{"permission_mode":null,"is_ultraplan_mode":null}"#,
            r#"{"permission_mode":3,"is_ultraplan_mode":"yes"}"#,
            r#"{"permission_mode":"yolo"}"#,
            r#"{"permission_mode":"default","is_ultraplan_mode":false}"#,
        ] {
            let next = external_metadata_to_app_state(&metadata(json))(&prev);
            assert!(Arc::ptr_eq(&next, &prev), "{json}");
        }
    }

    #[test]
    fn fx7_internal_and_alias_names_are_accepted() {
        let prev = Arc::new(default_app_state(RuntimeFacts::default()));
        let next =
            external_metadata_to_app_state(&metadata(r#"{"permission_mode":"bubble"}"#))(&prev);
        assert_eq!(next.tool_permission_context.mode, PermissionMode::Bubble);
        let back =
            external_metadata_to_app_state(&metadata(r#"{"permission_mode":"manual"}"#))(&next);
        assert_eq!(back.tool_permission_context.mode, PermissionMode::Default);
    }

    #[test]
    fn fx7_bypass_from_remote_metadata_needs_local_availability() {
        let prev = Arc::new(default_app_state(RuntimeFacts::default()));
        let json = r#"{"permission_mode":"bypassPermissions"}"#;
        let next = external_metadata_to_app_state(&metadata(json))(&prev);
        assert!(Arc::ptr_eq(&next, &prev));
        let allowed = Arc::new(default_app_state(RuntimeFacts {
            bypass_permissions_allowed: true,
            ..RuntimeFacts::default()
        }));
        let next = external_metadata_to_app_state(&metadata(json))(&allowed);
        assert_eq!(
            next.tool_permission_context.mode,
            PermissionMode::BypassPermissions
        );
    }
}
