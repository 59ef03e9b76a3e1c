//! Read-modify-write of one file, safe against concurrent writers and crashes.
//!
//! The protocol, for every write strata makes to a settings or config file:
//! 1. take an exclusive lock on the file's directory (blocking). The lock is not on the
//!    file itself because step 4 replaces the file's inode: a lock held on the old inode
//!    would not exclude a writer that opened the new one. Locking the directory leaves no
//!    lock file behind in a project's `.strata/` to be committed by mistake (elsewhere
//!    than unix, a sidecar `<file>.lock` is used);
//! 2. read the file *inside* the lock, so the edit applies to what the last writer left
//!    (no writer ever drops another's keys);
//! 3. let the caller compute the new bytes, or decide nothing changed (then nothing is
//!    written at all);
//! 4. write a temporary file in the same directory, fsync it, rename it over the file,
//!    fsync the directory. Readers never lock: a rename is atomic, so they see the old
//!    or the new file, never a torn one.
//!
//! New files get mode 0600, new directories 0700 (settings can hold secrets such as an
//! `apiKeyHelper` command or `env` tokens). An existing file keeps its mode and group.
//! A path that is a symbolic link (settings kept in a dotfiles repository) is written
//! through: the link's target is replaced and the link stays.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::error::ConfigError;

/// What the caller decided after seeing the current contents.
pub(crate) enum Decision<T> {
    /// Nothing to write.
    Keep(T),
    /// Replace the file with these bytes.
    Write(Vec<u8>, T),
}

/// The largest settings or config file strata reads: 4 MiB. Real files are a few
/// kilobytes; the cap is generous so no hand-written file meets it, and small enough that a
/// file that is not one (a link to a log, a generated blob) is refused before it costs
/// memory.
pub const MAX_CONFIG_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Reads `path` without locking (`None` when missing), bounded: only a regular file (after
/// following links) of at most [`MAX_CONFIG_FILE_BYTES`] is read. A FIFO, a device, a
/// socket or a directory is refused at once with [`ConfigError::NotARegularFile`]: a
/// settings file is committable to a repository, and a link to `/dev/zero` or a named
/// pipe must not grow strata's memory or hang it.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, ConfigError> {
    read_bounded(path, MAX_CONFIG_FILE_BYTES)
}

/// Reads `path` bounded (`None` when missing): only a regular file (after following
/// links) of at most `limit` bytes; a FIFO, a device, a socket or a directory is refused
/// at once ([`ConfigError::NotARegularFile`]), a larger file with
/// [`ConfigError::TooLarge`]. Settings and config files are read with
/// [`MAX_CONFIG_FILE_BYTES`]; other small files strata reads from a project at start use
/// their own cap (a repository could make any of them a FIFO or a link to a device).
///
/// ```
/// let tmp = tempfile::tempdir().unwrap();
/// let file = tmp.path().join("HEAD");
/// assert_eq!(strata_config::read_bounded(&file, 1024).unwrap(), None);
/// std::fs::write(&file, "ref: refs/heads/main\n").unwrap();
/// assert!(strata_config::read_bounded(&file, 1024).unwrap().is_some());
/// assert!(strata_config::read_bounded(&file, 4).is_err(), "over the cap");
/// ```
pub fn read_bounded(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ConfigError> {
    use std::io::Read;
    // The type is checked before opening (opening a FIFO for reading blocks until a writer
    // comes) and again on the opened handle, which is opened non-blocking: a file swapped
    // for a FIFO between the two checks neither hangs the open nor gets read.
    match fs::metadata(path) {
        Ok(meta) => refuse_special(path, &meta)?,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ConfigError::io("read", path, e)),
    }
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ConfigError::io("read", path, e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| ConfigError::io("read", path, e))?;
    refuse_special(path, &meta)?;
    if meta.len() > limit {
        return Err(ConfigError::TooLarge {
            file: path.to_path_buf(),
            limit,
        });
    }
    // The length may grow while reading (a file being appended to): reading stops one byte
    // past the cap either way.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ConfigError::io("read", path, e))?;
    if bytes.len() as u64 > limit {
        return Err(ConfigError::TooLarge {
            file: path.to_path_buf(),
            limit,
        });
    }
    Ok(Some(bytes))
}

/// Refuses anything but a regular file, naming what it is.
fn refuse_special(path: &Path, meta: &fs::Metadata) -> Result<(), ConfigError> {
    let file_type = meta.file_type();
    if file_type.is_file() {
        return Ok(());
    }
    let kind = if file_type.is_dir() {
        "a directory"
    } else {
        special_kind(&file_type)
    };
    Err(ConfigError::NotARegularFile {
        file: path.to_path_buf(),
        kind,
    })
}

