//! Live settings for every session, headless included (UI-7, issue 10 item 2).
//!
//! The engine starts the app store's settings watcher when it opens a session. An
//! external edit of the user, project, local or `--settings` file — strata's own or the
//! reference agent's of the same scope (`.claude/settings.json`, …) — is merged again and
//! applied to the store (`strata_state::apply_settings_change`): the settings domain (the
//! model when neither `--model` nor a resumed session chose one, `env` through FX-5) and
//! the permission context the decisions read — the settings files' rules and directories
//! replaced, what the command line and the session added kept, bypass only ever taken
//! away — so the next tool call obeys the new rules. A file that stops parsing keeps its
//! last good values (the settings loader fails closed) and is reported once; nothing is
//! written back to it.
//!
//! What does not change mid-session: the tools offered to the model (a tool left out at
//! start by a whole-tool deny rule stays out; one denied later is refused by the decision
//! instead).

use std::sync::Mutex;
use std::time::Duration;

use strata_config::{MergedSettings, SettingsFiles, SettingsWatcher};
use strata_state::{AppRoot, SettingsPermissions};

use crate::sync::lock;

/// How long the watcher waits for a burst of file events to end (an editor's save is
/// several) before reloading once.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// Reports each rule problem of a reload once (the store holds the rules; this only
/// remembers what the user was already told).
struct RuleProblems {
    reported: Mutex<Vec<String>>,
}

impl RuleProblems {
    fn report(&self, merged: &MergedSettings) {
        let (_, errors) = SettingsPermissions::parse_merged(merged);
        let mut reported = lock(&self.reported);
        for e in errors.iter().map(ToString::to_string) {
            if !reported.contains(&e) {
                tracing::warn!("{e}");
                reported.push(e);
            }
        }
    }
}

/// Starts watching the session's settings files: every change goes to the store.
/// `reported` are the rule problems already shown at start. A watcher that cannot start
/// (no inotify watches left) is a warning: the session runs on the settings it opened
/// with.
pub(crate) fn watch(
    root: &AppRoot,
    files: SettingsFiles,
    reported: Vec<String>,
    warnings: &mut Vec<String>,
) -> Option<SettingsWatcher> {
    let problems = RuleProblems {
        reported: Mutex::new(reported),
    };
    match root.watch_settings_with(files, DEBOUNCE, move |merged| problems.report(merged)) {
        Ok(watcher) => Some(watcher),
        Err(e) => {
            warnings.push(format!(
                "{e}; settings edited during this session will not take effect until the next one"
            ));
            None
        }
    }
}
