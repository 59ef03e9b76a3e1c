//! Property tests for the policy's path rules: what the kernel is told ([`FsPlan`]) never
//! grants more than the policy's predicates, and grants every existing file they allow.
//!
//! Trees are generated in memory (no filesystem), with the denied, re-allowed and writable
//! paths drawn from the same small name alphabet so they overlap often.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use strata_shell::plan::{EntryKind, FsPlan, FsView};
use strata_shell::policy::{NetworkPolicy, SandboxPolicy, UnixSockets, WritableRoot};

/// A tree in memory: every path and its kind; parents are implied directories.
#[derive(Debug)]
struct MemFs(BTreeMap<PathBuf, EntryKind>);

impl FsView for MemFs {
    fn kind(&self, path: &Path) -> Option<EntryKind> {
        if path == Path::new("/") {
            return Some(EntryKind::Dir);
        }
        self.0.get(path).copied()
    }

    fn children(&self, dir: &Path) -> Vec<(PathBuf, EntryKind)> {
        self.0
            .iter()
            .filter(|(path, _)| path.parent() == Some(dir))
            .map(|(path, kind)| (path.clone(), *kind))
            .collect()
    }
}

const NAMES: &[&str] = &[
    "a",
    "b",
    ".git",
    "hooks",
    ".claude",
    ".mcp.json",
    "config",
    ".ssh",
];

fn rel_path(max_depth: usize) -> impl Strategy<Value = PathBuf> {
    prop::collection::vec(prop::sample::select(NAMES), 1..=max_depth).prop_map(|parts| {
        parts
            .iter()
            .fold(PathBuf::from("/"), |acc, part| acc.join(part))
    })
}

/// A tree: each generated path becomes a file, its ancestors directories (a path that is
/// both keeps directory).
fn tree() -> impl Strategy<Value = MemFs> {
    prop::collection::vec((rel_path(4), any::<bool>()), 1..40).prop_map(|entries| {
        let mut map = BTreeMap::new();
        for (path, link) in entries {
            for ancestor in path.ancestors().skip(1) {
                if ancestor != Path::new("/") {
                    map.insert(ancestor.to_path_buf(), EntryKind::Dir);
                }
            }
            map.entry(path).or_insert(if link {
                EntryKind::Symlink
            } else {
                EntryKind::File
            });
        }
        MemFs(map)
    })
}

fn policy(
    roots: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
    allow_read: Vec<PathBuf>,
    deny_write: Vec<PathBuf>,
) -> SandboxPolicy {
    SandboxPolicy {
        writable_roots: roots
            .into_iter()
            .map(|path| WritableRoot {
                path,
                protected: true,
            })
            .collect(),
        session_tmp: PathBuf::from("/tmp-session"),
        deny_read,
        allow_read,
        deny_write,
        network: NetworkPolicy::Isolated,
        unix_sockets: UnixSockets::Refused,
    }
}

fn under_symlink(fs: &MemFs, path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .any(|a| fs.kind(a) == Some(EntryKind::Symlink))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Reads: an existing file is readable under the plan exactly when the policy says so.
    #[test]
    fn i26_2_read_plan_matches_policy(
        fs in tree(),
        deny in prop::collection::vec(rel_path(3), 0..4),
        allow in prop::collection::vec(rel_path(4), 0..3),
    ) {
        let policy = policy(vec![], deny, allow, vec![]);
        let plan = FsPlan::build(&policy, &fs);
        for (path, kind) in &fs.0 {
            if *kind != EntryKind::File || under_symlink(&fs, path) {
                continue;
            }
            prop_assert_eq!(plan.allows_read_file(path), policy.may_read(path), "{}", path.display());
        }
    }

    /// Writes: the plan never lets a command change or create what the policy protects,
    /// and lets it change every existing file the policy allows.
    #[test]
    fn i26_2_write_plan_never_exceeds_policy(
        fs in tree(),
        roots in prop::collection::vec(rel_path(2), 1..3),
        deny_write in prop::collection::vec(rel_path(3), 0..2),
        new_name in prop::sample::select(NAMES),
    ) {
        let roots: Vec<PathBuf> = roots.into_iter().filter(|r| fs.kind(r) == Some(EntryKind::Dir)).collect();
        let policy = policy(roots, vec![], vec![], deny_write);
        let plan = FsPlan::build(&policy, &fs);
        for (path, kind) in &fs.0 {
            if under_symlink(&fs, path) {
                continue;
            }
            if plan.allows_write_file(path) || plan.allows_create(path) {
                prop_assert!(policy.may_write(path), "granted {} against the policy", path.display());
            }
            if *kind == EntryKind::File && policy.may_write(path) {
                prop_assert!(plan.allows_write_file(path), "existing {} not writable", path.display());
            }
            // A new entry in every directory, protected names included.
            if *kind == EntryKind::Dir {
                let new = path.join(new_name);
                if fs.kind(&new).is_none() && plan.allows_create(&new) {
                    prop_assert!(policy.may_write(&new), "may create {} against the policy", new.display());
                }
            }
        }
    }
}

#[test]
fn i26_2_missing_protected_path_freezes_only_its_level() {
    let fs = MemFs(
        [
            ("/p", EntryKind::Dir),
            ("/p/src", EntryKind::Dir),
            ("/p/src/main.rs", EntryKind::File),
            ("/p/README", EntryKind::File),
            ("/p/.git", EntryKind::Dir),
            ("/p/.git/hooks", EntryKind::Dir),
            ("/p/.git/config", EntryKind::File),
        ]
        .into_iter()
        .map(|(p, k)| (PathBuf::from(p), k))
        .collect(),
    );
    let plan = FsPlan::build(&policy(vec!["/p".into()], vec![], vec![], vec![]), &fs);
    // .claude, .strata and .mcp.json are missing: /p's own level is frozen.
    assert_eq!(plan.frozen_dirs, [PathBuf::from("/p")]);
    assert!(!plan.allows_create(Path::new("/p/.mcp.json")));
    assert!(!plan.allows_create(Path::new("/p/new.txt")));
    assert!(plan.allows_write_file(Path::new("/p/README")));
    assert!(plan.allows_create(Path::new("/p/src/new.rs")));
    // .git has its hooks and config: it is writable, those two are bound read-only.
    assert!(plan.allows_create(Path::new("/p/.git/index.lock")));
    assert!(!plan.allows_create(Path::new("/p/.git/hooks/pre-commit")));
    assert!(!plan.allows_write_file(Path::new("/p/.git/config")));
    assert_eq!(
        plan.read_only_binds,
        [
            PathBuf::from("/p/.git/config"),
            PathBuf::from("/p/.git/hooks")
        ]
    );
}
