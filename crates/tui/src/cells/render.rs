//! Rendering one history cell: prompts, answers, thinking, tool calls with their
//! collapsed or expanded results, and the coloured diffs of file edits.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::wrap::wrap;
use super::{HistoryCell, RenderOptions, ToolCall, render_markdown};

/// Lines of unchanged context around each diff hunk (as the edit tools record them).
const DIFF_CONTEXT: usize = 3;
/// Lines of a collapsed Write's content shown before `… +N lines`.
const COLLAPSED_WRITE_LINES: usize = 10;
/// A diff of texts larger than this is summarised, never computed on the UI thread.
const MAX_DIFF_BYTES: usize = 256 * 1024;

/// Renders `cell` at `width` columns. Pure: no caching, no I/O.
pub fn render_cell(cell: &HistoryCell, width: u16, opts: &RenderOptions) -> Vec<Line<'static>> {
    let w = width as usize;
    let st = |s: Style| if opts.color { s } else { Style::default() };
    match cell {
        HistoryCell::User { text } => {
            let first = [Span::styled(
                "> ",
                st(Style::default().add_modifier(Modifier::BOLD)),
            )];
            let rest = [Span::raw("  ")];
            wrap(
                &[(
                    text.clone(),
                    st(Style::default().add_modifier(Modifier::BOLD)),
                )],
                w,
                &first,
                &rest,
            )
        }
        HistoryCell::Assistant { markdown } => render_markdown(markdown, width, opts),
        HistoryCell::Thinking { text } => {
            if !opts.verbose {
                return Vec::new();
            }
            let s = st(Style::default()
                .fg(Color::DarkGray)
                .add_modifier(Modifier::ITALIC));
            let mut out = vec![Line::from(Span::styled("✻ Thinking…", s))];
            out.extend(wrap(
                &[(text.clone(), s)],
                w,
                &[Span::raw("  ")],
                &[Span::raw("  ")],
            ));
            out
        }
        HistoryCell::Info { text } => {
            let s = st(Style::default().fg(Color::DarkGray));
            wrap(&[(text.clone(), s)], w, &[], &[])
        }
        HistoryCell::Error { text } => {
            let s = st(Style::default().fg(Color::Red));
            wrap(
                &[(text.clone(), s)],
                w,
                &[Span::styled("✗ ", s)],
                &[Span::raw("  ")],
            )
        }
        HistoryCell::Tool(call) => render_tool(call, w, opts),
    }
}

fn str_arg<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

