//! Where strata's files are: the config directory, project folder names, the project root.
//!
//! These are pure path computations plus the few filesystem probes they need (resolving
//! a path, finding a `.git` marker). They never create anything: callers create
//! directories when they first write into them.

use std::path::{Path, PathBuf};

mod containment;

pub use self::containment::{
    NameCase, normalize_lexically, path_within, path_within_as_written, resolve_existing,
    resolves_within, same_name,
};

/// The environment variable that chooses the config directory.
pub const CONFIG_DIR_ENV: &str = "STRATA_CONFIG_DIR";

/// The config directory's name under the home directory when [`CONFIG_DIR_ENV`] is unset.
pub const DEFAULT_DIR_NAME: &str = ".strata";

/// Errors computing a path.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// Neither `$STRATA_CONFIG_DIR` nor a home directory is known.
    #[error("cannot find the strata config directory: set {CONFIG_DIR_ENV} or HOME to a directory")]
    NoConfigDir,
}

/// The config directory: `$STRATA_CONFIG_DIR` when set and non-empty, else `~/.strata`.
///
/// ```
/// use strata_config::paths::config_dir_from;
/// let dir = config_dir_from(Some("/tmp/cfg".into()), None).unwrap();
/// assert_eq!(dir, std::path::PathBuf::from("/tmp/cfg"));
/// let home = config_dir_from(None, Some("/home/me".into())).unwrap();
/// assert_eq!(home, std::path::PathBuf::from("/home/me/.strata"));
/// ```
pub fn config_dir() -> Result<PathBuf, PathError> {
    config_dir_from(std::env::var_os(CONFIG_DIR_ENV), std::env::home_dir())
}

/// [`config_dir`] with its inputs given, for callers that already read the environment.
pub fn config_dir_from(
    env_value: Option<std::ffi::OsString>,
    home: Option<PathBuf>,
) -> Result<PathBuf, PathError> {
    match env_value {
        Some(v) if !v.is_empty() => Ok(PathBuf::from(v)),
        _ => home
            .filter(|h| !h.as_os_str().is_empty())
            .map(|h| h.join(DEFAULT_DIR_NAME))
            .ok_or(PathError::NoConfigDir),
    }
}

/// The folder name of a project under `projects/`: every character outside `[A-Za-z0-9]`
/// becomes `-`, exactly as the reference agent names them (so the mapping is lossy; the
/// real cwd is stored inside the transcript entries). A character outside the Basic
/// Multilingual Plane (an emoji) becomes two dashes: the reference agent replaces UTF-16
/// code units, and the names must match for the two programs to share sessions.
///
/// A name longer than [`MAX_PROJECT_DIR_NAME`] characters (a deep path) would not fit in a
/// file name (255 bytes): it is cut there and ended with `-` and the first 16 hex digits of
/// the SHA-256 of the whole path, so distinct deep paths stay distinct.
///
/// ```
/// use strata_config::paths::project_dir_name;
/// assert_eq!(project_dir_name("/home/me/my_proj.v2".as_ref()), "-home-me-my-proj-v2");
/// ```
pub fn project_dir_name(path: &Path) -> String {
    let path = path.to_string_lossy();
    let mut name = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else {
            name.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    if name.len() > MAX_PROJECT_DIR_NAME {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(path.as_bytes());
        // The name is ASCII, so any byte index is a character boundary.
        name.truncate(MAX_PROJECT_DIR_NAME);
        name.push('-');
        for byte in &digest[..8] {
            name.push_str(&format!("{byte:02x}"));
        }
    }
    name
}

/// The longest project folder name kept whole (see [`project_dir_name`]).
pub const MAX_PROJECT_DIR_NAME: usize = 200;

/// The project root for a working directory: the nearest ancestor (or itself) holding a
/// `.git` entry (a directory, or a file for worktrees and submodules), else the resolved
/// working directory itself. Resolution failures fall back to the path as given.
pub fn project_root(cwd: &Path) -> PathBuf {
    let resolved = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    resolved
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
        .unwrap_or(resolved)
}

/// `<config>/projects`: one folder per project, holding its session transcripts.
pub fn projects_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("projects")
}

/// `<config>/projects/<project dir name>` for a project root.
pub fn project_sessions_dir(config_dir: &Path, project_root: &Path) -> PathBuf {
    projects_dir(config_dir).join(project_dir_name(project_root))
}

/// `<config>/settings.json`: user settings.
pub fn user_settings_file(config_dir: &Path) -> PathBuf {
    config_dir.join("settings.json")
}

/// The environment variable that chooses the reference agent's config directory (whose
/// `settings.json` strata reads as user settings beside its own).
pub const REFERENCE_CONFIG_DIR_ENV: &str = "CLAUDE_CONFIG_DIR";

/// The reference agent's config directory's name under the home directory.
pub const REFERENCE_DIR_NAME: &str = ".claude";

/// The reference agent's config directory: `$CLAUDE_CONFIG_DIR` when set and non-empty,
/// else `~/.claude`; `None` with neither (its settings are then not read).
pub fn reference_config_dir() -> Option<PathBuf> {
    reference_config_dir_from(
        std::env::var_os(REFERENCE_CONFIG_DIR_ENV),
        std::env::home_dir(),
    )
}

