//! The Grep tool: a regular-expression search over files, built on ripgrep's crates
//! (`grep-regex` for matching, `grep-searcher` for line-oriented searching with context
//! and binary detection, `ignore` for the `.gitignore`-aware walk, `--glob` overrides
//! and `--type` filters), so it behaves like `rg` without spawning it.
//!
//! Output modes: `files_with_matches` (default; paths, most recently modified first),
//! `content` (matching lines, with `-n` line numbers on by default and `-A`/`-B`/`-C`
//! context), `count` (matching lines per file). `head_limit` and `offset` page through
//! the entries of any mode. Binary files are skipped; very long lines are cut.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::files::{blocking_checked, normalize};
use super::glob::{search_subject, walker};
use super::input::{invalid, parse};
use super::output::truncate_line;
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// Matching lines longer than this are cut in `content` output.
const MAX_MATCH_LINE_CHARS: usize = 500;

/// The Grep tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

/// What Grep reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Content => "content",
            Mode::FilesWithMatches => "files_with_matches",
            Mode::Count => "count",
        }
    }
}

#[derive(Debug, Deserialize)]
struct GrepInput {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default, rename = "type")]
    file_type: Option<String>,
    #[serde(default)]
    output_mode: Option<Mode>,
    #[serde(default, rename = "-i")]
    case_insensitive: Option<bool>,
    #[serde(default, rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(default, rename = "-A")]
    after: Option<u32>,
    #[serde(default, rename = "-B")]
    before: Option<u32>,
    #[serde(default, rename = "-C")]
    context: Option<u32>,
    #[serde(default)]
    head_limit: Option<u64>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    multiline: Option<bool>,
}

struct Checked {
    input: GrepInput,
    mode: Mode,
    root: PathBuf,
    matcher: grep_regex::RegexMatcher,
}

fn check(input: &Value, cwd: &Path) -> Result<Checked, ToolOutput> {
    let parsed: GrepInput = parse("Grep", input)?;
    if parsed.pattern.is_empty() {
        return Err(invalid("Grep", "pattern", "must not be empty"));
    }
    if parsed.head_limit == Some(0) {
        return Err(invalid("Grep", "head_limit", "must be at least 1"));
    }
    let multiline = parsed.multiline.unwrap_or(false);
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(parsed.case_insensitive.unwrap_or(false))
        .multi_line(true)
        .dot_matches_new_line(multiline);
    if !multiline {
        builder.line_terminator(Some(b'\n'));
    }
    let matcher = builder.build(&parsed.pattern).map_err(|e| {
        invalid(
            "Grep",
            "pattern",
            format!("not a valid regular expression: {e}"),
        )
    })?;
    let root = match parsed.path.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => normalize(&cwd.join(p)),
        None => cwd.to_path_buf(),
    };
    Ok(Checked {
        mode: parsed.output_mode.unwrap_or_default(),
        input: parsed,
        root,
        matcher,
    })
}

const DESCRIPTION: &str = "Searches file contents with a regular expression (ripgrep syntax), \
skipping files ignored by .gitignore and binary files.\n\
\n\
- `output_mode`: `files_with_matches` (default: matching file paths, most recently modified \
first), `content` (matching lines), or `count` (matches per file).\n\
- `path`: a file or directory to search (default: the working directory). `glob` filters \
files (`*.js`, `*.{ts,tsx}`); `type` selects a file type (`rust`, `py`, `js`, …).\n\
- `-i`: case-insensitive. In content mode: `-n` line numbers (default true), `-A`/`-B`/`-C` \
lines of context after/before/around each match.\n\
- `head_limit` keeps the first N entries (lines, files or counts); `offset` skips entries \
first. `multiline`: let `.` match newlines and patterns span lines.\n\
- Escape regex characters to search literally (`interface\\{\\}`).";

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "Grep"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        let context = |what: &str| json!({"type": "integer", "minimum": 0, "description": what});
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression to search for"},
                "path": {"type": "string", "description": "File or directory to search (default: the working directory)"},
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. *.js or *.{ts,tsx}"},
                "type": {"type": "string", "description": "Only search files of this type, e.g. rust, py, js"},
                "output_mode": {
                    "type": "string",
                    "enum": ["content", "files_with_matches", "count"],
                    "description": "What to return (default files_with_matches)"
                },
                "-i": {"type": "boolean", "description": "Case-insensitive search"},
                "-n": {"type": "boolean", "description": "Show line numbers (content mode; default true)"},
                "-A": context("Lines of context after each match (content mode)"),
                "-B": context("Lines of context before each match (content mode)"),
                "-C": context("Lines of context before and after each match (content mode)"),
                "head_limit": {"type": "integer", "minimum": 1, "description": "Return only the first N entries"},
                "offset": {"type": "integer", "minimum": 0, "description": "Skip the first N entries"},
                "multiline": {"type": "boolean", "description": "Let patterns span lines and . match newlines"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        search_subject(input)
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input, Path::new("/")).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            let out =
                blocking_checked(check(&call.input, &ctx.cwd()), move |c| grep(&c, &cancel)).await;
            out.capped(&call.id, ctx.hooks.as_ref())
        })
    }
}

