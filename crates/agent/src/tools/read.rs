//! The Read tool: a text file's lines, numbered, from `offset` for `limit` lines; an
//! image, a PDF (whole, or the `pages` asked for) or a Jupyter notebook shown as the
//! model can use it ([`read_media`](super::read_media), [`notebook`](super::notebook)).
//!
//! Lines are numbered like `cat -n` (right-aligned, then `→` and the line, the reference
//! agent's layout, which models are used to). Lines longer than 2,000 characters are cut
//! with a note; a result stops before 100,000 characters with a note saying which
//! `offset` continues. Directories and binary files (a NUL byte in the first 8 KiB) are
//! refused with a message saying what to use instead. A successful read records the
//! file in the read-file state, which Write and Edit require.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read as _};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::files::{ReadStamp, absolute_path, blocking_checked};
use super::input::{invalid, parse};
use super::notebook::{Notebook, render};
use super::output::truncate_line;
use super::read_media::{self, FileKind, PageRange};
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput, lock};

/// Lines shown when no `limit` is given.
pub(crate) const DEFAULT_LINE_LIMIT: usize = 2000;
/// Longer lines are cut.
pub(crate) const MAX_LINE_CHARS: usize = 2000;
/// A result stops before this many characters.
const MAX_RESULT_CHARS: usize = 100_000;
/// How much of the file's start is checked for NUL bytes.
const BINARY_SNIFF_BYTES: usize = 8192;

/// The Read tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Read;

#[derive(Debug, Deserialize)]
struct ReadInput {
    file_path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
    /// Only read for PDFs; a blank value is no value.
    #[serde(default)]
    pages: Option<Value>,
}

struct Checked {
    path: PathBuf,
    /// 1-based first line.
    start: usize,
    limit: usize,
    /// The PDF pages asked for.
    pages: Option<PageRange>,
}

fn check(input: &Value) -> Result<Checked, ToolOutput> {
    let parsed: ReadInput = parse("Read", input)?;
    let path = absolute_path("Read", "file_path", &parsed.file_path)?;
    if parsed.limit == Some(0) {
        return Err(invalid("Read", "limit", "must be at least 1"));
    }
    let to_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    if parsed.pages.as_ref().is_some_and(|p| !p.is_string()) {
        return Err(invalid(
            "Read",
            "pages",
            "must be a text such as \"1-5\" or \"3\"",
        ));
    }
    let pages = match read_media::pages_input(parsed.pages.as_ref()) {
        None => None,
        Some(text) => {
            if FileKind::of(&path) != FileKind::Pdf {
                return Err(invalid(
                    "Read",
                    "pages",
                    "applies to PDF files only; leave it out for other files",
                ));
            }
            Some(PageRange::parse(text).map_err(|e| invalid("Read", "pages", e))?)
        }
    };
    Ok(Checked {
        pages,
        path,
        // The first line is 1; 0 is accepted as "from the start" too.
        start: parsed.offset.map_or(1, |o| to_usize(o).max(1)),
        limit: parsed.limit.map_or(DEFAULT_LINE_LIMIT, to_usize),
    })
}

const DESCRIPTION: &str = "Reads a file. Text files come back as lines numbered from 1.\n\
\n\
- `file_path` must be an absolute path.\n\
- By default up to 2000 lines from the start are returned; for long files pass `offset` (the \
line number to start at) and `limit` (how many lines).\n\
- Lines longer than 2000 characters are cut.\n\
- Images (PNG, JPEG, GIF, WebP) are shown to you as images; large ones are scaled down. Read \
screenshots and diagrams the user points to this way.\n\
- PDFs are shown page by page, text and images. A PDF of more than 10 pages needs `pages` (for \
example \"1-5\"), at most 20 pages a call.\n\
- Jupyter notebooks (.ipynb) are shown as their cells with outputs; change them with \
NotebookEdit.\n\
- Directories and other binary files are refused: use Glob or `ls` to list a directory.\n\
- Read a file before changing it with Edit or Write: they refuse files that were not read \
or that changed since.";

impl Tool for Read {
    fn name(&self) -> &'static str {
        "Read"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path of the file"},
                "offset": {"type": "integer", "minimum": 0, "description": "The line number to start at (1 is the first line)"},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read"},
                "pages": {"type": "string", "description": "For PDF files only: the pages to read, such as \"1-5\", \"3\" or \"10-20\" (from 1, at most 20 a call). Leave it out for other files."}
            },
            "required": ["file_path"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        path_subject(input, "file_path")
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let ctx2 = ctx.clone();
            blocking_checked(check(&call.input), move |c| read_file(&c, &ctx2)).await
        })
    }
}

