//! Word wrapping of styled text at a column width, unicode-width aware.
//!
//! Every cell renders through here, so wrapping rules live in one place: break at spaces,
//! break a word longer than the line by columns, drop the spaces a soft break falls on,
//! keep leading spaces of a hard line (code indentation), and never split a zero-width
//! character (combining mark, ZWJ) from the character before it. A line may exceed the
//! width only when one character is wider than the whole line (a CJK character at
//! width 1), so nothing is ever dropped.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// A run of text in one style.
pub(crate) type Piece = (String, Style);

enum Token {
    Word(Vec<Piece>, usize),
    Space(String, Style, usize),
    Newline,
}

fn tokenize(pieces: &[Piece]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word: Vec<Piece> = Vec::new();
    let mut word_w = 0;
    let flush_word = |out: &mut Vec<Token>, word: &mut Vec<Piece>, word_w: &mut usize| {
        if !word.is_empty() {
            out.push(Token::Word(std::mem::take(word), *word_w));
            *word_w = 0;
        }
    };
    for (text, style) in pieces {
        for ch in text.chars() {
            if ch == '\n' {
                flush_word(&mut out, &mut word, &mut word_w);
                out.push(Token::Newline);
            } else if ch.is_whitespace() {
                flush_word(&mut out, &mut word, &mut word_w);
                // Tabs count as one column: the terminal would expand them unpredictably.
                let c = if ch == '\t' { ' ' } else { ch };
                let w = c.width().unwrap_or(0);
                match out.last_mut() {
                    Some(Token::Space(s, st, sw)) if st == style => {
                        s.push(c);
                        *sw += w;
                    }
                    _ => out.push(Token::Space(c.to_string(), *style, w)),
                }
            } else {
                // Control characters would move the terminal's cursor: never emit them.
                if ch.is_control() {
                    continue;
                }
                word_w += ch.width().unwrap_or(0);
                match word.last_mut() {
                    Some((s, st)) if st == style => s.push(ch),
                    _ => word.push((ch.to_string(), *style)),
                }
            }
        }
    }
    flush_word(&mut out, &mut word, &mut word_w);
    out
}

struct Builder<'p> {
    width: usize,
    first: &'p [Span<'static>],
    rest: &'p [Span<'static>],
    lines: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    prefix_len: usize,
    used: usize,
    avail: usize,
}

fn prefix_width(p: &[Span<'static>]) -> usize {
    p.iter().map(Span::width).sum()
}

impl<'p> Builder<'p> {
    fn new(width: usize, first: &'p [Span<'static>], rest: &'p [Span<'static>]) -> Self {
        let mut b = Self {
            width,
            first,
            rest,
            lines: Vec::new(),
            spans: Vec::new(),
            prefix_len: 0,
            used: 0,
            avail: 1,
        };
        b.start(true);
        b
    }

    fn start(&mut self, first: bool) {
        let prefix = if first { self.first } else { self.rest };
        self.spans = prefix.to_vec();
        self.prefix_len = self.spans.len();
        self.used = 0;
        // At least one column of content, so a narrow terminal still makes progress.
        self.avail = self.width.saturating_sub(prefix_width(prefix)).max(1);
    }

    fn push(&mut self, text: &str, style: Style, w: usize) {
        self.used += w;
        if self.spans.len() > self.prefix_len
            && let Some(last) = self.spans.last_mut()
            && last.style == style
        {
            last.content.to_mut().push_str(text);
            return;
        }
        self.spans.push(Span::styled(text.to_owned(), style));
    }

    fn finish(&mut self, soft: bool) {
        if soft {
            // The spaces a soft break falls on are not part of either line.
            while self.spans.len() > self.prefix_len {
                let Some(last) = self.spans.last_mut() else {
                    break;
                };
                let trimmed = last.content.trim_end().len();
                if trimmed == 0 {
                    self.spans.pop();
                } else {
                    last.content.to_mut().truncate(trimmed);
                    break;
                }
            }
        }
        self.lines.push(Line::from(std::mem::take(&mut self.spans)));
        self.start(false);
    }
}

