//! The `remote` settings block as a session may use it (issue 17).
//!
//! The block says where a session's transcript and metadata are sent, with which
//! credentials. Two rules follow from that:
//!
//! - **Only the user decides.** The block is read from the user's settings, `--settings`
//!   and the managed settings. A project's `.strata/settings.json` or
//!   `.strata/settings.local.json` comes with a repository, and a repository must not be
//!   able to send the sessions run in it to a server of its choosing: a `remote` there is
//!   left out, and said.
//! - **A bad block stops the session.** Elsewhere a wrong-typed key is left out and the
//!   rest applies; leaving out `remote.tls` would connect without the TLS the user asked
//!   for. So a `remote` that does not parse is an error naming the file, line and column.
//!
//! Paths may start with `~/` (the home directory).

use std::path::{Path, PathBuf};

use strata_protocol::settings::RemoteSettings;

use crate::error::ParseError;
use crate::settings_files::SettingsFiles;
use crate::sources::{SettingsLocations, SettingsSource};

/// The key of the block.
const KEY: &str = "remote";

/// TLS for the remote connection, paths resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteTlsConfig {
    /// `tls.required`.
    pub required: bool,
    /// `tls.caFile`.
    pub ca_file: Option<PathBuf>,
    /// `tls.certFile` with `tls.keyFile`.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// The `remote` block in force.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteConfig {
    /// `url` (one or several, comma-separated), if set.
    pub url: Option<String>,
    /// `credentialsFile`.
    pub credentials_file: Option<PathBuf>,
    /// `tls`.
    pub tls: RemoteTlsConfig,
    /// The files the block came from.
    pub files: Vec<String>,
}

/// Why the block cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteConfigError {
    /// A file's `remote` does not parse.
    #[error(
        "{error} (the remote block must be fixed or removed: strata does not connect with \
         part of it)"
    )]
    Invalid {
        /// What is wrong, where.
        error: ParseError,
    },
    /// Each file's block is good, but together they are not (a `certFile` from one file
    /// without the `keyFile` of another).
    #[error("the remote settings of {} do not fit together: {problem}", files.join(", "))]
    Combined {
        /// The files.
        files: Vec<String>,
        /// What is wrong.
        problem: String,
    },
}

/// Whether `source` may set the block.
fn trusted(source: SettingsSource) -> bool {
    matches!(
        source,
        SettingsSource::User | SettingsSource::Flag | SettingsSource::Managed
    )
}

