//! The strata terminal user interface.
//!
//! `cells` renders finished history items into lines for the terminal's scrollback;
//! `picker` holds the fuzzy pickers (`/resume`, `@` paths).

pub mod cells;
pub mod picker;