/// The argument shown in a tool's one-line header: `Bash(cargo test)`.
fn header_arg(call: &ToolCall) -> String {
    let i = &call.input;
    let arg = match call.name.as_str() {
        "Bash" => str_arg(i, "command").map(str::to_owned),
        "Read" | "Write" | "Edit" | "MultiEdit" => str_arg(i, "file_path").map(str::to_owned),
        "NotebookEdit" => str_arg(i, "notebook_path").map(str::to_owned),
        "Glob" | "Grep" => str_arg(i, "pattern").map(str::to_owned),
        "WebFetch" => str_arg(i, "url").map(str::to_owned),
        "WebSearch" => str_arg(i, "query").map(str::to_owned),
        "Task" | "Agent" => str_arg(i, "description").map(str::to_owned),
        "TodoWrite" => i
            .get("todos")
            .and_then(Value::as_array)
            .map(|t| format!("{} todos", t.len())),
        _ => None,
    };
    let arg = arg.or_else(|| {
        i.as_object()
            .and_then(|o| o.values().find_map(Value::as_str))
            .map(str::to_owned)
    });
    // One line: a multi-line command shows its first line.
    arg.unwrap_or_default()
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

fn truncate(s: &str, max: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    let s: String = s.chars().filter(|c| !c.is_control()).collect();
    if s.width() <= max {
        return s;
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in s.chars() {
        let cw = ch.width().unwrap_or(0);
        if used + cw + 1 > max {
            break;
        }
        used += cw;
        out.push(ch);
    }
    out.push('…');
    out
}

fn render_tool(call: &ToolCall, w: usize, opts: &RenderOptions) -> Vec<Line<'static>> {
    let st = |s: Style| if opts.color { s } else { Style::default() };
    let failed = call.result.as_ref().is_some_and(|r| r.is_error);
    let dot = match &call.result {
        None => st(Style::default().fg(Color::DarkGray)),
        Some(r) if r.is_error => st(Style::default().fg(Color::Red)),
        Some(_) => st(Style::default().fg(Color::Green)),
    };
    let name_w = call.name.chars().count() + 4;
    let arg = truncate(&header_arg(call), w.saturating_sub(name_w).max(1));
    let mut out = vec![Line::from(vec![
        Span::styled("● ", dot),
        Span::styled(
            call.name.clone(),
            st(Style::default().add_modifier(Modifier::BOLD)),
        ),
        Span::raw(format!("({arg})")),
    ])];
    let lead = || {
        vec![Span::styled(
            "  ⎿  ",
            st(Style::default().fg(Color::DarkGray)),
        )]
    };
    let pad = || vec![Span::raw("     ")];
    if !failed {
        out.extend(edit_diff(call, w, opts));
    }
    let Some(result) = &call.result else {
        return out;
    };
    let style = if result.is_error {
        st(Style::default().fg(Color::Red))
    } else {
        Style::default()
    };
    if opts.expanded {
        out.extend(wrap(&[(result.text.clone(), style)], w, &lead(), &pad()));
    } else {
        let summary = summarize(call, &result.text, result.is_error);
        out.extend(
            wrap(&[(summary, style)], w, &lead(), &pad())
                .into_iter()
                .take(1),
        );
    }
    out
}

/// The one-line summary of a collapsed result.
fn summarize(call: &ToolCall, text: &str, is_error: bool) -> String {
    let n = text.lines().count();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if is_error {
        return first.to_owned();
    }
    match call.name.as_str() {
        "Read" => format!("Read {n} lines"),
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => first.to_owned(),
        _ if n == 0 => "(no output)".to_owned(),
        _ if n == 1 => first.to_owned(),
        _ => format!("{first} … +{} lines (ctrl+o to expand)", n - 1),
    }
}

/// The coloured diff of an Edit, MultiEdit or Write call, from its arguments.
fn edit_diff(call: &ToolCall, w: usize, opts: &RenderOptions) -> Vec<Line<'static>> {
    let i = &call.input;
    let pairs: Vec<(&str, &str)> = match call.name.as_str() {
        "Edit" => match (str_arg(i, "old_string"), str_arg(i, "new_string")) {
            (Some(o), Some(n)) => vec![(o, n)],
            _ => return Vec::new(),
        },
        "MultiEdit" => i
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| {
                edits
                    .iter()
                    .filter_map(|e| Some((str_arg(e, "old_string")?, str_arg(e, "new_string")?)))
                    .collect()
            })
            .unwrap_or_default(),
        "Write" => match str_arg(i, "content") {
            Some(c) => vec![("", c)],
            None => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    let st = |s: Style| if opts.color { s } else { Style::default() };
    let add = st(Style::default().fg(Color::Green));
    let del = st(Style::default().fg(Color::Red));
    let ctx = st(Style::default().fg(Color::DarkGray));
    let pad = [Span::raw("     ")];
    let mut rows: Vec<(char, String)> = Vec::new();
    for (old, new) in pairs {
        if old.len() + new.len() > MAX_DIFF_BYTES {
            rows.push((
                ' ',
                format!("(diff of {} bytes not shown)", old.len() + new.len()),
            ));
            continue;
        }
        let d = TextDiff::from_lines(old, new);
        for (gi, group) in d.grouped_ops(DIFF_CONTEXT).iter().enumerate() {
            if gi > 0 {
                rows.push((' ', "…".to_owned()));
            }
            for op in group {
                for change in d.iter_changes(op) {
                    let tag = match change.tag() {
                        ChangeTag::Insert => '+',
                        ChangeTag::Delete => '-',
                        ChangeTag::Equal => ' ',
                    };
                    let text = change.to_string_lossy();
                    rows.push((tag, text.trim_end_matches(['\n', '\r']).to_owned()));
                }
            }
        }
    }
    let cap = if call.name == "Write" && !opts.expanded {
        COLLAPSED_WRITE_LINES
    } else {
        usize::MAX
    };
    let hidden = rows.len().saturating_sub(cap);
    let mut out = Vec::new();
    for (tag, text) in rows.into_iter().take(cap) {
        let style = match tag {
            '+' => add,
            '-' => del,
            _ => ctx,
        };
        out.extend(wrap(&[(format!("{tag} {text}"), style)], w, &pad, &pad));
    }
    if hidden > 0 {
        out.push(Line::from(vec![
            Span::raw("     "),
            Span::styled(format!("… +{hidden} lines (ctrl+o to expand)"), ctx),
        ]));
    }
    out
}
