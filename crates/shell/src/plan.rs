//! The filesystem half of a policy as the kernel can enforce it: Landlock rules and
//! read-only bind mounts, computed from a snapshot of the directories involved.
//!
//! Landlock only *allows*, hierarchically: a rule on a directory grants its rights to
//! everything beneath it, and nothing can be taken back lower down. So:
//!
//! - **"Read everywhere except D"** is built as an allow-list: starting at `/`, a directory
//!   with no denied (or re-allowed) path beneath it gets one read rule; one that has some is
//!   walked into, each child handled the same way. Only the denied paths' ancestors are
//!   walked, so the list stays short (`/`'s children, `~`'s children, …). The walked
//!   ancestors themselves get "list" (`ReadDir` beneath) so `ls ~` works: the *names*
//!   inside a denied directory can be listed, their contents cannot be read. Symbolic links
//!   get no rule (access through one is checked on the path it resolves to). The listing is
//!   a snapshot taken when the ruleset is built, before each command: an entry created
//!   later next to a walked ancestor is not readable by that command.
//! - **"Write beneath R except its protected paths P"**: a rule on R would cover P, so when
//!   every path of P exists, R gets the write rule and each path of P becomes a read-only
//!   bind mount in the command's mount namespace (Landlock cannot remove a right, a
//!   read-only mount refuses writes whatever Landlock allows). When a path of P does not
//!   exist (a project without `.mcp.json` or `.claude/`), nothing can stop its creation
//!   except refusing to create *anything* at that level: the level is frozen — no rule on
//!   R itself, a write rule on each existing child directory (recursively the same way),
//!   content writes on each existing file. New entries directly in a frozen directory
//!   cannot be created; create the missing protected paths (an empty `.claude/`, a
//!   `.mcp.json` of `{}`) to lift that. This fails closed: a command can never create
//!   `.claude/settings.json` hooks that strata would later run outside the sandbox.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::policy::{SandboxPolicy, UnixSockets, WRITABLE_DEVICES};

/// What a directory entry is (`lstat`, not following links).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// Anything else that is not a link: files, devices, sockets, fifos.
    File,
    /// A symbolic link.
    Symlink,
}

/// The filesystem as the planner sees it: a real one ([`RealFs`]) or, in tests, a tree in
/// memory.
pub trait FsView {
    /// The kind of `path`, not following a final link; `None` when it does not exist.
    fn kind(&self, path: &Path) -> Option<EntryKind>;
    /// The entries of directory `dir`; empty when it cannot be listed (no rule is then
    /// made for what is inside: fails closed).
    fn children(&self, dir: &Path) -> Vec<(PathBuf, EntryKind)>;
    /// `path` with symbolic links resolved as far as it exists (the rest appended).
    fn canonical(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }
}

/// The real filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl FsView for RealFs {
    fn kind(&self, path: &Path) -> Option<EntryKind> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(kind_of(meta.file_type()))
    }

    fn children(&self, dir: &Path) -> Vec<(PathBuf, EntryKind)> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut out: Vec<(PathBuf, EntryKind)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| Some((entry.path(), kind_of(entry.file_type().ok()?))))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn canonical(&self, path: &Path) -> PathBuf {
        // The longest existing prefix resolved, the missing rest appended as written.
        let mut existing = path.to_path_buf();
        let mut rest = Vec::new();
        loop {
            if let Ok(real) = std::fs::canonicalize(&existing) {
                let mut out = real;
                out.extend(rest.iter().rev());
                return out;
            }
            match (
                existing.file_name().map(|n| n.to_os_string()),
                existing.parent(),
            ) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    existing = parent.to_path_buf();
                }
                _ => return path.to_path_buf(),
            }
        }
    }
}

fn kind_of(file_type: std::fs::FileType) -> EntryKind {
    if file_type.is_symlink() {
        EntryKind::Symlink
    } else if file_type.is_dir() {
        EntryKind::Dir
    } else {
        EntryKind::File
    }
}

/// The rights one Landlock rule grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grant {
    /// Read and execute files, list directories, beneath the path.
    Read,
    /// List directories beneath the path (names only): the ancestors of a denied path.
    List,
    /// Every write right beneath a directory: create, remove, rename, write, truncate.
    Write,
    /// Write and truncate existing files (one file, or the files beneath a directory).
    WriteContent,
    /// Connect to the Unix socket at the path (Landlock ABI 9).
    ConnectUnix,
}

/// One Landlock rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    /// The path the rule is anchored at.
    pub path: PathBuf,
    /// Whether it is a directory (file rules can only carry file rights).
    pub is_dir: bool,
    /// The rights.
    pub grant: Grant,
}

/// The kernel's view of a policy's filesystem rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsPlan {
    /// Landlock rules.
    pub rules: Vec<Rule>,
    /// Existing paths to bind read-only onto themselves in the command's mount namespace.
    pub read_only_binds: Vec<PathBuf>,
    /// Writable directories between a write root and a read-only path below it (`.git`
    /// for `.git/hooks`), bound onto themselves unchanged: a mount point cannot be
    /// renamed or removed, and renaming `.git` away and making a new `.git/hooks`
    /// would otherwise get around the read-only mount.
    pub pinned_dirs: Vec<PathBuf>,
    /// Directories where nothing new can be created because a protected path is missing
    /// there (for the user-facing explanation).
    pub frozen_dirs: Vec<PathBuf>,
}

