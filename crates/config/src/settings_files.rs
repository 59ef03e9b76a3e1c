//! The settings files of one project: loading and merging every source, and editing the
//! writable ones.
//!
//! [`SettingsFiles::load`] never fails as a whole, and a broken file never widens what is
//! allowed (issue 16, "fail closed"):
//!
//! - a source that is missing contributes nothing;
//! - reading is bounded: only a regular file of at most [`crate::MAX_CONFIG_FILE_BYTES`]
//!   is read; a FIFO, a device or a directory is refused at once, naming the file;
//! - a key other than `permissions` with a value of the wrong type is left out (or keeps
//!   its last good value) and reported; the rest of the file, its rules included, applies;
//! - a file that does not parse (a trailing comma, a `//` comment), cannot be read, or
//!   whose `permissions` do not match the schema or hold a `deny`/`ask` entry that is not
//!   a rule, keeps its **last good** rules — remembered per file by this `SettingsFiles`
//!   (and its clones) for the life of the process, so an edit that breaks a file during a
//!   session changes nothing. With no last good version, the file's rules are *unknown*
//!   ([`MergedSettings::unknown_permissions`]): the agent then asks before every tool call
//!   and denies where no one can be asked, naming the file, line and column.
//!
//! The table of cases is in the `reading` module. Every problem is in
//! [`MergedSettings::errors`] and, phrased with what strata does about it, in
//! [`MergedSettings::warnings`]. No read path ever writes, so a broken file is left
//! exactly as the user wrote it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use strata_protocol::settings::Settings;

use crate::atomic::{self, Decision};
use crate::document::{self, JsonObject};
use crate::error::ConfigError;
use crate::keypath;
use crate::merge::{self, Merged};
use crate::reading::{self, Reading, Remember};
use crate::sources::{FlagSettings, INLINE_FLAG_LABEL, SettingsLocations, SettingsSource};

/// The outcome of an update: whether the file was written, and what the edit returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Updated<T> {
    /// `false` when the edit left the document equal, so nothing was written.
    pub written: bool,
    /// The edit closure's return value.
    pub value: T,
}

/// One file (or the inline flag JSON) that took part in a merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// Which source it is.
    pub source: SettingsSource,
    /// Its path, or [`INLINE_FLAG_LABEL`] for inline flag JSON.
    pub file: String,
    /// Whether it is the reference agent's file of the scope (`.claude/settings.json`, …)
    /// rather than strata's own.
    pub reference: bool,
}

impl SourceFile {
    /// How `strata config list` names the file: the scope for strata's own files
    /// (`project`), `claude <scope>` for the reference agent's (`claude project`).
    ///
    /// ```
    /// use strata_config::{SettingsSource, SourceFile};
    /// let f = SourceFile { source: SettingsSource::Local, file: ".claude/settings.local.json".into(), reference: true };
    /// assert_eq!(f.label(), "claude local");
    /// ```
    pub fn label(&self) -> String {
        if self.reference {
            format!("claude {}", self.source)
        } else {
            self.source.as_str().to_owned()
        }
    }
}

/// One leaf value of the merged settings and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedEntry {
    /// The key path (`["permissions", "allow"]`).
    pub key: Vec<String>,
    /// The merged value.
    pub value: Value,
    /// For an array, the file each element came from (same length as the array);
    /// otherwise exactly one file, the one whose value won.
    pub from: Vec<SourceFile>,
}

/// The merge of every settings source.
#[derive(Debug)]
pub struct MergedSettings {
    /// The merged settings, typed.
    pub settings: Settings,
    /// The merged settings as JSON (every key, unknown ones included).
    pub value: JsonObject,
    /// The files that contributed, lowest precedence first.
    pub files: Vec<SourceFile>,
    /// Every problem found: files that could not be read or parsed, values of the wrong
    /// type. Each error names the file (and line and column when it is a parse error).
    pub errors: Vec<ConfigError>,
    /// Files whose permission rules cannot be known (they do not parse, or their
    /// `permissions` do not, and no good version of them was read before): while there is
    /// one, nothing may be allowed without asking.
    pub unknown_permissions: Vec<UnknownPermissions>,
    /// Top-level keys whose value in a file was wrong: the key, the file's source and
    /// the error (file, line, column). A wrong key is left out of the merge; readers for
    /// which leaving it out is not safe (the `remote` block) refuse to go on.
    pub bad_keys: Vec<BadKey>,
    /// One line per error, saying what strata does about it; `fresh` when the previous
    /// load by this `SettingsFiles` did not say the same about that file.
    warnings: Vec<(String, bool)>,
    merged: Merged,
}

