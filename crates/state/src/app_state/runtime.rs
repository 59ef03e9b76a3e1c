//! [`Runtime`]: the handles of a session that are not data (AS-2).
//!
//! A running task's cancellation, a live MCP connection, a loaded plugin instance, the
//! way to abort a speculation, and the environment overlay strata gives to the processes
//! it spawns: none of these can be compared, cloned into a new value, or persisted, yet
//! transitions of the app state must reach them. They live here, in one field of the app
//! state:
//!
//! - every handle is a shared registry (`Arc` inside), so cloning the app state clones
//!   pointers and every state version reaches the same registries;
//! - `Runtime`'s `PartialEq` is always true, so a state that differs only here compares
//!   equal and handles never make a selection report a change;
//! - `Runtime` implements no serialization, so it can never reach a file (SP-4).

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use smol_str::SmolStr;

use crate::tasks::{Cancel, TaskHandles};

/// The runtime handles of a session. Cloning shares every registry.
#[derive(Clone, Default)]
pub struct Runtime {
    /// Cancellation handles of running tasks (owned by the tasks module).
    pub tasks: TaskHandles,
    /// Live MCP connections, by server name.
    pub mcp: McpConnections,
    /// Loaded plugin instances, by plugin name.
    pub plugins: PluginInstances,
    /// How to abort the running speculation, if any.
    pub speculation: SpeculationControl,
    /// Environment variables from settings for the processes strata spawns (FX-5).
    pub env: EnvOverlay,
    /// Credential caches to clear when settings change (FX-5).
    pub credentials: CredentialCaches,
}

/// Runtime handles never take part in value comparison (AS-2).
impl PartialEq for Runtime {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("tasks", &self.tasks)
            .field("mcp", &self.mcp.len())
            .field("plugins", &self.plugins.len())
            .field("env", &self.env.snapshot().len())
            .field("credential_caches", &self.credentials.len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every operation on these registries is a single map call: never half-updated.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A live connection to an MCP server (implemented by the MCP client in the agent crate).
pub trait McpConnection: Send + Sync + 'static {
    /// Closes the connection (stops a stdio server's process). Must not block.
    fn close(&self);
    /// The concrete connection, for the MCP client to downcast.
    fn as_any(&self) -> &dyn Any;
}

/// Live MCP connections by server name. Cloning shares the registry.
#[derive(Clone, Default)]
pub struct McpConnections {
    inner: Arc<Mutex<HashMap<SmolStr, Arc<dyn McpConnection>>>>,
}

impl McpConnections {
    /// Registers the connection to `server`, returning the one it replaces.
    pub fn insert(
        &self,
        server: impl Into<SmolStr>,
        connection: Arc<dyn McpConnection>,
    ) -> Option<Arc<dyn McpConnection>> {
        lock(&self.inner).insert(server.into(), connection)
    }

    /// The connection to `server`.
    pub fn get(&self, server: &str) -> Option<Arc<dyn McpConnection>> {
        lock(&self.inner).get(server).cloned()
    }

    /// Forgets the connection to `server` and closes it (outside the lock).
    pub fn close(&self, server: &str) -> bool {
        let removed = lock(&self.inner).remove(server);
        removed.map(|c| c.close()).is_some()
    }

    /// The number of connections.
    pub fn len(&self) -> usize {
        lock(&self.inner).len()
    }

    /// True when there is no connection.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A loaded plugin (implemented by the plugin loader in the agent crate).
pub trait PluginInstance: Send + Sync + 'static {
    /// Releases what the plugin holds (its hook processes, its MCP servers).
    fn unload(&self);
    /// The concrete instance, for the loader to downcast.
    fn as_any(&self) -> &dyn Any;
}

/// Loaded plugin instances by name. Cloning shares the registry.
#[derive(Clone, Default)]
pub struct PluginInstances {
    inner: Arc<Mutex<HashMap<SmolStr, Arc<dyn PluginInstance>>>>,
}

impl PluginInstances {
    /// Registers a loaded plugin, returning the instance it replaces.
    pub fn insert(
        &self,
        name: impl Into<SmolStr>,
        plugin: Arc<dyn PluginInstance>,
    ) -> Option<Arc<dyn PluginInstance>> {
        lock(&self.inner).insert(name.into(), plugin)
    }