/// Wraps `pieces` to `width` columns: `first` prefixes the first line, `rest` every other
/// line (and counts against the width). A `\n` in the text starts a new line.
pub(crate) fn wrap(
    pieces: &[Piece],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut b = Builder::new(width, first, rest);
    let mut at_soft_break = false;
    for token in tokenize(pieces) {
        match token {
            Token::Newline => {
                b.finish(false);
                at_soft_break = false;
            }
            Token::Space(s, style, w) => {
                if at_soft_break {
                    continue;
                }
                if b.used + w > b.avail {
                    b.finish(true);
                    at_soft_break = true;
                } else {
                    b.push(&s, style, w);
                }
            }
            Token::Word(parts, w) => {
                at_soft_break = false;
                if b.used + w <= b.avail {
                    for (s, st) in &parts {
                        b.push(s, *st, 0);
                    }
                    b.used += w;
                    continue;
                }
                let rest_avail = width.saturating_sub(prefix_width(rest)).max(1);
                if b.used > 0 && w <= rest_avail {
                    b.finish(true);
                    for (s, st) in &parts {
                        b.push(s, *st, 0);
                    }
                    b.used += w;
                    continue;
                }
                // Longer than a line: break it by columns.
                for (s, st) in &parts {
                    let mut buf = [0u8; 4];
                    for ch in s.chars() {
                        let cw = ch.width().unwrap_or(0);
                        if cw > 0 && b.used > 0 && b.used + cw > b.avail {
                            b.finish(false);
                        }
                        b.push(ch.encode_utf8(&mut buf), *st, cw);
                    }
                }
            }
        }
    }
    b.finish(false);
    b.lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    fn p(s: &str) -> Vec<Piece> {
        vec![(s.to_owned(), Style::default())]
    }

    #[test]
    fn breaks_at_spaces_and_drops_the_break_space() {
        let l = wrap(&p("the quick brown fox"), 10, &[], &[]);
        assert_eq!(plain(&l), ["the quick", "brown fox"]);
    }

    #[test]
    fn a_very_long_word_is_broken_by_columns_and_nothing_is_lost() {
        let word = "x".repeat(25);
        let l = wrap(&p(&format!("a {word}")), 10, &[], &[]);
        assert_eq!(plain(&l).concat().replace(' ', ""), format!("a{word}"));
        assert!(l.iter().all(|l| l.width() <= 10), "{:?}", plain(&l));
    }

    #[test]
    fn cjk_and_emoji_count_two_columns() {
        let l = wrap(&p("日本語のテキスト 😀😀😀"), 6, &[], &[]);
        assert!(l.iter().all(|l| l.width() <= 6), "{:?}", plain(&l));
        assert_eq!(plain(&l).concat(), "日本語のテキスト😀😀😀");
        // Three wide characters per 6-column line.
        assert_eq!(plain(&l)[0], "日本語");
    }

    #[test]
    fn zero_width_marks_stay_with_their_base_character() {
        // "e" + combining acute, five times: five columns.
        let s = "e\u{301}".repeat(5);
        let l = wrap(&p(&s), 5, &[], &[]);
        assert_eq!(plain(&l), [s]);
    }

    #[test]
    fn zero_width_terminal_still_progresses_and_keeps_text() {
        let l = wrap(&p("ab 日"), 0, &[], &[]);
        assert_eq!(plain(&l).concat(), "ab日");
    }

    #[test]
    fn leading_indentation_of_a_hard_line_is_kept() {
        let l = wrap(&p("fn x() {\n    body\n}"), 40, &[], &[]);
        assert_eq!(plain(&l), ["fn x() {", "    body", "}"]);
    }

    #[test]
    fn prefixes_count_against_the_width() {
        let first = [Span::raw("- ")];
        let rest = [Span::raw("  ")];
        let l = wrap(&p("one two three four"), 10, &first, &rest);
        assert_eq!(plain(&l), ["- one two", "  three", "  four"]);
    }

    #[test]
    fn control_characters_are_never_emitted() {
        let l = wrap(&p("a\u{1b}[2Jb"), 20, &[], &[]);
        assert_eq!(plain(&l), ["a[2Jb"]);
    }
}
