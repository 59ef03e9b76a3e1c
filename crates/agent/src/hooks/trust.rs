//! The workspace-trust gate for hooks: the `hooks` of a project's own settings files
//! (`.strata/settings.json`, `.strata/settings.local.json`, and the reference agent's
//! `.claude/settings.json` and `.claude/settings.local.json`, read as the same scopes)
//! are commands that came with the checkout, and they run only in a project the user
//! trusted.
//!
//! Trust is recorded as the reference agent records it: `hasTrustDialogAccepted: true`
//! in the global config's entry for the project folder (`projects.<path>`), or for a
//! folder above it (trusting `~/src` trusts every checkout under it). Without it the
//! project's hooks are left out — fail closed — with one warning that names the files
//! and says how to trust the folder (`strata trust`, see the binary); hooks from the
//! user's own settings, `--settings` and managed settings are not the project's and run
//! as before.

use std::path::Path;

use serde_json::Value;
use strata_config::{SettingsFiles, SettingsSource};
use strata_protocol::global_config::GlobalConfig;

/// The global config key that records trust (the reference agent's).
pub const TRUST_KEY: &str = "hasTrustDialogAccepted";

/// Whether `project_root`, or a folder above it, is trusted in `config`.
pub fn project_trusted(config: &GlobalConfig, project_root: &Path) -> bool {
    project_root.ancestors().any(|dir| {
        config
            .project(&dir.to_string_lossy())
            .and_then(|p| p.extra.get(TRUST_KEY))
            == Some(&Value::Bool(true))
    })
}

/// The `hooks` value a session runs with: the merged settings' `hooks`, or, when the
/// project is not trusted and its own settings files have hooks, the `hooks` of every
/// other source, with the warning to show. `merged_hooks` is what the full load gave.
pub fn session_hooks(
    files: &SettingsFiles,
    merged_hooks: Option<&Value>,
    trusted: bool,
) -> (Option<Value>, Option<String>) {
    let locations = files.locations();
    let gated: Vec<String> = [SettingsSource::Project, SettingsSource::Local]
        .into_iter()
        .flat_map(|s| files.read_scope(s))
        .filter(|(_, object)| {
            object
                .as_ref()
                .ok()
                .and_then(|o| o.as_ref())
                .and_then(|o| o.get("hooks"))
                .is_some_and(has_any_hook)
        })
        .map(|(path, _)| path.display().to_string())
        .collect();
    if trusted || gated.is_empty() {
        return (merged_hooks.cloned(), None);
    }
    // The same load without the project's files: what the other sources give.
    let others: Vec<SettingsSource> = SettingsSource::ALL
        .into_iter()
        .filter(|s| {
            !matches!(s, SettingsSource::Project | SettingsSource::Local) && locations.loads(*s)
        })
        .collect();
    let without = SettingsFiles::new(locations.clone().with_sources(&others)).load();
    let root = locations
        .project
        .parent()
        .and_then(Path::parent)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let warning = format!(
        "the hooks in {} were not run: this project ({root}) is not trusted, and a project's \
         own hooks run only once you trust it. If you trust this folder, run `strata trust` \
         in it (it sets projects.<folder>.{TRUST_KEY} in the config file), then start again",
        gated.join(" and ")
    );
    (without.value.get("hooks").cloned(), Some(warning))
}

/// Whether a `hooks` value registers anything (`{}` and empty lists do not).
fn has_any_hook(hooks: &Value) -> bool {
    match hooks {
        Value::Object(events) => events.values().any(|v| match v {
            Value::Array(a) => !a.is_empty(),
            Value::Null => false,
            _ => true,
        }),
        Value::Null => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use strata_config::SettingsLocations;

    fn config_with(path: &str, trusted: bool) -> GlobalConfig {
        let mut config = GlobalConfig::default();
        config
            .project_mut(path)
            .extra
            .insert(TRUST_KEY.into(), Value::Bool(trusted));
        config
    }

    #[test]
    fn a_trusted_parent_folder_trusts_the_projects_under_it() {
        let config = config_with("/src", true);
        assert!(project_trusted(&config, Path::new("/src/app")));
        assert!(!project_trusted(&config, Path::new("/elsewhere/app")));
        assert!(!project_trusted(
            &config_with("/src/app", false),
            Path::new("/src/app")
        ));
    }

    #[test]
    fn an_untrusted_projects_hooks_are_left_out_and_the_users_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let (cfg, proj) = (tmp.path().join("cfg"), tmp.path().join("proj"));
        std::fs::create_dir_all(&cfg).unwrap();
        std::fs::create_dir_all(proj.join(".strata")).unwrap();
        let user =
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "user"}]}]}});
        let project =
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "project"}]}]}});
        std::fs::write(cfg.join("settings.json"), user.to_string()).unwrap();
        std::fs::write(proj.join(".strata/settings.json"), project.to_string()).unwrap();
        let files = SettingsFiles::new(
            SettingsLocations::new(&cfg, &proj).with_managed_dir(tmp.path().join("etc")),
        );
        let merged = files.load();
        let (hooks, warning) = session_hooks(&files, merged.value.get("hooks"), false);
        let text = hooks.unwrap().to_string();
        assert!(text.contains("user") && !text.contains("project"), "{text}");
        let warning = warning.unwrap();
        assert!(
            warning.contains("strata trust") && warning.contains("settings.json"),
            "{warning}"
        );
        let (trusted, none) = session_hooks(&files, merged.value.get("hooks"), true);
        assert!(trusted.unwrap().to_string().contains("project"));
        assert!(none.is_none());
    }

    #[test]
    fn i25_3_hooks_from_the_reference_agents_project_files_need_trust_too() {
        let tmp = tempfile::tempdir().unwrap();
        let (cfg, proj) = (tmp.path().join("cfg"), tmp.path().join("proj"));
        std::fs::create_dir_all(proj.join(".claude")).unwrap();
        let hook = |command: &str| {
            json!({"hooks": {"PreToolUse": [{"matcher": "Bash",
                "hooks": [{"type": "command", "command": command}]}]}})
            .to_string()
        };
        std::fs::write(proj.join(".claude/settings.json"), hook("shared")).unwrap();
        std::fs::write(proj.join(".claude/settings.local.json"), hook("mine")).unwrap();
        let files = SettingsFiles::new(
            SettingsLocations::new(&cfg, &proj)
                .with_managed_dir(tmp.path().join("etc"))
                .with_reference_config_dir(None),
        );
        let merged = files.load();
        let all = merged.value.get("hooks").unwrap().to_string();
        assert!(all.contains("shared") && all.contains("mine"), "{all}");
        let (hooks, warning) = session_hooks(&files, merged.value.get("hooks"), false);
        assert_eq!(hooks, None, "no hook of the untrusted project runs");
        let warning = warning.unwrap();
        assert!(
            warning.contains(".claude/settings.json")
                && warning.contains(".claude/settings.local.json"),
            "{warning}"
        );
        let (hooks, none) = session_hooks(&files, merged.value.get("hooks"), true);
        assert_eq!(hooks.as_ref(), merged.value.get("hooks"));
        assert!(none.is_none());
    }
}
