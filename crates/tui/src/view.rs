//! The pieces of the live area that are pure functions of a few values: the footer,
//! the spinner line, the todo list. Each takes exactly what it shows, so the app can
//! tell from its store selections whether a frame is needed at all.

use std::time::Duration;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use strata_protocol::permission::PermissionMode;
use strata_state::{RemoteConnectionStatus, TodoItem, TodoStatus};

use unicode_width::UnicodeWidthStr as _;

use crate::text::cut_to_width;

/// What the footer shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FooterData {
    /// The model's name.
    pub model: String,
    /// The permission mode.
    pub mode: PermissionMode,
    /// Cost so far, in dollars.
    pub cost_usd: f64,
    /// Context tokens of the last request, when known.
    pub context_tokens: Option<u64>,
    /// How full the model's context window is, in percent, when known.
    pub context_percent: Option<u8>,
    /// A short notice replacing the key hint ("Press Ctrl-C again to exit").
    pub notice: Option<String>,
    /// How many background tasks (shells, agents) are running.
    pub background: usize,
    /// The remote connection's status, when the session has a remote (issue 17).
    pub remote: Option<RemoteConnectionStatus>,
}

/// The remote's words and colour in the footer.
fn remote_label(status: RemoteConnectionStatus) -> (String, Color) {
    let color = match status {
        RemoteConnectionStatus::Connected => Color::Green,
        RemoteConnectionStatus::Connecting => Color::DarkGray,
        RemoteConnectionStatus::Reconnecting => Color::Yellow,
        RemoteConnectionStatus::Disconnected => Color::Red,
    };
    (format!("remote {status}"), color)
}

/// The mode's symbol and name as the footer shows them (`None` for the default mode).
pub fn mode_label(mode: PermissionMode) -> Option<&'static str> {
    match mode {
        PermissionMode::AcceptEdits => Some("⏵⏵ accept edits on"),
        PermissionMode::Plan => Some("⏸ plan mode on"),
        PermissionMode::BypassPermissions => Some("⏵⏵ bypass permissions on"),
        PermissionMode::DontAsk => Some("⏵⏵ don't ask on"),
        PermissionMode::Default | PermissionMode::Auto | PermissionMode::Bubble => None,
    }
}

/// The footer line at `width`: the mode (or the key hint) on the left, model, context
/// and cost on the right. When that is too wide the footer gives up, in this order, the
/// left's key hints, the model's name, the cost, and then cuts the left; the context
/// figure goes last, with the right part as a whole (on a very narrow terminal only the
/// left stays), so tasks running in the background or a long mode name never hide it.
pub fn footer(data: &FooterData, width: u16) -> Line<'static> {
    let width = usize::from(width);
    let (long, short, left_style) = match (&data.notice, mode_label(data.mode)) {
        (Some(n), _) => (n.clone(), n.clone(), Style::default().fg(Color::Yellow)),
        (None, Some(label)) => (
            format!("{label} (shift+tab to cycle)"),
            label.to_owned(),
            Style::default().fg(mode_color(data.mode)),
        ),
        (None, None) => (
            "? /help · shift+tab mode".to_owned(),
            "? /help".to_owned(),
            Style::default().fg(Color::DarkGray),
        ),
    };
    // What must stay whole if the left is cut: the mode (or the notice).
    let essential = short.width();
    let (long, short) = if data.background > 0 && data.notice.is_none() {
        let n = data.background;
        let plural = if n == 1 { "" } else { "s" };
        (
            format!("{n} background task{plural} · ↓ to view · {long}"),
            format!("{short} · {n} task{plural} ↓"),
        )
    } else {
        (long, short)
    };
    let ctx = match (data.context_tokens, data.context_percent) {
        (Some(ctx), Some(pct)) => Some(format!("ctx {} ({pct}%)", human_tokens(ctx))),
        (Some(ctx), None) => Some(format!("ctx {}", human_tokens(ctx))),
        (None, Some(pct)) => Some(format!("ctx {pct}%")),
        (None, None) => None,
    };
    let cost = format!("${:.4}", data.cost_usd);
    let model = (!data.model.is_empty()).then(|| data.model.clone());
    let join = |parts: &[Option<&String>]| -> String {
        parts
            .iter()
            .flatten()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" · ")
    };
    // The remote goes first on the right, in its own colour: a session that stopped
    // reaching its server must be visible at a glance.
    let remote = data.remote.map(remote_label);
    let remote_width = remote.as_ref().map_or(0, |(text, _)| text.width() + 3);
    let (ctx, cost, model) = (ctx.as_ref(), Some(&cost), model.as_ref());
    let layouts = [
        (&long, join(&[model, ctx, cost])),
        (&short, join(&[model, ctx, cost])),
        (&short, join(&[ctx, cost])),
        (&short, join(&[ctx])),
    ];
    // The left is cut rather than the context dropped, while the mode stays whole.
    let fits = layouts
        .iter()
        .find(|(left, right)| left.width() + 2 + right.width() + remote_width <= width)
        .map(|(left, right)| ((*left).clone(), right.clone()))
        .or_else(|| {
            let right = join(&[ctx]);
            let room = width.checked_sub(2 + right.width() + remote_width)?;
            (room >= essential && !right.is_empty())
                .then(|| (cut_to_width(&short, room).to_owned(), right))
        });
    let Some((left, right)) = fits else {
        return Line::from(Span::styled(
            cut_to_width(&long, width).to_owned(),
            left_style,
        ));
    };
    let gap = width - left.width() - right.width() - remote_width;
    let mut spans = vec![Span::styled(left, left_style), Span::raw(" ".repeat(gap))];
    if let Some((text, color)) = remote {
        spans.push(Span::styled(text, Style::default().fg(color)));
        if !right.is_empty() {
            spans.push(Span::styled(" · ", Style::default().fg(Color::DarkGray)));
        }
    }
    spans.push(Span::styled(right, Style::default().fg(Color::DarkGray)));
    Line::from(spans)
}

