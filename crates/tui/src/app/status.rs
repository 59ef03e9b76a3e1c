//! The app's side of the `statusLine` setting: what the command is given (the session
//! as JSON, the reference agent's shape) and when it is asked to refresh.

use serde_json::json;

use super::App;
use crate::status_line::{StatusLine, command_of};

impl App {
    /// Starts the status-line task (the binary calls it once the loop is about to run).
    pub fn start_status_line(&mut self) {
        self.status_runner = Some(StatusLine::start(self.tx.clone(), self.cwd.clone()));
        self.poke_status();
    }

    /// Asks the status line for a refresh, if the settings have one (they are live: a
    /// removed setting clears the line).
    pub(super) fn poke_status(&mut self) {
        let Some(runner) = &self.status_runner else {
            return;
        };
        let Some(command) = self.engine.store().with(|s| command_of(&s.settings)) else {
            if self.status_line.take().is_some() {
                self.dirty = true;
            }
            return;
        };
        let model = self.engine.model();
        let input = json!({
            "hook_event_name": "Status",
            "session_id": self.engine.session_id(),
            "transcript_path": self.engine.transcript_path(),
            "cwd": self.cwd,
            "model": {"id": model, "display_name": model},
            "workspace": {"current_dir": self.cwd, "project_dir": self.project},
            "version": env!("CARGO_PKG_VERSION"),
            "output_style": {"name": "default"},
            "cost": {"total_cost_usd": self.footer.cost_usd},
            "permission_mode": self.footer.mode.to_string(),
        });
        runner.poke(command, input.to_string());
    }
}
