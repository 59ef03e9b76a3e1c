//! Markdown to terminal lines: the assistant's answers, finished or streaming.
//!
//! Parsed with `pulldown-cmark` and rendered in one pass into styled, wrapped lines.
//! Headings keep their `#` marks and code blocks their fences (with the language label),
//! so the text copied out of the terminal's scrollback is still markdown and plain mode
//! (`color: false`, `TERM=dumb`) loses no structure. A fence that is never closed (a
//! streaming answer) runs to the end of the text, as CommonMark says. No syntax
//! highlighting: it would cost more than the rest of the render (see the crate docs).

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::RenderOptions;
use super::wrap::{Piece, wrap};

/// Renders markdown `text` at `width` columns.
pub fn render_markdown(text: &str, width: u16, opts: &RenderOptions) -> Vec<Line<'static>> {
    let mut md = Md::new(width as usize, *opts);
    let parser = Parser::new_ext(
        text,
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS,
    );
    for event in parser {
        md.event(event);
    }
    md.flush();
    md.out
}

struct CodeBlock {
    lang: String,
    text: String,
}

struct Md {
    width: usize,
    opts: RenderOptions,
    out: Vec<Line<'static>>,
    inline: Vec<Piece>,
    styles: Vec<Style>,
    /// Open lists: the next number, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Indentation of each open list item (its marker's width).
    indents: Vec<usize>,
    /// The marker of an item whose first line is not out yet.
    marker: Option<String>,
    quotes: usize,
    code: Option<CodeBlock>,
    /// Open links: their destination and where their text starts in `inline`.
    links: Vec<(String, usize)>,
}

impl Md {
    fn new(width: usize, opts: RenderOptions) -> Self {
        Self {
            width,
            opts,
            out: Vec::new(),
            inline: Vec::new(),
            styles: vec![Style::default()],
            lists: Vec::new(),
            indents: Vec::new(),
            marker: None,
            quotes: 0,
            code: None,
            links: Vec::new(),
        }
    }

    fn st(&self, s: Style) -> Style {
        if self.opts.color { s } else { Style::default() }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, add: Style) {
        let s = self.style().patch(self.st(add));
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn text(&mut self, s: &str) {
        let style = self.style();
        self.inline.push((s.to_owned(), style));
    }

    fn quote_prefix(&self) -> Vec<Span<'static>> {
        let (bar, style) = if self.opts.color {
            ("│ ", Style::default().fg(Color::DarkGray))
        } else {
            ("> ", Style::default())
        };
        (0..self.quotes).map(|_| Span::styled(bar, style)).collect()
    }

    /// The prefixes of the next line: (first line, continuation lines).
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = self.quote_prefix();
        let mut rest = first.clone();
        let all: usize = self.indents.iter().sum();
        match self.marker.take() {
            Some(marker) => {
                let outer = all.saturating_sub(marker.chars().count());
                first.push(Span::raw(" ".repeat(outer)));
                first.push(Span::styled(
                    marker,
                    self.st(Style::default().fg(Color::Blue)),
                ));
            }
            None => first.push(Span::raw(" ".repeat(all))),
        }
        rest.push(Span::raw(" ".repeat(all)));
        (first, rest)
    }

    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let pieces = std::mem::take(&mut self.inline);
        let (first, rest) = self.prefixes();
        self.out.extend(wrap(&pieces, self.width, &first, &rest));
    }

    /// A blank line between top-level blocks (list items stay tight).
    fn block_gap(&mut self) {
        self.flush();
        if self.indents.is_empty() && self.out.last().is_some_and(|l| l.width() > 0) {
            self.out.push(Line::default());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some(code) = &mut self.code {
            match event {
                Event::Text(t) => code.text.push_str(&t),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(c) => {
                let style = self
                    .style()
                    .patch(self.st(Style::default().fg(Color::Cyan)));
                let c = if self.opts.color {
                    c.to_string()
                } else {
                    format!("`{c}`")
                };
                self.inline.push((c, style));
            }
            Event::Html(h) | Event::InlineHtml(h) => self.text(&h),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.block_gap();
                let n = self.width.clamp(1, 40);
                let style = self.st(Style::default().fg(Color::DarkGray));
                self.out
                    .push(Line::from(Span::styled("─".repeat(n), style)));
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(r) => self.text(&format!("[^{r}]")),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.text(&m),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_gap(),
            Tag::Heading { level, .. } => {
                self.block_gap();
                let mut s = Style::default().add_modifier(Modifier::BOLD);
                if level == pulldown_cmark::HeadingLevel::H1 {
                    s = s.add_modifier(Modifier::UNDERLINED);
                }
                self.push_style(s);
                self.text(&format!("{} ", "#".repeat(level as usize)));
            }
            Tag::BlockQuote(_) => {
                self.block_gap();
                self.quotes += 1;
            }
            Tag::CodeBlock(kind) => {
                self.block_gap();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => {
                        l.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some(CodeBlock {
                    lang,
                    text: String::new(),
                });
            }
            Tag::List(start) => {
                if self.indents.is_empty() {
                    self.block_gap();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "- ".to_owned(),
                };
                self.indents.push(marker.chars().count());
                self.marker = Some(marker);
            }
            Tag::Emphasis => self.push_style(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::default().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.push_style(Style::default().add_modifier(Modifier::CROSSED_OUT));
            }
            Tag::Link { dest_url, .. } => {
                self.push_style(
                    Style::default()
                        .fg(Color::Blue)
                        .add_modifier(Modifier::UNDERLINED),
                );
                self.links.push((dest_url.to_string(), self.inline.len()));
            }
            Tag::Image { dest_url, .. } => {
                self.text("[image: ");
                self.links.push((dest_url.to_string(), self.inline.len()));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quotes = self.quotes.saturating_sub(1);
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            TagEnd::Item => {
                if self.marker.is_some() && self.inline.is_empty() {
                    // An empty item still shows its marker.
                    self.text(" ");
                }
                self.flush();
                self.indents.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                self.link_target();
            }
            TagEnd::Image => {
                self.link_target();
                self.text("]");
            }
            _ => {}
        }
    }

    /// Writes ` (url)` after a link whose text is not the url itself.
    fn link_target(&mut self) {
        let Some((url, from)) = self.links.pop() else {
            return;
        };
        let shown: String = self.inline[from.min(self.inline.len())..]
            .iter()
            .map(|(t, _)| t.as_str())
            .collect();
        if !url.is_empty() && shown != url && !url.starts_with('#') {
            let style = self
                .style()
                .patch(self.st(Style::default().fg(Color::DarkGray)));
            self.inline.push((format!(" ({url})"), style));
        }
    }

    fn end_code(&mut self) {
        let Some(code) = self.code.take() else { return };
        let fence = self.st(Style::default().fg(Color::DarkGray));
        let body = self.st(Style::default().fg(Color::Yellow));
        let (_, rest) = self.prefixes();
        let mut label = rest.clone();
        label.push(Span::styled(format!("```{}", code.lang), fence));
        self.out.push(Line::from(label));
        let text = code.text.strip_suffix('\n').unwrap_or(&code.text);
        if !text.is_empty() {
            self.out
                .extend(wrap(&[(text.to_owned(), body)], self.width, &rest, &rest));
        }
        let mut close = rest;
        close.push(Span::styled("```", fence));
        self.out.push(Line::from(close));
    }
}
