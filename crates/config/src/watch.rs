//! Watching the settings files and reporting which source changed (UI-7).
//!
//! Every source's file is watched, the reference agent's (`.claude/settings.json`, …)
//! included. Directories are watched, not files: every writer (strata's own atomic replace, most
//! editors) replaces a file by renaming a new one over it, which ends a watch on the old
//! file. A directory that does not exist yet (a project without `.strata/`) is covered by
//! watching its nearest existing ancestor; when it appears it is watched itself, and any
//! settings file already in it is reported, so a file created right after its directory
//! is not missed.
//!
//! Events are debounced here and reduced to one [`SettingsChange`] per changed file per
//! batch: the dispatch thread blocks until an event arrives, then collects until the
//! files have been quiet for the debounce window. Nothing runs while nothing changes (a
//! ticking debouncer thread woke 40 times a second in every idle session). The callback
//! runs on the watcher's own thread; a change may be reported that left the file's
//! content equal (strata's own writes are reported too), so the receiver reloads and
//! compares.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher as _};

use crate::error::ConfigError;
use crate::sources::{FlagSettings, SettingsLocations, SettingsSource};

/// A settings file changed (created, modified, replaced or removed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsChange {
    /// Which source it belongs to.
    pub source: SettingsSource,
    /// The file.
    pub path: PathBuf,
}

/// A running watch over every settings source. Dropping it stops the watch and waits for
/// its thread to end, so nothing the callback holds (a session's store, and through it
/// the transcript writer and its lock) outlives the watcher.
///
/// ```no_run
/// use std::time::Duration;
/// use strata_config::{SettingsLocations, SettingsWatcher};
///
/// let locations = SettingsLocations::discover(&std::env::current_dir()?)?;
/// let _watcher = SettingsWatcher::start(&locations, Duration::from_millis(200), |change| {
///     // e.g. store.update(apply_settings_change(change.source))
///     eprintln!("{} settings changed: {}", change.source, change.path.display());
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SettingsWatcher {
    // Dropped first in `Drop`: dropping the watcher stops its thread, which drops the
    // event sender, which ends our dispatch thread.
    state: Option<Arc<Mutex<WatchState>>>,
    /// The dispatch thread, joined on drop.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for SettingsWatcher {
    fn drop(&mut self) {
        drop(self.state.take());
        if let Some(thread) = self.thread.take()
            // A callback that drops its own watcher must not wait for itself.
            && thread.thread().id() != std::thread::current().id()
            && thread.join().is_err()
        {
            tracing::error!("the settings watcher's thread panicked");
        }
    }
}

impl std::fmt::Debug for SettingsWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsWatcher").finish_non_exhaustive()
    }
}

struct WatchState {
    watcher: notify::RecommendedWatcher,
    /// Directories holding settings files that did not exist when last checked.
    pending: Vec<PathBuf>,
    /// Paths currently watched (directories or stand-in ancestors).
    watched: HashSet<PathBuf>,
}

impl SettingsWatcher {
    /// Starts watching. `on_change` is called from the watcher's thread, once per changed
    /// settings file per debounce window.
    pub fn start(
        locations: &SettingsLocations,
        debounce: Duration,
        mut on_change: impl FnMut(SettingsChange) + Send + 'static,
    ) -> Result<Self, ConfigError> {
        let (tx, rx) = std::sync::mpsc::channel::<notify::Result<notify::Event>>();
        let watcher = notify::recommended_watcher(tx)?;
        let mut state = WatchState {
            watcher,
            pending: watched_dirs(locations),
            watched: HashSet::new(),
        };
        state.watch_pending()?;
        let state = Arc::new(Mutex::new(state));
        let weak: Weak<Mutex<WatchState>> = Arc::downgrade(&state);
        let locations = locations.clone();
        let thread = std::thread::Builder::new()
            .name("strata-settings-watch".into())
            .spawn(move || {
                while let Some((batch, open)) = next_batch(&rx, debounce) {
                    let mut changed: Vec<SettingsChange> = Vec::new();
                    for event in batch {
                        match event {
                            Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
                            Ok(event) => {
                                for path in &event.paths {
                                    note(&locations, path, &mut changed);
                                }
                            }
                            Err(e) => tracing::warn!(error = %e, "settings watcher error"),
                        }
                    }
                    // Directories that appeared since: watch them, and report the settings
                    // files already in them (written before the watch existed).
                    if let Some(state) = weak.upgrade() {
                        let appeared = state
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .watch_pending()
                            .unwrap_or_else(|e| {
                                tracing::warn!(error = %e, "cannot extend settings watch");
                                Vec::new()
                            });
                        for dir in appeared {
                            for path in files_in(&locations, &dir) {
                                note(&locations, &path, &mut changed);
                            }
                        }
                    }
                    for change in changed {
                        on_change(change);
                    }
                    if !open {
                        break;
                    }
                }
            })
            .map_err(|e| ConfigError::io("start a thread to watch", Path::new("settings"), e))?;
        Ok(Self {
            state: Some(state),
            thread: Some(thread),
        })
    }
}

