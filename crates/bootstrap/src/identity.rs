//! Session identity: session id and parent, original cwd, project root, cwd (BS-2), the
//! normalising cwd setter (BS-3) and session switching (BS-5).
//!
//! All of it sits behind one `RwLock` because these values are read together (a transcript
//! path needs the session id *and* the project dir) and change rarely; a switch must never
//! be observed half-done.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use unicode_normalization::{UnicodeNormalization, is_nfc};
use uuid::Uuid;

use crate::Bootstrap;
use crate::events::{CwdChanged, Event, SessionSwitched, Subscription, SwitchCause};
use crate::sync::{lock, read, write};

/// The identity fields, changed together under one lock.
pub(crate) struct Identity {
    pub(crate) session_id: Uuid,
    pub(crate) parent_session_id: Option<Uuid>,
    pub(crate) session_project_dir: Option<Arc<Path>>,
    pub(crate) original_cwd: Arc<Path>,
    pub(crate) project_root: Arc<Path>,
    pub(crate) cwd: Arc<Path>,
}

impl Identity {
    pub(crate) fn new(cwd: &Path) -> Self {
        let cwd: Arc<Path> = Arc::from(normalize_path(cwd));
        Self {
            session_id: Uuid::new_v4(),
            parent_session_id: None,
            session_project_dir: None,
            original_cwd: Arc::clone(&cwd),
            project_root: Arc::clone(&cwd),
            cwd,
        }
    }
}

/// The form in which bootstrap stores a directory (BS-3): symlinks and `..` resolved with
/// [`std::fs::canonicalize`] (the raw path when resolution fails, e.g. the directory does
/// not exist), then Unicode NFC.
///
/// NFC makes the same directory compare equal however its name was typed or reported
/// (macOS reports decomposed names, keyboards produce composed ones), so cwd-derived keys
/// such as the project directory name are stable. Paths that are not valid UTF-8 cannot be
/// normalised and are kept byte-for-byte. On a filesystem that stores names byte-exactly
/// (Linux ext4, unlike macOS APFS), a directory whose name is itself decomposed is stored
/// under its NFC spelling, which that filesystem treats as a different name: the spec asks
/// for the NFC form regardless, so callers that open files use the path they resolved, and
/// bootstrap's cwd is the identity key.
///
/// ```
/// use std::path::Path;
/// use strata_bootstrap::normalize_path;
///
/// // "e" followed by U+0301 COMBINING ACUTE ACCENT becomes the single code point "é".
/// let stored = normalize_path(Path::new("/no/such/cafe\u{301}"));
/// assert_eq!(stored, Path::new("/no/such/caf\u{e9}"));
/// ```
pub fn normalize_path(path: &Path) -> PathBuf {
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    match resolved.to_str() {
        Some(text) if !is_nfc(text) => PathBuf::from(text.nfc().collect::<String>()),
        _ => resolved,
    }
}

/// Session identity (BS-2, BS-3, BS-5).
impl Bootstrap {
    /// The current session id (a UUID v4 unless one was switched to).
    pub fn session_id(&self) -> Uuid {
        read(&self.identity).session_id
    }

    /// The session this one was derived from, if recorded (plan → implementation lineage).
    pub fn parent_session_id(&self) -> Option<Uuid> {
        read(&self.identity).parent_session_id
    }

    /// The directory holding the current session's transcript, if one was given to
    /// [`Bootstrap::switch_session`]; `None` means "derive it from the original cwd".
    pub fn session_project_dir(&self) -> Option<Arc<Path>> {
        read(&self.identity).session_project_dir.clone()
    }

    /// The cwd the process started in (normalised), the anchor for project-relative state.
    pub fn original_cwd(&self) -> Arc<Path> {
        Arc::clone(&read(&self.identity).original_cwd)
    }

