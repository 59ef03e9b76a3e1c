//! [`TaskHandles`]: the runtime side of tasks, kept apart from the data (AS-2).
//!
//! A running task has things that are not data: a way to cancel it, a process to kill.
//! They must not live in the app state's values (they cannot be compared, persisted or
//! cloned meaningfully), yet the "stop" transition must reach them. This registry holds
//! them by task id; the app state carries it as a runtime field that never takes part in
//! comparison.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::model::TaskId;

/// Something that can stop a running task (a cancellation token, a process group).
pub trait Cancel: Send + Sync {
    /// Asks the task to stop. Must not block; the task reports its end through the
    /// store when it has stopped.
    fn cancel(&self);
}

impl<F: Fn() + Send + Sync> Cancel for F {
    fn cancel(&self) {
        self()
    }
}

/// The cancellation handles of running tasks, by id. Cloning shares the registry.
#[derive(Clone, Default)]
pub struct TaskHandles {
    inner: Arc<Mutex<HashMap<TaskId, Arc<dyn Cancel>>>>,
}

impl TaskHandles {
    /// Registers how to cancel task `id` (replacing an earlier handle).
    pub fn insert(&self, id: TaskId, handle: Arc<dyn Cancel>) {
        self.lock().insert(id, handle);
    }

    /// Forgets the handle of task `id` (when it has ended).
    pub fn remove(&self, id: &TaskId) {
        self.lock().remove(id);
    }

    /// Cancels task `id`; false when it has no handle. The handle is called with no lock
    /// held.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
    /// use strata_state::tasks::{TaskHandles, TaskId};
    /// let handles = TaskHandles::default();
    /// let stopped = Arc::new(AtomicBool::new(false));
    /// let flag = Arc::clone(&stopped);
    /// let id = TaskId::generate('b');
    /// handles.insert(id.clone(), Arc::new(move || flag.store(true, Ordering::SeqCst)));
    /// assert!(handles.cancel(&id));
    /// assert!(stopped.load(Ordering::SeqCst));
    /// ```
    pub fn cancel(&self, id: &TaskId) -> bool {
        let handle = self.lock().get(id).cloned();
        match handle {
            Some(handle) => {
                handle.cancel();
                true
            }
            None => false,
        }
    }

    /// The number of registered handles.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no handle is registered.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, Arc<dyn Cancel>>> {
        // The map is never left half-updated: each operation is one HashMap call.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runtime handles never take part in value comparison (AS-2): any two are "equal", so
/// an app state that differs only in its handles counts as unchanged.
impl PartialEq for TaskHandles {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for TaskHandles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskHandles({} running)", self.len())
    }
}
