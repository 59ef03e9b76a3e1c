//! What an interactive host (the terminal UI) asks of an open session beyond the
//! control requests: rewinding the conversation to a prompt, recording a mode change
//! in the transcript, and permission updates made by a command (`/permissions`,
//! `/add-dir`) with their problems returned instead of logged.
//!
//! Kept apart from `engine/mod.rs` (the turn's lifecycle) because none of it runs
//! during a turn: each is one store update or one transcript line.

use serde_json::Value;
use strata_protocol::transcript::{Entry, MetadataEntry, PermissionModeEntry};

use super::{Engine, RewindError};

impl Engine {
    /// Rewinds the conversation to just before user prompt `prompt_uuid`: the store's
    /// conversation keeps its first `keep` messages (the ones before that prompt) and the
    /// next line recorded continues the chain from the prompt's parent, so the transcript
    /// becomes a branch, as the reference agent writes a rewind; resuming the session
    /// later follows the new branch. Files are not touched ([`Engine::rewind_files`]).
    ///
    /// `text` is the prompt as the store holds it: the transcript line must say the same,
    /// so a caller that paired a message with the wrong uuid changes nothing.
    /// [`RewindError::TargetNotFound`] when the transcript has no such line; nothing
    /// changes then.
    pub fn rewind_conversation(
        &self,
        prompt_uuid: &str,
        keep: usize,
        text: &str,
    ) -> Result<(), RewindError> {
        let path = self.inner.recorder.path();
        let not_found = || RewindError::TargetNotFound {
            uuid: prompt_uuid.to_owned(),
            at_cap: false,
        };
        let parent = prompt_parent(&path, prompt_uuid, text).ok_or_else(not_found)?;
        self.inner.recorder.set_leaf(parent);
        let _ = self.inner.store.update(|s| {
            if s.messages.len() > keep {
                s.messages.truncate(keep);
            }
        });
        Ok(())
    }

    /// Writes a `permission-mode` line with the current mode (the reference agent's
    /// metadata entry; the last one wins on resume). A session with no transcript yet
    /// writes nothing: its first prompt records the mode (`permissionMode`).
    pub fn record_permission_mode(&self) {
        if !self.inner.recorder.file_exists() {
            return;
        }
        let mode = self
            .inner
            .store
            .get()
            .tool_permission_context
            .mode
            .to_string();
        let entry = Entry::Metadata(MetadataEntry::PermissionMode(PermissionModeEntry::new(
            self.inner.session_id.clone(),
            mode,
        )));
        if let Err(e) = self.inner.recorder.metadata(&entry) {
            tracing::warn!("the permission mode could not be recorded: {e}");
        }
    }

    /// Applies permission updates in the SDK's shape (`addRules`, `removeRules`,
    /// `addDirectories`, …) as one store update, as a prompt answer's are; settings-file
    /// destinations are written by the effects hub. Returns what could not be applied,
    /// one line each.
    pub fn update_permissions(&self, updates: &[Value]) -> Vec<String> {
        self.inner.apply_permission_updates_reporting(updates)
    }
}

/// The `parentUuid` of the user line `uuid` whose text is `prompt` in the transcript at
/// `path` (`Some(None)`: the line starts the chain); `None` when there is no such line.
fn prompt_parent(path: &std::path::Path, uuid: &str, prompt: &str) -> Option<Option<String>> {
    let file = std::fs::read_to_string(path).ok()?;
    let needle = format!("\"uuid\":\"{uuid}\"");
    file.lines()
        .rev()
        .filter(|l| l.contains(&needle))
        .find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let content = &v["message"]["content"];
            let said = match content {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => return None,
            };
            (v["uuid"].as_str() == Some(uuid)
                && v["type"] == "user"
                && said.trim() == prompt.trim())
            .then(|| v["parentUuid"].as_str().map(str::to_owned))
        })
}
