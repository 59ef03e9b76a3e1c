//! The settings sources and where each one lives.
//!
//! Sources, lowest to highest precedence: user (`<config>/settings.json`), project
//! (`<root>/.strata/settings.json`), local (`<root>/.strata/settings.local.json`), flag
//! (`--settings <file or inline JSON>`) and managed (`/etc/strata/managed-settings.json`
//! then `/etc/strata/managed-settings.d/*.json` in file-name order). Managed settings are
//! the administrator's policy, so they win over everything the user controls.
//!
//! The reference agent's files of the first three scopes are sources of the same scope
//! ([`ReferenceFiles`]): `$CLAUDE_CONFIG_DIR/settings.json` (else
//! `~/.claude/settings.json`) is user settings, `<root>/.claude/settings.json` project
//! settings and `<root>/.claude/settings.local.json` local settings. A project set up for
//! the reference agent thus works unchanged. Within a scope the reference's file is read
//! first and strata's second, so where the two disagree on a value strata's wins; rule
//! lists concatenate like any array, so every file's rules apply. They are read only:
//! every write goes to strata's own file of the scope ([`SettingsLocations::writable_file`]).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::paths;

/// One settings source. The derived order is the precedence order (later wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SettingsSource {
    /// `<config>/settings.json`.
    User,
    /// `<project root>/.strata/settings.json` (shared, committed).
    Project,
    /// `<project root>/.strata/settings.local.json` (personal, not committed).
    Local,
    /// `--settings <file or inline JSON>`.
    Flag,
    /// `/etc/strata/managed-settings.json` and `managed-settings.d/*.json`.
    Managed,
}

impl SettingsSource {
    /// Every source, lowest precedence first.
    pub const ALL: [SettingsSource; 5] = [
        Self::User,
        Self::Project,
        Self::Local,
        Self::Flag,
        Self::Managed,
    ];

    /// The source's short name (`user`, `project`, `local`, `flag`, `managed`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Local => "local",
            Self::Flag => "flag",
            Self::Managed => "managed",
        }
    }

    /// Whether strata writes this source (user, project and local; never the flag file or
    /// the administrator's managed files).
    pub const fn is_writable(self) -> bool {
        matches!(self, Self::User | Self::Project | Self::Local)
    }
}

impl fmt::Display for SettingsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The value of `--settings`: a file path, or the settings themselves as inline JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlagSettings {
    /// A settings file.
    File(PathBuf),
    /// Inline JSON text.
    Inline(String),
}

impl FlagSettings {
    /// Reads a `--settings` argument: text starting with `{` (after whitespace) is inline
    /// JSON, anything else a file path.
    ///
    /// ```
    /// use strata_config::sources::FlagSettings;
    /// assert!(matches!(FlagSettings::from_arg(r#"{"model":"opus"}"#), FlagSettings::Inline(_)));
    /// assert!(matches!(FlagSettings::from_arg("ci.json"), FlagSettings::File(_)));
    /// ```
    pub fn from_arg(arg: &str) -> Self {
        if arg.trim_start().starts_with('{') {
            Self::Inline(arg.to_owned())
        } else {
            Self::File(PathBuf::from(arg))
        }
    }
}

/// The label used for inline `--settings` JSON in messages.
pub const INLINE_FLAG_LABEL: &str = "--settings (inline JSON)";

/// The directory of managed settings when not overridden.
pub const DEFAULT_MANAGED_DIR: &str = "/etc/strata";

/// Where every settings source lives for one config dir and project root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsLocations {
    /// User settings file.
    pub user: PathBuf,
    /// Project settings file.
    pub project: PathBuf,
    /// Local project settings file.
    pub local: PathBuf,
    /// The `--settings` value, if given.
    pub flag: Option<FlagSettings>,
    /// The directory holding `managed-settings.json` and `managed-settings.d/`.
    pub managed_dir: PathBuf,
    /// Sources that are not read (`--setting-sources` leaves them out): only user,
    /// project and local can be; the flag and managed sources always load. Leaving a
    /// scope out leaves out the reference agent's file of that scope too.
    pub excluded: Vec<SettingsSource>,
    /// The reference agent's files read beside strata's, at the same scopes.
    pub reference: ReferenceFiles,
}

