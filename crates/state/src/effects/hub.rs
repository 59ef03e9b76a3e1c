//! [`EffectsHub`]: the change hook of the root store, FX-1 … FX-5.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use indexmap::IndexMap;

use super::ports::{
    EffectError, FileHistoryPort, Ports, RemoteMetadataPort, SdkStatusPort, SessionMetadataPatch,
};
use crate::app_state::AppState;

/// The one place app-state changes reach the outside world.
///
/// [`EffectsHub::on_change`] is installed as the root store's change hook, so it sees
/// every commit exactly once, in order, after the commit and before any listener (ST-4,
/// ST-5). Every mutation path goes through the store, so no path can forget an effect
/// (FX-6).
///
/// Cost: the hook runs on every commit, so each effect first compares the one field it
/// watches (an enum, a bool, a short string, a pointer) and returns at once when it did
/// not change; only a changed field leads to a port call, and only a port call does I/O.
///
/// Failures: an effect that fails (an error from a port, or a panicking port) is logged
/// with `tracing` and recorded in the bootstrap error log, and never passed on: a broken
/// config file must not stop a mode change, and a panic here would skip the listeners of
/// the commit (store contract, rule 7). Independent effects run independently: a failing
/// remote does not keep the SDK stream from hearing of a mode change.
pub struct EffectsHub {
    ports: Ports,
    // Attached and detached while the session runs; read only when the mode changed.
    remote: RwLock<Option<Arc<dyn RemoteMetadataPort>>>,
    sdk: RwLock<Option<Arc<dyn SdkStatusPort>>>,
    file_history: RwLock<Option<Arc<dyn FileHistoryPort>>>,
    invocations: AtomicU64,
    failures: AtomicU64,
}