    /// Replaces the original cwd (e.g. when the session moves into a worktree); stored in
    /// the [`normalize_path`] form. Returns the stored path.
    pub fn set_original_cwd(&self, path: &Path) -> Arc<Path> {
        let stored: Arc<Path> = Arc::from(normalize_path(path));
        write(&self.identity).original_cwd = Arc::clone(&stored);
        stored
    }

    /// The project root (git root or resolved cwd, computed by the config layer) that keys
    /// project settings and the cost slot.
    pub fn project_root(&self) -> Arc<Path> {
        Arc::clone(&read(&self.identity).project_root)
    }

    /// Sets the project root, stored in the [`normalize_path`] form. Returns the stored path.
    pub fn set_project_root(&self, path: &Path) -> Arc<Path> {
        let stored: Arc<Path> = Arc::from(normalize_path(path));
        write(&self.identity).project_root = Arc::clone(&stored);
        stored
    }

    /// The current working directory in its stored form (resolved, NFC; BS-3).
    pub fn cwd(&self) -> Arc<Path> {
        Arc::clone(&read(&self.identity).cwd)
    }

    /// Sets the cwd (BS-3): stores the [`normalize_path`] form, clears the settings cache
    /// (bumps [`Bootstrap::settings_cache_epoch`]) and, when the stored path differs from the
    /// previous one, notifies [`Bootstrap::on_cwd_changed`] listeners. Returns the stored
    /// path.
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_bootstrap::Bootstrap;
    ///
    /// let state = Bootstrap::new(Path::new("/"));
    /// let epoch = state.settings_cache_epoch();
    /// let stored = state.set_cwd(Path::new("/no/such/dir/cafe\u{301}"));
    /// assert_eq!(&*stored, Path::new("/no/such/dir/caf\u{e9}"));
    /// assert_eq!(state.cwd(), stored);
    /// assert!(state.settings_cache_epoch() > epoch);
    /// ```
    pub fn set_cwd(&self, path: &Path) -> Arc<Path> {
        // Resolve before taking the lock: canonicalize touches the filesystem.
        let stored: Arc<Path> = Arc::from(normalize_path(path));
        {
            let mut identity = write(&self.identity);
            let old = std::mem::replace(&mut identity.cwd, Arc::clone(&stored));
            // Bumped inside the lock so a reader that sees the new cwd also sees the new
            // epoch when it checks its cache afterwards.
            self.settings_epoch.fetch_add(1, Ordering::AcqRel);
            if old != stored {
                self.events.enqueue(Event::Cwd(CwdChanged {
                    old,
                    new: Arc::clone(&stored),
                }));
            }
        }
        self.deliver_events();
        stored
    }

    /// A counter that changes whenever the settings cache must be discarded (cwd set, or
    /// [`Bootstrap::invalidate_settings_cache`]). A cache elsewhere remembers the epoch it
    /// was filled at and refills when the value differs; bootstrap cannot clear that cache
    /// itself because it depends on no other crate (BS-1).
    pub fn settings_cache_epoch(&self) -> u64 {
        self.settings_epoch.load(Ordering::Acquire)
    }

