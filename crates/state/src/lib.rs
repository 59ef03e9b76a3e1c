//! The strata application state: one value for the whole session, its domains, the pure
//! functions that derive and transition it, and the one place its changes reach the
//! outside world.
//!
//! - [`tasks`]: the task map and the agent-view domain: lifecycle updaters, selectors
//!   (SL-1), transitions (SL-2) and the retain/release/evict memory discipline (SL-3).

pub mod tasks;