impl EffectsHub {
    /// A hub using `ports`.
    pub fn new(ports: Ports) -> Self {
        Self {
            remote: RwLock::new(ports.remote.clone()),
            sdk: RwLock::new(ports.sdk.clone()),
            file_history: RwLock::new(ports.file_history.clone()),
            ports,
            invocations: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    /// Attaches (or with `None` detaches) the remote session metadata port, e.g. once a
    /// remote session is connected.
    pub fn set_remote(&self, remote: Option<Arc<dyn RemoteMetadataPort>>) {
        *self.remote.write().unwrap_or_else(PoisonError::into_inner) = remote;
    }

    /// Attaches (or detaches) the SDK status stream port.
    pub fn set_sdk_stream(&self, sdk: Option<Arc<dyn SdkStatusPort>>) {
        *self.sdk.write().unwrap_or_else(PoisonError::into_inner) = sdk;
    }

    /// Attaches (or detaches) the file-history persistence port. Without one, file
    /// history changes are not persisted (and an edit tool waiting for its backup
    /// refuses to write).
    pub fn set_file_history(&self, port: Option<Arc<dyn FileHistoryPort>>) {
        *self
            .file_history
            .write()
            .unwrap_or_else(PoisonError::into_inner) = port;
    }

    /// How many commits the hub has seen (one per commit, AS-3).
    pub fn invocations(&self) -> u64 {
        self.invocations.load(Ordering::Relaxed)
    }

    /// How many effects have failed (each one logged).
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Effects of the initial state, run once when the root store is created: the
    /// configured environment is applied (the hook only sees changes, and the processes
    /// spawned before the first settings change need it too) and the model is mirrored
    /// into bootstrap (BS-7). Nothing is written to disk: the initial state came from
    /// the files.
    pub fn on_start(&self, state: &AppState) {
        self.ports
            .bootstrap
            .mirror_main_loop_model(state.main_loop_model.as_deref());
        if let Some(env) = &state.settings.env {
            self.run("FX-5 environment", || {
                self.ports.environment.apply_additive(env)
            });
        }
    }

    /// The change hook: compares `old` and `new` and performs FX-1 … FX-5.
    pub fn on_change(&self, new: &AppState, old: &AppState) {
        self.invocations.fetch_add(1, Ordering::Relaxed);
        self.permission_mode(new, old);
        self.main_loop_model(new, old);
        self.expanded_view(new, old);
        self.verbose(new, old);
        self.settings(new, old);
        self.file_history(new, old);
        self.settings_edit(new, old);
    }

    /// The settings-file edits a permission update asked for (a rule kept in local
    /// settings): a new batch in `last_settings_edits` is applied once, in order, through
    /// the settings port. A pointer comparison: O(1) on every other commit.
    fn settings_edit(&self, new: &AppState, old: &AppState) {
        let Some(edits) = &new.tool_permission_context.last_settings_edits else {
            return;
        };
        if old
            .tool_permission_context
            .last_settings_edits
            .as_ref()
            .is_some_and(|o| Arc::ptr_eq(o, edits))
        {
            return;
        }
        for edit in edits.iter() {
            self.run(
                "saving a permission update (it is in force for this session but was not saved)",
                || self.ports.settings.apply_settings_edit(edit),
            );
        }
    }

    /// File history (SP-2): a new change of the domain (a new `Arc` in `last_change`) is
    /// persisted once — its backups, then its transcript entry. A pointer comparison: O(1)
    /// on every other commit. A withdrawn change (`None`) persists nothing.
    fn file_history(&self, new: &AppState, old: &AppState) {
        let Some(change) = &new.file_history.last_change else {
            return;
        };
        if old
            .file_history
            .last_change
            .as_ref()
            .is_some_and(|o| Arc::ptr_eq(o, change))
        {
            return;
        }
        let port = self
            .file_history
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(port) = port {
            self.run("file history", || port.persist(change));
        }
    }

    /// FX-1: externalise both modes; tell the remote only when the externalised mode
    /// changed (so `default → bubble → default` is silent), with the ultraplan flag `true`
    /// only on the first entry into ultraplan and `null` (key deletion) otherwise; the
    /// SDK stream always gets the raw mode.
    fn permission_mode(&self, new: &AppState, old: &AppState) {
        let (new_mode, old_mode) = (
            new.tool_permission_context.mode,
            old.tool_permission_context.mode,
        );
        if new_mode == old_mode {
            return;
        }
        let new_external = new_mode.external();
        if new_external != old_mode.external() {
            let first_ultraplan_entry = new_external
                == strata_protocol::permission::ExternalPermissionMode::Plan
                && new.is_ultraplan_mode
                && !old.is_ultraplan_mode;
            let patch = SessionMetadataPatch {
                permission_mode: new_external,
                is_ultraplan_mode: first_ultraplan_entry.then_some(true),
            };
            let remote = self
                .remote
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(remote) = remote {
                self.run("FX-1 remote metadata", || {
                    remote.session_metadata_changed(&patch)
                });
            }
        }
        let sdk = self
            .sdk
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(sdk) = sdk {
            self.run("FX-1 SDK status", || sdk.permission_mode_changed(new_mode));
        }
    }

    /// FX-2: persist the model to user settings (clearing removes the key) and mirror it
    /// into bootstrap (BS-7).
    fn main_loop_model(&self, new: &AppState, old: &AppState) {
        if new.main_loop_model == old.main_loop_model {
            return;
        }
        let model = new.main_loop_model.as_deref();
        self.ports.bootstrap.mirror_main_loop_model(model);
        self.run("FX-2 model", || {
            self.ports.settings.persist_main_loop_model(model)
        });
    }

    /// FX-3: persist the expanded view as `showExpandedTodos` / `showSpinnerTree`, writing
    /// only when the stored values differ (an absent key reads as `false`, its default).
    fn expanded_view(&self, new: &AppState, old: &AppState) {
        if new.ui.expanded_view == old.ui.expanded_view {
            return;
        }
        let (todos, tree) = new.ui.expanded_view.flags();
        self.run("FX-3 expanded view", || {
            let stored = self.ports.global_config.read()?;
            if stored.show_expanded_todos.unwrap_or(false) != todos
                || stored.show_spinner_tree.unwrap_or(false) != tree
            {
                self.ports.global_config.write(&mut |c| {
                    c.show_expanded_todos = Some(todos);
                    c.show_spinner_tree = Some(tree);
                })?;
            }
            Ok(())
        });
    }

    /// FX-4: persist `verbose`, writing only when the stored value differs.
    fn verbose(&self, new: &AppState, old: &AppState) {
        if new.verbose == old.verbose {
            return;
        }
        let verbose = new.verbose;
        self.run("FX-4 verbose", || {
            if self.ports.global_config.read()?.verbose.unwrap_or(false) != verbose {
                self.ports
                    .global_config
                    .write(&mut |c| c.verbose = Some(verbose))?;
            }
            Ok(())
        });
    }

    /// FX-5: new settings clear the credential caches; a changed `env` is applied
    /// additively. The pointer comparison makes the common case (settings untouched) O(1);
    /// an equal value in a new `Arc` is not a change.
    fn settings(&self, new: &AppState, old: &AppState) {
        if Arc::ptr_eq(&new.settings, &old.settings) || new.settings == old.settings {
            return;
        }
        self.run("FX-5 credential caches", || {
            self.ports.credentials.clear_credential_caches()
        });
        if new.settings.env != old.settings.env {
            let empty = IndexMap::new();
            let env = new.settings.env.as_ref().unwrap_or(&empty);
            self.run("FX-5 environment", || {
                self.ports.environment.apply_additive(env)
            });
        }
    }

    /// Runs one effect; logs a failure or a panic, never passes it on.
    fn run(&self, effect: &'static str, f: impl FnOnce() -> Result<(), EffectError>) {
        let message = match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(())) => return,
            Ok(Err(error)) => error.to_string(),
            Err(panic) => format!("the port panicked: {}", panic_message(panic.as_ref())),
        };
        self.failures.fetch_add(1, Ordering::Relaxed);
        tracing::error!(effect, error = %message, "app-state side effect failed");
        // The bootstrap log is in memory: it cannot fail, and a panic here would be a bug
        // of its own, not of the effect.
        self.ports
            .bootstrap
            .log_error(&format!("{effect} failed: {message}"));
    }
}

impl std::fmt::Debug for EffectsHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectsHub")
            .field("invocations", &self.invocations())
            .field("failures", &self.failures())
            .finish_non_exhaustive()
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}