    /// The instance of plugin `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn PluginInstance>> {
        lock(&self.inner).get(name).cloned()
    }

    /// Forgets plugin `name` and unloads it (outside the lock).
    pub fn unload(&self, name: &str) -> bool {
        let removed = lock(&self.inner).remove(name);
        removed.map(|p| p.unload()).is_some()
    }

    /// The number of loaded plugins.
    pub fn len(&self) -> usize {
        lock(&self.inner).len()
    }

    /// True when no plugin is loaded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How to abort the running speculation. Cloning shares the slot.
#[derive(Clone, Default)]
pub struct SpeculationControl {
    inner: Arc<Mutex<Option<Arc<dyn Cancel>>>>,
}

impl SpeculationControl {
    /// Records how to abort the speculation that just started.
    pub fn set(&self, abort: Arc<dyn Cancel>) {
        *lock(&self.inner) = Some(abort);
    }

    /// Aborts the running speculation, if any (the handle is called with no lock held).
    pub fn abort(&self) -> bool {
        let abort = lock(&self.inner).take();
        abort.map(|a| a.cancel()).is_some()
    }
}

/// A cache of credentials derived from settings (the API key helper's output, cloud
/// provider credentials), implemented where the credentials are fetched (the agent
/// crate).
pub trait CredentialCache: Send + Sync + 'static {
    /// A short name for logs (`apiKeyHelper`, `aws`, …).
    fn name(&self) -> &str;
    /// Drops what is cached, so the next use fetches again with the current settings.
    /// The error is the implementor's own (a cache backed by a file or a keychain has
    /// its own failures); [`CredentialCaches::clear_all`] reports it with the name.
    fn clear(&self) -> Result<(), CredentialCacheError>;
}

/// Why a [`CredentialCache`] could not be cleared: the implementor's error.
pub type CredentialCacheError = Box<dyn std::error::Error + Send + Sync>;

/// The credential caches of a session: every cache registers here, and FX-5 clears them
/// all when the settings change. Cloning shares the registry.
#[derive(Clone, Default)]
pub struct CredentialCaches {
    inner: Arc<Mutex<Vec<Arc<dyn CredentialCache>>>>,
}

impl CredentialCaches {
    /// Registers a cache to be cleared on every settings change.
    pub fn register(&self, cache: Arc<dyn CredentialCache>) {
        lock(&self.inner).push(cache);
    }

    /// The number of registered caches.
    pub fn len(&self) -> usize {
        lock(&self.inner).len()
    }

    /// True when no cache is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Clears every cache (each one, even when an earlier one fails; no lock held while
    /// clearing). The error lists every cache that failed.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
    /// use strata_state::{CredentialCache, CredentialCaches};
    /// struct Helper(AtomicUsize);
    /// impl CredentialCache for Helper {
    ///     fn name(&self) -> &str { "apiKeyHelper" }
    ///     fn clear(&self) -> Result<(), strata_state::CredentialCacheError> {
    ///         self.0.fetch_add(1, Ordering::SeqCst);
    ///         Ok(())
    ///     }
    /// }
    /// let caches = CredentialCaches::default();
    /// let helper = Arc::new(Helper(AtomicUsize::new(0)));
    /// caches.register(helper.clone());
    /// caches.clear_all().unwrap();
    /// assert_eq!(helper.0.load(Ordering::SeqCst), 1);
    /// ```
    pub fn clear_all(&self) -> Result<(), ClearCachesError> {
        let caches = lock(&self.inner).clone();
        let failures: Vec<(String, String)> = caches
            .iter()
            .filter_map(|c| {
                c.clear()
                    .err()
                    .map(|e| (c.name().to_owned(), e.to_string()))
            })
            .collect();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(ClearCachesError { failures })
        }
    }
}

