//! Opening a transcript for appending: creation with private permissions, the exclusive
//! lock, and the torn-tail check.
//!
//! Shared with the input history ([`crate::history`]), which appends under the same rules.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::WriterError;

/// A transcript opened for appending and locked by this handle.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) file: File,
    /// The file's length when opened.
    pub(crate) len: u64,
    /// The file is non-empty and its last byte is not `\n`: the next write must start
    /// with one so the torn fragment cannot fuse with the next record.
    pub(crate) needs_newline: bool,
    /// Folders created for the file (outermost first), whose parents must be fsynced
    /// with the file's own parent so the new entries are durable.
    pub(crate) created_dirs: Vec<PathBuf>,
    /// Whether this open created the file.
    pub(crate) created: bool,
}

/// Opens and locks `path` if it exists; `Ok(None)` when it does not.
pub(crate) fn open_existing(path: &Path) -> Result<Option<Opened>, WriterError> {
    match OpenOptions::new().read(true).append(true).open(path) {
        Ok(file) => finish_open(path, file, Vec::new(), false).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(WriterError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Opens `path` for appending, creating it (mode `0600`) and its missing folders (mode
/// `0700`) when needed, and locks it.
pub(crate) fn open_or_create(path: &Path) -> Result<Opened, WriterError> {
    let created_dirs = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => {
            create_private_dirs(parent).map_err(|source| WriterError::Io {
                path: parent.to_path_buf(),
                source,
            })?
        }
        _ => Vec::new(),
    };
    let existed = path.exists();
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| WriterError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    finish_open(path, file, created_dirs, !existed)
}

fn finish_open(
    path: &Path,
    mut file: File,
    created_dirs: Vec<PathBuf>,
    created: bool,
) -> Result<Opened, WriterError> {
    let io = |source| WriterError::Io {
        path: path.to_path_buf(),
        source,
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let holder = file.metadata().ok().and_then(|m| flock_holder(m.ino()));
            return Err(WriterError::Locked {
                path: path.to_path_buf(),
                holder,
            });
        }
        Err(TryLockError::Error(source)) => return Err(io(source)),
    }
    let mut len = file.metadata().map_err(io)?.len();
    let mut needs_newline = len > 0 && last_byte(&mut file, len).map_err(io)? != b'\n';
    if needs_newline && file.write_all(b"\n").is_ok() {
        // Terminate the torn line now that the file is ours, so that even a crash before
        // our first record cannot leave two fragments fused. If this write fails, the
        // first record's write starts with the newline instead.
        len += 1;
        needs_newline = false;
    }
    Ok(Opened {
        file,
        len,
        needs_newline,
        created_dirs,
        created,
    })
}

fn last_byte(file: &mut File, len: u64) -> std::io::Result<u8> {
    // Reads are positioned independently of O_APPEND writes, which always go to the end.
    file.seek(SeekFrom::Start(len - 1))?;
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

/// Creates `dir` and its missing ancestors with mode `0700`; returns the folders it
/// created, outermost first.
pub(crate) fn create_private_dirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.exists())
        .map(Path::to_path_buf)
        .collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    Ok(missing.into_iter().rev().collect())
}

/// Fsyncs the folder holding `path`, so a newly created entry in it survives a crash.
pub(crate) fn sync_parent(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => File::open(parent)?.sync_all(),
        _ => Ok(()),
    }
}

/// The process holding a `flock` on the file with inode `ino`, from `/proc/locks`
/// (Linux only; `None` elsewhere or when it cannot be told).
fn flock_holder(ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    parse_proc_locks(&locks, ino)
}

/// Finds the holder of a `FLOCK` on inode `ino` in the text of `/proc/locks`, whose lines
/// read `1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF` (blocked waiters have `->`
/// after the number and are skipped).
fn parse_proc_locks(text: &str, ino: u64) -> Option<u32> {
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) != Some(&"FLOCK") {
            return None;
        }
        let pid: u32 = fields.get(4)?.parse().ok()?;
        let file_ino: u64 = fields.get(5)?.rsplit(':').next()?.parse().ok()?;
        (file_ino == ino).then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines_name_the_holder_of_an_inode() {
        let text = "1: POSIX  ADVISORY  WRITE 10 fd:01:77 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 4321 fd:01:77 0 EOF\n\
                    2: -> FLOCK  ADVISORY  WRITE 999 fd:01:77 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 5 00:2a:12 0 EOF\n";
        assert_eq!(parse_proc_locks(text, 77), Some(4321));
        assert_eq!(parse_proc_locks(text, 12), Some(5));
        assert_eq!(parse_proc_locks(text, 13), None);
    }

    #[test]
    fn private_dirs_are_created_0700_and_reported_outermost_first() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        let made = create_private_dirs(&deep).unwrap();
        assert_eq!(
            made,
            vec![tmp.path().join("a"), tmp.path().join("a/b"), deep.clone()]
        );
        for d in &made {
            assert_eq!(
                std::fs::metadata(d).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
        assert!(create_private_dirs(&deep).unwrap().is_empty());
    }
}