#[cfg(unix)]
fn special_kind(file_type: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_kind(_file_type: &fs::FileType) -> &'static str {
    "not a regular file"
}

/// Runs the locked read-modify-write protocol on `path`. Returns whether the file was
/// written, and the caller's value.
///
/// Missing directories on the way to the file are created only inside `root` (the config
/// directory for user settings and `config.json`, the project for its settings): a
/// settings path that is a dangling symbolic link must not make strata create
/// directories wherever the link points ([`ConfigError::OutsideWriteRoot`]). `root`
/// itself may be created (a config directory named by `$STRATA_CONFIG_DIR` that does not
/// exist yet).
pub(crate) fn locked_update<T>(
    path: &Path,
    root: &Path,
    decide: impl FnOnce(Option<&[u8]>) -> Result<Decision<T>, ConfigError>,
) -> Result<(bool, T), ConfigError> {
    let configured = path;
    let path = &follow_links(path)?;
    let dir = parent_dir(path);
    if !dir.is_dir() {
        if !creatable_within(&dir, root) {
            return Err(ConfigError::OutsideWriteRoot {
                file: configured.to_path_buf(),
                dir,
                root: root.to_path_buf(),
            });
        }
        create_private_dir(&dir)?;
    }
    // The lock is released when `_lock` is dropped at the end of this function, also on
    // every error path.
    let _lock = lock_for(path, &dir)?;
    let current = read(path)?;
    match decide(current.as_deref())? {
        Decision::Keep(out) => Ok((false, out)),
        Decision::Write(bytes, out) => {
            replace(path, &dir, &bytes)?;
            Ok((true, out))
        }
    }
}

/// Whether creating `dir` (and its missing ancestors) creates nothing outside `root`:
/// `dir`, with `.` and `..` taken out, lies under `root`, and the deepest part of it that
/// exists really leads into `root` (a link inside `root` pointing out of it does not).
fn creatable_within(dir: &Path, root: &Path) -> bool {
    let (dir, root) = (lexical(dir), lexical(root));
    if !dir.starts_with(&root) {
        return false;
    }
    if !root.exists() {
        // Nothing under a missing root can be a link out of it.
        return true;
    }
    crate::paths::resolves_within(&dir, &root)
}

/// `path` made absolute (against the working directory) with `.` and `..` applied
/// lexically; used only with the resolved check above.
fn lexical(path: &Path) -> PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    crate::paths::normalize_lexically(&path)
}

/// Takes the exclusive lock that serializes writers of `path` (in `dir`).
#[cfg(unix)]
fn lock_for(_path: &Path, dir: &Path) -> Result<File, ConfigError> {
    let handle = File::open(dir).map_err(|e| ConfigError::io("open", dir, e))?;
    handle.lock().map_err(|e| ConfigError::io("lock", dir, e))?;
    Ok(handle)
}

#[cfg(not(unix))]
fn lock_for(path: &Path, _dir: &Path) -> Result<File, ConfigError> {
    let lock_path = sidecar_lock(path);
    let lock = open_private(&lock_path)?;
    lock.lock()
        .map_err(|e| ConfigError::io("lock", &lock_path, e))?;
    Ok(lock)
}

/// The file a write to `path` must replace: `path` itself, or the end of the chain of
/// symbolic links it starts (the target may not exist yet).
fn follow_links(path: &Path) -> Result<PathBuf, ConfigError> {
    /// Linux's own limit on links followed in one lookup.
    const MAX_LINKS: usize = 40;
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&current)
                    .map_err(|e| ConfigError::io("read link", &current, e))?;
                current = parent_dir(&current).join(target);
            }
            _ => return Ok(current),
        }
    }
    Err(ConfigError::io(
        "follow links of",
        path,
        std::io::Error::other(format!("more than {MAX_LINKS} symbolic links in a chain")),
    ))
}

/// `<file>.lock` beside `path`.
#[cfg(not(unix))]
fn sidecar_lock(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".lock");
    path.with_file_name(name)
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to a temporary file in `dir`, fsyncs it and renames it over `path`, then
/// fsyncs `dir` so the rename itself is durable.
fn replace(path: &Path, dir: &Path, bytes: &[u8]) -> Result<(), ConfigError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // tempfile creates the file with mode 0600 on unix.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| ConfigError::io("create a temporary file in", dir, e))?;
    if let Ok(meta) = fs::metadata(path) {
        // Keep the mode the user gave an existing file.
        fs::set_permissions(tmp.path(), meta.permissions())
            .map_err(|e| ConfigError::io("set permissions of", tmp.path(), e))?;
        // And its group, when this user may give it (a shared settings file). Failing
        // is not an error: the file is this user's to write either way.
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let _ = std::os::unix::fs::fchown(tmp.as_file(), None, Some(meta.gid()));
        }
    }
    tmp.write_all(bytes)
        .map_err(|e| ConfigError::io("write", tmp.path(), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| ConfigError::io("sync", tmp.path(), e))?;
    tmp.persist(path)
        .map_err(|e| ConfigError::io("replace", path, e.error))?;
    sync_dir(dir)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> Result<(), ConfigError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| ConfigError::io("sync", dir, e))
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> Result<(), ConfigError> {
    Ok(())
}

