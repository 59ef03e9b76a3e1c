//! The inline terminal: finished lines go into the terminal's own scrollback, the live
//! area (streaming answer, spinner, dialog, prompt, footer) is redrawn below them.
//!
//! Why not ratatui's `Terminal`: its inline viewport has a fixed height, and its resize
//! handling redraws from a guessed origin. Here the live area is a plain list of lines
//! whose height changes with what is live, and the renderer knows exactly how many rows
//! it drew above the cursor, so it can always return to the top of the live area and
//! redraw it, and nothing else:
//!
//! - a frame is wrapped in synchronized output (DEC mode 2026), so a terminal shows it
//!   whole or not at all (no flicker);
//! - a frame goes up to the top of the live area, clears to the end of the screen, prints
//!   the lines being committed (once: they scroll up into the scrollback as the terminal
//!   scrolls, and the renderer never refers to them again), then the live area;
//! - live lines are cut to the terminal width, so each takes exactly one row; after a
//!   resize the rows they take at the new width are recomputed (terminals that reflow
//!   split a line wider than the new width), so the next frame starts at the right row
//!   and re-wraps only the live area.
//!
//! - between frames the terminal's cursor is parked, hidden, on the live area's first
//!   row and the prompt's cursor is drawn as a reversed cell: a terminal that reflows
//!   on resize (tmux, VTE, kitty) keeps the cursor's row where it is and pushes rows
//!   above it into the scrollback, where no later frame could clear them; with the
//!   whole live area below the cursor, every frame can clear all of it, and the live
//!   area is at most half the screen so a reflow that doubles it still fits.
//!
//! The renderer writes to any `Write`; tests feed it to a `vt100` parser.

use std::io::{self, Write};

use crossterm::style::{Attribute, Color as CtColor, Print, SetAttribute, SetBackgroundColor};
use crossterm::{QueueableCommand as _, cursor, style, terminal};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use unicode_width::UnicodeWidthStr as _;

use crate::text::{cut_to_width, line_width};

/// The live area of one frame.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Frame {
    /// Its lines, top to bottom.
    pub lines: Vec<Line<'static>>,
    /// Where the cursor goes: (row within `lines`, column); `None` hides it.
    pub cursor: Option<(usize, u16)>,
}

/// The renderer of one terminal.
pub struct InlineTerminal<W: Write> {
    out: W,
    width: u16,
    height: u16,
    /// Styles are written (false: `TERM=dumb` or `NO_COLOR`).
    color: bool,
    /// Rows between the top of the live area and the cursor row (the cursor row
    /// excluded), as the terminal holds them now.
    rows_above_cursor: usize,
    /// Display widths of the live lines drawn last, for re-computing their rows after a
    /// resize.
    drawn_widths: Vec<usize>,
    /// The row of the cursor within the live area drawn last.
    cursor_row: usize,
    /// Frames written (for tests and `strata-bench tui`).
    frames: u64,
}

impl<W: Write> InlineTerminal<W> {
    /// A renderer for a terminal of `width` × `height`.
    pub fn new(out: W, width: u16, height: u16, color: bool) -> Self {
        Self {
            out,
            width: width.max(1),
            height: height.max(1),
            color,
            rows_above_cursor: 0,
            drawn_widths: Vec::new(),
            cursor_row: 0,
            frames: 0,
        }
    }

    /// The width lines are laid out for.
    pub fn width(&self) -> u16 {
        self.width
    }

