//! The backup files themselves: naming, path keys, reading a file's state, writing a
//! backup.
//!
//! A tracked file is keyed in snapshots by its path relative to the session's working
//! directory when it is inside it (as the reference agent writes them, e.g.
//! `lib/app.ex`), else by its absolute path. Its backups are named after the first 16 hex
//! digits of the SHA-256 of its absolute path, plus `@v<n>`.

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::FileHistoryError;

/// The name of version `version` of the backup of `abs_path`: `<sha256[..16]>@v<n>`.
pub(crate) fn backup_name(abs_path: &Path, version: u32) -> String {
    let digest = Sha256::digest(abs_path.as_os_str().as_encoded_bytes());
    let mut hex = String::with_capacity(16);
    for byte in &digest[..8] {
        hex.push_str(&format!("{byte:02x}"));
    }
    format!("{hex}@v{version}")
}

/// `path` made absolute against `cwd` and cleaned of `.` and `..` (lexically: the file
/// may not exist).
pub(crate) fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The snapshot key of `abs`: relative to `cwd` when inside it, else absolute.
pub(crate) fn key_for(cwd: &Path, abs: &Path) -> String {
    match abs.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => abs.to_string_lossy().into_owned(),
    }
}

/// A file's contents, or `None` when it does not exist.
pub(crate) fn read_state(path: &Path) -> Result<Option<Vec<u8>>, FileHistoryError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FileHistoryError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Whether the backup at `backup` holds exactly `current`.
pub(crate) fn backup_matches(backup: &Path, current: &[u8]) -> bool {
    let Ok(mut file) = File::open(backup) else {
        return false;
    };
    match file.metadata() {
        Ok(m) if m.len() == current.len() as u64 => {}
        _ => return false,
    }
    let mut bytes = Vec::with_capacity(current.len());
    file.read_to_end(&mut bytes).is_ok() && bytes == current
}

/// Copies `source` to `dest` (keeping its permission bits, so a rewind can restore them)
/// and makes the copy durable: the edit it protects comes right after.
pub(crate) fn write_backup(source: &Path, dest: &Path) -> Result<(), FileHistoryError> {
    let err = |source| FileHistoryError::Backup {
        path: dest.to_path_buf(),
        source,
    };
    if let Some(dir) = dest.parent() {
        crate::writer::private_dirs(dir).map_err(err)?;
    }
    std::fs::copy(source, dest).map_err(err)?;
    File::open(dest).and_then(|f| f.sync_all()).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_hash_the_absolute_path() {
        // sha256("/tmp/a.txt") = 1a5a1d32…: the name is its first 16 hex digits.
        let name = backup_name(Path::new("/tmp/a.txt"), 3);
        let digest = Sha256::digest(b"/tmp/a.txt");
        let want: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(name, format!("{want}@v3"));
        assert_eq!(name.len(), 16 + 3);
    }

    #[test]
    fn keys_are_relative_inside_the_cwd_and_absolute_outside() {
        let cwd = Path::new("/w/proj");
        assert_eq!(
            key_for(cwd, &absolute(cwd, Path::new("src/./a.rs"))),
            "src/a.rs"
        );
        assert_eq!(
            key_for(cwd, &absolute(cwd, Path::new("/w/proj/b.rs"))),
            "b.rs"
        );
        assert_eq!(
            key_for(cwd, &absolute(cwd, Path::new("../other/c.rs"))),
            "/w/other/c.rs"
        );
        assert_eq!(key_for(cwd, Path::new("/etc/hosts")), "/etc/hosts");
    }
}