/// The reference agent's settings files (read, never written). `None`: not read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReferenceFiles {
    /// `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`: user settings.
    pub user: Option<PathBuf>,
    /// `<root>/.claude/settings.json`: project settings.
    pub project: Option<PathBuf>,
    /// `<root>/.claude/settings.local.json`: local settings.
    pub local: Option<PathBuf>,
}

impl ReferenceFiles {
    /// The reference's file of a scope (`None` for flag and managed, or when not read).
    pub fn of(&self, source: SettingsSource) -> Option<&Path> {
        match source {
            SettingsSource::User => self.user.as_deref(),
            SettingsSource::Project => self.project.as_deref(),
            SettingsSource::Local => self.local.as_deref(),
            SettingsSource::Flag | SettingsSource::Managed => None,
        }
    }
}

impl SettingsLocations {
    /// The locations for a config dir and a project root, with the default managed
    /// directory and no flag settings.
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_config::sources::SettingsLocations;
    /// let l = SettingsLocations::new(Path::new("/home/me/.strata"), Path::new("/src/app"));
    /// assert_eq!(l.local, Path::new("/src/app/.strata/settings.local.json"));
    /// assert_eq!(l.managed_file(), Path::new("/etc/strata/managed-settings.json"));
    /// assert_eq!(
    ///     l.reference.project.as_deref(),
    ///     Some(Path::new("/src/app/.claude/settings.json"))
    /// );
    /// ```
    ///
    /// The reference agent's user settings are found from the environment
    /// (`$CLAUDE_CONFIG_DIR`, else `~/.claude`); [`Self::with_reference_config_dir`]
    /// chooses another.
    pub fn new(config_dir: &Path, project_root: &Path) -> Self {
        Self {
            user: paths::user_settings_file(config_dir),
            project: paths::project_settings_file(project_root),
            local: paths::local_settings_file(project_root),
            flag: None,
            managed_dir: PathBuf::from(DEFAULT_MANAGED_DIR),
            excluded: Vec::new(),
            reference: ReferenceFiles {
                user: paths::reference_config_dir().map(|d| paths::user_settings_file(&d)),
                project: Some(paths::reference_project_settings_file(project_root)),
                local: Some(paths::reference_local_settings_file(project_root)),
            },
        }
    }

    /// With the reference agent's user settings read from `<dir>/settings.json`, or not
    /// at all (`None`).
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_config::SettingsLocations;
    /// let l = SettingsLocations::new(Path::new("/h/.strata"), Path::new("/src/app"))
    ///     .with_reference_config_dir(Some(Path::new("/h/cc")));
    /// assert_eq!(l.reference.user.as_deref(), Some(Path::new("/h/cc/settings.json")));
    /// ```
    #[must_use]
    pub fn with_reference_config_dir(mut self, dir: Option<&Path>) -> Self {
        self.reference.user = dir.map(paths::user_settings_file);
        self
    }

    /// Without any of the reference agent's files.
    #[must_use]
    pub fn without_reference(mut self) -> Self {
        self.reference = ReferenceFiles::default();
        self
    }

    /// The files read for a scope, lowest precedence first: the reference agent's (when
    /// read), then strata's. Empty for a scope left out, and for flag and managed (whose
    /// inputs are not per scope).
    pub fn scope_files(&self, source: SettingsSource) -> Vec<&Path> {
        if !self.loads(source) {
            return Vec::new();
        }
        self.reference
            .of(source)
            .into_iter()
            .chain(self.writable_file(source))
            .collect()
    }

    /// Whether `path` is one of the reference agent's files strata reads.
    pub fn is_reference(&self, path: &Path) -> bool {
        [
            &self.reference.user,
            &self.reference.project,
            &self.reference.local,
        ]
        .into_iter()
        .any(|f| f.as_deref() == Some(path))
    }

