//! The command menu: as soon as `/` starts the prompt, the commands the user can run are
//! listed under it — the UI's own ([`crate::commands::BUILTINS`]), custom command files,
//! skills and MCP prompts, each with its description — and filtered as the name is typed
//! (nucleo, through [`FuzzyList`]).
//!
//! Keys (the app routes them here while the menu shows matches): ↑/↓ choose, Tab puts
//! the chosen `/name ` in the prompt (a space after it, ready for arguments), Enter runs
//! it — except a command that cannot run without an argument (`/add-dir <path>`, an MCP
//! prompt with arguments, a custom command whose hint says `<…>`): Enter completes it
//! like Tab, since running it bare could only fail. Esc closes the menu for what is
//! typed; it opens again once the prompt no longer is a lone `/word`.
//!
//! The menu shows while the whole prompt is one `/word` (nothing after the name): once
//! a blank follows, the user is typing arguments. A prompt recalled from the history
//! does not open it, so ↑ keeps walking the history.
//!
//! Pure data and rendering; the app gathers the items (`app/command_menu.rs`).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr as _;

use crate::picker::FuzzyList;
use crate::text::cut_to_width;

/// How many commands the menu shows at once.
pub const SHOWN: usize = 8;
/// The widest the name column gets, in columns.
const NAME_COLUMN_MAX: usize = 30;

/// One command the menu offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MenuItem {
    /// The name after the `/`.
    pub name: String,
    /// What to type after the name (`[id]`, `<path>`), empty for nothing.
    pub args: String,
    /// What it does.
    pub description: String,
    /// Where it comes from, shown after the description (`project`, `skill, user`,
    /// `MCP server docs`); empty for the UI's own commands.
    pub source: String,
    /// Enter completes it rather than running it (it cannot run without an argument).
    pub needs_argument: bool,
}

/// What the prompt's text asks of the menu: the typed name (after the `/`) when the
/// whole prompt is one `/word`, else `None`.
pub fn menu_query(text: &str) -> Option<&str> {
    let name = text.strip_prefix('/')?;
    (!name.contains(char::is_whitespace)).then_some(name)
}

/// The menu's state: the items, filtered by the typed name, and the chosen one.
pub struct CommandMenu {
    list: FuzzyList<MenuItem>,
}

impl CommandMenu {
    /// A menu over `items` in the order given (the order shown before anything is typed).
    pub fn new(items: Vec<MenuItem>) -> Self {
        Self {
            list: FuzzyList::new(items, |i| i.name.clone()),
        }
    }

    /// Filters by the typed name (the choice goes back to the best match); nothing
    /// changes when the name is the same.
    pub fn set_query(&mut self, query: &str) {
        if query != self.list.query() {
            self.list.set_query(query);
        }
    }

    /// How many commands match.
    pub fn match_count(&self) -> usize {
        self.list.matches().len()
    }

    /// The chosen command.
    pub fn selected(&self) -> Option<&MenuItem> {
        self.list.selected_item()
    }

    /// ↑ (`-1`) or ↓ (`1`); the choice stays within the matches.
    pub fn move_selection(&mut self, delta: isize) {
        self.list.move_selection(delta);
    }

    /// The menu's lines at `width`: up to [`SHOWN`] commands around the choice, the
    /// chosen one marked `❯`; one dim line when nothing matches.
    pub fn render(&self, width: u16) -> Vec<Line<'static>> {
        let w = usize::from(width);
        if self.match_count() == 0 {
            return vec![Line::styled(
                cut_to_width("  (no matching command: enter sends it as typed)", w).to_owned(),
                Style::default().fg(Color::DarkGray),
            )];
        }
        let sel = self.list.selected();
        let start = sel.saturating_sub(SHOWN - 1);
        let end = self.match_count().min(start + SHOWN);
        let usage = |i: &MenuItem| {
            if i.args.is_empty() {
                format!("/{}", i.name)
            } else {
                format!("/{} {}", i.name, i.args)
            }
        };
        let column = (start..end)
            .filter_map(|n| self.list.matched(n))
            .map(|i| usage(i).width())
            .max()
            .unwrap_or(0)
            .min(NAME_COLUMN_MAX);
        (start..end)
            .filter_map(|n| {
                let item = self.list.matched(n)?;
                let chosen = n == sel;
                let (mark, name_style) = if chosen {
                    (
                        "❯ ",
                        Style::default()
                            .fg(Color::Cyan)
                            .add_modifier(Modifier::BOLD),
                    )
                } else {
                    ("  ", Style::default())
                };
                let name = cut_to_width(&usage(item), column).to_owned();
                let pad = " ".repeat(column - name.width() + 2);
                let mut about = clean(&item.description);
                if !item.source.is_empty() {
                    about = if about.is_empty() {
                        format!("({})", item.source)
                    } else {
                        format!("{about} ({})", item.source)
                    };
                }
                let room = w.saturating_sub(2 + column + 2);
                let about = cut_to_width(&about, room).to_owned();
                if w < 4 {
                    // No room for the mark and a name: the name alone, cut.
                    return Some(Line::styled(
                        cut_to_width(&usage(item), w).to_owned(),
                        name_style,
                    ));
                }
                let mut spans = vec![Span::styled(mark, name_style)];
                if 2 + column <= w {
                    spans.push(Span::styled(name, name_style));
                    spans.push(Span::raw(pad));
                    spans.push(Span::styled(about, Style::default().fg(Color::DarkGray)));
                } else {
                    spans.push(Span::styled(
                        cut_to_width(&usage(item), w.saturating_sub(2)).to_owned(),
                        name_style,
                    ));
                }
                Some(Line::from(spans))
            })
            .collect()
    }
}

