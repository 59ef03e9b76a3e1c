//! The per-project listing index: every transcript's summary with the size and
//! modification time it was computed for. A cache only: rebuilt when missing or
//! unreadable, replaced atomically.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::summary::ScanState;

/// The index file's name inside a project folder.
pub(crate) const FILE_NAME: &str = ".strata-sessions-index.json";
/// Bumped when the summary changes meaning; an index of another version is rebuilt.
const VERSION: u32 = 4;

/// One transcript's entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IndexEntry {
    pub(crate) size: u64,
    pub(crate) modified_ns: u64,
    pub(crate) state: ScanState,
    /// The summary shown when the file ends in a whole record without its newline
    /// ([`ScanState::with_tail`]); `state` stops before that line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) with_tail: Option<ScanState>,
}

impl IndexEntry {
    /// What the listing shows.
    pub(crate) fn shown(&self) -> &ScanState {
        self.with_tail.as_ref().unwrap_or(&self.state)
    }
}

/// The index of one project folder, by transcript file name.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Index {
    sessions: BTreeMap<String, IndexEntry>,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    sessions: BTreeMap<String, IndexEntry>,
}

impl Index {
    /// The index of `dir`; empty when there is none or it cannot be used.
    pub(crate) fn load(dir: &Path) -> Self {
        let Ok(bytes) = std::fs::read(dir.join(FILE_NAME)) else {
            return Self::default();
        };
        match serde_json::from_slice::<OnDisk>(&bytes) {
            Ok(d) if d.version == VERSION => Self {
                sessions: d.sessions,
            },
            _ => Self::default(),
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&IndexEntry> {
        self.sessions.get(name)
    }

    pub(crate) fn insert(&mut self, name: String, e: IndexEntry) {
        self.sessions.insert(name, e);
    }

    /// Writes the index to `dir`, replacing the old one in one step.
    pub(crate) fn store(&self, dir: &Path) -> std::io::Result<()> {
        let body = serde_json::to_vec(&OnDisk {
            version: VERSION,
            sessions: self.sessions.clone(),
        })?;
        let tmp = dir.join(format!("{FILE_NAME}.tmp-{}", std::process::id()));
        let result = (|| {
            // Private like the transcripts it summarises (it holds their first prompts).
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(&tmp)?;
            f.write_all(&body)?;
            std::fs::rename(&tmp, dir.join(FILE_NAME))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}
