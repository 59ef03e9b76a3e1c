//! The real ports: the configuration files through `strata-config`, the bootstrap
//! state, and the runtime registries.
//!
//! The file ports are the `strata-config` types themselves: [`SettingsFiles`] writes the
//! user settings file and [`GlobalConfigFile`] writes `config.json`, both with an
//! exclusive lock, a re-read inside it (a concurrent strata's keys are never dropped),
//! an atomic replace, unknown keys and key order kept, and nothing written when nothing
//! changed. A file that does not parse is never written; the error names its line and
//! column and the hub logs it.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;
use strata_bootstrap::Bootstrap;
use strata_config::{GlobalConfigFile, SettingsFiles, SettingsSource, keypath};
use strata_protocol::global_config::GlobalConfig;

use super::ports::{
    BootstrapPort, CredentialCachePort, EffectError, EnvironmentPort, GlobalConfigPort,
    SettingsWriter,
};
use crate::app_state::{CredentialCaches, EnvOverlay, SettingsEdit, SettingsEditOp};

/// FX-2 writes the user settings file (`<config>/settings.json`), as the reference agent
/// does: the model is the user's choice across projects.
impl SettingsWriter for SettingsFiles {
    fn persist_main_loop_model(&self, model: Option<&str>) -> Result<(), EffectError> {
        let value = model.map(|m| Value::String(m.to_owned()));
        self.set_value(SettingsSource::User, &["model"], value)?;
        Ok(())
    }

    /// One locked read-modify-write of the edit's file; a file that does not parse is not
    /// written (the error names its line and column). An operation on a key that holds
    /// something else than an array (a hand-edited `"allow": "Read"`) fails the edit.
    fn apply_settings_edit(&self, edit: &SettingsEdit) -> Result<(), EffectError> {
        let outcome = self.update(edit.source, |doc| {
            // All or nothing: the operations run on a copy that replaces the document
            // only when every one of them succeeded.
            let mut next = doc.clone();
            for op in &edit.ops {
                let result = match op {
                    SettingsEditOp::AddToArray { key, value } => {
                        keypath::add_to_array(&mut next, key, value.clone()).map(drop)
                    }
                    SettingsEditOp::RemoveFromArray { key, value } => {
                        keypath::remove_from_array(&mut next, key, value).map(drop)
                    }
                    SettingsEditOp::Set { key, value } => {
                        keypath::set(&mut next, key, value.clone())
                    }
                };
                result?;
            }
            *doc = next;
            Ok::<(), keypath::KeyPathError>(())
        })?;
        outcome.value.map_err(|e| EffectError::Port {
            port: "settings",
            message: format!("the {} settings were not changed: {e}", edit.source),
        })
    }
}

impl GlobalConfigPort for GlobalConfigFile {
    fn read(&self) -> Result<GlobalConfig, EffectError> {
        Ok(GlobalConfigFile::read(self)?)
    }

    fn write(&self, edit: &mut dyn FnMut(&mut GlobalConfig)) -> Result<(), EffectError> {
        self.update(|config| edit(config))?;
        Ok(())
    }
}

impl BootstrapPort for Bootstrap {
    fn mirror_main_loop_model(&self, model: Option<&str>) {
        self.set_main_loop_model_override(model);
    }

    fn log_error(&self, message: &str) {
        Bootstrap::log_error(self, message);
    }
}

/// The process-wide instance (`strata_bootstrap::global()`) is a `&'static Bootstrap`.
impl<T: BootstrapPort + ?Sized> BootstrapPort for &'static T {
    fn mirror_main_loop_model(&self, model: Option<&str>) {
        (**self).mirror_main_loop_model(model);
    }

    fn log_error(&self, message: &str) {
        (**self).log_error(message);
    }
}

impl<T: BootstrapPort + ?Sized> BootstrapPort for Arc<T> {
    fn mirror_main_loop_model(&self, model: Option<&str>) {
        (**self).mirror_main_loop_model(model);
    }

    fn log_error(&self, message: &str) {
        (**self).log_error(message);
    }
}

impl CredentialCachePort for CredentialCaches {
    fn clear_credential_caches(&self) -> Result<(), EffectError> {
        self.clear_all().map_err(|e| EffectError::Port {
            port: "credential caches",
            message: e.to_string(),
        })
    }
}

impl EnvironmentPort for EnvOverlay {
    fn apply_additive(&self, vars: &IndexMap<String, String>) -> Result<(), EffectError> {
        self.apply(vars);
        Ok(())
    }
}
