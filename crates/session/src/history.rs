//! The input history: every prompt the user submitted, across projects (SP-2; issue 5
//! part 5).
//!
//! `<config>/history.jsonl` holds one line per prompt, in the reference agent's shape:
//! `{"display":…,"pastedContents":{…},"timestamp":<ms>,"project":…,"sessionId":…}`.
//! Several strata processes append to it at once, so each append takes an exclusive lock
//! on the file, terminates a torn last line if a crash left one, and writes the whole
//! line in one `write`. Pastes longer than [`PASTE_INLINE_LIMIT`] characters are stored
//! once in `<config>/paste-cache/<first 16 hex of sha256>.txt` and referenced by
//! `contentHash`, so the history stays small.
//!
//! Reading goes backwards from the end of the file ([`History::newest_first`]), so
//! showing the last 50 prompts of a project reads a few blocks, not a history of years.

mod backwards;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use strata_config::paths;

pub use backwards::NewestFirst;

/// Pastes longer than this many characters go to the paste cache.
pub const PASTE_INLINE_LIMIT: usize = 1_024;

/// Errors of the input history, each naming the file.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Reading, locking or writing a file failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`append to`, `read`, `store the paste in`, …).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// An entry could not be serialized (never for entries built by this module).
    #[error("cannot serialize a history entry for {path}: {source}")]
    Serialize {
        /// The history file.
        path: PathBuf,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
}

/// One line of `history.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// The prompt as the user saw it (pastes appear as placeholders such as
    /// `[Pasted text #1 +20 lines]`).
    pub display: String,
    /// Pasted contents by paste number.
    #[serde(default)]
    pub pasted_contents: BTreeMap<String, PastedContent>,
    /// When it was submitted, in milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The project root it was submitted in.
    pub project: String,
    /// The session it started or continued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Fields strata does not model, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One paste of a history entry: its text inline, or the hash of its paste-cache file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PastedContent {
    /// The paste's number in the prompt (`#1` in `[Pasted text #1 …]`).
    pub id: u32,
    /// `text` or `image`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The text, when stored inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The first 16 hex digits of the text's SHA-256, when it is in the paste cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// Fields strata does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A paste as the prompt editor has it, before it is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paste {
    /// Its number in the prompt.
    pub id: u32,
    /// The pasted text.
    pub text: String,
}

/// The input history under one config directory.
#[derive(Debug, Clone)]
pub struct History {
    file: PathBuf,
    paste_dir: PathBuf,
}

impl History {
    /// The history of the config directory `config_dir`.
    pub fn new(config_dir: &Path) -> Self {
        Self {
            file: paths::history_file(config_dir),
            paste_dir: paths::paste_cache_dir(config_dir),
        }
    }

    /// `history.jsonl`.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Records a submitted prompt: large pastes go to the paste cache first, then the
    /// entry is appended under the file's lock and made durable. Returns the entry as
    /// written.
    pub fn append(
        &self,
        display: &str,
        pastes: &[Paste],
        project: &str,
        session_id: Option<&str>,
    ) -> Result<HistoryEntry, HistoryError> {
        let mut pasted_contents = BTreeMap::new();
        for paste in pastes {
            let (content, content_hash) = if paste.text.chars().count() > PASTE_INLINE_LIMIT {
                (None, Some(self.store_paste(&paste.text)?))
            } else {
                (Some(paste.text.clone()), None)
            };
            pasted_contents.insert(
                paste.id.to_string(),
                PastedContent {
                    id: paste.id,
                    kind: "text".to_owned(),
                    content,
                    content_hash,
                    extra: Map::new(),
                },
            );
        }
        let entry = HistoryEntry {
            display: display.to_owned(),
            pasted_contents,
            timestamp: chrono::Utc::now().timestamp_millis(),
            project: project.to_owned(),
            session_id: session_id.map(str::to_owned),
            extra: Map::new(),
        };
        self.append_entry(&entry)?;
        Ok(entry)
    }

