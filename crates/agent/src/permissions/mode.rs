//! Which permission mode a session may be in, and the one gate every mode change
//! passes.
//!
//! `bypassPermissions` skips every prompt, so it is available only when strata was
//! launched with `--dangerously-skip-permissions` (which also starts in it) or
//! `--allow-dangerously-skip-permissions` (which only makes it reachable), and the
//! settings do not disable it (`permissions.disableBypassPermissionsMode: "disable"`).
//! The reference agent once had eight paths that changed the mode and only two that
//! applied every rule (FX-6); here every path — start-up, the UI's mode cycle, the SDK's
//! `set_permission_mode`, a settings change — calls [`check_mode_change`], and
//! [`enforce_bypass_availability`] turns bypass off when settings disable it later
//! (UI-6).

use strata_protocol::permission::PermissionMode;
use strata_protocol::settings::Settings;

/// The launch flags that concern bypass mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LaunchFlags {
    /// `--dangerously-skip-permissions`: start in `bypassPermissions`.
    pub dangerously_skip_permissions: bool,
    /// `--allow-dangerously-skip-permissions`: make `bypassPermissions` reachable.
    pub allow_dangerously_skip_permissions: bool,
}

/// Whether `bypassPermissions` may be entered: launched with a flag and not disabled
/// by settings. A small value the app state holds next to the mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BypassAvailability {
    launched_with_flag: bool,
    disabled_by_settings: bool,
}

impl BypassAvailability {
    /// From the launch flags and the merged settings.
    pub fn new(flags: LaunchFlags, settings: &Settings) -> Self {
        Self {
            launched_with_flag: flags.dangerously_skip_permissions
                || flags.allow_dangerously_skip_permissions,
            disabled_by_settings: settings.bypass_permissions_disabled(),
        }
    }

    /// From the two facts directly.
    pub const fn from_parts(launched_with_flag: bool, disabled_by_settings: bool) -> Self {
        Self {
            launched_with_flag,
            disabled_by_settings,
        }
    }

    /// The same launch, with settings that changed (a watched file was edited, managed
    /// settings arrived).
    #[must_use]
    pub fn with_settings(self, settings: &Settings) -> Self {
        Self {
            disabled_by_settings: settings.bypass_permissions_disabled(),
            ..self
        }
    }

    /// Whether `bypassPermissions` may be entered now.
    pub const fn is_available(self) -> bool {
        self.launched_with_flag && !self.disabled_by_settings
    }

    /// Whether the settings forbid bypass.
    pub const fn disabled_by_settings(self) -> bool {
        self.disabled_by_settings
    }
}

/// A mode change that is not allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    /// Bypass was requested but strata was not launched with a flag that allows it.
    #[error(
        "bypassPermissions mode is not available: start strata with \
         --dangerously-skip-permissions or --allow-dangerously-skip-permissions to use it"
    )]
    BypassNotLaunched,
    /// Bypass was requested but the settings disable it.
    #[error(
        "bypassPermissions mode is disabled by settings (permissions.disableBypassPermissionsMode \
         is \"disable\")"
    )]
    BypassDisabledBySettings,
}

/// The gate for every mode change: returns the mode to switch to, or why not.
///
/// ```
/// use strata_agent::permissions::{BypassAvailability, ModeError, check_mode_change};
/// use strata_protocol::permission::PermissionMode;
/// let launched = BypassAvailability::from_parts(true, false);
/// assert_eq!(check_mode_change(PermissionMode::BypassPermissions, launched), Ok(PermissionMode::BypassPermissions));
/// let plain = BypassAvailability::default();
/// assert_eq!(check_mode_change(PermissionMode::BypassPermissions, plain), Err(ModeError::BypassNotLaunched));
/// assert_eq!(check_mode_change(PermissionMode::Plan, plain), Ok(PermissionMode::Plan));
/// ```
pub fn check_mode_change(
    requested: PermissionMode,
    bypass: BypassAvailability,
) -> Result<PermissionMode, ModeError> {
    if requested != PermissionMode::BypassPermissions {
        return Ok(requested);
    }
    if bypass.disabled_by_settings {
        Err(ModeError::BypassDisabledBySettings)
    } else if !bypass.launched_with_flag {
        Err(ModeError::BypassNotLaunched)
    } else {
        Ok(requested)
    }
}

/// The mode after `current` in the UI's cycle (shift+tab): default → acceptEdits → plan
/// → bypassPermissions (only when available) → default. Goes through
/// [`check_mode_change`] like every other change.
pub fn next_mode(current: PermissionMode, bypass: BypassAvailability) -> PermissionMode {
    let next = current.next_in_cycle(bypass.is_available());
    check_mode_change(next, bypass).unwrap_or(PermissionMode::Default)
}

/// The mode to be in after `bypass` changed: bypass that is no longer available falls
/// back to `default` (UI-6); every other mode stays.
pub fn enforce_bypass_availability(
    current: PermissionMode,
    bypass: BypassAvailability,
) -> PermissionMode {
    match check_mode_change(current, bypass) {
        Ok(mode) => mode,
        Err(_) => PermissionMode::Default,
    }
}

/// The mode a session starts in, and notes about choices that were not honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialMode {
    /// The mode to start in.
    pub mode: PermissionMode,
    /// Why the settings' `defaultMode` was not used, if it was not.
    pub warning: Option<String>,
}

/// The start-up mode: `--dangerously-skip-permissions`, else `--permission-mode`, else
/// the settings' `defaultMode`, else `default`. An explicit request that is not allowed
/// is an error (the user asked for it on the command line); a `defaultMode` of
/// `bypassPermissions` that is not allowed falls back to `default` with a warning.
pub fn initial_mode(
    flags: LaunchFlags,
    cli_mode: Option<PermissionMode>,
    settings: &Settings,
) -> Result<InitialMode, ModeError> {
    let bypass = BypassAvailability::new(flags, settings);
    if flags.dangerously_skip_permissions {
        let mode = check_mode_change(PermissionMode::BypassPermissions, bypass)?;
        return Ok(InitialMode {
            mode,
            warning: None,
        });
    }
    if let Some(requested) = cli_mode {
        let mode = check_mode_change(requested, bypass)?;
        return Ok(InitialMode {
            mode,
            warning: None,
        });
    }
    let Some(default_mode) = settings.default_mode() else {
        return Ok(InitialMode {
            mode: PermissionMode::Default,
            warning: None,
        });
    };
    match check_mode_change(default_mode.into(), bypass) {
        Ok(mode) => Ok(InitialMode {
            mode,
            warning: None,
        }),
        Err(err) => Ok(InitialMode {
            mode: PermissionMode::Default,
            warning: Some(format!(
                "permissions.defaultMode is bypassPermissions, starting in default mode instead: {err}"
            )),
        }),
    }
}
