//! What a sandboxed command may do, as plain absolute paths and a network mode.
//!
//! [`SandboxPolicy`] is built from the `sandbox` settings block and the session's
//! directories, and states the rules as predicates ([`SandboxPolicy::may_read`],
//! [`SandboxPolicy::may_write`]) that need no filesystem. The kernel side
//! ([`crate::plan`]) turns them into Landlock rules and read-only bind mounts; the property
//! tests check that what the kernel is told never grants more than these predicates.
//!
//! The rules:
//! - **read** everywhere except the denied paths (the built-in credential stores plus
//!   `denyRead`), with `allowRead` re-opening a path inside a denied one;
//! - **write** only beneath the writable roots (the project, the additional directories,
//!   `allowWrite`) and the session's temporary directory;
//! - the **protected** paths of each writable root (`.git/hooks`, `.git/config`,
//!   `.strata`, `.claude`, `.mcp.json`) and `denyWrite` stay read-only whatever else allows.

use std::path::{Component, Path, PathBuf};

use crate::settings::SandboxSettings;

/// The paths of a writable root that stay read-only inside the sandbox: what strata or the
/// reference agent would later run or trust outside it (issue 16's protected files).
pub const PROTECTED_IN_ROOT: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".strata",
    ".claude",
    ".mcp.json",
];

/// The built-in read denials, relative to the home directory: key stores and the
/// credential files of strata and the reference agent.
pub const DEFAULT_DENY_READ_IN_HOME: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".strata/.credentials.json",
    ".claude/.credentials.json",
];

/// The built-in read denials under `home`.
pub fn default_deny_read(home: &Path) -> Vec<PathBuf> {
    DEFAULT_DENY_READ_IN_HOME
        .iter()
        .map(|rel| home.join(rel))
        .collect()
}

/// Device files every command may write (`> /dev/null`, the terminal): no data leaves
/// through them.
pub const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Errors building a policy.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A directory the policy needs is not absolute.
    #[error("sandbox: {what} must be an absolute path, got {path}")]
    NotAbsolute {
        /// Which directory (`project directory`, `home directory`, …).
        what: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// A settings path starts with `~` but is not `~` or `~/…` (`~user` is not supported).
    #[error("sandbox.{key}: {value:?}: only `~` and `~/…` name the home directory")]
    BadTilde {
        /// The settings key (`filesystem.allowWrite`, …).
        key: &'static str,
        /// The entry as written.
        value: String,
    },
}

/// The session's directories a policy is built for.
#[derive(Debug, Clone)]
pub struct PolicyContext {
    /// The project directory (writable, protected paths read-only).
    pub project_dir: PathBuf,
    /// `--add-dir` / `permissions.additionalDirectories` (writable like the project).
    pub additional_dirs: Vec<PathBuf>,
    /// The home directory `~` expands to and the built-in denials live under.
    pub home: PathBuf,
    /// The per-session temporary directory (`TMPDIR` inside the sandbox; writable).
    pub session_tmp: PathBuf,
}

/// How a sandboxed command reaches the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkPolicy {
    /// A network namespace of its own with only its own loopback.
    Isolated,
    /// Isolated, plus strata's allowlist proxy: `HTTP(S)_PROXY` points at a loopback port
    /// inside the namespace whose connections are forwarded to the proxy's Unix socket
    /// outside ([`crate::proxy`]).
    Proxied {
        /// The proxy's Unix socket (outside the sandbox).
        socket: PathBuf,
        /// The domains the settings allow (for display; the proxy's decider enforces).
        allowed_domains: Vec<String>,
    },
}

/// Which Unix sockets a sandboxed command may connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnixSockets {
    /// None: creating an `AF_UNIX` socket fails (`socketpair` still works: it reaches
    /// nothing outside).
    Refused,
    /// Only these pathname sockets (needs Landlock ABI 9).
    Listed(Vec<PathBuf>),
    /// Any (`allowAllUnixSockets`).
    All,
}

/// A writable directory and whether its protected paths apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableRoot {
    /// The directory, absolute and normalized.
    pub path: PathBuf,
    /// The project and the additional directories protect [`PROTECTED_IN_ROOT`]; the
    /// session's temporary directory does not (strata owns it).
    pub protected: bool,
}