/// Read of a notebook: its cells with their outputs, image outputs attached.
fn read_notebook(path: &Path, ctx: &ToolContext) -> ToolOutput {
    let shown = path.display();
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    };
    let nb = match Notebook::parse(path, &text) {
        Ok(nb) => nb,
        Err(e) => return ToolOutput::error(e),
    };
    let rendered = render(&nb, &|t| ctx.hooks.redact(t).into_owned());
    let mut content = if rendered.cells == 0 {
        format!("(The notebook {shown} has no cells.)")
    } else {
        rendered.text
    };
    if content.len() > MAX_RESULT_CHARS {
        let mut cut = MAX_RESULT_CHARS;
        while !content.is_char_boundary(cut) {
            cut -= 1;
        }
        content.truncate(cut);
        content.push_str(&format!(
            "\n\n[The notebook is longer than {MAX_RESULT_CHARS} characters and was cut here; \
             read its cells' sources with Bash and `jq` if you need the rest.]"
        ));
    }
    let detail = json!({
        "type": "notebook",
        "file": {
            "filePath": path,
            "cells": rendered.cells,
            "language": nb.language(),
        }
    });
    let mut out = ToolOutput::ok(content).with_detail(detail);
    if !rendered.images.is_empty() {
        out.attachments = Some(Box::new(rendered.images));
    }
    out
}

/// The `file_path`-style field of `input` as a path subject.
pub(crate) fn path_subject(input: &Value, field: &str) -> Option<PermissionSubject> {
    input
        .get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| PermissionSubject::Path(super::files::normalize(Path::new(s))))
}

fn read_file(c: &Checked, ctx: &ToolContext) -> ToolOutput {
    let path = &c.path;
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return ToolOutput::error(format!("File does not exist: {shown}"));
        }
        Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{shown} is a directory, not a file. Use Glob (or `ls` with Bash) to list it."
        ));
    }
    let stamp = ReadStamp::of(&meta);
    let media = match FileKind::of(path) {
        FileKind::Text => None,
        FileKind::Image => Some(read_media::read_image(path)),
        FileKind::Pdf => Some(read_media::read_pdf(path, c.pages)),
        FileKind::Notebook => Some(read_notebook(path, ctx)),
    };
    if let Some(out) = media {
        if !out.is_error {
            lock(&ctx.read_files).record(path.clone(), stamp);
        }
        return out;
    }
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    };
    let mut reader = BufReader::new(file);

    // Binary check on the first bytes (without consuming them).
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    if let Err(e) = reader
        .by_ref()
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)
    {
        return ToolOutput::error(format!("Cannot read {shown}: {e}"));
    }
    if head.contains(&0) {
        return ToolOutput::error(format!(
            "{shown} is a binary file ({} bytes); Read shows text files only. Inspect it with \
             Bash (for example `file` or `xxd | head`).",
            meta.len()
        ));
    }
    let mut reader = BufReader::new(std::io::Cursor::new(head).chain(reader));

    let mut numbered = String::new();
    let mut raw = String::new();
    let mut total = 0usize;
    let mut shown_lines = 0usize;
    let mut stopped_at: Option<usize> = None;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
        }
        total += 1;
        let wanted = total >= c.start && total - c.start < c.limit;
        if !wanted || stopped_at.is_some() {
            continue;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches('\n').trim_end_matches('\r');
        // Redacted before the cut: half a secret at column 2,000 would not be recognised
        // by the redaction of the whole result afterwards.
        let text = ctx.hooks.redact(text);
        let line = truncate_line(&text, MAX_LINE_CHARS);
        if numbered.len() + line.len() + 8 > MAX_RESULT_CHARS && shown_lines > 0 {
            stopped_at = Some(total);
            continue;
        }
        if shown_lines > 0 {
            numbered.push('\n');
            raw.push('\n');
        }
        numbered.push_str(&format!("{total:>6}→{line}"));
        raw.push_str(&line);
        shown_lines += 1;
    }

    lock(&ctx.read_files).record(path.clone(), stamp);

    let content = if total == 0 {
        format!("(The file {shown} exists but is empty.)")
    } else if shown_lines == 0 {
        format!(
            "(The file {shown} has {total} lines; offset {} is past its end.)",
            c.start
        )
    } else {
        let last = c.start + shown_lines - 1;
        let mut content = numbered;
        if let Some(next) = stopped_at {
            content.push_str(&format!(
                "\n\n[Output stopped at line {last} to stay under {MAX_RESULT_CHARS} characters; \
                 continue with offset={next}.]"
            ));
        } else if last < total {
            content.push_str(&format!(
                "\n\n[Showing lines {}-{last} of {total}. Use offset and limit to read more.]",
                c.start
            ));
        }
        content
    };
    ToolOutput::ok(content).with_detail(json!({
        "type": "text",
        "file": {
            "filePath": path,
            "content": raw,
            "numLines": shown_lines,
            "startLine": c.start,
            "totalLines": total,
        }
    }))
}