impl FsPlan {
    /// The plan for `policy` on `fs`.
    pub fn build(policy: &SandboxPolicy, fs: &dyn FsView) -> Self {
        let canon =
            |list: &[PathBuf]| -> Vec<PathBuf> { list.iter().map(|p| fs.canonical(p)).collect() };
        let deny_read = canon(&policy.deny_read);
        let allow_read = canon(&policy.allow_read);
        let read_only: Vec<PathBuf> = canon(&policy.read_only_paths());
        let mut plan = FsPlan::default();

        let read = ReadWalk {
            fs,
            deny: &deny_read,
            allow: &allow_read,
        };
        read.walk(Path::new("/"), &mut plan);

        let mut roots: BTreeSet<PathBuf> = BTreeSet::new();
        for root in policy.write_roots() {
            let root = fs.canonical(&root);
            if fs.kind(&root) == Some(EntryKind::Dir) {
                roots.insert(root);
            }
        }
        let write = WriteWalk {
            fs,
            read_only: &read_only,
        };
        for root in &roots {
            write.walk(root, &mut plan);
        }
        for device in WRITABLE_DEVICES {
            match fs.kind(Path::new(device)) {
                Some(EntryKind::Dir) => plan.push(Path::new(device), true, Grant::WriteContent),
                Some(EntryKind::File) => plan.push(Path::new(device), false, Grant::WriteContent),
                _ => {}
            }
        }
        if let UnixSockets::Listed(sockets) = &policy.unix_sockets {
            for socket in sockets {
                let socket = fs.canonical(socket);
                if fs.kind(&socket) == Some(EntryKind::File) {
                    plan.push(&socket, false, Grant::ConnectUnix);
                }
            }
        }
        plan.rules.sort();
        plan.rules.dedup();
        plan.read_only_binds.sort();
        plan.read_only_binds.dedup();
        plan.pinned_dirs.sort();
        plan.pinned_dirs.dedup();
        plan
    }

    fn push(&mut self, path: &Path, is_dir: bool, grant: Grant) {
        self.rules.push(Rule {
            path: path.to_path_buf(),
            is_dir,
            grant,
        });
    }

    fn granted(&self, path: &Path, grants: &[Grant]) -> bool {
        self.rules
            .iter()
            .any(|rule| grants.contains(&rule.grant) && path.starts_with(&rule.path))
    }

    fn under_read_only_bind(&self, path: &Path) -> bool {
        self.read_only_binds
            .iter()
            .any(|bind| path.starts_with(bind))
    }

    /// Whether the kernel would let a command read the file at `path` (Landlock semantics:
    /// a rule on the path or an ancestor).
    pub fn allows_read_file(&self, path: &Path) -> bool {
        self.granted(path, &[Grant::Read])
    }

    /// Whether the kernel would let a command write the contents of the existing file at
    /// `path`.
    pub fn allows_write_file(&self, path: &Path) -> bool {
        self.granted(path, &[Grant::Write, Grant::WriteContent]) && !self.under_read_only_bind(path)
    }

    /// Whether the kernel would let a command create (or remove, or rename away) the entry
    /// at `path`: that needs the write rule on its parent directory.
    pub fn allows_create(&self, path: &Path) -> bool {
        let Some(parent) = path.parent() else {
            return false;
        };
        self.granted(parent, &[Grant::Write]) && !self.under_read_only_bind(path)
    }
}

struct ReadWalk<'a> {
    fs: &'a dyn FsView,
    deny: &'a [PathBuf],
    allow: &'a [PathBuf],
}

impl ReadWalk<'_> {
    fn readable(&self, path: &Path) -> bool {
        let deepest = |list: &[PathBuf]| {
            list.iter()
                .filter(|p| path.starts_with(p))
                .map(|p| p.components().count())
                .max()
        };
        match (deepest(self.deny), deepest(self.allow)) {
            (None, _) => true,
            (Some(deny), Some(allow)) => allow >= deny,
            (Some(_), None) => false,
        }
    }

    fn marked_below(&self, dir: &Path) -> bool {
        self.deny
            .iter()
            .chain(self.allow)
            .any(|p| p.starts_with(dir) && p != dir)
    }

    fn walk(&self, dir: &Path, plan: &mut FsPlan) {
        let readable = self.readable(dir);
        if !self.marked_below(dir) {
            if readable {
                plan.push(dir, true, Grant::Read);
            }
            return;
        }
        if readable {
            plan.push(dir, true, Grant::List);
        }
        for (child, kind) in self.fs.children(dir) {
            match kind {
                EntryKind::Dir => self.walk(&child, plan),
                EntryKind::File if self.readable(&child) => plan.push(&child, false, Grant::Read),
                EntryKind::File | EntryKind::Symlink => {}
            }
        }
    }
}

struct WriteWalk<'a> {
    fs: &'a dyn FsView,
    read_only: &'a [PathBuf],
}

impl WriteWalk<'_> {
    fn walk(&self, dir: &Path, plan: &mut FsPlan) {
        if self.read_only.iter().any(|ro| dir.starts_with(ro)) {
            return;
        }
        let below: Vec<&PathBuf> = self
            .read_only
            .iter()
            .filter(|ro| ro.starts_with(dir) && ro.as_path() != dir)
            .collect();
        if below.iter().all(|ro| self.fs.kind(ro).is_some()) {
            plan.push(dir, true, Grant::Write);
            for ro in below {
                plan.pinned_dirs.extend(
                    ro.ancestors()
                        .skip(1)
                        .take_while(|a| *a != dir)
                        .map(Path::to_path_buf),
                );
                plan.read_only_binds.push(ro.clone());
            }
            return;
        }
        plan.frozen_dirs.push(dir.to_path_buf());
        for (child, kind) in self.fs.children(dir) {
            if self.read_only.iter().any(|ro| child.starts_with(ro)) {
                continue;
            }
            match kind {
                EntryKind::Dir => self.walk(&child, plan),
                EntryKind::File => plan.push(&child, false, Grant::WriteContent),
                EntryKind::Symlink => {}
            }
        }
    }
}
