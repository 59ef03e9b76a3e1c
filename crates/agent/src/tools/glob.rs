//! The Glob tool: files whose path matches a glob pattern, newest first.
//!
//! The walk is ripgrep's (`ignore` crate): `.gitignore`, `.ignore` and git's exclude
//! files are honoured (also outside a git repository), hidden files are included, `.git`
//! itself is skipped. Patterns use `globset` with `*` not crossing `/` (`**` does), matched
//! against the path relative to the search directory; an absolute pattern searches from
//! its literal leading directories. Results are sorted by modification time, newest
//! first, and capped at 100.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use globset::GlobBuilder;
use ignore::WalkBuilder;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::files::{blocking_checked, normalize};
use super::input::{invalid, parse};
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// At most this many paths are returned.
pub(crate) const MAX_GLOB_RESULTS: usize = 100;

/// The Glob tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob;

#[derive(Debug, Deserialize)]
struct GlobInput {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

struct Checked {
    root: PathBuf,
    pattern: String,
    matcher: globset::GlobMatcher,
}

fn check(input: &Value, cwd: &Path) -> Result<Checked, ToolOutput> {
    let parsed: GlobInput = parse("Glob", input)?;
    if parsed.pattern.is_empty() {
        return Err(invalid("Glob", "pattern", "must not be empty"));
    }
    let base = match parsed.path.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => normalize(&cwd.join(p)),
        None => cwd.to_path_buf(),
    };
    let (root, rest) = split_absolute(&parsed.pattern).unwrap_or((base, parsed.pattern.clone()));
    let matcher = GlobBuilder::new(&rest)
        .literal_separator(true)
        .build()
        .map_err(|e| invalid("Glob", "pattern", e))?
        .compile_matcher();
    Ok(Checked {
        root,
        pattern: parsed.pattern,
        matcher,
    })
}

/// `/abs/dir/**/*.rs` → (`/abs/dir`, `**/*.rs`): the leading components without glob
/// characters become the search root.
fn split_absolute(pattern: &str) -> Option<(PathBuf, String)> {
    if !pattern.starts_with('/') {
        return None;
    }
    let is_meta = |s: &str| s.contains(['*', '?', '[', '{']);
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts.iter().take_while(|p| !is_meta(p)).count();
    // Keep at least the last component as the pattern.
    let literal = literal.min(parts.len().saturating_sub(1));
    let root = parts[..literal].join("/");
    let root = if root.is_empty() {
        "/".to_owned()
    } else {
        root
    };
    Some((normalize(Path::new(&root)), parts[literal..].join("/")))
}

/// The walker every search tool uses: ignore files honoured even outside git, hidden
/// files included, `.git` skipped.
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git");
    b
}

const DESCRIPTION: &str = "Finds files by name with a glob pattern such as `**/*.rs` or \
`src/**/*.{ts,tsx}`.\n\
\n\
- `*` matches within one directory level, `**` across levels.\n\
- `path` is the directory to search (default: the working directory).\n\
- Files ignored by .gitignore are skipped. Results are absolute paths, most recently modified \
first, at most 100.\n\
- To search file contents use Grep.";

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "Glob"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob pattern to match file paths against"},
                "path": {"type": "string", "description": "The directory to search in (default: the working directory)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("");
        // An absolute pattern searches from its literal leading directories, whatever
        // `path` says (the same rule as the search itself).
        match split_absolute(pattern) {
            Some((root, _)) => Some(PermissionSubject::Path(root)),
            None => search_subject(input),
        }
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input, Path::new("/")).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            let out = blocking_checked(check(&call.input, &ctx.cwd()), move |c| {
                glob_files(&c, &cancel)
            })
            .await;
            // Cap the listing (long paths times 100) like any other output.
            out.capped(&call.id, ctx.hooks.as_ref())
        })
    }
}

/// Glob and Grep search a directory: the subject is `path` (relative to the working
/// directory) or the working directory itself (an empty path).
pub(crate) fn search_subject(input: &Value) -> Option<PermissionSubject> {
    let path = input.get("path").and_then(Value::as_str).unwrap_or("");
    Some(PermissionSubject::Path(PathBuf::from(path)))
}

fn glob_files(c: &Checked, cancel: &CancellationToken) -> ToolOutput {
    let started = Instant::now();
    if !c.root.is_dir() {
        return ToolOutput::error(format!(
            "Directory does not exist: {} (Glob's `path` must be a directory).",
            c.root.display()
        ));
    }
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    for entry in walker(&c.root).build() {
        if cancel.is_cancelled() {
            return ToolOutput::error("Glob was interrupted.");
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&c.root) else {
            continue;
        };
        if c.matcher.is_match(rel) {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((mtime, entry.into_path()));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let truncated = total > MAX_GLOB_RESULTS;
    found.truncate(MAX_GLOB_RESULTS);
    let filenames: Vec<String> = found.iter().map(|(_, p)| p.display().to_string()).collect();
    let mut content = if filenames.is_empty() {
        "No files found".to_owned()
    } else {
        filenames.join("\n")
    };
    if truncated {
        content.push_str(&format!(
            "\n(Showing the {MAX_GLOB_RESULTS} most recently modified of {total} matches for \
             `{}`; use a more specific pattern or path to see others.)",
            c.pattern
        ));
    }
    ToolOutput::ok(content).with_detail(json!({
        "filenames": filenames,
        "durationMs": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "numFiles": filenames.len(),
        "truncated": truncated,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_patterns_split_at_the_first_glob_component() {
        assert_eq!(
            split_absolute("/a/b/**/*.rs"),
            Some((PathBuf::from("/a/b"), "**/*.rs".to_owned()))
        );
        assert_eq!(
            split_absolute("/a/b/c.txt"),
            Some((PathBuf::from("/a/b"), "c.txt".to_owned()))
        );
        assert_eq!(split_absolute("src/*.rs"), None);
    }
}
