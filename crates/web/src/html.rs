//! The pages, as HTML strings with everything from a session escaped.
//!
//! Every value that comes from the bucket or a transcript — titles, paths, model names,
//! mode names, ids — is written through [`escape`] (text and attribute values alike),
//! so a prompt such as `<script>` is shown, never run. The pages carry no inline script
//! or style: the one script and style sheet are files of the server, and the content
//! security policy (`guard.rs`) forbids anything else, so even a value that escaped the
//! escaping could not run. What changes after the page loaded is drawn by the script with
//! `textContent`, which does not parse HTML.

use std::fmt::Write as _;

use crate::routes::valid_session_id;
use crate::row::{SessionRow, offered_modes};

/// `text` with the five characters that matter in HTML text and quoted attributes
/// replaced by their entities.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn page(title: &str, body_attributes: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<link rel=\"stylesheet\" href=\"/assets/style.css\">\n\
         <script src=\"/assets/app.js\" defer></script>\n</head>\n<body {body_attributes}>\n\
         {body}</body>\n</html>\n",
        escape(title)
    )
}

fn optional(value: Option<&str>) -> String {
    escape(value.unwrap_or("—"))
}

fn time(value: Option<&str>) -> String {
    match value {
        Some(at) => format!("<time datetime=\"{}\">{}</time>", escape(at), escape(at)),
        None => "—".to_owned(),
    }
}

/// The remote's state line, filled in by the script.
const REMOTE_LINE: &str = "<p id=\"remote\" class=\"remote\" role=\"status\"></p>\n";

/// `/`: every session of the bucket.
pub(crate) fn index_page(rows: &[SessionRow]) -> String {
    let mut body = String::from("<header><h1>strata sessions</h1></header>\n");
    body.push_str(REMOTE_LINE);
    body.push_str(
        "<table id=\"sessions\">\n<thead><tr><th>Title</th><th>Working directory</th>\
         <th>Model</th><th>Permission mode</th><th>Status</th><th>Updated</th></tr></thead>\n<tbody>\n",
    );
    for row in rows {
        body.push_str(&index_row(row));
    }
    body.push_str("</tbody>\n</table>\n");
    body.push_str(&format!(
        "<p id=\"empty\" class=\"empty\"{}>No sessions on the remote yet. Start one with \
         <code>strata --remote &lt;url&gt;</code>.</p>\n",
        if rows.is_empty() { "" } else { " hidden" }
    ));
    page("strata sessions", "data-page=\"index\"", &body)
}

fn index_row(row: &SessionRow) -> String {
    let title = escape(row.display_title());
    let link = if valid_session_id(&row.id) {
        format!("<a href=\"/sessions/{}\">{title}</a>", escape(&row.id))
    } else {
        title
    };
    let note = row
        .unreadable
        .as_deref()
        .map(|why| {
            format!(
                " <span class=\"unreadable\">(its metadata cannot be read: {})</span>",
                escape(why)
            )
        })
        .unwrap_or_default();
    format!(
        "<tr data-session=\"{}\"><td class=\"title\">{link}{note}</td><td class=\"cwd\">{}</td>\
         <td class=\"model\">{}</td><td class=\"mode\">{}</td><td class=\"status\">{}</td>\
         <td class=\"updated\">{}</td></tr>\n",
        escape(&row.id),
        optional(row.cwd.as_deref()),
        optional(row.model.as_deref()),
        optional(row.permission_mode.as_deref()),
        optional(row.status.as_deref()),
        time(row.updated_at.as_deref()),
    )
}

/// `/sessions/<id>`: the session's details, its mode control and its conversation (which
/// the script fills in from the event stream).
pub(crate) fn session_page(id: &str, row: Option<&SessionRow>) -> String {
    let mut body = String::from("<header><a href=\"/\">All sessions</a>\n");
    let title = row.map_or(id, SessionRow::display_title);
    let _ = writeln!(body, "<h1 id=\"title\">{}</h1></header>", escape(title));
    body.push_str(REMOTE_LINE);
    if row.is_none() {
        body.push_str(
            "<p id=\"missing\" class=\"missing\">The remote has no metadata for this \
             session (yet).</p>\n",
        );
    }
    let field = |f: fn(&SessionRow) -> Option<&str>| optional(row.and_then(f));
    let _ = write!(
        body,
        "<dl class=\"details\">\n<dt>Session</dt><dd id=\"session-id\">{}</dd>\n\
         <dt>Working directory</dt><dd id=\"cwd\">{}</dd>\n\
         <dt>Model</dt><dd id=\"model\">{}</dd>\n\
         <dt>Status</dt><dd id=\"status\">{}</dd>\n\
         <dt>Updated</dt><dd id=\"updated\">{}</dd>\n</dl>\n",
        escape(id),
        field(|r| r.cwd.as_deref()),
        field(|r| r.model.as_deref()),
        field(|r| r.status.as_deref()),
        time(row.and_then(|r| r.updated_at.as_deref())),
    );
    let current = row.and_then(|r| r.permission_mode.as_deref());
    body.push_str(
        "<section class=\"mode\" aria-labelledby=\"mode-label\">\n\
         <h2 id=\"mode-label\">Permission mode</h2>\n<div id=\"modes\" role=\"group\">\n",
    );
    for mode in offered_modes() {
        let _ = writeln!(
            body,
            "<button type=\"button\" data-mode=\"{m}\" aria-pressed=\"{}\">{m}</button>",
            current == Some(mode),
            m = escape(mode),
        );
    }
    body.push_str(
        "</div>\n<p id=\"mode-reply\" class=\"reply\" role=\"status\"></p>\n</section>\n",
    );
    body.push_str(
        "<section class=\"conversation\">\n<h2>Conversation</h2>\n\
         <ol id=\"conversation\"></ol>\n</section>\n",
    );
    page(
        &format!("{title} · strata"),
        &format!("data-page=\"session\" data-session=\"{}\"", escape(id)),
        &body,
    )
}

/// A page for what does not exist.
pub(crate) fn not_found_page(what: &str) -> String {
    page(
        "Not found · strata",
        "data-page=\"missing\"",
        &format!(
            "<header><a href=\"/\">All sessions</a><h1>Not found</h1></header>\n<p>{}</p>\n",
            escape(what)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(id: &str, doc: serde_json::Value, title: Option<&str>) -> SessionRow {
        SessionRow::from_document(id, 1, doc.as_object().unwrap(), title.map(str::to_owned))
    }

    #[test]
    fn escape_replaces_what_html_would_read() {
        assert_eq!(
            escape(r#"<img src=x onerror="alert('1')">&"#),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
    }

    #[test]
    fn the_index_lists_sessions_with_everything_escaped() {
        let rows = [
            row(
                "0b6c1f4e-1",
                json!({"cwd": "/home/<u>", "model": "opus", "permission_mode": "plan",
                       "status": "active", "updated_at": "2026-01-02T03:04:05+00:00"}),
                Some("<script>alert(1)</script>"),
            ),
            row("bad.key", json!({}), None),
        ];
        let html = index_page(&rows);
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<u>"));
        insta::assert_snapshot!(html);
    }

    #[test]
    fn the_session_page_marks_the_current_mode() {
        let r = row(
            "s-1",
            json!({"permission_mode": "acceptEdits", "status": "active"}),
            Some("Fix \"it\""),
        );
        insta::assert_snapshot!(session_page("s-1", Some(&r)));
    }

    #[test]
    fn a_session_without_metadata_says_so() {
        let html = session_page("s-2", None);
        assert!(html.contains("has no metadata for this session"));
        assert!(html.contains("aria-pressed=\"false\">default<"));
    }
}
