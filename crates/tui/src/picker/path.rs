//! `@` path completion: the project's files (respecting `.gitignore`), fuzzy matched.

use std::path::Path;

use super::FuzzyList;

/// At most this many paths are collected, so a huge tree cannot stall the UI.
pub const MAX_PATHS: usize = 20_000;

/// The files and folders under a root, for `@` completion.
pub struct PathCompleter {
    list: FuzzyList<String>,
    truncated: bool,
}

impl std::fmt::Debug for PathCompleter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PathCompleter")
            .field("paths", &self.list.items().len())
            .field("truncated", &self.truncated)
            .finish()
    }
}

impl PathCompleter {
    /// Walks `root` (hidden files and `.gitignore`d paths skipped, also outside a git
    /// repository), collecting at most [`MAX_PATHS`] paths relative to `root`, `/`
    /// separated, folders ending in `/`.
    pub fn new(root: &Path) -> Self {
        let mut paths = Vec::new();
        let mut truncated = false;
        let walk = ignore::WalkBuilder::new(root).require_git(false).build();
        for entry in walk.flatten() {
            let Ok(rel) = entry.path().strip_prefix(root) else {
                continue;
            };
            if rel.as_os_str().is_empty() {
                continue;
            }
            if paths.len() >= MAX_PATHS {
                truncated = true;
                break;
            }
            let mut p = rel.to_string_lossy().replace('\\', "/");
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                p.push('/');
            }
            paths.push(p);
        }
        paths.sort();
        Self {
            list: FuzzyList::for_paths(paths, Clone::clone),
            truncated,
        }
    }

    /// Whether the walk stopped at [`MAX_PATHS`].
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Completes the text after `@`; returns the matching paths, best first.
    pub fn complete(&mut self, query: &str) -> Vec<&str> {
        self.list.set_query(query);
        (0..self.list.matches().len())
            .filter_map(|n| self.list.matched(n).map(String::as_str))
            .collect()
    }

    /// The list (selection state).
    pub fn list_mut(&mut self) -> &mut FuzzyList<String> {
        &mut self.list
    }
}

/// The `@…` token that ends at byte `cursor` of `input`: its start (the `@`) and the text
/// after `@`. `None` unless the `@` starts a word.
pub fn at_token(input: &str, cursor: usize) -> Option<(usize, &str)> {
    let before = input.get(..cursor)?;
    let start = before
        .rfind(|c: char| c.is_whitespace())
        .map_or(0, |i| i + 1);
    let word = &before[start..];
    word.strip_prefix('@').map(|q| (start, q))
}
