//! The one answer to "is this path inside that directory", used by every layer: the
//! permission check (inside the project, protected files), the file tools' path
//! normalisation, Bash's `cd` confinement, rewind's confinement to the project and the
//! project-settings link check.
//!
//! There used to be four copies, each a little different (one compared lexically, one
//! canonicalised only the deepest existing ancestor, one ignored links that lead
//! nowhere yet). A path is now judged by where it really leads when the OS opens it:
//!
//! - the longest prefix that exists is resolved by the OS (`..` after a link goes up
//!   from the link's target, as the kernel does);
//! - a symbolic link whose target does not exist yet (a dangling link) is followed by
//!   reading it, because writing through it creates the target;
//! - the part that does not exist is appended with `.` dropped and `..` removing the
//!   previous name (a directory created on the way is a plain directory);
//! - names are compared exactly or, where a wrong "no" would widen what is allowed (a
//!   protected folder), without regard to ASCII case: `.GIT` is `.git` on the
//!   case-insensitive file systems of macOS and Windows.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// How names are compared by [`path_within`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameCase {
    /// Byte for byte: use it when "inside" grants something (inside the project).
    Exact,
    /// Ignoring ASCII case: use it when "inside" takes something away (a protected
    /// folder), so a differently cased spelling of the same folder on a
    /// case-insensitive file system is caught.
    Insensitive,
}

/// How many symbolic links one resolution follows by hand before giving up, as the
/// kernel's own limit (a loop can never be written through).
const MAX_LINKS: usize = 40;

/// Removes `.` and resolves `..` without touching the file system (`..` at the root
/// stays at the root).
///
/// ```
/// use strata_config::paths::normalize_lexically;
/// assert_eq!(normalize_lexically("/a/./b/../c".as_ref()), std::path::PathBuf::from("/a/c"));
/// ```
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Where `path` (absolute) leads when it is opened or created: the longest existing
/// prefix resolved by the OS (`..` after a link climbs from the link's target), a
/// dangling link followed by reading it (writing through it creates its target), and
/// the missing rest appended with `.` dropped and `..` removing the previous name. A
/// relative path is resolved against nothing and returned normalised lexically.
pub fn resolve_existing(path: &Path) -> PathBuf {
    if !path.is_absolute() {
        // Resolving against the process's directory would judge some other place.
        return normalize_lexically(path);
    }
    resolve_following(path, 0)
}

fn resolve_following(path: &Path, links: usize) -> PathBuf {
    let parts: Vec<Component<'_>> = path.components().collect();
    // Longest prefix the OS resolves (it applies `..` after links itself).
    let found = (1..=parts.len()).rev().find_map(|n| {
        let prefix: PathBuf = parts[..n].iter().collect();
        std::fs::canonicalize(&prefix).ok().map(|real| (n, real))
    });
    let Some((n, mut out)) = found else {
        return normalize_lexically(path);
    };
    let mut rest = parts[n..].iter();
    while let Some(part) = rest.next() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                let candidate = out.join(name);
                // Does not resolve, yet is there: a link to a missing target (or a loop).
                // Writing through it creates the target, so that is where it leads.
                let is_link =
                    std::fs::symlink_metadata(&candidate).is_ok_and(|m| m.file_type().is_symlink());
                if is_link
                    && links < MAX_LINKS
                    && let Ok(target) = std::fs::read_link(&candidate)
                {
                    let mut next = out.join(target);
                    next.extend(rest);
                    return resolve_following(&next, links + 1);
                }
                out = candidate;
            }
            Component::RootDir | Component::Prefix(_) => out.push(part.as_os_str()),
        }
    }
    out
}