    /// Marks every settings cache stale (e.g. a settings file changed on disk). Returns the
    /// new epoch.
    pub fn invalidate_settings_cache(&self) -> u64 {
        self.settings_epoch.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Switches to another session (BS-5): forgets the old session's plan slug, sets the new
    /// id and transcript project dir, and notifies [`Bootstrap::on_session_switched`]
    /// listeners with the old and new id. Switching to the id that is already current only
    /// updates the project dir (nothing was switched, so nothing is cleared or announced).
    ///
    /// ```
    /// use std::path::{Path, PathBuf};
    /// use std::sync::{Arc, Mutex};
    /// use strata_bootstrap::{Bootstrap, Uuid};
    ///
    /// let state = Bootstrap::new(Path::new("/"));
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// let _sub = state.on_session_switched(move |s| log.lock().unwrap().push((s.old_id, s.new_id)));
    ///
    /// let old = state.session_id();
    /// let resumed = Uuid::new_v4();
    /// state.switch_session(resumed, Some(PathBuf::from("/cfg/projects/-work")));
    /// assert_eq!(state.session_id(), resumed);
    /// assert_eq!(*seen.lock().unwrap(), vec![(old, resumed)]);
    /// ```
    pub fn switch_session(&self, id: Uuid, project_dir: Option<PathBuf>) {
        let project_dir: Option<Arc<Path>> = project_dir.map(Arc::from);
        {
            // Lock order everywhere: identity, then caches, then the event queue.
            let mut identity = write(&self.identity);
            let old_id = identity.session_id;
            identity.session_project_dir = project_dir.clone();
            if old_id == id {
                return;
            }
            lock(&self.caches.plan_slugs).remove(&old_id);
            identity.session_id = id;
            self.prompt_cache.reset_for_new_session();
            self.events.enqueue(Event::Session(SessionSwitched {
                old_id,
                new_id: id,
                project_dir,
                cause: SwitchCause::Switched,
            }));
        }
        self.deliver_events();
    }

    /// Replaces the session id with a fresh UUID v4 and returns it (BS-5).
    ///
    /// With `set_current_as_parent`, the old id becomes the parent (plan → implementation
    /// lineage) and its plan slug is kept, so the new session can still find the plan it
    /// implements through [`Bootstrap::parent_session_id`]. Without it, the new session has
    /// no parent and the old session's plan slug is dropped like on a switch. The transcript
    /// project dir is reset to "derive from the original cwd". Listeners of
    /// [`Bootstrap::on_session_switched`] are notified: every holder of the id must learn
    /// that it changed, whatever the cause.
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_bootstrap::Bootstrap;
    ///
    /// let state = Bootstrap::new(Path::new("/"));
    /// let plan_session = state.session_id();
    /// let implementation = state.regenerate_session_id(true);
    /// assert_ne!(implementation, plan_session);
    /// assert_eq!(state.parent_session_id(), Some(plan_session));
    /// ```
    pub fn regenerate_session_id(&self, set_current_as_parent: bool) -> Uuid {
        let new_id = Uuid::new_v4();
        {
            let mut identity = write(&self.identity);
            let old_id = identity.session_id;
            if set_current_as_parent {
                identity.parent_session_id = Some(old_id);
            } else {
                identity.parent_session_id = None;
                lock(&self.caches.plan_slugs).remove(&old_id);
            }
            identity.session_id = new_id;
            identity.session_project_dir = None;
            self.prompt_cache.reset_for_new_session();
            self.events.enqueue(Event::Session(SessionSwitched {
                old_id,
                new_id,
                project_dir: None,
                cause: SwitchCause::Regenerated {
                    parent_recorded: set_current_as_parent,
                },
            }));
        }
        self.deliver_events();
        new_id
    }

    /// Calls `listener` after every change of the stored cwd (BS-3), with the old and new
    /// path. Dropping the returned [`Subscription`] unsubscribes.
    pub fn on_cwd_changed(
        &self,
        listener: impl Fn(&CwdChanged) + Send + Sync + 'static,
    ) -> Subscription {
        self.events.on_cwd_changed(Arc::new(listener))
    }

    /// Calls `listener` after every change of the session id (BS-5), with the old and new
    /// id. Dropping the returned [`Subscription`] unsubscribes.
    pub fn on_session_switched(
        &self,
        listener: impl Fn(&SessionSwitched) + Send + Sync + 'static,
    ) -> Subscription {
        self.events.on_session_switched(Arc::new(listener))
    }

    /// Delivers queued events; an endless listener feedback loop is cut off and logged.
    fn deliver_events(&self) {
        if let Err(overflow) = self.events.drain() {
            self.log_error(format!(
                "bootstrap listeners kept raising events: stopped after {} deliveries and \
                 dropped {} queued events (a cwd or session listener probably changes the \
                 value it listens to)",
                crate::events::MAX_EVENTS_PER_DISPATCH,
                overflow.dropped
            ));
        }
    }
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