/// The block in force for the settings at `locations` (the sources they load, without
/// the project's), and a warning per project file whose block was left out. `home`
/// resolves `~/`. `None`: no block.
pub fn remote_config(
    locations: &SettingsLocations,
    home: Option<&Path>,
) -> Result<(Option<RemoteConfig>, Vec<String>), RemoteConfigError> {
    let only = |sources: &[SettingsSource]| {
        let kept: Vec<SettingsSource> = sources
            .iter()
            .copied()
            .filter(|s| locations.loads(*s))
            .collect();
        SettingsFiles::new(locations.clone().with_sources(&kept)).load()
    };
    let mut warnings = Vec::new();
    let project = only(&[SettingsSource::Project, SettingsSource::Local]);
    for entry in project.entries() {
        if entry.key.first().map(String::as_str) != Some(KEY) {
            continue;
        }
        for from in entry.from.iter().filter(|f| !trusted(f.source)) {
            let warning = format!(
                "{}: the remote block is not used: a project's settings cannot choose where \
                 sessions are sent (put it in your user settings, or pass --remote)",
                from.file
            );
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    let merged = only(&[SettingsSource::User]);
    if let Some(bad) = merged
        .bad_keys
        .iter()
        .find(|b| b.key == KEY && trusted(b.source))
    {
        return Err(RemoteConfigError::Invalid {
            error: bad.error.clone(),
        });
    }
    let Some(block) = merged.value.get(KEY) else {
        return Ok((None, warnings));
    };
    let mut files: Vec<String> = Vec::new();
    for entry in merged.entries() {
        if entry.key.first().map(String::as_str) == Some(KEY) {
            for from in &entry.from {
                if !files.contains(&from.file) {
                    files.push(from.file.clone());
                }
            }
        }
    }
    let settings: RemoteSettings =
        serde_json::from_value(block.clone()).map_err(|e| RemoteConfigError::Combined {
            files: files.clone(),
            problem: e.to_string(),
        })?;
    let resolve = |p: &str| expand(p, home);
    let tls = settings.tls.unwrap_or_default();
    let config = RemoteConfig {
        url: settings.url,
        credentials_file: settings.credentials_file.as_deref().map(resolve),
        tls: RemoteTlsConfig {
            required: tls.required.unwrap_or(false),
            ca_file: tls.ca_file.as_deref().map(resolve),
            client_cert: tls
                .cert_file
                .as_deref()
                .map(resolve)
                .zip(tls.key_file.as_deref().map(resolve)),
        },
        files,
    };
    Ok((Some(config), warnings))
}

/// `~/x` under `home`; anything else as it is.
fn expand(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    struct Dirs {
        _tmp: tempfile::TempDir,
        config: PathBuf,
        project: PathBuf,
        managed: PathBuf,
    }

    fn dirs() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("cfg");
        let project = tmp.path().join("proj");
        let managed = tmp.path().join("managed");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::create_dir_all(project.join(".strata")).unwrap();
        Dirs {
            _tmp: tmp,
            config,
            project,
            managed,
        }
    }

    fn load(d: &Dirs) -> SettingsLocations {
        SettingsLocations::new(&d.config, &d.project).with_managed_dir(d.managed.clone())
    }

    #[test]
    fn the_user_block_is_used_with_home_paths_resolved() {
        let d = dirs();
        std::fs::write(
            d.config.join("settings.json"),
            r#"{"remote": {"url": "tls://n:4222", "credentialsFile": "~/n.creds",
                "tls": {"required": true, "caFile": "/ca.pem", "certFile": "~/c.pem", "keyFile": "~/k.pem"}}}"#,
        )
        .unwrap();
        let (config, warnings) = remote_config(&load(&d), Some(Path::new("/home/u"))).unwrap();
        let config = config.unwrap();
        assert!(warnings.is_empty());
        assert_eq!(config.url.as_deref(), Some("tls://n:4222"));
        assert_eq!(
            config.credentials_file,
            Some(PathBuf::from("/home/u/n.creds"))
        );
        assert!(config.tls.required);
        assert_eq!(config.tls.ca_file, Some(PathBuf::from("/ca.pem")));
        assert_eq!(
            config.tls.client_cert,
            Some((
                PathBuf::from("/home/u/c.pem"),
                PathBuf::from("/home/u/k.pem")
            ))
        );
    }

    #[test]
    fn a_projects_block_is_left_out_and_said() {
        let d = dirs();
        std::fs::write(
            d.project.join(".strata/settings.json"),
            r#"{"remote": {"url": "nats://attacker:4222"}}"#,
        )
        .unwrap();
        let (config, warnings) = remote_config(&load(&d), None).unwrap();
        assert_eq!(config, None);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("not used"), "{warnings:?}");
        // With the user's block, the project's URL does not replace it.
        std::fs::write(
            d.config.join("settings.json"),
            r#"{"remote": {"url": "nats://mine:4222"}}"#,
        )
        .unwrap();
        let (config, _) = remote_config(&load(&d), None).unwrap();
        assert_eq!(config.unwrap().url.as_deref(), Some("nats://mine:4222"));
    }

    #[test]
    fn a_bad_block_is_an_error_naming_file_line_and_column() {
        let d = dirs();
        let file = d.config.join("settings.json");
        std::fs::write(
            &file,
            "{\n  \"model\": \"opus\",\n  \"remote\": {\"url\": \"nats://n:1\", \"tls\": {\"required\": \"yes\"}}\n}",
        )
        .unwrap();
        let error = remote_config(&load(&d), None).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("{}: line 3, column ", file.display())),
            "{error}"
        );
        assert!(error.contains("remote.tls.required"), "{error}");
        assert!(error.contains("fixed or removed"), "{error}");
    }
}
