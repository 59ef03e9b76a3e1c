//! Permission modes: the internal set, their external (public) names, and parsing.
//!
//! strata runs with seven modes internally but only five are ever shown to the outside
//! world (settings files, transcripts, the SDK's remote session metadata): `auto` and
//! `bubble` are implementation states that map to `default` when externalised (FX-1).
//! Two types make that boundary visible in signatures: [`PermissionMode`] is what the app
//! state holds, [`ExternalPermissionMode`] is what may be written or sent.
//!
//! Parsing is shared by both and accepts `manual` as an alias of `default` (older
//! settings files use it). An unknown name produces an error that lists the valid ones.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Every permission mode strata can be in, including the internal ones.
///
/// ```
/// use strata_protocol::permission::{ExternalPermissionMode, PermissionMode};
/// let mode: PermissionMode = "bubble".parse().unwrap();
/// assert_eq!(mode.external(), ExternalPermissionMode::Default);
/// assert_eq!("manual".parse::<PermissionMode>().unwrap(), PermissionMode::Default);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PermissionMode {
    /// Ask before tools that need permission.
    #[default]
    Default,
    /// Accept file edits without asking.
    AcceptEdits,
    /// Plan only: no tool with side effects runs.
    Plan,
    /// Never ask (only when bypass is available).
    BypassPermissions,
    /// Never ask; deny what would have needed a prompt.
    DontAsk,
    /// Internal: decisions made automatically by a classifier. Externalised as `default`.
    Auto,
    /// Internal: a sub-agent bubbles its prompts to the parent. Externalised as `default`.
    Bubble,
}

/// The permission modes that may leave the process (settings, transcripts, remote
/// metadata). Every [`PermissionMode`] maps to one of these through
/// [`PermissionMode::external`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ExternalPermissionMode {
    /// `default`.
    #[default]
    Default,
    /// `acceptEdits`.
    AcceptEdits,
    /// `plan`.
    Plan,
    /// `bypassPermissions`.
    BypassPermissions,
    /// `dontAsk`.
    DontAsk,
}

/// The names of the public modes, in the order error messages list them.
pub const EXTERNAL_MODE_NAMES: [&str; 5] = [
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
];

/// The alias accepted for `default`.
pub const MANUAL_ALIAS: &str = "manual";

/// A name that is not a permission mode (or, for [`ExternalPermissionMode`], an internal
/// mode that may not appear outside the process).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParsePermissionModeError {
    /// Not a mode name at all.
    #[error(
        "unknown permission mode {0:?}; expected one of: default, acceptEdits, plan, \
         bypassPermissions, dontAsk (manual is accepted as an alias of default)"
    )]
    Unknown(String),
    /// `auto` or `bubble` where only public modes are allowed.
    #[error(
        "permission mode {0:?} is internal and cannot be used here; expected one of: default, \
         acceptEdits, plan, bypassPermissions, dontAsk"
    )]
    Internal(String),
}

impl PermissionMode {
    /// Every mode, internal ones last.
    pub const ALL: [PermissionMode; 7] = [
        Self::Default,
        Self::AcceptEdits,
        Self::Plan,
        Self::BypassPermissions,
        Self::DontAsk,
        Self::Auto,
        Self::Bubble,
    ];

    /// The mode's name as written in files and on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "acceptEdits",
            Self::Plan => "plan",
            Self::BypassPermissions => "bypassPermissions",
            Self::DontAsk => "dontAsk",
            Self::Auto => "auto",
            Self::Bubble => "bubble",
        }
    }

    /// The public mode this one is shown as: internal modes (`auto`, `bubble`) become
    /// `default`, every other mode is itself (FX-1).
    pub const fn external(self) -> ExternalPermissionMode {
        match self {
            Self::Default | Self::Auto | Self::Bubble => ExternalPermissionMode::Default,
            Self::AcceptEdits => ExternalPermissionMode::AcceptEdits,
            Self::Plan => ExternalPermissionMode::Plan,
            Self::BypassPermissions => ExternalPermissionMode::BypassPermissions,
            Self::DontAsk => ExternalPermissionMode::DontAsk,
        }
    }

    /// Whether this mode exists only inside the process (`auto`, `bubble`).
    pub const fn is_internal(self) -> bool {
        matches!(self, Self::Auto | Self::Bubble)
    }

    /// The mode after this one when the user cycles modes in the UI (shift+tab):
    /// `default → acceptEdits → plan → bypassPermissions → default`, where
    /// `bypassPermissions` is skipped unless `bypass_available`. Modes outside the cycle
    /// (`dontAsk`, `auto`, `bubble`) go back to `default`.
    ///
    /// ```
    /// use strata_protocol::permission::PermissionMode::*;
    /// assert_eq!(Plan.next_in_cycle(true), BypassPermissions);
    /// assert_eq!(Plan.next_in_cycle(false), Default);
    /// assert_eq!(BypassPermissions.next_in_cycle(true), Default);
    /// ```
    pub const fn next_in_cycle(self, bypass_available: bool) -> PermissionMode {
        match self {
            Self::Default => Self::AcceptEdits,
            Self::AcceptEdits => Self::Plan,
            Self::Plan if bypass_available => Self::BypassPermissions,
            Self::Plan | Self::BypassPermissions | Self::DontAsk | Self::Auto | Self::Bubble => {
                Self::Default
            }
        }
    }
}