/// A top-level key of a settings file whose value is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadKey {
    /// The key (`remote`, `model`, …).
    pub key: String,
    /// The file's source.
    pub source: SettingsSource,
    /// What is wrong, where.
    pub error: crate::error::ParseError,
}

/// A settings file whose permission rules cannot be known.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnknownPermissions {
    /// Which source it is.
    pub source: SettingsSource,
    /// Its path (or [`INLINE_FLAG_LABEL`]).
    pub file: String,
    /// What is wrong: the error, naming file, line and column.
    pub problem: String,
}

impl std::fmt::Display for UnknownPermissions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.problem)
    }
}

impl MergedSettings {
    /// The merged value at a key path.
    pub fn get<S: AsRef<str>>(&self, key: &[S]) -> Option<&Value> {
        keypath::get(&self.value, key)
    }

    /// Every problem, one line each, with what strata does about it (the last good
    /// values stay in force, a key is ignored, or tool calls ask).
    pub fn warnings(&self) -> impl Iterator<Item = &str> {
        self.warnings.iter().map(|(w, _)| w.as_str())
    }

    /// The [`warnings`](Self::warnings) the previous load by the same `SettingsFiles` did
    /// not give: what a watcher reports, so a broken file is reported once, not at every
    /// event.
    pub fn new_warnings(&self) -> impl Iterator<Item = &str> {
        self.warnings
            .iter()
            .filter(|(_, fresh)| *fresh)
            .map(|(w, _)| w.as_str())
    }

    /// Every leaf value (non-object, or empty object) with its origin, in merged key order.
    pub fn entries(&self) -> Vec<MergedEntry> {
        merge::leaves(&self.merged)
            .into_iter()
            .map(|(key, value, origins)| MergedEntry {
                key,
                value,
                from: origins
                    .into_iter()
                    .filter_map(|i| self.files.get(i).cloned())
                    .collect(),
            })
            .collect()
    }
}

/// The settings files for one config dir and project root.
///
/// ```
/// use serde_json::json;
/// use strata_config::{SettingsFiles, SettingsLocations, SettingsSource};
///
/// let tmp = tempfile::tempdir().unwrap();
/// let locations = SettingsLocations::new(&tmp.path().join("cfg"), &tmp.path().join("proj"))
///     .with_managed_dir(tmp.path().join("managed"));
/// let files = SettingsFiles::new(locations);
///
/// // FX-2: persist the model to user settings; clearing it removes the key.
/// let up = files.set_value(SettingsSource::User, &["model"], Some(json!("opus"))).unwrap();
/// assert!(up.written);
/// assert_eq!(files.load().settings.model.as_deref(), Some("opus"));
/// // Setting the same value again writes nothing.
/// assert!(!files.set_value(SettingsSource::User, &["model"], Some(json!("opus"))).unwrap().written);
/// files.set_value(SettingsSource::User, &["model"], None).unwrap();
/// assert_eq!(files.load().settings.model, None);
/// ```
#[derive(Clone, Debug)]
pub struct SettingsFiles {
    locations: SettingsLocations,
    /// Per file: its last good contribution and what the last load said about it. Shared
    /// by clones (the watcher's copy and the session's see the same memory).
    memory: Arc<Mutex<HashMap<String, Remembered>>>,
}

#[derive(Debug, Default)]
struct Remembered {
    good: Option<JsonObject>,
    said: Vec<String>,
}

impl SettingsFiles {
    /// The settings files at these locations.
    pub fn new(locations: SettingsLocations) -> Self {
        Self {
            locations,
            memory: Arc::default(),
        }
    }

