//! Who the current thread is, as a number: enough for a store to tell whether the thread
//! calling `set` is the one running its updater or its callbacks.
//!
//! The dispatch protocol must know both. An update made inside a callback must be queued
//! rather than wait for delivery (the waiting thread would be the dispatcher itself), and
//! it inherits the callback's nesting depth so endless feedback loops are caught. An
//! update made inside an *updater* would deadlock on the writer lock, so it is turned into
//! a clear panic. Each store records the token of the thread holding its writer lock and
//! of the thread dispatching, so both questions are one comparison — with no per-thread
//! stack to maintain on every update, and correct however stores nest.
//!
//! The token is the address of a thread-local: unique among live threads, never zero,
//! and cheap to read (a constant thread-local without a destructor). A store clears the
//! tokens it recorded before the thread leaves the role, also when unwinding, so a later
//! thread that happens to reuse the address can never be mistaken for it.

#[cfg(not(feature = "shuttle"))]
std::thread_local! {
    static TOKEN: u8 = const { 0 };
}

#[cfg(feature = "shuttle")]
shuttle::thread_local! {
    static TOKEN: u8 = 0;
}

/// The current thread's token (never 0).
pub(crate) fn thread_token() -> usize {
    TOKEN.with(|t| std::ptr::from_ref(t) as usize)
}
