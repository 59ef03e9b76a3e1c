//! What the current thread is doing with which store: running an updater, or running the
//! callbacks of a commit (as that store's dispatcher).
//!
//! The dispatch protocol needs to know both. An update made inside a callback must be
//! queued rather than wait for delivery (the waiting thread would be the dispatcher
//! itself), and it inherits the callback's nesting depth so endless feedback loops can be
//! caught. An update made inside an *updater* would deadlock on the writer lock, so it is
//! turned into a clear panic instead.
//!
//! Stores are identified by the address of their shared allocation, which is unique while
//! the store is alive — and a store is alive for as long as any of its frames are here.

use std::cell::RefCell;

/// Per-thread stacks; usually empty or one entry deep.
struct ThreadContext {
    /// `(store, depth)` for every store whose callbacks are running on this thread.
    callbacks: Vec<(usize, u32)>,
    /// Stores whose updater is running on this thread.
    updaters: Vec<usize>,
}

#[cfg(not(feature = "shuttle"))]
std::thread_local! {
    static CONTEXT: RefCell<ThreadContext> =
        const { RefCell::new(ThreadContext { callbacks: Vec::new(), updaters: Vec::new() }) };
}

#[cfg(feature = "shuttle")]
shuttle::thread_local! {
    static CONTEXT: RefCell<ThreadContext> =
        RefCell::new(ThreadContext { callbacks: Vec::new(), updaters: Vec::new() });
}

/// What `set` needs to know about the calling thread, read in one access.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caller {
    /// `Some(depth)` when the thread is inside a callback of this store.
    pub(crate) callback_depth: Option<u32>,
    /// True when the thread is inside an updater of this store.
    pub(crate) in_updater: bool,
}

/// Describes the calling thread's relation to `store`.
pub(crate) fn caller(store: usize) -> Caller {
    CONTEXT.with(|ctx| {
        let ctx = ctx.borrow();
        Caller {
            callback_depth: ctx
                .callbacks
                .iter()
                .rev()
                .find(|(id, _)| *id == store)
                .map(|(_, depth)| *depth),
            in_updater: ctx.updaters.contains(&store),
        }
    })
}

/// Marks the current thread as running callbacks of `store` for a commit at `depth`,
/// until dropped (also during unwinding).
pub(crate) struct CallbackScope(());

impl CallbackScope {
    pub(crate) fn enter(store: usize, depth: u32) -> Self {
        CONTEXT.with(|ctx| ctx.borrow_mut().callbacks.push((store, depth)));
        Self(())
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        CONTEXT.with(|ctx| {
            ctx.borrow_mut().callbacks.pop();
        });
    }
}

/// Marks the current thread as running an updater of `store`, until dropped.
pub(crate) struct UpdaterScope(());

impl UpdaterScope {
    pub(crate) fn enter(store: usize) -> Self {
        CONTEXT.with(|ctx| ctx.borrow_mut().updaters.push(store));
        Self(())
    }
}

impl Drop for UpdaterScope {
    fn drop(&mut self) {
        CONTEXT.with(|ctx| {
            ctx.borrow_mut().updaters.pop();
        });
    }
}
