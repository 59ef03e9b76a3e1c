//! Settings-file edits that a state update asks for (issue 10: "writing a rule to a
//! settings file is an effect of the hub").
//!
//! A permission answer "allow, and don't ask again — keep it in local settings" changes
//! two things: the rules in force (the app state's [`ToolPermissionContext`]) and a
//! settings file. The first is a store update; the second must not be done by the call
//! path beside it (FX-6: every path that changes state must reach the outside world the
//! same way). So the update also records *what the file should gain or lose* as a
//! [`SettingsEdit`] in [`ToolPermissionContext::last_settings_edits`], a new `Arc` per
//! update, and the effects hub persists each new batch once through its settings port — the
//! same pointer-compared pattern as file history (SP-2). A settings reload from the
//! watcher never creates an edit, so a change read *from* a file is never written back
//! *to* it.
//!
//! [`ToolPermissionContext`]: super::ToolPermissionContext
//! [`ToolPermissionContext::last_settings_edits`]: super::ToolPermissionContext::last_settings_edits

use serde_json::Value;
use strata_config::SettingsSource;

/// One change to a settings file: the file (by source) and the operations, applied in
/// order inside one locked read-modify-write.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingsEdit {
    /// The file to change (user, project or local settings).
    pub source: SettingsSource,
    /// What to do to it.
    pub ops: Vec<SettingsEditOp>,
}

/// One operation of a [`SettingsEdit`], on the value at a key path (`["permissions",
/// "allow"]`).
#[derive(Clone, Debug, PartialEq)]
pub enum SettingsEditOp {
    /// Appends `value` to the array at `key` unless it is already there (the array is
    /// created when missing).
    AddToArray {
        /// The key path.
        key: Vec<String>,
        /// The element.
        value: Value,
    },
    /// Removes every element equal to `value` from the array at `key`.
    RemoveFromArray {
        /// The key path.
        key: Vec<String>,
        /// The element.
        value: Value,
    },
    /// Sets the value at `key` (creating the objects on the way).
    Set {
        /// The key path.
        key: Vec<String>,
        /// The new value.
        value: Value,
    },
}

/// `["permissions", leaf]`, the key path of a permissions list.
pub fn permissions_key(leaf: &str) -> Vec<String> {
    vec!["permissions".to_owned(), leaf.to_owned()]
}