    /// Where the sources are.
    pub fn locations(&self) -> &SettingsLocations {
        &self.locations
    }

    /// Reads and merges every source (see the module docs for what happens to bad files).
    pub fn load(&self) -> MergedSettings {
        let mut merged = Merged::default();
        let mut files = Vec::new();
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let mut unknown_permissions = Vec::new();
        let mut bad_keys = Vec::new();
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        let mut listing_errors = Vec::new();
        for (source, input) in self.inputs(&mut listing_errors) {
            let (file, read) = match input {
                Input::Path(path) => {
                    let read = match atomic::read(&path) {
                        // A `--settings` file was asked for explicitly: its absence is an
                        // error.
                        Ok(None) if source == SettingsSource::Flag => {
                            let missing =
                                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
                            Err(ConfigError::io("read --settings file", &path, missing))
                        }
                        other => other,
                    };
                    (path.display().to_string(), read)
                }
                Input::Inline(text) => (INLINE_FLAG_LABEL.to_owned(), Ok(Some(text.into_bytes()))),
            };
            let remembered = memory.entry(file.clone()).or_default();
            let reading = match read {
                Ok(None) => Reading::missing(),
                Ok(Some(bytes)) => reading::evaluate(&bytes, &file, remembered.good.as_ref()),
                Err(e) => Reading::unusable(e, remembered.good.as_ref()),
            };
            let said: Vec<String> = reading
                .problems
                .iter()
                .map(|(e, fallback)| format!("{e} ({})", fallback.explain()))
                .collect();
            warnings.extend(
                said.iter()
                    .map(|w| (w.clone(), !remembered.said.contains(w))),
            );
            remembered.said = said;
            match reading.remember {
                Remember::Good(object) => remembered.good = Some(object),
                Remember::Keep => {}
                Remember::Forget => remembered.good = None,
            }
            if let Some(problem) = reading.unknown {
                unknown_permissions.push(UnknownPermissions {
                    source,
                    file: file.clone(),
                    problem,
                });
            }
            bad_keys.extend(reading.bad_keys.into_iter().map(|(key, error)| BadKey {
                key,
                source,
                error,
            }));
            errors.extend(reading.problems.into_iter().map(|(e, _)| e));
            if let Some(object) = reading.contribution {
                merged.apply(files.len(), &object);
                let reference = self.locations.is_reference(Path::new(&file));
                files.push(SourceFile {
                    source,
                    file,
                    reference,
                });
            }
        }
        drop(memory);
        // A managed drop-in directory that cannot be listed may hold the administrator's
        // deny rules: its rules are unknown.
        for e in listing_errors {
            let problem = e.to_string();
            warnings.push((
                format!("{problem} ({})", reading::Fallback::RulesUnknown.explain()),
                true,
            ));
            unknown_permissions.push(UnknownPermissions {
                source: SettingsSource::Managed,
                file: self.locations.managed_dropin_dir().display().to_string(),
                problem,
            });
            errors.push(e);
        }
        let settings = match document::typed_from_object::<Settings>(&merged.value) {
            Ok(s) => s,
            Err(problem) => {
                // Every contribution was valid on its own and merging keeps each known
                // key's type, so this is not expected; report it rather than hide it.
                errors.push(ConfigError::Rejected {
                    file: PathBuf::from("(merged settings)"),
                    problem,
                });
                Settings::default()
            }
        };
        MergedSettings {
            settings,
            value: merged.value.clone(),
            files,
            errors,
            unknown_permissions,
            bad_keys,
            warnings,
            merged,
        }
    }

    /// One writable source's current JSON (`None` when the file does not exist).
    pub fn read_source(&self, source: SettingsSource) -> Result<Option<JsonObject>, ConfigError> {
        let (path, _) = self.writable(source)?;
        let Some(bytes) = atomic::read(path)? else {
            return Ok(None);
        };
        let (object, _) = document::parse::<Settings>(&bytes, &path.display().to_string())?;
        Ok(Some(object))
    }