impl WatchState {
    /// Watches every pending directory that now exists (returning those), and an existing
    /// ancestor for the rest.
    fn watch_pending(&mut self) -> Result<Vec<PathBuf>, ConfigError> {
        let mut appeared = Vec::new();
        let mut still = Vec::new();
        for dir in std::mem::take(&mut self.pending) {
            if dir.is_dir() {
                self.watch(&dir)?;
                appeared.push(dir);
            } else {
                if let Some(ancestor) = dir.ancestors().skip(1).find(|a| a.is_dir()) {
                    self.watch(ancestor)?;
                }
                still.push(dir);
            }
        }
        self.pending = still;
        Ok(appeared)
    }

    fn watch(&mut self, dir: &Path) -> Result<(), ConfigError> {
        if self.watched.insert(dir.to_path_buf()) {
            self.watcher.watch(dir, RecursiveMode::NonRecursive)?;
        }
        Ok(())
    }
}

/// The longest a burst of events may hold a batch back (an editor saving in a loop must
/// not keep the reload from ever happening).
const MAX_BATCH_WAIT_WINDOWS: u32 = 10;

/// The next batch: blocks (without waking) until an event arrives, then takes events
/// until none came for `debounce`, at most [`MAX_BATCH_WAIT_WINDOWS`] windows. `None` once
/// the watcher is gone and nothing is left; the flag is `false` when the batch is the
/// last one.
fn next_batch(
    rx: &Receiver<notify::Result<notify::Event>>,
    debounce: Duration,
) -> Option<(Vec<notify::Result<notify::Event>>, bool)> {
    let first = rx.recv().ok()?;
    let mut batch = vec![first];
    let until = Instant::now() + debounce * MAX_BATCH_WAIT_WINDOWS;
    loop {
        let wait = debounce.min(until.saturating_duration_since(Instant::now()));
        if wait.is_zero() {
            return Some((batch, true));
        }
        match rx.recv_timeout(wait) {
            Ok(event) => batch.push(event),
            Err(RecvTimeoutError::Timeout) => return Some((batch, true)),
            Err(RecvTimeoutError::Disconnected) => return Some((batch, false)),
        }
    }
}

fn note(locations: &SettingsLocations, path: &Path, changed: &mut Vec<SettingsChange>) {
    if let Some(source) = locations.source_of(path)
        && !changed.iter().any(|c| c.path == path)
    {
        changed.push(SettingsChange {
            source,
            path: path.to_path_buf(),
        });
    }
}

/// The directories that hold settings files.
fn watched_dirs(l: &SettingsLocations) -> Vec<PathBuf> {
    let mut files = vec![
        l.user.clone(),
        l.project.clone(),
        l.local.clone(),
        l.managed_file(),
    ];
    if let Some(FlagSettings::File(f)) = &l.flag {
        files.push(f.clone());
    }
    // The reference agent's files are sources too: an edit of `.claude/settings.json`
    // applies live like one of `.strata/settings.json`.
    let r = &l.reference;
    files.extend(
        [&r.user, &r.project, &r.local]
            .into_iter()
            .flatten()
            .cloned(),
    );
    let mut dirs: Vec<PathBuf> = Vec::new();
    for f in files {
        if let Some(d) = f.parent()
            && !dirs.iter().any(|x| x == d)
        {
            dirs.push(d.to_path_buf());
        }
    }
    let dropins = l.managed_dropin_dir();
    if !dirs.contains(&dropins) {
        dirs.push(dropins);
    }
    dirs
}

/// Settings files that exist directly in `dir`.
fn files_in(l: &SettingsLocations, dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| l.source_of(p).is_some())
                .collect()
        })
        .unwrap_or_default()
}