/// [`reference_config_dir`] with its inputs given.
///
/// ```
/// use strata_config::paths::reference_config_dir_from;
/// let home = Some("/home/me".into());
/// assert_eq!(reference_config_dir_from(None, home.clone()), Some("/home/me/.claude".into()));
/// assert_eq!(reference_config_dir_from(Some("/c".into()), home), Some("/c".into()));
/// assert_eq!(reference_config_dir_from(None, None), None);
/// ```
pub fn reference_config_dir_from(
    env_value: Option<std::ffi::OsString>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    match env_value {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => home
            .filter(|h| !h.as_os_str().is_empty())
            .map(|h| h.join(REFERENCE_DIR_NAME)),
    }
}

/// `<project root>/.claude/settings.json`: the reference agent's project settings, read
/// (never written) as project settings.
pub fn reference_project_settings_file(project_root: &Path) -> PathBuf {
    project_root.join(REFERENCE_DIR_NAME).join("settings.json")
}

/// `<project root>/.claude/settings.local.json`: the reference agent's local project
/// settings, read (never written) as local settings.
pub fn reference_local_settings_file(project_root: &Path) -> PathBuf {
    project_root
        .join(REFERENCE_DIR_NAME)
        .join("settings.local.json")
}

/// `<config>/config.json`: the global config.
pub fn global_config_file(config_dir: &Path) -> PathBuf {
    config_dir.join("config.json")
}

/// `<project root>/.strata/settings.json`: project settings, meant to be committed.
pub fn project_settings_file(project_root: &Path) -> PathBuf {
    project_root.join(".strata").join("settings.json")
}

/// `<project root>/.strata/settings.local.json`: the user's own project settings.
pub fn local_settings_file(project_root: &Path) -> PathBuf {
    project_root.join(".strata").join("settings.local.json")
}

/// `<config>/history.jsonl`: every submitted prompt, all projects.
pub fn history_file(config_dir: &Path) -> PathBuf {
    config_dir.join("history.jsonl")
}

/// `<config>/paste-cache`: large pastes referenced from the input history.
pub fn paste_cache_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("paste-cache")
}

/// `<config>/file-history/<session id>`: pre-edit backups of one session, for rewind.
pub fn file_history_dir(config_dir: &Path, session_id: &str) -> PathBuf {
    config_dir.join("file-history").join(session_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_dir_prefers_env_then_home() {
        let home = Some(PathBuf::from("/home/u"));
        assert_eq!(
            config_dir_from(Some("/x".into()), home.clone()).unwrap(),
            PathBuf::from("/x")
        );
        assert_eq!(
            config_dir_from(Some("".into()), home.clone()).unwrap(),
            PathBuf::from("/home/u/.strata")
        );
        assert_eq!(
            config_dir_from(None, home).unwrap(),
            PathBuf::from("/home/u/.strata")
        );
        assert!(matches!(
            config_dir_from(None, None),
            Err(PathError::NoConfigDir)
        ));
    }

    #[test]
    fn project_dir_name_replaces_every_non_alphanumeric() {
        assert_eq!(
            project_dir_name(Path::new("/home/marco/projects/spotter")),
            "-home-marco-projects-spotter"
        );
        assert_eq!(project_dir_name(Path::new("/tmp/a b/ü.x")), "-tmp-a-b---x");
    }

    /// Regression: an emoji gave one dash where the reference agent's name has two (it
    /// replaces UTF-16 code units), so the two programs did not see each other's sessions.
    #[test]
    fn regression_characters_beyond_the_bmp_become_two_dashes() {
        assert_eq!(project_dir_name(Path::new("/tmp/é 🙂x")), "-tmp-----x");
    }

    /// Regression: a project deeper than ~255 characters could not record a session
    /// ("File name too long").
    #[test]
    fn regression_long_paths_are_cut_and_told_apart_by_a_hash() {
        let deep = format!("/tmp/{}/{}", "a".repeat(120), "b".repeat(150));
        let name = project_dir_name(Path::new(&deep));
        assert_eq!(name.len(), MAX_PROJECT_DIR_NAME + 17);
        assert!(name.starts_with("-tmp-aaa"), "{name}");
        let other = project_dir_name(Path::new(&format!("{deep}c")));
        assert_ne!(
            name, other,
            "paths differing past the cut get different names"
        );
        assert_eq!(name[..MAX_PROJECT_DIR_NAME], other[..MAX_PROJECT_DIR_NAME]);
        let short = "/tmp/".to_owned() + &"x".repeat(MAX_PROJECT_DIR_NAME - 5);
        assert_eq!(
            project_dir_name(Path::new(&short)).len(),
            MAX_PROJECT_DIR_NAME
        );
    }

    #[test]
    #[cfg(unix)]
    fn resolves_within_follows_links_and_tolerates_missing_parts() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("p");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::os::unix::fs::symlink(&base, root.join("out")).unwrap();
        assert!(resolves_within(&root.join("src/new/file.rs"), &root));
        assert!(
            !resolves_within(&root.join("out/x"), &root),
            "a link leading out"
        );
        assert!(!resolves_within(&base.join("other"), &root));
        let gone = base.join("gone");
        assert!(
            resolves_within(&gone.join("a"), &gone),
            "a missing root: as written"
        );
    }

    #[test]
    fn project_root_finds_git_marker_or_falls_back_to_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let nested = root.join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(project_root(&nested), nested);
        std::fs::create_dir(root.join("a/.git")).unwrap();
        assert_eq!(project_root(&nested), root.join("a"));
        assert_eq!(project_root(&root.join("missing")), root.join("missing"));
    }
}