fn mode_color(mode: PermissionMode) -> Color {
    match mode {
        PermissionMode::Plan => Color::Cyan,
        PermissionMode::BypassPermissions | PermissionMode::DontAsk => Color::Red,
        _ => Color::Magenta,
    }
}

/// `12345` as `12.3k`.
pub fn human_tokens(n: u64) -> String {
    if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

const SPINNER: [&str; 6] = ["·", "✢", "✳", "✶", "✻", "✽"];

/// The spinner line of a running turn; `waiting_for`: the MCP server the turn waits
/// for before its first request (still connecting), named instead of "Working".
pub fn spinner(
    elapsed: Duration,
    tokens: u64,
    waiting_for: Option<&str>,
    width: u16,
) -> Line<'static> {
    let frame = SPINNER[usize::try_from(elapsed.as_millis() / 120).unwrap_or(0) % SPINNER.len()];
    let label = match waiting_for {
        Some(server) => format!("Waiting for MCP server {server}…"),
        None => "Working…".to_owned(),
    };
    let mut text = format!("{frame} {label} ({}s", elapsed.as_secs());
    if tokens > 0 {
        text.push_str(&format!(" · ↓ {} tokens", human_tokens(tokens)));
    }
    text.push_str(" · esc to interrupt)");
    Line::styled(
        cut_to_width(&text, usize::from(width)).to_owned(),
        Style::default().fg(Color::LightRed),
    )
}

