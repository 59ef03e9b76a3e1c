//! The process-level state a session runs with, passed in as handles.
//!
//! An engine never reaches for a process singleton itself: its bootstrap state (BS-*:
//! identity, cwd, cost counters) and the session scope that admits its root store (UI-5)
//! come in [`EngineOptions::handles`](super::EngineOptions::handles). The binary runs one
//! session per process and passes the process defaults ([`EngineHandles::process`]); a
//! host that keeps several sessions open at once (an SDK host, a sub-agent runtime, a
//! test binary whose tests run as threads of one process) gives each its own
//! ([`EngineHandles::private`]), so each has its own root store, session id and cost.
//!
//! The one-root rule is unchanged: within one scope a second root is refused while the
//! first is alive ([`OpenError::Root`](super::OpenError::Root)).

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use strata_bootstrap::Bootstrap;
use strata_state::SessionScope;
use strata_state::effects::BootstrapPort;

/// The handles one engine runs with: its bootstrap state and its session scope.
///
/// Sessions open at the same time must not share them: two engines on one bootstrap
/// would count each other's cost and switch each other's session id, and one scope
/// admits one root store (UI-5), so a second engine opened in it is refused.
#[derive(Clone, Debug)]
pub struct EngineHandles {
    /// The bootstrap state the session's identity, cwd and cost counters live in.
    pub bootstrap: BootstrapHandle,
    /// The scope that admits the session's root store.
    pub scope: SessionScope,
}

impl EngineHandles {
    /// The process defaults (`strata_bootstrap::global()` and `SessionScope::global()`):
    /// what the binary, which runs one session per process, passes.
    pub fn process() -> Self {
        Self {
            bootstrap: BootstrapHandle::process(),
            scope: SessionScope::global().clone(),
        }
    }

    /// A fresh bootstrap state and scope of their own, for one of several sessions in a
    /// process. The bootstrap's cwd is set when the engine opens.
    pub fn private() -> Self {
        Self {
            bootstrap: BootstrapHandle::private(),
            scope: SessionScope::new(),
        }
    }
}

/// A cheap, cloneable handle to a [`Bootstrap`]: the process-wide instance or one of the
/// session's own. Dereferences to the bootstrap.
#[derive(Clone)]
pub struct BootstrapHandle(Shared);

#[derive(Clone)]
enum Shared {
    Process(&'static Bootstrap),
    Own(Arc<Bootstrap>),
}

impl BootstrapHandle {
    /// The process-wide instance (`strata_bootstrap::global()`).
    pub fn process() -> Self {
        Self(Shared::Process(strata_bootstrap::global()))
    }

    /// A new instance of its own (zeroed counters, a new session id; the cwd is set when
    /// the engine opens).
    pub fn private() -> Self {
        Self(Shared::Own(Arc::new(Bootstrap::new(Path::new("/")))))
    }
}

impl From<Arc<Bootstrap>> for BootstrapHandle {
    fn from(bootstrap: Arc<Bootstrap>) -> Self {
        Self(Shared::Own(bootstrap))
    }
}

impl From<&'static Bootstrap> for BootstrapHandle {
    fn from(bootstrap: &'static Bootstrap) -> Self {
        Self(Shared::Process(bootstrap))
    }
}

impl Deref for BootstrapHandle {
    type Target = Bootstrap;

    fn deref(&self) -> &Bootstrap {
        match &self.0 {
            Shared::Process(b) => b,
            Shared::Own(b) => b,
        }
    }
}

impl std::fmt::Debug for BootstrapHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.0 {
            Shared::Process(_) => "process",
            Shared::Own(_) => "own",
        };
        f.debug_struct("BootstrapHandle")
            .field("kind", &kind)
            .field("session_id", &self.session_id())
            .finish()
    }
}

/// The effects hub's FX-2 model mirror and error log write to the session's bootstrap.
impl BootstrapPort for BootstrapHandle {
    fn mirror_main_loop_model(&self, model: Option<&str>) {
        (**self).mirror_main_loop_model(model);
    }

    fn log_error(&self, message: &str) {
        BootstrapPort::log_error(&**self, message);
    }
}
