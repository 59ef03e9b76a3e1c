//! Memory files: the instructions a user or project keeps for the agent (`CLAUDE.md`,
//! `AGENTS.md`, `STRATA.md`, `CLAUDE.local.md`), found and read for the system prompt.
//!
//! Where they come from, in the order they are put in the prompt (a later file is closer
//! to the work and wins where two disagree):
//! 1. the user's config directory (`<config>/CLAUDE.md`, `AGENTS.md`, `STRATA.md`);
//! 2. every directory from the filesystem root down to the working directory (the project
//!    root among them): the three names, then `CLAUDE.local.md` (a person's private
//!    notes, usually git-ignored).
//!
//! A file may import another with `@path` (relative to the importing file, `~/` for the
//! home directory) outside code blocks; imports are followed [`MAX_IMPORT_DEPTH`] deep
//! and each file is read once (a cycle ends where it closes). Each file is capped at
//! [`MAX_FILE_CHARS`] and all of them together at [`MAX_TOTAL_CHARS`]; a file cut or left
//! out gets a warning naming it. Reading is bounded: regular files only, no more than
//! the cap's worth of bytes is kept.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The names looked for in each directory, in order.
pub const MEMORY_FILE_NAMES: [&str; 3] = ["CLAUDE.md", "AGENTS.md", "STRATA.md"];
/// A person's private project notes (not shared through the repository).
pub const LOCAL_MEMORY_FILE_NAME: &str = "CLAUDE.local.md";
/// How deep `@path` imports are followed.
pub const MAX_IMPORT_DEPTH: usize = 5;
/// The most characters one file contributes.
pub const MAX_FILE_CHARS: usize = 40_000;
/// The most characters all memory files contribute together.
pub const MAX_TOTAL_CHARS: usize = 120_000;

/// Where a memory file was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemorySource {
    /// The user's config directory.
    User,
    /// A directory from the filesystem root to the working directory.
    Project,
    /// `CLAUDE.local.md`.
    Local,
    /// Imported by another memory file with `@path`.
    Import,
}

/// One memory file as it went into the prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryFile {
    /// Its path (as found, not resolved).
    pub path: PathBuf,
    /// Where it was found.
    pub source: MemorySource,
    /// Its text as given to the model (cut at the cap when too long).
    pub content: String,
    /// Whether the text was cut.
    pub truncated: bool,
}

/// Every memory file for a session in `cwd`, with the warnings (files cut or left out,
/// files that could not be read).
pub fn load_memory_files(config_dir: &Path, cwd: &Path) -> (Vec<MemoryFile>, Vec<String>) {
    let mut loader = Loader::default();
    for name in MEMORY_FILE_NAMES {
        loader.add(&config_dir.join(name), MemorySource::User, 0);
    }
    let dirs: Vec<&Path> = cwd.ancestors().collect();
    for dir in dirs.into_iter().rev() {
        for name in MEMORY_FILE_NAMES {
            loader.add(&dir.join(name), MemorySource::Project, 0);
        }
        loader.add(&dir.join(LOCAL_MEMORY_FILE_NAME), MemorySource::Local, 0);
    }
    (loader.files, loader.warnings)
}

/// The memory files of the directories between `cwd` (exclusive: loaded at start) and
/// the one `touched` is in (inclusive) that were not loaded yet: a tool touched a path
/// there for the first time. `loaded` remembers the directories already looked at.
pub fn nested_memory_files(
    touched: &Path,
    cwd: &Path,
    loaded: &mut HashSet<PathBuf>,
) -> (Vec<MemoryFile>, Vec<String>) {
    let mut loader = Loader::default();
    let target = if touched.is_dir() {
        touched
    } else {
        touched.parent().unwrap_or(touched)
    };
    // Only below the working directory: the directories above it were read at start.
    let Ok(rel) = target.strip_prefix(cwd) else {
        return (Vec::new(), Vec::new());
    };
    let mut dir = cwd.to_path_buf();
    for part in rel.components() {
        dir.push(part);
        if !loaded.insert(dir.clone()) {
            continue;
        }
        for name in MEMORY_FILE_NAMES {
            loader.add(&dir.join(name), MemorySource::Project, 0);
        }
        loader.add(&dir.join(LOCAL_MEMORY_FILE_NAME), MemorySource::Local, 0);
    }
    (loader.files, loader.warnings)
}

#[derive(Default)]
struct Loader {
    files: Vec<MemoryFile>,
    warnings: Vec<String>,
    /// Resolved paths already read (cycle and duplicate guard).
    seen: HashSet<PathBuf>,
    total: usize,
}

impl Loader {
    fn add(&mut self, path: &Path, source: MemorySource, depth: usize) {
        // `metadata` follows links: a link to a regular file is read, anything else
        // (missing, a directory, a FIFO) is not.
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if !meta.is_file() {
            return;
        }
        let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if !self.seen.insert(resolved) {
            return;
        }
        if self.total >= MAX_TOTAL_CHARS {
            self.warnings.push(format!(
                "memory file {} was left out: the memory files together exceed {MAX_TOTAL_CHARS} \
                 characters",
                path.display()
            ));
            return;
        }
        let text = match read_capped(path, MAX_FILE_CHARS * 4) {
            Ok(text) => text,
            Err(e) => {
                self.warnings.push(format!(
                    "memory file {} could not be read: {e}",
                    path.display()
                ));
                return;
            }
        };
        let cap = MAX_FILE_CHARS.min(MAX_TOTAL_CHARS - self.total);
        let (content, truncated) = cut_chars(&text, cap);
        if truncated {
            self.warnings.push(format!(
                "memory file {} is longer than {cap} characters: only its beginning is used \
                 (shorten it or split it with @imports)",
                path.display()
            ));
        }
        self.total += content.chars().count();
        let imports = if depth < MAX_IMPORT_DEPTH {
            imports_of(&content, path.parent().unwrap_or(Path::new("/")))
        } else {
            Vec::new()
        };
        self.files.push(MemoryFile {
            path: path.to_path_buf(),
            source,
            content,
            truncated,
        });
        for import in imports {
            self.add(&import, MemorySource::Import, depth + 1);
        }
    }
}