    /// The height of the terminal.
    pub fn height(&self) -> u16 {
        self.height
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The writer (tests read what was written).
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The terminal is now `width` × `height`. The live area drawn before takes the rows
    /// a reflowing terminal gives it at the new width; the next frame starts there.
    pub fn resize(&mut self, width: u16, height: u16) {
        let width = width.max(1);
        // Terminals that reflow wrap a line wider than the new width and join it again
        // when the width grows back, so the rows are recomputed both ways.
        if width != self.width {
            let w = usize::from(width);
            let rows = |lw: usize| lw.div_ceil(w).max(1);
            let above: usize = self
                .drawn_widths
                .iter()
                .take(self.cursor_row)
                .map(|&lw| rows(lw))
                .sum();
            self.rows_above_cursor = above;
        }
        self.width = width;
        self.height = height.max(1);
    }

    /// Makes sure the live area starts at least half a screen below the top, the cursor
    /// being on row `cursor_row` now (blank rows are written to get there). A terminal
    /// that reflows on resize keeps its bottom rows and pushes the top ones into the
    /// scrollback; while the rows above the live area outnumber what a reflow can add
    /// to it, what is pushed away is history, never the live area itself.
    pub fn make_room(&mut self, cursor_row: u16) -> io::Result<()> {
        let wanted = max_live_rows(self.height);
        let pad = wanted.saturating_sub(usize::from(cursor_row));
        for _ in 0..pad {
            self.out.write_all(b"\r\n")?;
        }
        self.out.flush()
    }

    /// Forgets where the live area is: the screen was cleared (Ctrl-L) or restored
    /// (leaving the transcript view, resuming after Ctrl-Z) and the cursor is at the
    /// start of an empty row.
    pub fn reset_origin(&mut self) {
        self.rows_above_cursor = 0;
        self.drawn_widths.clear();
        self.cursor_row = 0;
    }

    /// Draws one frame: `commit` goes into the scrollback above the live area (written
    /// once, never again), then `frame` is the new live area.
    pub fn draw(&mut self, commit: &[Line<'static>], frame: &Frame) -> io::Result<()> {
        let width = usize::from(self.width);
        // A live area taller than the screen would push its own top into the scrollback,
        // where a later frame could not clear it: keep its last rows (the prompt and
        // footer are at the bottom). At most half the screen, so that a terminal made
        // half as wide, which reflows each live row into two, still holds the whole live
        // area on screen and the next frame can clear it (else its top would stay in the
        // scrollback as a copy); tiny terminals still get room for a dialog.
        let max_rows = max_live_rows(self.height);
        let skip = frame.lines.len().saturating_sub(max_rows);
        let live = &frame.lines[skip..];
        let out = &mut self.out;
        out.queue(terminal::BeginSynchronizedUpdate)?;
        out.queue(cursor::Hide)?;
        out.write_all(b"\r")?;
        if self.rows_above_cursor > 0 {
            let up = u16::try_from(self.rows_above_cursor).unwrap_or(u16::MAX);
            out.queue(cursor::MoveUp(up))?;
        }
        clear_down(out)?;
        for line in commit {
            // Committed lines are written as they are: the terminal wraps a long one and
            // can reflow it later, as with any program's output.
            write_line(out, line, None, self.color)?;
            out.write_all(b"\r\n")?;
        }
        // The prompt's cursor is drawn as a reversed cell; the terminal's own cursor is
        // parked, hidden, at the top of the live area (see the module docs).
        let drawn_cursor = frame
            .cursor
            .filter(|&(row, _)| row >= skip)
            .map(|(row, col)| (row - skip, usize::from(col).min(width.saturating_sub(1))));
        for (i, line) in live.iter().enumerate() {
            match drawn_cursor {
                Some((row, col)) if row == i && self.color => {
                    write_line(out, &crate::text::with_cursor(line, col), Some(width), true)?;
                }
                _ => write_line(out, line, Some(width), self.color)?,
            }
            if i + 1 < live.len() {
                out.write_all(b"\r\n")?;
            }
        }
        let last_row = live.len().saturating_sub(1);
        let row = 0;
        if last_row > row {
            let up = u16::try_from(last_row - row).unwrap_or(u16::MAX);
            out.queue(cursor::MoveUp(up))?;
        }
        out.write_all(b"\r")?;
        if !self.color
            && let Some((row, col)) = drawn_cursor
        {
            // Without styles a reversed cell cannot be drawn: the terminal's cursor is
            // shown at the prompt instead (a plain-text terminal rarely reflows).
            if row > 0 {
                out.queue(cursor::MoveDown(u16::try_from(row).unwrap_or(u16::MAX)))?;
            }
            if col > 0 {
                out.queue(cursor::MoveRight(u16::try_from(col).unwrap_or(u16::MAX)))?;
            }
            out.queue(cursor::Show)?;
            self.rows_above_cursor = row;
            self.cursor_row = row;
            self.drawn_widths = live.iter().map(|l| line_width(l).min(width)).collect();
            out.queue(terminal::EndSynchronizedUpdate)?;
            out.flush()?;
            self.frames += 1;
            return Ok(());
        }
        out.queue(terminal::EndSynchronizedUpdate)?;
        out.flush()?;
        self.rows_above_cursor = row;
        self.cursor_row = row;
        self.drawn_widths = live.iter().map(|l| line_width(l).min(width)).collect();
        self.frames += 1;
        Ok(())
    }

    /// Clears the live area and leaves the cursor at its top (before exiting or
    /// suspending, so the shell prompt follows the history).
    pub fn clear_live(&mut self) -> io::Result<()> {
        let out = &mut self.out;
        out.write_all(b"\r")?;
        if self.rows_above_cursor > 0 {
            let up = u16::try_from(self.rows_above_cursor).unwrap_or(u16::MAX);
            out.queue(cursor::MoveUp(up))?;
        }
        clear_down(out)?;
        out.queue(cursor::Show)?;
        out.flush()?;
        self.reset_origin();
        Ok(())
    }

    /// Ctrl-L: a clean screen with the live area drawn again near its top, and nothing
    /// lost. The rows above the live area are not erased but scrolled up into the
    /// scrollback (line feeds from the live area's top reach the bottom row and then
    /// scroll exactly as many rows as were above it), so every line already shown stays
    /// there once; then room is made above the live area as at start
    /// ([`InlineTerminal::make_room`]). The next frame draws the live area.
    pub fn clear_screen(&mut self) -> io::Result<()> {
        self.clear_live()?;
        for _ in 1..self.height {
            self.out.write_all(b"\n")?;
        }
        self.out.queue(cursor::MoveTo(0, 0))?;
        self.reset_origin();
        self.make_room(0)
    }

    /// Writes one line cut to the width, with its styles when colour is on, and no line
    /// break (the pagers in the alternate screen: Ctrl-O, a task's view).
    pub fn write_styled_line(&mut self, line: &Line<'static>) -> io::Result<()> {
        write_line(
            &mut self.out,
            line,
            Some(usize::from(self.width)),
            self.color,
        )
    }

    /// Writes `lines` into the scrollback after the live area was cleared (on exit the
    /// last frame's content that should stay, such as a closing note).
    pub fn print_plain(&mut self, lines: &[Line<'static>]) -> io::Result<()> {
        for line in lines {
            write_line(&mut self.out, line, None, self.color)?;
            self.out.write_all(b"\r\n")?;
        }
        self.out.flush()
    }
}

/// The most rows a live area takes on a terminal `height` rows high (see
/// [`InlineTerminal::draw`]).
pub fn max_live_rows(height: u16) -> usize {
    let h = usize::from(height);
    (h.saturating_sub(1) / 2)
        .max(h.saturating_sub(1).min(8))
        .max(1)
}

/// Clears from the start of the cursor's row to the end of the screen, the cursor left
/// at the row's start.
///
/// Not a bare "erase below" at column 0: tmux (and screen) treat an erase from the
/// screen's top-left corner as "clear the screen" and move everything on it into the
/// scrollback, so a live area drawn at the top row would leave a copy of every frame
/// there. Erasing the row, then everything below from its second column, clears the
/// same cells without that.
fn clear_down(out: &mut impl Write) -> io::Result<()> {
    out.queue(terminal::Clear(terminal::ClearType::CurrentLine))?;
    out.queue(cursor::MoveRight(1))?;
    out.queue(terminal::Clear(terminal::ClearType::FromCursorDown))?;
    out.write_all(b"\r")
}

/// Writes one line's spans with their styles; `limit` cuts it to that many columns.
fn write_line(
    out: &mut impl Write,
    line: &Line<'static>,
    limit: Option<usize>,
    color: bool,
) -> io::Result<()> {
    let mut left = limit.unwrap_or(usize::MAX);
    for span in &line.spans {
        if left == 0 {
            break;
        }
        let text = cut_to_width(&span.content, left);
        left = left.saturating_sub(text.width());
        let text = text.replace(['\n', '\r', '\x1b'], " ");
        let style = line.style.patch(span.style);
        if color && style != Style::default() {
            apply_style(out, style)?;
            out.queue(Print(text))?;
            out.queue(SetAttribute(Attribute::Reset))?;
        } else {
            out.queue(Print(text))?;
        }
    }
    Ok(())
}

fn apply_style(out: &mut impl Write, s: Style) -> io::Result<()> {
    if let Some(fg) = s.fg {
        out.queue(style::SetForegroundColor(ct_color(fg)))?;
    }
    if let Some(bg) = s.bg {
        out.queue(SetBackgroundColor(ct_color(bg)))?;
    }
    let m = s.add_modifier;
    for (flag, attr) in [
        (Modifier::BOLD, Attribute::Bold),
        (Modifier::DIM, Attribute::Dim),
        (Modifier::ITALIC, Attribute::Italic),
        (Modifier::UNDERLINED, Attribute::Underlined),
        (Modifier::REVERSED, Attribute::Reverse),
        (Modifier::CROSSED_OUT, Attribute::CrossedOut),
    ] {
        if m.contains(flag) {
            out.queue(SetAttribute(attr))?;
        }
    }
    Ok(())
}

fn ct_color(c: Color) -> CtColor {
    match c {
        Color::Reset => CtColor::Reset,
        Color::Black => CtColor::Black,
        Color::Red => CtColor::DarkRed,
        Color::Green => CtColor::DarkGreen,
        Color::Yellow => CtColor::DarkYellow,
        Color::Blue => CtColor::DarkBlue,
        Color::Magenta => CtColor::DarkMagenta,
        Color::Cyan => CtColor::DarkCyan,
        Color::Gray => CtColor::Grey,
        Color::DarkGray => CtColor::DarkGrey,
        Color::LightRed => CtColor::Red,
        Color::LightGreen => CtColor::Green,
        Color::LightYellow => CtColor::Yellow,
        Color::LightBlue => CtColor::Blue,
        Color::LightMagenta => CtColor::Magenta,
        Color::LightCyan => CtColor::Cyan,
        Color::White => CtColor::White,
        Color::Rgb(r, g, b) => CtColor::Rgb { r, g, b },
        Color::Indexed(i) => CtColor::AnsiValue(i),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn frame(lines: &[&str]) -> Frame {
        Frame {
            lines: lines.iter().map(|l| Line::from((*l).to_owned())).collect(),
            cursor: Some((lines.len() - 1, 2)),
        }
    }

    /// Feeds everything written so far to a fresh vt100 screen of the same size.
    fn screen(
        t: &InlineTerminal<Vec<u8>>,
        rows: u16,
        cols: u16,
        scrollback: usize,
    ) -> vt100::Parser {
        let mut p = vt100::Parser::new(rows, cols, scrollback);
        p.process(&t.out);
        p
    }

    fn all_rows(p: &mut vt100::Parser) -> Vec<String> {
        // Scrollback (oldest first) then the screen.
        let mut rows = Vec::new();
        let cols = p.screen().size().1;
        let mut back = 0;
        loop {
            p.screen_mut().set_scrollback(back + 1);
            if p.screen().scrollback() != back + 1 {
                break;
            }
            back += 1;
        }
        for offset in (1..=back).rev() {
            p.screen_mut().set_scrollback(offset);
            rows.push(p.screen().rows(0, cols).next().unwrap_or_default());
        }
        p.screen_mut().set_scrollback(0);
        rows.extend(p.screen().rows(0, cols));
        rows
    }

    #[test]
    fn ctrl_l_clears_the_screen_and_keeps_every_line_in_the_scrollback_once() {
        let mut t = InlineTerminal::new(Vec::new(), 20, 8, false);
        t.draw(&[], &frame(&["live", "> "])).unwrap();
        let history: Vec<Line<'static>> =
            (1..=3).map(|i| Line::from(format!("line {i}"))).collect();
        t.draw(&history, &frame(&["live", "> "])).unwrap();
        t.clear_screen().unwrap();
        t.draw(&[], &frame(&["live", "> x"])).unwrap();
        let mut p = screen(&t, 8, 20, 100);
        let rows = all_rows(&mut p);
        for i in 1..=3 {
            let line = format!("line {i}");
            assert_eq!(rows.iter().filter(|r| **r == line).count(), 1, "{rows:?}");
        }
        assert_eq!(
            rows.iter().filter(|r| r.starts_with("live")).count(),
            1,
            "{rows:?}"
        );
        // The screen holds the live area only; the history went up, above it.
        let visible: Vec<String> = p.screen().rows(0, 20).collect();
        assert!(
            visible.iter().all(|r| !r.starts_with("line")),
            "{visible:?}"
        );
        assert!(visible.iter().any(|r| r == "> x"), "{visible:?}");
    }

    #[test]
    fn committed_lines_are_written_once_and_the_live_area_is_redrawn_in_place() {
        let mut t = InlineTerminal::new(Vec::new(), 20, 6, false);
        t.draw(&[], &frame(&["live 1", "> "])).unwrap();
        let commits: Vec<Line<'static>> = (0..8).map(|i| Line::from(format!("line {i}"))).collect();
        for (i, c) in commits.iter().enumerate() {
            t.draw(
                std::slice::from_ref(c),
                &frame(&[&format!("live {i}"), "> "]),
            )
            .unwrap();
        }
        let mut p = screen(&t, 6, 20, 100);
        let rows = all_rows(&mut p);
        let text: Vec<&str> = rows
            .iter()
            .map(|r| r.trim_end())
            .filter(|r| !r.is_empty())
            .collect();
        let expected: Vec<String> = (0..8)
            .map(|i| format!("line {i}"))
            .chain(["live 7".to_owned(), ">".to_owned()])
            .collect();
        assert_eq!(text, expected);
    }

    #[test]
    fn every_frame_is_one_synchronized_update() {
        let mut t = InlineTerminal::new(Vec::new(), 20, 6, false);
        t.draw(&[], &frame(&["a", "> "])).unwrap();
        t.draw(&[], &frame(&["b", "> "])).unwrap();
        let s = String::from_utf8_lossy(&t.out);
        assert_eq!(s.matches("\x1b[?2026h").count(), 2);
        assert_eq!(s.matches("\x1b[?2026l").count(), 2);
        assert!(s.ends_with("\x1b[?2026l"), "the frame ends the update");
        assert_eq!(t.frames(), 2);
    }

    #[test]
    fn live_lines_are_cut_to_the_width_so_each_takes_one_row() {
        let mut t = InlineTerminal::new(Vec::new(), 10, 5, false);
        t.draw(&[], &frame(&["0123456789abcdef", "> "])).unwrap();
        t.draw(&[], &frame(&["short", "> "])).unwrap();
        let mut p = screen(&t, 5, 10, 10);
        let rows = all_rows(&mut p);
        let text: Vec<&str> = rows
            .iter()
            .map(|r| r.trim_end())
            .filter(|r| !r.is_empty())
            .collect();
        assert_eq!(text, ["short", ">"]);
    }

    #[test]
    fn a_live_area_taller_than_the_screen_keeps_its_bottom_and_never_reaches_scrollback() {
        let mut t = InlineTerminal::new(Vec::new(), 10, 4, false);
        let tall: Vec<String> = (0..10).map(|i| format!("row {i}")).collect();
        let tall: Vec<&str> = tall.iter().map(String::as_str).collect();
        t.draw(&[], &frame(&tall)).unwrap();
        t.draw(&[], &frame(&["x", "> "])).unwrap();
        let mut p = screen(&t, 4, 10, 10);
        let rows = all_rows(&mut p);
        let text: Vec<&str> = rows
            .iter()
            .map(|r| r.trim_end())
            .filter(|r| !r.is_empty())
            .collect();
        assert_eq!(text, ["x", ">"]);
    }

    #[test]
    fn colour_off_writes_no_style_sequences() {
        let mut t = InlineTerminal::new(Vec::new(), 20, 5, false);
        let styled = Line::styled("red", Style::default().fg(Color::Red));
        t.draw(
            std::slice::from_ref(&styled),
            &Frame {
                lines: vec![styled.clone()],
                cursor: None,
            },
        )
        .unwrap();
        let s = String::from_utf8_lossy(&t.out);
        assert!(!s.contains("\x1b[31m") && !s.contains("38;5"), "{s:?}");
        let mut t = InlineTerminal::new(Vec::new(), 20, 5, true);
        let styled = Line::styled("red", Style::default().fg(Color::Red));
        t.draw(
            &[],
            &Frame {
                lines: vec![styled],
                cursor: None,
            },
        )
        .unwrap();
        let p = screen(&t, 5, 20, 0);
        assert_eq!(
            p.screen().cell(0, 0).unwrap().fgcolor(),
            vt100::Color::Idx(1)
        );
    }
}
