//! The settings files of one project: loading and merging every source, and editing the
//! writable ones.
//!
//! [`SettingsFiles::load`] never fails as a whole: a source that is missing contributes
//! nothing; one that cannot be read, parsed or validated contributes nothing and adds an
//! error to [`MergedSettings::errors`]; the other sources still apply. No read path ever
//! writes, so a broken file is left exactly as the user wrote it.

use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_protocol::settings::Settings;

use crate::atomic::{self, Decision};
use crate::document::{self, JsonObject};
use crate::error::ConfigError;
use crate::keypath;
use crate::merge::{self, Merged};
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
    /// Sources that contributed nothing because they could not be read, parsed or
    /// validated. Each error names the file (and line and column when it is a parse error).
    pub errors: Vec<ConfigError>,
    merged: Merged,
}

impl MergedSettings {
    /// The merged value at a key path.
    pub fn get<S: AsRef<str>>(&self, key: &[S]) -> Option<&Value> {
        keypath::get(&self.value, key)
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
}

impl SettingsFiles {
    /// The settings files at these locations.
    pub fn new(locations: SettingsLocations) -> Self {
        Self { locations }
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
        for (source, input) in self.inputs(&mut errors) {
            let (file, bytes) = match input {
                Input::Path(path) => match atomic::read(&path) {
                    Ok(Some(bytes)) => (path.display().to_string(), bytes),
                    // A `--settings` file was asked for explicitly: its absence is an error.
                    Ok(None) if source == SettingsSource::Flag => {
                        let missing =
                            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
                        errors.push(ConfigError::io("read --settings file", &path, missing));
                        continue;
                    }
                    Ok(None) => continue,
                    Err(e) => {
                        errors.push(e);
                        continue;
                    }
                },
                Input::Inline(text) => (INLINE_FLAG_LABEL.to_owned(), text.into_bytes()),
            };
            match document::parse::<Settings>(&bytes, &file) {
                Ok((object, _)) => {
                    merged.apply(files.len(), &object);
                    files.push(SourceFile { source, file });
                }
                Err(e) => errors.push(e.into()),
            }
        }
        let settings = match document::typed_from_object::<Settings>(&merged.value) {
            Ok(s) => s,
            Err(problem) => {
                // Every source was valid on its own and merging keeps each known key's
                // type, so this is not expected; report it rather than hide it.
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
            merged,
        }
    }

    /// One writable source's current JSON (`None` when the file does not exist).
    pub fn read_source(&self, source: SettingsSource) -> Result<Option<JsonObject>, ConfigError> {
        let path = self.writable(source)?;
        let Some(bytes) = atomic::read(path)? else {
            return Ok(None);
        };
        let (object, _) = document::parse::<Settings>(&bytes, &path.display().to_string())?;
        Ok(Some(object))
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
        let path = self.writable(source)?;
        update_object::<Settings, T>(path, edit)
    }

    /// Sets (`Some`) or removes (`None`) the value at a key path in a writable source.
    pub fn set_value<S: AsRef<str>>(
        &self,
        source: SettingsSource,
        key: &[S],
        value: Option<Value>,
    ) -> Result<Updated<()>, ConfigError> {
        let path = self.writable(source)?;
        let outcome =
            update_object::<Settings, Result<(), keypath::KeyPathError>>(
                path,
                |doc| match &value {
                    Some(v) => keypath::set(doc, key, v.clone()),
                    None => keypath::remove(doc, key).map(drop),
                },
            )?;
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

    fn writable(&self, source: SettingsSource) -> Result<&Path, ConfigError> {
        let path = self
            .locations
            .writable_file(source)
            .ok_or(ConfigError::ReadOnly(source))?;
        if matches!(source, SettingsSource::Project | SettingsSource::Local) {
            refuse_link_out_of_project(path)?;
        }
        Ok(path)
    }

    /// Every input in precedence order. Missing managed drop-in directory is not an error;
    /// one that cannot be listed is.
    fn inputs(&self, errors: &mut Vec<ConfigError>) -> Vec<(SettingsSource, Input)> {
        let l = &self.locations;
        let mut out = vec![
            (SettingsSource::User, Input::Path(l.user.clone())),
            (SettingsSource::Project, Input::Path(l.project.clone())),
            (SettingsSource::Local, Input::Path(l.local.clone())),
        ];
        // When the project root is the home directory, the project file may be the user
        // file itself; reading it twice would attribute its values to `project`.
        if same_file(&l.project, &l.user) {
            out.remove(1);
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
    let (written, value) = atomic::locked_update(path, |current| {
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