/// Credential caches that could not be cleared: each cache's name and why, in order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe_failures(failures))]
pub struct ClearCachesError {
    /// `(cache name, what went wrong)`.
    pub failures: Vec<(String, String)>,
}

fn describe_failures(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(name, why)| format!("{name}: {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Environment variables from settings (`env`) for the processes strata spawns (FX-5).
///
/// # Why an overlay and not `std::env::set_var`
///
/// The reference agent writes configured variables into its own process environment.
/// In Rust 2024 `set_var` is `unsafe`, and for a real reason: other threads (a DNS
/// lookup in the HTTP client, `getenv` in a C library) may read the environment at the
/// same moment, which is undefined behaviour; the workspace denies `unsafe_code`. The
/// variables matter to the processes strata starts — shell commands, hooks, stdio MCP
/// servers — so strata keeps them here and every spawner applies them
/// ([`EnvOverlay::apply_to`]). Strata's own code reads configuration variables through
/// [`EnvOverlay::var`], which looks here first, so it sees them as the reference agent's
/// code would.
///
/// Semantics are additive only, as in the reference agent: a variable is added or
/// overwritten, never removed, even when it disappears from the settings (code that
/// already read it keeps a consistent view).
///
/// ```
/// use strata_state::EnvOverlay;
/// let env = EnvOverlay::default();
/// env.apply([("A", "1"), ("B", "2")]);
/// env.apply([("A", "3")]);
/// assert_eq!(env.get("A").as_deref(), Some("3"));
/// assert_eq!(env.get("B").as_deref(), Some("2")); // never removed
/// ```
#[derive(Clone, Default)]
pub struct EnvOverlay {
    // Copy-on-write: spawners take a snapshot (one reference count) and never hold the lock.
    inner: Arc<RwLock<Arc<BTreeMap<String, String>>>>,
}

impl EnvOverlay {
    /// Adds or overwrites `vars`; never removes. Returns whether anything changed.
    pub fn apply<K: AsRef<str>, V: AsRef<str>>(
        &self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> bool {
        let mut guard = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        let mut changed = false;
        for (k, v) in vars {
            let (k, v) = (k.as_ref(), v.as_ref());
            if guard.get(k).map(String::as_str) != Some(v) {
                Arc::make_mut(&mut guard).insert(k.to_owned(), v.to_owned());
                changed = true;
            }
        }
        changed
    }

    /// The variables, as a shared snapshot.
    pub fn snapshot(&self) -> Arc<BTreeMap<String, String>> {
        Arc::clone(&self.inner.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// One variable of the overlay.
    pub fn get(&self, key: &str) -> Option<String> {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// A configuration variable as strata's own code should read it: the overlay first,
    /// then the process environment.
    pub fn var(&self, key: &str) -> Option<String> {
        self.get(key).or_else(|| std::env::var(key).ok())
    }

    /// Gives the overlay's variables to a process about to be spawned (on top of the
    /// environment it inherits).
    ///
    /// ```
    /// # #[cfg(unix)] {
    /// use strata_state::EnvOverlay;
    /// let env = EnvOverlay::default();
    /// env.apply([("STRATA_DOC_EXAMPLE", "from settings")]);
    /// let mut cmd = std::process::Command::new("sh");
    /// env.apply_to(cmd.args(["-c", "printf %s \"$STRATA_DOC_EXAMPLE\""]));
    /// assert_eq!(cmd.output().unwrap().stdout, b"from settings");
    /// # }
    /// ```
    pub fn apply_to<'c>(
        &self,
        command: &'c mut std::process::Command,
    ) -> &'c mut std::process::Command {
        command.envs(self.snapshot().iter())
    }
}

impl fmt::Debug for EnvOverlay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values may be secrets: show names only.
        f.debug_set().entries(self.snapshot().keys()).finish()
    }
}