enum Line {
    Match(u64, String),
    Context(u64, String),
    Break,
}

/// One searched file's findings.
struct FileHits {
    path: PathBuf,
    modified: SystemTime,
    matched_lines: u64,
    lines: Vec<Line>,
}

struct Collect {
    mode: Mode,
    matched_lines: u64,
    lines: Vec<Line>,
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        for (n, line) in (m.line_number().unwrap_or(0)..).zip(m.lines()) {
            self.matched_lines += 1;
            if self.mode == Mode::Content {
                self.lines.push(Line::Match(n, line_text(line)));
            }
        }
        // One match is enough to list a file.
        Ok(self.mode != Mode::FilesWithMatches)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.mode == Mode::Content {
            let n = c.line_number().unwrap_or(0);
            self.lines.push(Line::Context(n, line_text(c.bytes())));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.mode == Mode::Content {
            self.lines.push(Line::Break);
        }
        Ok(true)
    }
}

fn line_text(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim_end_matches('\n').trim_end_matches('\r');
    truncate_line(s, MAX_MATCH_LINE_CHARS)
}

fn grep(c: &Checked, cancel: &CancellationToken) -> ToolOutput {
    let input = &c.input;
    let meta = match std::fs::metadata(&c.root) {
        Ok(m) => m,
        Err(_) => {
            return ToolOutput::error(format!("Path does not exist: {}", c.root.display()));
        }
    };
    let single_file = meta.is_file();
    let context = input.context.unwrap_or(0) as usize;
    let (after, before) = if c.mode == Mode::Content {
        (
            input.after.map_or(context, |a| a as usize),
            input.before.map_or(context, |b| b as usize),
        )
    } else {
        (0, 0)
    };
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .multi_line(input.multiline.unwrap_or(false))
        .after_context(after)
        .before_context(before)
        .build();

    let mut walk = walker(&c.root);
    walk.sort_by_file_name(|a, b| a.cmp(b));
    if !single_file {
        if let Some(glob) = input.glob.as_deref().filter(|g| !g.is_empty()) {
            let mut ob = OverrideBuilder::new(&c.root);
            let built = ob.add(glob).and_then(|b| b.build());
            match built {
                Ok(o) => {
                    walk.overrides(o);
                }
                Err(e) => return invalid("Grep", "glob", e),
            }
        }
        if let Some(t) = input.file_type.as_deref().filter(|t| !t.is_empty()) {
            let mut tb = TypesBuilder::new();
            tb.add_defaults().select(t);
            match tb.build() {
                Ok(types) => {
                    walk.types(types);
                }
                Err(e) => {
                    return invalid(
                        "Grep",
                        "type",
                        format!("{e} (use a ripgrep type name such as rust, py, js, ts, go, md)"),
                    );
                }
            }
        }
    }

    let mut hits: Vec<FileHits> = Vec::new();
    for entry in walk.build() {
        if cancel.is_cancelled() {
            return ToolOutput::error("Grep was interrupted.");
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let mut sink = Collect {
            mode: c.mode,
            matched_lines: 0,
            lines: Vec::new(),
        };
        // Unreadable files are skipped, as ripgrep does (it only warns).
        if searcher
            .search_path(&c.matcher, entry.path(), &mut sink)
            .is_err()
            || sink.matched_lines == 0
        {
            continue;
        }
        let modified = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        hits.push(FileHits {
            path: entry.into_path(),
            modified,
            matched_lines: sink.matched_lines,
            lines: sink.lines,
        });
    }
    render(c, hits, single_file)
}

fn render(c: &Checked, mut hits: Vec<FileHits>, single_file: bool) -> ToolOutput {
    let input = &c.input;
    let skip = usize::try_from(input.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let limit = input
        .head_limit
        .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
    let page = |entries: Vec<String>| -> (Vec<String>, usize) {
        let total = entries.len();
        let shown: Vec<String> = entries
            .into_iter()
            .skip(skip)
            .take(limit.unwrap_or(usize::MAX))
            .collect();
        (shown, total)
    };
    let paging_note = |shown: usize, total: usize| -> String {
        if limit.is_some() || skip > 0 {
            let hidden = total.saturating_sub(skip).saturating_sub(shown);
            format!(
                "\n\n(Showing {shown} entries from offset {skip}{}; {hidden} more not shown.)",
                limit
                    .map(|l| format!(" with head_limit {l}"))
                    .unwrap_or_default()
            )
        } else {
            String::new()
        }
    };
    let num_files = hits.len();
    match c.mode {
        Mode::FilesWithMatches => {
            hits.sort_by(|a, b| {
                b.modified
                    .cmp(&a.modified)
                    .then_with(|| a.path.cmp(&b.path))
            });
            let entries = hits.iter().map(|h| h.path.display().to_string()).collect();
            let (shown, total) = page(entries);
            let content = if total == 0 {
                "No files found".to_owned()
            } else {
                format!(
                    "Found {total} file{}\n{}{}",
                    if total == 1 { "" } else { "s" },
                    shown.join("\n"),
                    paging_note(shown.len(), total)
                )
            };
            let mut detail =
                json!({"mode": c.mode.as_str(), "filenames": shown, "numFiles": total});
            if let Some(l) = limit {
                detail["appliedLimit"] = json!(l);
            }
            ToolOutput::ok(content).with_detail(detail)
        }
        Mode::Content => {
            let numbers = input.line_numbers.unwrap_or(true);
            let mut entries = Vec::new();
            for h in &hits {
                let prefix = if single_file {
                    String::new()
                } else {
                    h.path.display().to_string()
                };
                if !entries.is_empty() && (after_or_before(input)) {
                    entries.push("--".to_owned());
                }
                for line in &h.lines {
                    entries.push(match line {
                        Line::Break => "--".to_owned(),
                        Line::Match(n, t) => format_line(&prefix, ':', numbers.then_some(*n), t),
                        Line::Context(n, t) => format_line(&prefix, '-', numbers.then_some(*n), t),
                    });
                }
            }
            let (shown, total) = page(entries);
            let content = if total == 0 {
                "No matches found".to_owned()
            } else {
                format!("{}{}", shown.join("\n"), paging_note(shown.len(), total))
            };
            let filenames: Vec<String> =
                hits.iter().map(|h| h.path.display().to_string()).collect();
            let mut detail = json!({
                "mode": c.mode.as_str(),
                "numFiles": num_files,
                "filenames": filenames,
                "content": shown.join("\n"),
                "numLines": shown.len(),
            });
            if let Some(l) = limit {
                detail["appliedLimit"] = json!(l);
            }
            ToolOutput::ok(content).with_detail(detail)
        }
        Mode::Count => {
            let total_matches: u64 = hits.iter().map(|h| h.matched_lines).sum();
            let entries = hits
                .iter()
                .map(|h| {
                    if single_file {
                        h.matched_lines.to_string()
                    } else {
                        format!("{}:{}", h.path.display(), h.matched_lines)
                    }
                })
                .collect();
            let (shown, total) = page(entries);
            let content = if total == 0 {
                "No matches found".to_owned()
            } else {
                format!(
                    "{}{}\n\nFound {total_matches} matching line{} across {num_files} file{}.",
                    shown.join("\n"),
                    paging_note(shown.len(), total),
                    if total_matches == 1 { "" } else { "s" },
                    if num_files == 1 { "" } else { "s" },
                )
            };
            let filenames: Vec<String> =
                hits.iter().map(|h| h.path.display().to_string()).collect();
            ToolOutput::ok(content).with_detail(json!({
                "mode": c.mode.as_str(),
                "numFiles": num_files,
                "filenames": filenames,
                "content": shown.join("\n"),
                "numMatches": total_matches,
            }))
        }
    }
}

fn after_or_before(input: &GrepInput) -> bool {
    input.after.unwrap_or(0) > 0 || input.before.unwrap_or(0) > 0 || input.context.unwrap_or(0) > 0
}

fn format_line(prefix: &str, sep: char, number: Option<u64>, text: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + text.len() + 12);
    if !prefix.is_empty() {
        out.push_str(prefix);
        out.push(sep);
    }
    if let Some(n) = number {
        out.push_str(&n.to_string());
        out.push(sep);
    }
    out.push_str(text);
    out
}