/// The todo list (Ctrl-T).
pub fn todos(items: &[std::sync::Arc<TodoItem>], width: u16) -> Vec<Line<'static>> {
    if items.is_empty() {
        return vec![Line::styled(
            "  (no todos)",
            Style::default().fg(Color::DarkGray),
        )];
    }
    items
        .iter()
        .map(|t| {
            let (mark, style) = match t.status {
                TodoStatus::Completed => (
                    "☒",
                    Style::default()
                        .fg(Color::DarkGray)
                        .add_modifier(Modifier::CROSSED_OUT),
                ),
                TodoStatus::InProgress => ("☐", Style::default().add_modifier(Modifier::BOLD)),
                TodoStatus::Pending => ("☐", Style::default()),
            };
            let text = format!("  {mark} {}", t.content);
            Line::styled(cut_to_width(&text, usize::from(width)).to_owned(), style)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_shows_model_mode_cost_and_context() {
        let data = FooterData {
            model: "claude-sonnet".into(),
            mode: PermissionMode::AcceptEdits,
            cost_usd: 0.0123,
            context_tokens: Some(12_345),
            context_percent: Some(6),
            notice: None,
            background: 0,
            remote: None,
        };
        let line = footer(&data, 100).to_string();
        assert!(line.starts_with("⏵⏵ accept edits on"), "{line}");
        assert!(
            line.ends_with("claude-sonnet · ctx 12.3k (6%) · $0.0123"),
            "{line}"
        );
    }

    #[test]
    fn footer_truncates_on_narrow_terminals() {
        let data = FooterData {
            model: "a-very-long-model-name".into(),
            mode: PermissionMode::Plan,
            ..FooterData::default()
        };
        for width in [1u16, 10, 20, 39] {
            let line = footer(&data, width);
            assert!(
                crate::text::line_width(&line) <= usize::from(width),
                "{width}"
            );
        }
        assert!(footer(&data, 20).to_string().starts_with("⏸ plan mode on"));
    }

    #[test]
    fn i17_1_the_footer_shows_the_remote_status_only_with_a_remote() {
        let base = FooterData {
            model: "claude-sonnet".into(),
            cost_usd: 0.5,
            ..FooterData::default()
        };
        assert!(!footer(&base, 90).to_string().contains("remote"));
        let lines: Vec<Line<'static>> = [
            RemoteConnectionStatus::Connecting,
            RemoteConnectionStatus::Connected,
            RemoteConnectionStatus::Reconnecting,
            RemoteConnectionStatus::Disconnected,
        ]
        .into_iter()
        .map(|status| {
            let data = FooterData {
                remote: Some(status),
                ..base.clone()
            };
            footer(&data, 90)
        })
        .collect();
        insta::assert_snapshot!(crate::vt_snapshot::screen(&lines, 90));
        // On a narrow terminal the right part, the remote with it, gives way first.
        let narrow = FooterData {
            remote: Some(RemoteConnectionStatus::Reconnecting),
            ..base
        };
        assert!(crate::text::line_width(&footer(&narrow, 30)) <= 30);
    }

    /// Regression (issue 25 item 6): a footer too wide for the terminal dropped its whole
    /// right part, the context figure with it — while a background task ran (its notice
    /// lengthens the left) or in a mode with a long name — until the next response
    /// ended the task.
    #[test]
    fn regression_the_context_figure_stays_when_the_footer_is_crowded() {
        let base = FooterData {
            model: "claude-sonnet-4-5-20250929".into(),
            cost_usd: 0.0123,
            context_tokens: Some(48_200),
            context_percent: Some(24),
            ..FooterData::default()
        };
        let crowded = [
            FooterData {
                background: 2,
                ..base.clone()
            },
            FooterData {
                mode: PermissionMode::BypassPermissions,
                ..base.clone()
            },
            FooterData {
                notice: Some("Press Ctrl-C again to exit".into()),
                background: 1,
                ..base.clone()
            },
        ];
        for data in &crowded {
            for width in [80u16, 60, 45] {
                let line = footer(data, width);
                let text = line.to_string();
                assert!(text.contains("ctx 48.2k (24%)"), "{width}: {text}");
                assert!(
                    crate::text::line_width(&line) <= usize::from(width),
                    "{text}"
                );
            }
        }
        // What goes first: the key hint, then the model, then the cost; the mode stays.
        let bypass = footer(&crowded[1], 60).to_string();
        assert!(bypass.starts_with("⏵⏵ bypass permissions on "), "{bypass}");
        assert!(!bypass.contains("shift+tab"), "{bypass}");
        let tasks = footer(&crowded[0], 80).to_string();
        assert!(tasks.starts_with("? /help · 2 tasks ↓"), "{tasks}");
        // With room for everything, nothing is given up.
        let wide = footer(&crowded[0], 120).to_string();
        assert!(wide.starts_with("2 background tasks · ↓ to view"), "{wide}");
        assert!(wide.ends_with("claude-sonnet-4-5-20250929 · ctx 48.2k (24%) · $0.0123"));
    }

    #[test]
    fn spinner_shows_elapsed_time_and_tokens() {
        let line = spinner(Duration::from_secs(12), 3400, None, 80).to_string();
        assert!(
            line.contains("Working…") && line.contains("12s") && line.contains("3.4k tokens"),
            "{line}"
        );
    }

    #[test]
    fn i25_2_the_spinner_names_the_mcp_server_a_turn_waits_for() {
        let line = spinner(Duration::from_secs(2), 0, Some("everything"), 80).to_string();
        assert!(
            line.contains("Waiting for MCP server everything…") && !line.contains("Working"),
            "{line}"
        );
    }
}