/// The resolved rules one sandboxed command runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Where writes are allowed.
    pub writable_roots: Vec<WritableRoot>,
    /// The session's temporary directory (`TMPDIR`).
    pub session_tmp: PathBuf,
    /// Paths that cannot be read (and everything beneath).
    pub deny_read: Vec<PathBuf>,
    /// Paths inside a denied one that can be read again.
    pub allow_read: Vec<PathBuf>,
    /// Paths that stay read-only inside writable roots (`denyWrite`; the protected paths
    /// are added per root by [`SandboxPolicy::read_only_paths`]).
    pub deny_write: Vec<PathBuf>,
    /// The network.
    pub network: NetworkPolicy,
    /// Unix sockets.
    pub unix_sockets: UnixSockets,
}

impl SandboxPolicy {
    /// The policy for `settings` in `context`. `proxy_socket` is the Unix socket of a
    /// running [`crate::proxy::Proxy`]; it is needed (and used) only when
    /// `network.allowedDomains` is not empty, otherwise the network is off.
    pub fn from_settings(
        settings: &SandboxSettings,
        context: &PolicyContext,
        proxy_socket: Option<&Path>,
    ) -> Result<Self, PolicyError> {
        for (what, path) in [
            ("project directory", &context.project_dir),
            ("home directory", &context.home),
            ("session temporary directory", &context.session_tmp),
        ] {
            if !path.is_absolute() {
                return Err(PolicyError::NotAbsolute {
                    what,
                    path: path.clone(),
                });
            }
        }
        let expand = |key: &'static str, list: &[String]| -> Result<Vec<PathBuf>, PolicyError> {
            list.iter()
                .map(|entry| expand_setting_path(key, entry, context))
                .collect()
        };
        let mut writable_roots = vec![WritableRoot {
            path: normalize(&context.project_dir),
            protected: true,
        }];
        for dir in &context.additional_dirs {
            if !dir.is_absolute() {
                return Err(PolicyError::NotAbsolute {
                    what: "additional directory",
                    path: dir.clone(),
                });
            }
            writable_roots.push(WritableRoot {
                path: normalize(dir),
                protected: true,
            });
        }
        for path in expand("filesystem.allowWrite", &settings.filesystem.allow_write)? {
            writable_roots.push(WritableRoot {
                path,
                protected: true,
            });
        }
        let mut deny_read = default_deny_read(&normalize(&context.home));
        deny_read.extend(expand(
            "filesystem.denyRead",
            &settings.filesystem.deny_read,
        )?);
        let network = match (settings.network.allowed_domains.is_empty(), proxy_socket) {
            (false, Some(socket)) => NetworkPolicy::Proxied {
                socket: socket.to_path_buf(),
                allowed_domains: settings.network.allowed_domains.clone(),
            },
            // No domains, or no proxy to enforce them: off (fails closed).
            _ => NetworkPolicy::Isolated,
        };
        let unix_sockets = if settings.network.allow_all_unix_sockets {
            UnixSockets::All
        } else if settings.network.allow_unix_sockets.is_empty() {
            UnixSockets::Refused
        } else {
            UnixSockets::Listed(expand(
                "network.allowUnixSockets",
                &settings.network.allow_unix_sockets,
            )?)
        };
        Ok(Self {
            writable_roots,
            session_tmp: normalize(&context.session_tmp),
            deny_read,
            allow_read: expand("filesystem.allowRead", &settings.filesystem.allow_read)?,
            deny_write: expand("filesystem.denyWrite", &settings.filesystem.deny_write)?,
            network,
            unix_sockets,
        })
    }

    /// Every path that must stay read-only: the protected paths of each protected writable
    /// root, and `denyWrite`.
    pub fn read_only_paths(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .writable_roots
            .iter()
            .filter(|root| root.protected)
            .flat_map(|root| PROTECTED_IN_ROOT.iter().map(|rel| root.path.join(rel)))
            .collect();
        out.extend(self.deny_write.iter().cloned());
        out
    }

    /// All directories writes are allowed beneath (the roots and the temporary directory).
    pub fn write_roots(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .writable_roots
            .iter()
            .map(|root| root.path.clone())
            .collect();
        out.push(self.session_tmp.clone());
        out
    }

    /// Whether the policy lets a command read `path` (absolute, normalized). A path inside
    /// a denied one is readable again when an `allowRead` entry covers it and is at least
    /// as deep as the deepest denial that covers it.
    pub fn may_read(&self, path: &Path) -> bool {
        let deepest = |list: &[PathBuf]| {
            list.iter()
                .filter(|p| path.starts_with(p))
                .map(|p| depth(p))
                .max()
        };
        match (deepest(&self.deny_read), deepest(&self.allow_read)) {
            (None, _) => true,
            (Some(deny), Some(allow)) => allow >= deny,
            (Some(_), None) => false,
        }
    }

    /// Whether the policy lets a command create, change or delete `path` (absolute,
    /// normalized): beneath a write root and not at or beneath a read-only path.
    pub fn may_write(&self, path: &Path) -> bool {
        if WRITABLE_DEVICES.iter().any(|dev| path.starts_with(dev)) {
            return true;
        }
        self.write_roots()
            .iter()
            .any(|root| path.starts_with(root) && path != root.as_path())
            && !self.read_only_paths().iter().any(|ro| path.starts_with(ro))
    }
}