/// The one containment test: when `path` leads to `dir` or somewhere inside it (both
/// resolved by [`resolve_existing`]), the part of the resolved path below the resolved
/// `dir` (empty for `dir` itself); `None` when it leads elsewhere.
///
/// ```
/// use std::path::Path;
/// use strata_config::paths::{NameCase, path_within};
/// let rest = path_within(Path::new("/nonexistent-x/a/../b"), Path::new("/nonexistent-x"), NameCase::Exact);
/// assert_eq!(rest.as_deref(), Some(Path::new("b")));
/// assert!(path_within(Path::new("/nonexistent-x/../y"), Path::new("/nonexistent-x"), NameCase::Exact).is_none());
/// ```
pub fn path_within(path: &Path, dir: &Path, case: NameCase) -> Option<PathBuf> {
    below(&resolve_existing(path), &resolve_existing(dir), case)
}

/// [`path_within`] for the spelling: both normalised lexically, no link followed. For
/// checks of the names a path is written with (a `.git` that is itself a link is still
/// git's folder), never on its own for "inside".
pub fn path_within_as_written(path: &Path, dir: &Path, case: NameCase) -> Option<PathBuf> {
    below(&normalize_lexically(path), &normalize_lexically(dir), case)
}

/// The part of `path` below `dir`, comparing whole names.
fn below(path: &Path, dir: &Path, case: NameCase) -> Option<PathBuf> {
    let mut inner = path.components();
    for want in dir.components() {
        let got = inner.next()?;
        if !same_name(got.as_os_str(), want.as_os_str(), case) {
            return None;
        }
    }
    Some(inner.as_path().to_path_buf())
}

/// Whether two names are the same under `case`.
pub fn same_name(a: &OsStr, b: &OsStr, case: NameCase) -> bool {
    match case {
        NameCase::Exact => a == b,
        NameCase::Insensitive => a.eq_ignore_ascii_case(b),
    }
}