/// Reads at most `max_bytes` of `path` as UTF-8 (invalid sequences replaced).
fn read_capped(path: &Path, max_bytes: usize) -> std::io::Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(max_bytes as u64).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first `cap` characters of `text`, and whether it was longer.
fn cut_chars(text: &str, cap: usize) -> (String, bool) {
    match text.char_indices().nth(cap) {
        Some((at, _)) => (text[..at].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

/// The `@path` imports of a memory file's text, resolved against `dir`. Code blocks
/// (fenced) and inline code spans are skipped: `@` there is code, not an import; so is an
/// `@` inside a word (an e-mail address).
fn imports_of(text: &str, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut in_code = false;
        let mut prev = ' ';
        let mut rest = line;
        while let Some(c) = rest.chars().next() {
            let len = c.len_utf8();
            if c == '`' {
                in_code = !in_code;
            } else if c == '@' && !in_code && prev.is_whitespace() {
                let word: String = rest[len..]
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .collect();
                let word = word.trim_end_matches([',', ';', ')', '.']);
                if let Some(path) = import_path(word, dir) {
                    out.push(path);
                }
            }
            prev = c;
            rest = &rest[len..];
        }
    }
    out
}

fn import_path(word: &str, dir: &Path) -> Option<PathBuf> {
    if word.is_empty() {
        return None;
    }
    if let Some(home_rel) = word.strip_prefix("~/") {
        return std::env::var_os("HOME").map(|home| PathBuf::from(home).join(home_rel));
    }
    let path = Path::new(word);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn memory_files_come_from_config_dir_then_root_down_to_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("config");
        let project = tmp.path().join("project");
        let sub = project.join("sub");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(config.join("CLAUDE.md"), "user rules").unwrap();
        std::fs::write(project.join("AGENTS.md"), "project rules").unwrap();
        std::fs::write(project.join("CLAUDE.local.md"), "my notes").unwrap();
        std::fs::write(sub.join("STRATA.md"), "sub rules").unwrap();
        let (files, warnings) = load_memory_files(&config, &sub);
        let texts: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(
            texts,
            ["user rules", "project rules", "my notes", "sub rules"]
        );
        assert_eq!(files[2].source, MemorySource::Local);
        assert!(warnings.is_empty());
    }

    #[test]
    fn imports_are_followed_depth_limited_and_cycle_safe() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("CLAUDE.md"), "see @a.md and `@not-this.md`").unwrap();
        std::fs::write(dir.join("a.md"), "A imports @b.md").unwrap();
        // b imports a again: the cycle ends there.
        std::fs::write(dir.join("b.md"), "B imports @a.md and @CLAUDE.md").unwrap();
        std::fs::write(dir.join("not-this.md"), "code span").unwrap();
        let (files, _) = load_memory_files(&dir.join("no-config"), dir);
        let names: Vec<String> = files
            .iter()
            .filter(|f| f.path.starts_with(dir))
            .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["CLAUDE.md", "a.md", "b.md"]);

        // A chain longer than the depth limit stops at it.
        let deep = dir.join("deep");
        std::fs::create_dir(&deep).unwrap();
        for i in 0..10 {
            std::fs::write(
                deep.join(format!("{i}.md")),
                format!("level {i} @{}.md", i + 1),
            )
            .unwrap();
        }
        std::fs::write(deep.join("STRATA.md"), "@0.md").unwrap();
        let (files, _) = load_memory_files(&dir.join("no-config"), &deep);
        let imported = files
            .iter()
            .filter(|f| f.source == MemorySource::Import && f.path.starts_with(&deep))
            .count();
        assert_eq!(imported, MAX_IMPORT_DEPTH);
    }

    #[test]
    fn nested_memory_files_load_once_when_a_tool_first_touches_their_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path();
        let deep = cwd.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(cwd.join("a/CLAUDE.md"), "rules of a").unwrap();
        std::fs::write(deep.join("AGENTS.md"), "rules of b").unwrap();
        let mut loaded = HashSet::new();
        let (files, _) = nested_memory_files(&deep.join("x.rs"), cwd, &mut loaded);
        let texts: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(texts, ["rules of a", "rules of b"]);
        // The second touch loads nothing; a path outside the working directory neither.
        assert!(
            nested_memory_files(&deep.join("y.rs"), cwd, &mut loaded)
                .0
                .is_empty()
        );
        assert!(
            nested_memory_files(Path::new("/etc/hosts"), cwd, &mut loaded)
                .0
                .is_empty()
        );
    }

    #[test]
    fn an_oversized_memory_file_is_cut_with_a_warning_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let big = "x".repeat(MAX_FILE_CHARS + 10);
        std::fs::write(tmp.path().join("CLAUDE.md"), &big).unwrap();
        let (files, warnings) = load_memory_files(&tmp.path().join("none"), tmp.path());
        let file = files
            .iter()
            .find(|f| f.path.starts_with(tmp.path()))
            .unwrap();
        assert!(file.truncated);
        assert_eq!(file.content.chars().count(), MAX_FILE_CHARS);
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("CLAUDE.md") && w.contains("longer")),
            "{warnings:?}"
        );
    }
}