    /// Only these of the user, project and local sources load (`--setting-sources
    /// user,project`); the flag and managed sources always do, being the command line's
    /// and the administrator's. Writes to a source left out still go to its file.
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_config::{SettingsLocations, SettingsSource};
    /// let l = SettingsLocations::new(Path::new("/home/me/.strata"), Path::new("/src/app"))
    ///     .with_sources(&[SettingsSource::User, SettingsSource::Managed]);
    /// assert_eq!(l.excluded, [SettingsSource::Project, SettingsSource::Local]);
    /// ```
    #[must_use]
    pub fn with_sources(mut self, sources: &[SettingsSource]) -> Self {
        self.excluded = [
            SettingsSource::User,
            SettingsSource::Project,
            SettingsSource::Local,
        ]
        .into_iter()
        .filter(|s| !sources.contains(s))
        .collect();
        self
    }

    /// Whether `source` is read.
    pub fn loads(&self, source: SettingsSource) -> bool {
        !self.excluded.contains(&source)
    }

    /// The locations for this process: `$STRATA_CONFIG_DIR` (or `~/.strata`) and the
    /// project root of `cwd`.
    pub fn discover(cwd: &Path) -> Result<Self, paths::PathError> {
        Ok(Self::new(&paths::config_dir()?, &paths::project_root(cwd)))
    }

    /// With `--settings` given. A relative file path is made absolute against the
    /// current directory now, so later messages and watch events name the same file.
    pub fn with_flag(mut self, flag: FlagSettings) -> Self {
        self.flag = Some(match flag {
            FlagSettings::File(p) => FlagSettings::File(std::path::absolute(&p).unwrap_or(p)),
            inline => inline,
        });
        self
    }

    /// With another managed directory (tests, packaging for other layouts).
    pub fn with_managed_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.managed_dir = dir.into();
        self
    }

    /// `<managed dir>/managed-settings.json`.
    pub fn managed_file(&self) -> PathBuf {
        self.managed_dir.join("managed-settings.json")
    }

    /// `<managed dir>/managed-settings.d`: drop-in files, applied in name order after
    /// `managed-settings.json`.
    pub fn managed_dropin_dir(&self) -> PathBuf {
        self.managed_dir.join("managed-settings.d")
    }

    /// The file of a writable source (`None` for flag and managed): always strata's own,
    /// never the reference agent's file of the scope.
    pub fn writable_file(&self, source: SettingsSource) -> Option<&Path> {
        match source {
            SettingsSource::User => Some(&self.user),
            SettingsSource::Project => Some(&self.project),
            SettingsSource::Local => Some(&self.local),
            SettingsSource::Flag | SettingsSource::Managed => None,
        }
    }

    /// The source a path belongs to, if any (used by the watcher). Managed drop-ins are
    /// any `*.json` file directly inside [`Self::managed_dropin_dir`] whose name does not
    /// start with a dot (editor and atomic-write temporaries do).
    pub fn source_of(&self, path: &Path) -> Option<SettingsSource> {
        if path == self.user {
            return Some(SettingsSource::User);
        }
        if path == self.project {
            return Some(SettingsSource::Project);
        }
        if path == self.local {
            return Some(SettingsSource::Local);
        }
        for source in [
            SettingsSource::User,
            SettingsSource::Project,
            SettingsSource::Local,
        ] {
            if self.reference.of(source) == Some(path) {
                return Some(source);
            }
        }
        if matches!(&self.flag, Some(FlagSettings::File(f)) if f == path) {
            return Some(SettingsSource::Flag);
        }
        if path == self.managed_file()
            || (path.parent() == Some(self.managed_dropin_dir().as_path()) && is_dropin(path))
        {
            return Some(SettingsSource::Managed);
        }
        None
    }

    /// The managed drop-in files that exist, in name order.
    pub(crate) fn managed_dropins(&self) -> std::io::Result<Vec<PathBuf>> {
        let dir = self.managed_dropin_dir();
        let mut files = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| is_dropin(p) && p.is_file())
                .collect::<Vec<_>>(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        Ok(files)
    }
}

fn is_dropin(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    !name.starts_with('.') && name.ends_with(".json")
}