/// Whether `path` is inside `root` where it really leads (names compared exactly): the
/// [`path_within`] test. A link inside `root` pointing out of it is outside; a file that
/// does not exist yet is judged by where its existing part leads.
pub fn resolves_within(path: &Path, root: &Path) -> bool {
    path_within(path, root, NameCase::Exact).is_some()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree {
        _tmp: tempfile::TempDir,
        base: PathBuf,
        root: PathBuf,
    }

    /// `<base>/p` (the root, with `src/` and `.git/hooks/`) and `<base>/outside/`.
    fn tree() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("p");
        for d in ["p/src", "p/.git/hooks", "outside/deep"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        Tree {
            _tmp: tmp,
            base,
            root,
        }
    }

    fn within(t: &Tree, path: &Path) -> Option<PathBuf> {
        path_within(path, &t.root, NameCase::Exact)
    }

    #[test]
    fn dot_dot_is_resolved_before_judging() {
        let t = tree();
        assert_eq!(
            within(&t, &t.root.join("src/../src/a.rs")),
            Some(PathBuf::from("src/a.rs"))
        );
        assert_eq!(within(&t, &t.root.join("src/../../outside/x")), None);
        assert_eq!(within(&t, &t.root.join("..")), None);
        assert_eq!(within(&t, &t.root), Some(PathBuf::new()));
        // A sibling whose name starts like the root is not inside it.
        assert_eq!(within(&t, &t.base.join("p2/x")), None);
    }

    /// `..` inside the missing part: `missing/../../x` would be created one level up,
    /// outside, once `missing` is made. The old check saw only the existing `p`.
    #[test]
    fn dot_dot_in_the_missing_tail_cannot_climb_out() {
        let t = tree();
        assert_eq!(within(&t, &t.root.join("missing/../../outside/x")), None);
        assert_eq!(
            within(&t, &t.root.join("missing/../new")),
            Some(PathBuf::from("new"))
        );
    }

    #[test]
    fn missing_tails_are_judged_by_their_existing_part() {
        let t = tree();
        assert_eq!(
            within(&t, &t.root.join("new/dir/file.rs")),
            Some(PathBuf::from("new/dir/file.rs"))
        );
        assert_eq!(within(&t, &t.base.join("outside/new/file")), None);
        // A root that does not exist: judged as written (nothing can lead out of it).
        let gone = t.base.join("gone");
        assert_eq!(
            path_within(&gone.join("a"), &gone, NameCase::Exact),
            Some(PathBuf::from("a"))
        );
    }

    #[test]
    fn links_are_judged_by_where_they_lead() {
        let t = tree();
        symlink(t.base.join("outside"), t.root.join("out")).unwrap();
        symlink(t.root.join(".git/hooks"), t.root.join("hooks")).unwrap();
        symlink(t.root.join("src"), t.base.join("outside/into")).unwrap();
        assert_eq!(within(&t, &t.root.join("out/deep/x")), None, "a link out");
        assert_eq!(
            within(&t, &t.root.join("hooks/pre-commit")),
            Some(PathBuf::from(".git/hooks/pre-commit")),
            "a link inside: the rest names where it leads"
        );
        assert_eq!(
            within(&t, &t.base.join("outside/into/a.rs")),
            Some(PathBuf::from("src/a.rs")),
            "a link from outside into the root"
        );
        // `..` after a link climbs from the link's target, as the kernel does (lexically
        // this would be `p/p/src`).
        assert_eq!(
            within(&t, &t.root.join("out/deep/../../p/src")),
            Some(PathBuf::from("src"))
        );
        assert_eq!(
            within(&t, &t.root.join("out/deep/../x")),
            None,
            "lexically p/out/x, really outside/x"
        );
    }

    /// Writing through a link whose target does not exist creates the target: the link
    /// `x -> .strata/settings.local.json` leads there before the file exists.
    #[test]
    fn dangling_links_are_followed() {
        let t = tree();
        std::fs::create_dir(t.root.join(".strata")).unwrap();
        symlink(".strata/settings.local.json", t.root.join("s.json")).unwrap();
        assert_eq!(
            within(&t, &t.root.join("s.json")),
            Some(PathBuf::from(".strata/settings.local.json"))
        );
        symlink(t.base.join("outside/new-file"), t.root.join("leak")).unwrap();
        assert_eq!(within(&t, &t.root.join("leak")), None);
        // A loop resolves to nothing the kernel would write through; it stays in place.
        symlink("loop-b", t.root.join("loop-a")).unwrap();
        symlink("loop-a", t.root.join("loop-b")).unwrap();
        assert_eq!(
            within(&t, &t.root.join("loop-a")).map(|p| p.to_string_lossy().starts_with("loop-")),
            Some(true)
        );
    }

    #[test]
    fn case_is_ignored_only_when_asked() {
        let t = tree();
        let upper = t.root.join(".GIT/hooks/x");
        let git = t.root.join(".git");
        assert_eq!(path_within(&upper, &git, NameCase::Exact), None);
        assert_eq!(
            path_within(&upper, &git, NameCase::Insensitive),
            Some(PathBuf::from("hooks/x"))
        );
        assert!(same_name(
            OsStr::new(".Strata"),
            OsStr::new(".strata"),
            NameCase::Insensitive
        ));
        assert!(!same_name(
            OsStr::new(".Strata"),
            OsStr::new(".strata"),
            NameCase::Exact
        ));
    }

    #[test]
    fn as_written_follows_no_link() {
        let t = tree();
        symlink(t.base.join("outside"), t.root.join("out")).unwrap();
        let through = t.root.join("out/./x/../y");
        assert_eq!(
            path_within_as_written(&through, &t.root, NameCase::Exact),
            Some(PathBuf::from("out/y"))
        );
        assert_eq!(within(&t, &through), None);
    }

    #[test]
    fn lexical_normalisation_never_touches_the_disk() {
        assert_eq!(
            normalize_lexically(Path::new("/a/./b/../c")),
            PathBuf::from("/a/c")
        );
        assert_eq!(normalize_lexically(Path::new("/../x")), PathBuf::from("/x"));
    }
}
