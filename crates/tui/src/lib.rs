//! The strata terminal user interface (issue 12): an inline viewport over the terminal's
//! native scrollback, driven by the store.
//!
//! - [`term`]: the renderer — finished history written once into the scrollback, the live
//!   area redrawn below it in one synchronized update per frame;
//! - [`app`]: the UI's state and how keys, engine events and store changes change it,
//!   each part of the screen reading the store through its own selection (UI-2);
//! - [`run`]: the event loop (at most one frame per 16 ms, no timer while idle);
//! - [`plain`]: plain mode for terminals that cannot move the cursor (`TERM=dumb`);
//! - [`bridge`]: the engine's ports (permission prompts, events, streamed text);
//! - [`input`], [`dialog`], [`view`], [`history`], [`commands`]: the prompt editor,
//!   the permission dialog, the footer/spinner/todos, the history lines, slash commands;
//! - [`overlay`]: lists that take the prompt's place (pickers, history search, rewind);
//!   [`menu`]: the command menu under a prompt that starts with `/`;
//! - [`tasks_panel`]: the background shells and agents (`/tasks`); [`ask_dialog`]: the
//!   AskUserQuestion dialog;
//! - [`status_line`]: the `statusLine` setting's command, run off the frame path;
//! - [`cells`]: finished history items (markdown, tool calls with their results, diffs)
//!   rendered into lines for the scrollback; [`picker`]: the fuzzy pickers (`/resume`,
//!   `@` paths).
//!
//! The binary (`crates/cli`) opens the engine with this crate's ports and calls
//! [`run::event_loop`]; the same loop runs on a vt100 backend in tests and in
//! `strata-bench tui`.

pub mod app;
pub mod ask_dialog;
pub mod bridge;
pub mod cells;
pub mod commands;
pub mod dialog;
pub mod history;
pub mod input;
pub mod menu;
pub mod overlay;
pub mod picker;
pub mod plain;
pub mod run;
pub mod status_line;
pub mod tasks_panel;
pub mod term;
pub mod text;
pub mod view;
#[cfg(test)]
mod vt_snapshot;