    /// Appends `entry` as one line, under an exclusive lock on the file.
    pub fn append_entry(&self, entry: &HistoryEntry) -> Result<(), HistoryError> {
        let mut line = serde_json::to_vec(entry).map_err(|source| HistoryError::Serialize {
            path: self.file.clone(),
            source,
        })?;
        line.push(b'\n');
        let io = |source| HistoryError::Io {
            action: "append to",
            path: self.file.clone(),
            source,
        };
        if let Some(dir) = self.file.parent() {
            crate::writer::private_dirs(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&self.file)
            .map_err(io)?;
        // Held until `file` is dropped at the end of this function.
        file.lock().map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > 0 && last_byte(&mut file, len).map_err(io)? != b'\n' {
            // A crash tore the last line: keep the fragment on a line of its own.
            line.insert(0, b'\n');
        }
        file.write_all(&line).map_err(io)?;
        file.sync_data().map_err(io)
    }

    /// Every entry, newest first, read backwards from the end of the file. Malformed
    /// lines are skipped (and counted by the iterator). A missing file reads as empty.
    pub fn newest_first(&self) -> Result<NewestFirst, HistoryError> {
        NewestFirst::open(&self.file)
    }

    /// The newest `limit` entries submitted in `project`, newest first.
    pub fn recent(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>, HistoryError> {
        let mut out = Vec::with_capacity(limit.min(256));
        for entry in self.newest_first()? {
            if out.len() >= limit {
                break;
            }
            let entry = entry?;
            if entry.project == project {
                out.push(entry);
            }
        }
        Ok(out)
    }

    /// The text of a paste: inline, or read from the paste cache. `Ok(None)` when it is
    /// neither (an image, or a cache file that was cleaned up).
    pub fn paste_text(&self, paste: &PastedContent) -> Result<Option<String>, HistoryError> {
        if let Some(text) = &paste.content {
            return Ok(Some(text.clone()));
        }
        let Some(hash) = &paste.content_hash else {
            return Ok(None);
        };
        if !is_hash(hash) {
            return Ok(None);
        }
        let path = self.paste_dir.join(format!("{hash}.txt"));
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(HistoryError::Io {
                action: "read",
                path,
                source,
            }),
        }
    }

    /// Stores `text` in the paste cache (once: the name is its hash) and returns the hash.
    fn store_paste(&self, text: &str) -> Result<String, HistoryError> {
        let hash = paste_hash(text);
        let path = self.paste_dir.join(format!("{hash}.txt"));
        let io = |source| HistoryError::Io {
            action: "store the paste in",
            path: path.clone(),
            source,
        };
        if path.is_file() {
            return Ok(hash);
        }
        crate::writer::private_dirs(&self.paste_dir).map_err(io)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".paste-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .tempfile_in(&self.paste_dir)
            .map_err(io)?;
        tmp.write_all(text.as_bytes()).map_err(io)?;
        tmp.as_file().sync_data().map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        crate::writer::sync_parent(&path).map_err(io)?;
        Ok(hash)
    }
}

/// The first 16 hex digits of the SHA-256 of `text`: the paste's cache file name.
pub fn paste_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn is_hash(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn last_byte(file: &mut File, len: u64) -> std::io::Result<u8> {
    file.seek(SeekFrom::Start(len - 1))?;
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_the_reference_shape_and_unknown_fields() {
        let line = r#"{"display":"/clear ","pastedContents":{},"timestamp":1765558984722,"project":"/Users/user/repo","sessionId":"a53ffc9f-9045-4beb-8fd0-7c799ab1ba9f","future":1}"#;
        let entry: HistoryEntry = serde_json::from_str(line).unwrap();
        assert_eq!(entry.timestamp, 1_765_558_984_722);
        assert_eq!(serde_json::to_string(&entry).unwrap(), line);
    }

    #[test]
    fn paste_hash_is_16_hex_of_sha256() {
        // sha256("hello") = 2cf24dba5fb0a30e26e83b2ac5b9e29e…
        assert_eq!(paste_hash("hello"), "2cf24dba5fb0a30e");
    }
}
