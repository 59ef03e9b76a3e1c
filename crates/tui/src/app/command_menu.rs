//! The command menu in the app: when it opens (a prompt that is one `/word`, typed, not
//! recalled from the history), what it offers — the UI's commands, then every command
//! the engine lists (custom command files, skills, MCP prompts:
//! `Engine::slash_command_entries`) — and the keys it takes (↑/↓, Tab, Enter, Esc; see
//! [`crate::menu`] for what each does).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::Line;

use super::{App, Request};
use crate::commands::BUILTINS;
use crate::menu::{CommandMenu, MenuItem, menu_query};

/// The menu's state in the app.
#[derive(Default)]
pub(crate) struct MenuState {
    /// The open menu.
    menu: Option<CommandMenu>,
    /// Esc closed it for this prompt: it stays closed until the prompt stops being a
    /// lone `/word`.
    hidden: bool,
}

impl App {
    /// The commands the menu offers: the UI's own in `/help`'s order, then the engine's.
    fn menu_items(&self) -> Vec<MenuItem> {
        let entries = self.engine.slash_command_entries();
        // A command file or skill of a built-in's name is what `/name` runs (`submit`
        // gives the engine's slash prompts first say), so the menu shows that one.
        let mut items: Vec<MenuItem> = BUILTINS
            .iter()
            .filter(|b| !entries.iter().any(|e| e.name == b.name))
            .map(|b| MenuItem {
                name: b.name.to_owned(),
                args: b.args.to_owned(),
                description: b.description.to_owned(),
                source: String::new(),
                needs_argument: b.needs_argument(),
            })
            .collect();
        for e in entries {
            let args = e.argument_hint.unwrap_or_default();
            items.push(MenuItem {
                needs_argument: args.trim_start().starts_with('<'),
                name: e.name,
                args,
                description: e.description,
                source: e.source.label(),
            });
        }
        items
    }

    /// Opens, filters or closes the menu after the prompt changed.
    pub(super) fn refresh_menu(&mut self) {
        let query = match menu_query(self.input.text()) {
            Some(q) if !self.input.is_browsing() => q.to_owned(),
            _ => {
                self.menu.menu = None;
                self.menu.hidden = false;
                return;
            }
        };
        if self.menu.hidden {
            return;
        }
        if self.menu.menu.is_none() {
            self.menu.menu = Some(CommandMenu::new(self.menu_items()));
        }
        if let Some(menu) = &mut self.menu.menu {
            menu.set_query(&query);
        }
    }

    /// The menu's lines under the prompt (none while it is closed).
    pub(super) fn menu_lines(&self, width: u16) -> Vec<Line<'static>> {
        self.menu
            .menu
            .as_ref()
            .map(|m| m.render(width))
            .unwrap_or_default()
    }

    /// A key while the menu is open: `Some` when the menu took it. Enter on a command
    /// that runs bare leaves `/name` in the prompt and lets the prompt's Enter send it.
    pub(super) fn on_menu_key(&mut self, key: KeyEvent) -> Option<Request> {
        let menu = self.menu.menu.as_mut()?;
        if key.code == KeyCode::Esc {
            self.menu.menu = None;
            self.menu.hidden = true;
            return Some(Request::None);
        }
        let chosen = menu.selected()?.clone();
        if !key.modifiers.is_empty() {
            return None;
        }
        match key.code {
            KeyCode::Up => menu.move_selection(-1),
            KeyCode::Down => menu.move_selection(1),
            KeyCode::Tab => self.input.set_text(&format!("/{} ", chosen.name)),
            KeyCode::Enter if chosen.needs_argument => {
                self.input.set_text(&format!("/{} ", chosen.name));
            }
            KeyCode::Enter => {
                self.input.set_text(&format!("/{}", chosen.name));
                self.menu.menu = None;
                return None;
            }
            _ => return None,
        }
        Some(Request::None)
    }
}
