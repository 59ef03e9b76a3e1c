//! Live settings for every session, headless included (UI-7, issue 10 item 2).
//!
//! The engine starts the app store's settings watcher when it opens a session. An
//! external edit of the user, project, local or `--settings` file is merged again and
//! applied to the store (the settings domain: the model when neither `--model` nor a
//! resumed session chose one, `env` through FX-5, the store's rule view), and here to the
//! [`PermissionContext`] the permission decisions read, so the next tool call obeys the
//! new rules. A file that stops parsing keeps its last good values (the settings loader
//! fails closed) and is reported once; nothing is written back to it.
//!
//! What does not change mid-session: the tools offered to the model (a tool left out at
//! start by a whole-tool deny rule stays out; one denied later is refused by the decision
//! instead), and the launch flags, which are applied again on top of every reload.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use strata_config::{MergedSettings, SettingsFiles, SettingsWatcher};
use strata_state::AppRoot;

use crate::permissions::{BypassAvailability, PermissionContext, PermissionLaunch};
use crate::sync::lock;

/// How long the watcher waits for a burst of file events to end (an editor's save is
/// several) before reloading once.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// The permission context of the session's settings and launch flags, replaced whole on
/// every settings reload. Session additions (prompt answers) are kept apart, in
/// `permission_updates`, and added at each check.
pub(crate) struct LivePermissions {
    launch: PermissionLaunch,
    current: RwLock<PermissionContext>,
    /// The tools' view of the additional directories (Bash's `cd` check): the settings'
    /// part of it is replaced on reload, what the session added stays.
    working_dirs: Arc<Mutex<Vec<PathBuf>>>,
    /// Rule problems already reported, so a reload repeats none.
    reported: Mutex<Vec<String>>,
}

impl LivePermissions {
    /// The context the session opened with; `reported` are the rule problems already
    /// shown at start.
    pub(crate) fn new(
        context: PermissionContext,
        launch: PermissionLaunch,
        working_dirs: Arc<Mutex<Vec<PathBuf>>>,
        reported: Vec<String>,
    ) -> Self {
        Self {
            launch,
            current: RwLock::new(context),
            working_dirs,
            reported: Mutex::new(reported),
        }
    }

    /// The context of the next decision (a cheap clone: the rules are shared).
    pub(crate) fn current(&self) -> PermissionContext {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether `bypassPermissions` may be entered now.
    pub(crate) fn bypass(&self) -> BypassAvailability {
        self.current().bypass
    }

    /// A directory of a permission update, made absolute as the context makes settings'.
    pub(crate) fn absolute_dir(&self, dir: &str) -> PathBuf {
        self.current().absolute_dir(dir)
    }

    /// Applies freshly merged settings.
    pub(crate) fn reload(&self, merged: &MergedSettings) {
        let mut next = self.current();
        let errors = next.reload_settings(merged, &self.launch);
        {
            let mut reported = lock(&self.reported);
            for e in errors.iter().map(ToString::to_string) {
                if !reported.contains(&e) {
                    tracing::warn!("{e}");
                    reported.push(e);
                }
            }
        }
        let mut current = self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        {
            let mut dirs = lock(&self.working_dirs);
            dirs.retain(|d| !current.additional_directories.contains(d));
            let session: Vec<PathBuf> = std::mem::take(&mut *dirs);
            dirs.extend(next.additional_directories.iter().cloned());
            dirs.extend(
                session
                    .into_iter()
                    .filter(|d| !next.additional_directories.contains(d)),
            );
        }
        *current = next;
    }
}

/// Starts watching the session's settings files: every change goes to the store and to
/// `live`. A watcher that cannot start (no inotify watches left) is a warning: the
/// session runs on the settings it opened with.
pub(crate) fn watch(
    root: &AppRoot,
    files: SettingsFiles,
    live: Arc<LivePermissions>,
    warnings: &mut Vec<String>,
) -> Option<SettingsWatcher> {
    match root.watch_settings_with(files, DEBOUNCE, move |merged| live.reload(merged)) {
        Ok(watcher) => Some(watcher),
        Err(e) => {
            warnings.push(format!(
                "{e}; settings edited during this session will not take effect until the next one"
            ));
            None
        }
    }
}
