//! For tests: live-area lines drawn by the real renderer ([`crate::term`]) onto a vt100
//! screen, dumped as text and styled runs, so an insta snapshot pins what a terminal
//! shows — characters, colours and emphasis — rather than the `Line` values.

use ratatui::text::Line;

use crate::term::{Frame, InlineTerminal};

/// The screen after drawing `lines` as a live area `width` columns wide: its rows (blank
/// ones at the bottom left out), then, under `--- styles ---`, each run of cells of one
/// style that is not the default, as `row col..col fg bg flags`.
pub(crate) fn screen(lines: &[Line<'static>], width: u16) -> String {
    // The live area takes at most half the screen: room for all of it.
    let height = u16::try_from(lines.len() * 2 + 2).unwrap_or(u16::MAX);
    let mut term = InlineTerminal::new(Vec::new(), width, height, true);
    let frame = Frame {
        lines: lines.to_vec(),
        cursor: None,
    };
    term.draw(&[], &frame).expect("drawing into memory");
    let mut parser = vt100::Parser::new(height, width, 0);
    parser.process(term.writer_mut());
    let screen = parser.screen();
    let mut rows: Vec<String> = screen.rows(0, width).collect();
    while rows.last().is_some_and(|r| r.trim().is_empty()) {
        rows.pop();
    }
    let mut out: String = rows.iter().map(|r| format!("{}\n", r.trim_end())).collect();
    out.push_str("--- styles ---\n");
    for row in 0..u16::try_from(rows.len()).unwrap_or(0) {
        let mut run: Option<(u16, String)> = None;
        for col in 0..=width {
            let style = screen.cell(row, col).map(style_of).unwrap_or_default();
            let same = run.as_ref().is_some_and(|(_, s)| *s == style);
            if !same {
                if let Some((start, s)) = run.take()
                    && !s.is_empty()
                {
                    out.push_str(&format!("{row} {start}..{} {s}\n", col - 1));
                }
                run = Some((col, style));
            }
        }
    }
    out
}

fn style_of(cell: &vt100::Cell) -> String {
    let mut parts = Vec::new();
    if cell.fgcolor() != vt100::Color::Default {
        parts.push(format!("fg={:?}", cell.fgcolor()));
    }
    if cell.bgcolor() != vt100::Color::Default {
        parts.push(format!("bg={:?}", cell.bgcolor()));
    }
    if cell.bold() {
        parts.push("bold".to_owned());
    }
    if cell.dim() {
        parts.push("dim".to_owned());
    }
    if cell.italic() {
        parts.push("italic".to_owned());
    }
    parts.join(" ")
}
