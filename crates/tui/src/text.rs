//! Width arithmetic for terminal text: display widths (wide characters take two columns),
//! cutting to a width, and wrapping plain text.

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};

/// The columns `line` takes.
pub fn line_width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|s| s.content.width()).sum()
}

/// The longest prefix of `text` that fits in `width` columns.
pub fn cut_to_width(text: &str, width: usize) -> &str {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            return &text[..i];
        }
        used += w;
    }
    text
}

/// `text` hard-wrapped at `width` columns, breaking at spaces where a word fits; every
/// line of the result fits in `width`. Line breaks in `text` are kept.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for raw in text.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if raw.is_empty() {
            out.push(String::new());
            continue;
        }
        let mut rest = raw;
        while rest.width() > width {
            let head = cut_to_width(rest, width);
            // Break after the last space of the head when there is one past its start.
            let cut = match head.rfind(' ') {
                Some(i) if i > 0 => i + 1,
                _ => head
                    .len()
                    .max(rest.chars().next().map_or(1, char::len_utf8)),
            };
            out.push(rest[..cut].trim_end().to_owned());
            rest = &rest[cut..];
        }
        out.push(rest.to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_character_and_fits_the_width() {
        let text = "the quick brown fox jumps over the lazy dog\n\nwide: 日本語のテキスト";
        let lines = wrap(text, 10);
        assert!(lines.iter().all(|l| l.width() <= 10), "{lines:?}");
        let joined: String = lines.concat().split_whitespace().collect();
        let original: String = text.split_whitespace().collect();
        assert_eq!(joined, original);
        assert_eq!(lines[0], "the quick");
    }

    #[test]
    fn cutting_respects_wide_characters() {
        assert_eq!(cut_to_width("日本語", 5), "日本");
        assert_eq!(cut_to_width("abc", 5), "abc");
    }
}

/// `line` with the cell at display column `col` drawn as a cursor (reversed video; a
/// reversed space past the end of the text).
pub fn with_cursor(line: &Line<'static>, col: usize) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::with_capacity(line.spans.len() + 2);
    let mut at = 0;
    let mut done = false;
    for span in &line.spans {
        let w = span.content.width();
        if done || col >= at + w {
            spans.push(span.clone());
            at += w;
            continue;
        }
        // The cursor is inside this span: split it around the cursor's character.
        let before = cut_to_width(&span.content, col - at);
        let rest = &span.content[before.len()..];
        let mut chars = rest.chars();
        let cursor_char = chars.next().map(String::from).unwrap_or_else(|| " ".into());
        let after: String = chars.collect();
        if !before.is_empty() {
            spans.push(Span::styled(before.to_owned(), span.style));
        }
        spans.push(Span::styled(
            cursor_char,
            span.style.add_modifier(Modifier::REVERSED),
        ));
        if !after.is_empty() {
            spans.push(Span::styled(after, span.style));
        }
        at += w;
        done = true;
    }
    if !done {
        if col > at {
            spans.push(Span::raw(" ".repeat(col - at)));
        }
        spans.push(Span::styled(
            " ",
            ratatui::style::Style::default().add_modifier(Modifier::REVERSED),
        ));
    }
    Line {
        spans,
        ..line.clone()
    }
}

#[cfg(test)]
mod cursor_tests {
    use super::*;

    #[test]
    fn the_cursor_cell_is_reversed_inside_and_past_the_text() {
        let line = Line::from(vec![Span::raw("> "), Span::raw("héllo")]);
        let l = with_cursor(&line, 3);
        assert_eq!(l.to_string(), "> héllo");
        assert_eq!(l.spans[2].content, "é");
        assert!(l.spans[2].style.add_modifier.contains(Modifier::REVERSED));
        let end = with_cursor(&line, 7);
        assert_eq!(end.to_string(), "> héllo ");
        assert!(
            end.spans
                .last()
                .unwrap()
                .style
                .add_modifier
                .contains(Modifier::REVERSED)
        );
    }
}