/// A description on one line, without control characters (a command file's front
/// matter may hold anything).
fn clean(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn item(name: &str, args: &str, description: &str, source: &str) -> MenuItem {
        MenuItem {
            name: name.into(),
            args: args.into(),
            description: description.into(),
            source: source.into(),
            needs_argument: args.starts_with('<'),
        }
    }

    fn menu() -> CommandMenu {
        CommandMenu::new(vec![
            item("help", "", "this list", ""),
            item("resume", "[id]", "resume an earlier session", ""),
            item("rewind", "", "go back to before a prompt", ""),
            item(
                "add-dir",
                "<path>",
                "let the tools work in another directory",
                "",
            ),
            item("review-pr", "[number]", "Review a pull request", "project"),
            item("greet", "", "Greets someone", "skill, user"),
            item(
                "mcp__docs__search",
                "<query>",
                "Search the docs",
                "MCP server docs",
            ),
        ])
    }

    #[test]
    fn i25_6_the_menu_shows_for_a_lone_slash_word_only() {
        assert_eq!(menu_query("/"), Some(""));
        assert_eq!(menu_query("/re"), Some("re"));
        assert_eq!(menu_query("/resume abc"), None);
        assert_eq!(menu_query("/resume "), None);
        assert_eq!(menu_query("hello /re"), None);
        assert_eq!(menu_query(""), None);
    }

    #[test]
    fn i25_6_typing_filters_the_commands_best_match_first() {
        let mut m = menu();
        assert_eq!(m.match_count(), 7);
        assert_eq!(m.selected().unwrap().name, "help");
        m.set_query("rev");
        assert_eq!(m.selected().unwrap().name, "review-pr");
        m.set_query("res");
        assert_eq!(m.selected().unwrap().name, "resume");
        m.set_query("search");
        assert_eq!(m.match_count(), 1);
        assert_eq!(m.selected().unwrap().name, "mcp__docs__search");
        m.set_query("zzz");
        assert_eq!(m.match_count(), 0);
        assert!(m.selected().is_none());
    }

    #[test]
    fn i25_6_arrows_choose_within_the_matches() {
        let mut m = menu();
        m.move_selection(-1);
        assert_eq!(m.selected().unwrap().name, "help");
        m.move_selection(1);
        m.move_selection(1);
        assert_eq!(m.selected().unwrap().name, "rewind");
        for _ in 0..20 {
            m.move_selection(1);
        }
        assert_eq!(m.selected().unwrap().name, "mcp__docs__search");
        // A new query chooses its best match again.
        m.set_query("he");
        assert_eq!(m.selected().unwrap().name, "help");
    }

    #[test]
    fn i25_6_the_menu_lists_names_hints_descriptions_and_sources() {
        let m = menu();
        insta::assert_snapshot!(crate::vt_snapshot::screen(&m.render(80), 80));
    }

    #[test]
    fn i25_6_the_menu_scrolls_with_the_choice_and_fits_narrow_terminals() {
        let mut m = CommandMenu::new(
            (0..12)
                .map(|i| item(&format!("cmd{i:02}"), "", "does a thing", ""))
                .collect(),
        );
        for _ in 0..10 {
            m.move_selection(1);
        }
        let lines: Vec<String> = m.render(80).iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), SHOWN);
        assert!(lines[0].starts_with("  /cmd03"), "{lines:?}");
        assert!(lines[SHOWN - 1].starts_with("❯ /cmd10"), "{lines:?}");
        for width in [1u16, 8, 20, 40] {
            for l in menu().render(width) {
                assert!(
                    crate::text::line_width(&l) <= usize::from(width),
                    "{width}: {l}"
                );
            }
        }
        let mut none = menu();
        none.set_query("zzz");
        insta::assert_snapshot!(crate::vt_snapshot::screen(&none.render(60), 60));
    }
}