/// Creates `dir` and missing parents with mode 0700. Existing directories are untouched.
pub(crate) fn create_private_dir(dir: &Path) -> Result<(), ConfigError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| ConfigError::io("create directory", dir, e))
}

/// Opens (creating with mode 0600 when missing) a file for writing.
#[cfg(not(unix))]
fn open_private(path: &Path) -> Result<File, ConfigError> {
    let mut opts = fs::OpenOptions::new();
    opts.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
        .map_err(|e| ConfigError::io("open lock file", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    #[cfg(unix)]
    fn new_files_are_0600_and_new_dirs_0700() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a/b/settings.json");
        let (written, ()) = locked_update(&file, tmp.path(), |cur| {
            assert!(cur.is_none());
            Ok(Decision::Write(b"{}\n".to_vec(), ()))
        })
        .unwrap();
        assert!(written);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
        assert_eq!(mode(&tmp.path().join("a/b")), 0o700);
    }

    /// Regression: a settings file kept in a dotfiles repository and linked into place
    /// was replaced by a regular file, cutting the link; the dotfile kept the old value.
    #[test]
    #[cfg(unix)]
    fn regression_a_symlinked_file_is_written_through_and_stays_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let dotfiles = tmp.path().join("dotfiles");
        fs::create_dir(&dotfiles).unwrap();
        fs::write(dotfiles.join("settings.json"), "{}").unwrap();
        let config = tmp.path().join("config");
        fs::create_dir(&config).unwrap();
        let link = config.join("settings.json");
        // A relative link, resolved against the link's directory.
        std::os::unix::fs::symlink("../dotfiles/settings.json", &link).unwrap();
        locked_update(&link, tmp.path(), |cur| {
            assert_eq!(cur, Some(&b"{}"[..]), "reads through the link");
            Ok(Decision::Write(b"{\"a\":1}".to_vec(), ()))
        })
        .unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::read(dotfiles.join("settings.json")).unwrap(),
            b"{\"a\":1}"
        );
        // A dangling link: the target is created where it points.
        let dangling = config.join("settings.local.json");
        std::os::unix::fs::symlink(dotfiles.join("local.json"), &dangling).unwrap();
        locked_update(&dangling, tmp.path(), |_| {
            Ok(Decision::Write(b"{}".to_vec(), ()))
        })
        .unwrap();
        assert!(
            fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(dotfiles.join("local.json")).unwrap(), b"{}");
    }

    #[test]
    #[cfg(unix)]
    fn a_write_leaves_no_lock_or_temporary_file_beside_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("settings.local.json");
        locked_update(&file, tmp.path(), |_| {
            Ok(Decision::Write(b"{}".to_vec(), ()))
        })
        .unwrap();
        let names: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["settings.local.json"]);
    }

    #[test]
    #[cfg(unix)]
    fn an_existing_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("s.json");
        fs::write(&file, "{}").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        locked_update(&file, tmp.path(), |_| {
            Ok(Decision::Write(b"{\"a\":1}".to_vec(), ()))
        })
        .unwrap();
        assert_eq!(mode(&file), 0o644);
        assert_eq!(fs::read(&file).unwrap(), b"{\"a\":1}");
    }

    #[test]
    fn keep_writes_nothing_and_leaves_no_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("s.json");
        fs::write(&file, "{ }").unwrap();
        let before = fs::metadata(&file).unwrap().modified().unwrap();
        let (written, n) = locked_update(&file, tmp.path(), |_| Ok(Decision::Keep(7))).unwrap();
        assert_eq!((written, n), (false, 7));
        assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), before);
        let names: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn threads_never_lose_an_increment() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("n");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        locked_update(&file, tmp.path(), |cur| {
                            let n: u32 = cur
                                .map(|b| String::from_utf8_lossy(b).parse().unwrap())
                                .unwrap_or(0);
                            Ok(Decision::Write((n + 1).to_string().into_bytes(), ()))
                        })
                        .unwrap();
                    }
                });
            }
        });
        assert_eq!(fs::read_to_string(&file).unwrap(), "100");
    }
}