    /// Every file read for a scope (the reference agent's, then strata's; see
    /// [`SettingsLocations::scope_files`]) with its JSON (`None`: no such file), or the
    /// error reading or parsing it. For checks that need to know which file of a scope
    /// says what (the hooks trust gate).
    pub fn read_scope(
        &self,
        source: SettingsSource,
    ) -> Vec<(PathBuf, Result<Option<JsonObject>, ConfigError>)> {
        self.locations
            .scope_files(source)
            .into_iter()
            .map(|path| {
                let object = atomic::read(path).and_then(|bytes| {
                    bytes
                        .map(|b| {
                            document::parse::<Value>(&b, &path.display().to_string())
                                .map(|(o, _)| o)
                                .map_err(ConfigError::from)
                        })
                        .transpose()
                });
                (path.to_path_buf(), object)
            })
            .collect()
    }

    /// Edits a writable source under the file lock (exclusive lock on the file's directory,
    /// re-read inside it, atomic replace; see the [crate docs](crate)) and returns the
    /// edit's value.
    ///
    /// `edit` receives the file's JSON object (every key, in order; empty when the file
    /// does not exist) and may change it. If it leaves the object equal, nothing is written
    /// and [`Updated::written`] is `false`. Otherwise the result must still validate as
    /// [`Settings`], else [`ConfigError::Rejected`] and nothing is written. A file that does
    /// not parse is never written: [`ConfigError::Parse`] names its line and column.
    ///
    /// `edit` may run twice: once on an unlocked read (when that shows no change, the lock
    /// is never taken — cheap for frequent "make sure it is X" calls) and once inside the
    /// lock. It must be a function of the object it is given.
    pub fn update<T>(
        &self,
        source: SettingsSource,
        edit: impl FnMut(&mut JsonObject) -> T,
    ) -> Result<Updated<T>, ConfigError> {
        let (path, root) = self.writable(source)?;
        update_object::<Settings, T>(path, &root, edit)
    }

    /// Sets (`Some`) or removes (`None`) the value at a key path in a writable source.
    pub fn set_value<S: AsRef<str>>(
        &self,
        source: SettingsSource,
        key: &[S],
        value: Option<Value>,
    ) -> Result<Updated<()>, ConfigError> {
        let (path, root) = self.writable(source)?;
        let outcome =
            update_object::<Settings, Result<(), keypath::KeyPathError>>(path, &root, |doc| {
                match &value {
                    Some(v) => keypath::set(doc, key, v.clone()),
                    None => keypath::remove(doc, key).map(drop),
                }
            })?;
        match outcome.value {
            Ok(()) => Ok(Updated {
                written: outcome.written,
                value: (),
            }),
            Err(e) => Err(ConfigError::Rejected {
                file: path.to_path_buf(),
                problem: e.to_string(),
            }),
        }
    }

    /// A writable source's file, and where a write to it may create directories: the
    /// config directory for user settings (`<config>/settings.json`), the project for its
    /// files (`<root>/.strata/…`).
    fn writable(&self, source: SettingsSource) -> Result<(&Path, PathBuf), ConfigError> {
        let path = self
            .locations
            .writable_file(source)
            .ok_or(ConfigError::ReadOnly(source))?;
        let levels = if matches!(source, SettingsSource::Project | SettingsSource::Local) {
            refuse_link_out_of_project(path)?;
            2
        } else {
            1
        };
        let root = path
            .ancestors()
            .nth(levels)
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Ok((path, root))
    }

