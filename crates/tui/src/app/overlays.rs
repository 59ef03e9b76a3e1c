//! Which layer takes a key before the prompt: the permission dialog, the
//! AskUserQuestion dialog, the tasks panel or a list overlay (pickers, history search,
//! rewind, the MCP approval), in that order. Each of them sits in the prompt's place
//! while open, so the prompt sees a key only when none is open; what a layer's answer
//! means for the session is decided here (a "No" asks what to do instead, a closed
//! approval question moves to the next server).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Request};
use crate::ask_dialog::AskOutcome;
use crate::dialog::Choice;
use crate::overlay::{Outcome, Purpose};

impl App {
    /// The open layer's answer to `key`, or `None` when no layer is open and the key is
    /// the prompt's.
    pub(super) fn route_to_layer(&mut self, key: KeyEvent) -> Option<Request> {
        if self.dialog.is_some() {
            return Some(self.on_dialog_key(key));
        }
        if self.ask.is_some() {
            return Some(self.on_ask_key(key));
        }
        if self.tasks_panel.is_some() {
            return Some(self.on_panel_key(key));
        }
        let overlay = self.overlay.as_mut()?;
        self.dirty = true;
        Some(match overlay.on_key(key) {
            Outcome::Open => Request::None,
            Outcome::Closed => {
                if let Some(o) = self.overlay.take()
                    && matches!(o.purpose, Purpose::McpApproval(_))
                {
                    self.mcp_approval_closed();
                }
                Request::None
            }
            Outcome::Picked(value) => match self.overlay.take() {
                Some(o) => self.on_pick(o.purpose, value),
                None => Request::None,
            },
        })
    }

    fn on_dialog_key(&mut self, key: KeyEvent) -> Request {
        let Some(dialog) = self.dialog.as_mut() else {
            return Request::None;
        };
        self.dirty = true;
        let pick = match key.code {
            KeyCode::Up => {
                dialog.up();
                None
            }
            KeyCode::Down | KeyCode::Tab => {
                dialog.down();
                None
            }
            KeyCode::Enter => Some(dialog.selected),
            KeyCode::Char(c) if c.is_ascii_digit() => {
                c.to_digit(10).and_then(|d| dialog.choice_for_digit(d))
            }
            KeyCode::Char('y') => Some(0),
            KeyCode::Esc | KeyCode::Char('n') => Some(dialog.choices.len() - 1),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                Some(dialog.choices.len() - 1)
            }
            _ => None,
        };
        if let Some(i) = pick
            && let Some(dialog) = self.dialog.take()
            && let Choice::No = dialog.answer(i)
        {
            self.footer.notice = Some("Tell strata what to do differently".into());
        }
        Request::None
    }

    fn on_ask_key(&mut self, key: KeyEvent) -> Request {
        let Some(dialog) = self.ask.as_mut() else {
            return Request::None;
        };
        self.dirty = true;
        match dialog.on_key(key) {
            AskOutcome::Open => {}
            AskOutcome::Answered => self.ask = None,
            AskOutcome::Declined => {
                self.ask = None;
                self.footer.notice = Some("Tell strata what to do differently".into());
            }
        }
        Request::None
    }
}