impl ExternalPermissionMode {
    /// Every public mode.
    pub const ALL: [ExternalPermissionMode; 5] = [
        Self::Default,
        Self::AcceptEdits,
        Self::Plan,
        Self::BypassPermissions,
        Self::DontAsk,
    ];

    /// The mode's name as written in files and on the wire.
    pub const fn as_str(self) -> &'static str {
        PermissionMode::from_external(self).as_str()
    }
}

impl PermissionMode {
    /// The internal mode for a public one (the identity on the shared variants).
    pub const fn from_external(mode: ExternalPermissionMode) -> Self {
        match mode {
            ExternalPermissionMode::Default => Self::Default,
            ExternalPermissionMode::AcceptEdits => Self::AcceptEdits,
            ExternalPermissionMode::Plan => Self::Plan,
            ExternalPermissionMode::BypassPermissions => Self::BypassPermissions,
            ExternalPermissionMode::DontAsk => Self::DontAsk,
        }
    }
}

impl From<ExternalPermissionMode> for PermissionMode {
    fn from(mode: ExternalPermissionMode) -> Self {
        Self::from_external(mode)
    }
}

impl From<PermissionMode> for ExternalPermissionMode {
    fn from(mode: PermissionMode) -> Self {
        mode.external()
    }
}

impl FromStr for PermissionMode {
    type Err = ParsePermissionModeError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if name == MANUAL_ALIAS {
            return Ok(Self::Default);
        }
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| ParsePermissionModeError::Unknown(name.to_owned()))
    }
}

impl FromStr for ExternalPermissionMode {
    type Err = ParsePermissionModeError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let mode: PermissionMode = name.parse()?;
        if mode.is_internal() {
            return Err(ParsePermissionModeError::Internal(name.to_owned()));
        }
        Ok(mode.external())
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ExternalPermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PermissionMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Serialize for ExternalPermissionMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Deserializes any `FromStr` mode from a JSON string, raising the parse error at the
/// string itself so a JSON reader can point at its line and column.
struct ModeVisitor<T>(std::marker::PhantomData<T>);

impl<T> Visitor<'_> for ModeVisitor<T>
where
    T: FromStr<Err = ParsePermissionModeError>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a permission mode name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for PermissionMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(ModeVisitor(std::marker::PhantomData))
    }
}

impl<'de> Deserialize<'de> for ExternalPermissionMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(ModeVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fx1_internal_modes_externalise_to_default() {
        for mode in PermissionMode::ALL {
            let ext = mode.external();
            if mode.is_internal() {
                assert_eq!(ext, ExternalPermissionMode::Default, "{mode}");
            } else {
                assert_eq!(ext.as_str(), mode.as_str());
                assert_eq!(PermissionMode::from(ext), mode);
            }
        }
    }

    #[test]
    fn every_name_parses_back_to_its_mode() {
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
        }
        for mode in ExternalPermissionMode::ALL {
            assert_eq!(mode.as_str().parse::<ExternalPermissionMode>(), Ok(mode));
        }
        assert_eq!(
            EXTERNAL_MODE_NAMES,
            ExternalPermissionMode::ALL.map(|m| m.as_str())
        );
    }

    #[test]
    fn manual_is_an_alias_of_default() {
        assert_eq!(
            "manual".parse::<PermissionMode>(),
            Ok(PermissionMode::Default)
        );
        assert_eq!(
            "manual".parse::<ExternalPermissionMode>(),
            Ok(ExternalPermissionMode::Default)
        );
    }

    #[test]
    fn unknown_name_error_lists_the_valid_ones() {
        let err = "Plan".parse::<PermissionMode>().unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("\"Plan\""), "{msg}");
        for name in EXTERNAL_MODE_NAMES {
            assert!(msg.contains(name), "{msg} lacks {name}");
        }
        let err = "bubble".parse::<ExternalPermissionMode>().unwrap_err();
        assert_eq!(err, ParsePermissionModeError::Internal("bubble".into()));
    }

    #[test]
    fn cycle_skips_bypass_unless_available() {
        use PermissionMode::*;
        let walk = |bypass| {
            let mut seen = vec![Default];
            let mut m = Default;
            loop {
                m = m.next_in_cycle(bypass);
                if m == Default {
                    break seen;
                }
                seen.push(m);
            }
        };
        assert_eq!(walk(true), [Default, AcceptEdits, Plan, BypassPermissions]);
        assert_eq!(walk(false), [Default, AcceptEdits, Plan]);
        for outside in [DontAsk, Auto, Bubble] {
            assert_eq!(outside.next_in_cycle(true), Default);
        }
    }
}