    /// Every input in precedence order. Missing managed drop-in directory is not an error;
    /// one that cannot be listed is.
    fn inputs(&self, errors: &mut Vec<ConfigError>) -> Vec<(SettingsSource, Input)> {
        let l = &self.locations;
        let mut out: Vec<(SettingsSource, Input)> = Vec::new();
        // Per scope, the reference agent's file before strata's: strata's wins a value
        // both set. A file already read (the project root is the home directory, so the
        // project file is the user file; `.strata` is a link to `.claude`) is read once,
        // at its first place, rather than have its values attributed to a second source.
        let mut seen: Vec<PathBuf> = Vec::new();
        for source in [
            SettingsSource::User,
            SettingsSource::Project,
            SettingsSource::Local,
        ] {
            for path in l.scope_files(source) {
                if seen.iter().any(|p| same_file(p, path)) {
                    continue;
                }
                seen.push(path.to_path_buf());
                out.push((source, Input::Path(path.to_path_buf())));
            }
        }
        match &l.flag {
            Some(FlagSettings::File(p)) => out.push((SettingsSource::Flag, Input::Path(p.clone()))),
            Some(FlagSettings::Inline(t)) => {
                out.push((SettingsSource::Flag, Input::Inline(t.clone())))
            }
            None => {}
        }
        out.push((SettingsSource::Managed, Input::Path(l.managed_file())));
        match l.managed_dropins() {
            Ok(files) => out.extend(
                files
                    .into_iter()
                    .map(|p| (SettingsSource::Managed, Input::Path(p))),
            ),
            Err(e) => errors.push(ConfigError::io("list", &l.managed_dropin_dir(), e)),
        }
        out.retain(|(source, _)| l.loads(*source));
        out
    }
}

enum Input {
    Path(PathBuf),
    Inline(String),
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// The read-modify-write of a JSON object file validated as `T` (settings or global
/// config), shared by [`SettingsFiles::update`] and [`crate::GlobalConfigFile::update_raw`].
pub(crate) fn update_object<T, R>(
    path: &Path,
    root: &Path,
    mut edit: impl FnMut(&mut JsonObject) -> R,
) -> Result<Updated<R>, ConfigError>
where
    T: serde::de::DeserializeOwned,
{
    let label = path.display().to_string();
    // Optimistic pass without the lock: a no-op needs no lock and no directory.
    let current = atomic::read(path)?;
    let (mut object, _) = parse_or_empty::<T>(current.as_deref(), &label)?;
    let before = object.clone();
    let value = edit(&mut object);
    if object == before {
        return Ok(Updated {
            written: false,
            value,
        });
    }
    let (written, value) = atomic::locked_update(path, root, |current| {
        let (mut object, _) = parse_or_empty::<T>(current, &label)?;
        let before = object.clone();
        let value = edit(&mut object);
        if object == before {
            return Ok(Decision::Keep(value));
        }
        document::typed_from_object::<T>(&object).map_err(|problem| ConfigError::Rejected {
            file: path.to_path_buf(),
            problem,
        })?;
        Ok(Decision::Write(document::to_bytes(&object), value))
    })?;
    Ok(Updated { written, value })
}

fn parse_or_empty<T: serde::de::DeserializeOwned>(
    bytes: Option<&[u8]>,
    label: &str,
) -> Result<(JsonObject, Option<T>), ConfigError> {
    match bytes {
        None => Ok((JsonObject::new(), None)),
        Some(b) => {
            // A file that is valid JSON but breaks the schema may still be edited (the edit
            // may be the fix); the result is validated before it is written. A file that is
            // not JSON is refused here and never written.
            match document::parse::<T>(b, label) {
                Ok((o, t)) => Ok((o, Some(t))),
                Err(e) => match document::parse::<serde_json::Value>(b, label) {
                    Ok((o, _)) => Ok((o, None)),
                    Err(_) => Err(e.into()),
                },
            }
        }
    }
}

/// A project's settings file may be a symbolic link committed to its repository: writing
/// through one that leads out of the project (to the user's own settings, say) would let
/// a repository choose which of the user's files strata changes. Such a link is refused;
/// links within the project are written through.
fn refuse_link_out_of_project(path: &Path) -> Result<(), ConfigError> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    // `<root>/.strata/<file>`.
    let Some(root) = path.parent().and_then(Path::parent) else {
        return Ok(());
    };
    if !is_link {
        return Ok(());
    }
    // The link's target may not exist yet: judged by where its existing part is.
    let target = std::fs::read_link(path)
        .map(|t| path.parent().unwrap_or(root).join(t))
        .unwrap_or_else(|_| path.to_path_buf());
    if crate::paths::resolves_within(&target, root) {
        return Ok(());
    }
    Err(ConfigError::LinkOutOfProject {
        file: path.to_path_buf(),
        target,
    })
}
