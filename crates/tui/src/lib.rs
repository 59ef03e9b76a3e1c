//! The strata terminal user interface. **Not built yet.**
//!
//! This crate will own the ratatui front end (SPEC UI-1 … UI-7): components that declare
//! the store slices they render, an event loop on crossterm's async event stream that
//! redraws only when a selection changed, and the prompt, transcript, task and permission
//! views. Until it exists, strata runs headless (`strata -p`) and the crate exports nothing.