/// The depth of an absolute path (`/` is 0).
fn depth(path: &Path) -> usize {
    path.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
}

/// A settings path made absolute: `~` and `~/…` under the home directory, relative paths
/// under the project directory.
fn expand_setting_path(
    key: &'static str,
    entry: &str,
    context: &PolicyContext,
) -> Result<PathBuf, PolicyError> {
    let path = if entry == "~" {
        context.home.clone()
    } else if let Some(rest) = entry.strip_prefix("~/") {
        context.home.join(rest)
    } else if entry.starts_with('~') {
        return Err(PolicyError::BadTilde {
            key,
            value: entry.to_owned(),
        });
    } else {
        context.project_dir.join(entry)
    };
    Ok(normalize(&path))
}

/// `path` with `.` dropped and `..` applied lexically (symbolic links are the kernel's
/// business: Landlock rules follow the inode a path names when the ruleset is built).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> PolicyContext {
        PolicyContext {
            project_dir: "/home/u/proj".into(),
            additional_dirs: vec!["/srv/data".into()],
            home: "/home/u".into(),
            session_tmp: "/tmp/strata-s1".into(),
        }
    }

    #[test]
    fn i26_2_defaults_deny_credentials_and_protect_project_files() {
        let policy =
            SandboxPolicy::from_settings(&SandboxSettings::default(), &context(), None).unwrap();
        for denied in [
            "/home/u/.ssh/id_ed25519",
            "/home/u/.aws/credentials",
            "/home/u/.claude/.credentials.json",
        ] {
            assert!(!policy.may_read(Path::new(denied)), "{denied}");
        }
        assert!(policy.may_read(Path::new("/home/u/.claude/settings.json")));
        assert!(policy.may_write(Path::new("/home/u/proj/src/main.rs")));
        assert!(policy.may_write(Path::new("/srv/data/x")));
        assert!(policy.may_write(Path::new("/tmp/strata-s1/x")));
        assert!(!policy.may_write(Path::new("/home/u/other")));
        assert!(!policy.may_write(Path::new("/tmp/x")));
        for protected in [
            "/home/u/proj/.git/hooks/pre-commit",
            "/home/u/proj/.mcp.json",
            "/srv/data/.claude/settings.json",
        ] {
            assert!(!policy.may_write(Path::new(protected)), "{protected}");
        }
        assert!(policy.may_write(Path::new("/home/u/proj/.git/index")));
        assert_eq!(policy.network, NetworkPolicy::Isolated);
        assert_eq!(policy.unix_sockets, UnixSockets::Refused);
    }

    #[test]
    fn i26_4_settings_paths_expand_and_allow_read_reopens() {
        let mut settings = SandboxSettings::default();
        settings.filesystem.allow_write = vec!["~/.cargo".into(), "build/../out".into()];
        settings.filesystem.deny_read = vec!["secrets".into()];
        settings.filesystem.allow_read = vec!["~/.ssh/config".into()];
        settings.filesystem.deny_write = vec!["vendor".into()];
        settings.network.allowed_domains = vec!["github.com".into()];
        let policy =
            SandboxPolicy::from_settings(&settings, &context(), Some(Path::new("/tmp/p.sock")))
                .unwrap();
        assert!(policy.may_write(Path::new("/home/u/.cargo/registry/x")));
        assert!(policy.may_write(Path::new("/home/u/proj/out/a")));
        assert!(!policy.may_write(Path::new("/home/u/proj/vendor/a")));
        assert!(!policy.may_read(Path::new("/home/u/proj/secrets/k")));
        assert!(policy.may_read(Path::new("/home/u/.ssh/config")));
        assert!(!policy.may_read(Path::new("/home/u/.ssh/id_rsa")));
        assert!(matches!(policy.network, NetworkPolicy::Proxied { .. }));
        // Domains without a proxy to enforce them: the network stays off.
        let policy = SandboxPolicy::from_settings(&settings, &context(), None).unwrap();
        assert_eq!(policy.network, NetworkPolicy::Isolated);
        settings.filesystem.allow_write = vec!["~bob/x".into()];
        assert!(matches!(
            SandboxPolicy::from_settings(&settings, &context(), None),
            Err(PolicyError::BadTilde { .. })
        ));
    }
}
