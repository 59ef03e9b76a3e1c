//! Where servers come from and which one wins: the user scope (`mcpServers` at the top
//! of the config file), the project's `.mcp.json`, the local scope (`mcpServers` of the
//! project's entry in the config file), `--mcp-config` (files or JSON, repeatable) and
//! the SDK's `initialize`, later ones replacing earlier ones of the same name;
//! `--strict-mcp-config` keeps only the last two.
//!
//! Project servers are checked in with the code, so each needs the user's approval once
//! per project, remembered in the project's entry of the config file
//! (`enabledMcpjsonServers`, `disabledMcpjsonServers`, `enableAllProjectMcpServers`, the
//! reference agent's keys). Until then the server is not started (fail closed) and its
//! status says how to approve it.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};
use smol_str::SmolStr;
use strata_config::GlobalConfigFile;
use strata_state::McpConfigScope;

use crate::config::{self, ConfigError, ServerConfig};
use crate::manager::ConfiguredServer;

/// What the session was started with.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The project root (`.mcp.json` is there; the config file's project key).
    pub project_root: &'a Path,
    /// The config file holding the user and local scopes and the approvals.
    pub global: &'a GlobalConfigFile,
    /// `--mcp-config` values, in order: a file path or JSON text each.
    pub flags: &'a [String],
    /// `--strict-mcp-config`.
    pub strict: bool,
    /// `initialize`'s `mcpServers`.
    pub sdk: Option<&'a Value>,
}

/// The servers to manage, and the configurations that could not be read (each one line
/// for the user; the other sources still count).
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// The servers, in precedence order of first appearance.
    pub servers: Vec<ConfiguredServer>,
    /// Configurations that did not parse.
    pub errors: Vec<ConfigError>,
}

fn project_key(root: &Path) -> String {
    root.display().to_string()
}

fn project_entry<'a>(
    global: &'a Map<String, Value>,
    root: &Path,
) -> Option<&'a Map<String, Value>> {
    global
        .get("projects")?
        .as_object()?
        .get(&project_key(root))?
        .as_object()
}

fn names_in(entry: Option<&Map<String, Value>>, key: &str) -> Vec<String> {
    entry
        .and_then(|e| e.get(key))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// Collects the servers of every source.
pub fn load(inputs: Inputs<'_>) -> Loaded {
    let mut loaded = Loaded::default();
    let mut merged: IndexMap<String, (McpConfigScope, ServerConfig)> = IndexMap::new();
    let global = match inputs.global.read_raw() {
        Ok(g) => g,
        Err(e) => {
            loaded.errors.push(ConfigError {
                origin: inputs.global.path().display().to_string(),
                line: 1,
                column: 1,
                message: e.to_string(),
            });
            Map::new()
        }
    };
    let origin = inputs.global.path().display().to_string();
    let entry = project_entry(&global, inputs.project_root);
    let mut add =
        |loaded: &mut Loaded,
         scope: McpConfigScope,
         parsed: Result<IndexMap<String, ServerConfig>, ConfigError>| match parsed {
            Ok(servers) => {
                for (name, config) in servers {
                    merged.insert(name, (scope, config));
                }
            }
            Err(e) => loaded.errors.push(e),
        };
    if !inputs.strict {
        if let Some(user) = global.get("mcpServers") {
            add(
                &mut loaded,
                McpConfigScope::User,
                config::parse_servers_value(user, &origin),
            );
        }
        let mcp_json = inputs.project_root.join(".mcp.json");
        add(
            &mut loaded,
            McpConfigScope::Project,
            config::read_document(&mcp_json),
        );
        if let Some(local) = entry.and_then(|e| e.get("mcpServers")) {
            add(
                &mut loaded,
                McpConfigScope::Local,
                config::parse_servers_value(local, &origin),
            );
        }
    }
    for flag in inputs.flags {
        let parsed = if flag.trim_start().starts_with('{') {
            config::parse_document(flag, "--mcp-config")
        } else {
            match std::fs::read_to_string(flag) {
                Ok(text) => config::parse_document(&text, flag),
                Err(e) => Err(ConfigError {
                    origin: flag.clone(),
                    line: 1,
                    column: 1,
                    message: format!("--mcp-config file cannot be read: {e}"),
                }),
            }
        };
        add(&mut loaded, McpConfigScope::Dynamic, parsed);
    }
    if let Some(sdk) = inputs.sdk {
        add(
            &mut loaded,
            McpConfigScope::Dynamic,
            config::parse_servers_value(sdk, "initialize.mcpServers"),
        );
    }
    let all_approved = entry
        .and_then(|e| e.get("enableAllProjectMcpServers"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let enabled = names_in(entry, "enabledMcpjsonServers");
    let rejected = names_in(entry, "disabledMcpjsonServers");
    for (name, (scope, config)) in merged {
        let blocked = (scope == McpConfigScope::Project
            && !(all_approved || enabled.contains(&name)))
            .then(|| {
                if rejected.contains(&name) {
                    rejected_reason(&name)
                } else {
                    format!("project server {name:?} from .mcp.json is not approved yet; approve it with `strata mcp approve {name}` (or in /mcp)")
                }
            });
        loaded.servers.push(ConfiguredServer {
            name: SmolStr::from(name),
            scope,
            config,
            blocked,
            disabled: false,
        });
    }
    loaded
}

/// Why a configuration edit failed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The config file could not be read or written.
    #[error(transparent)]
    Config(#[from] strata_config::ConfigError),
    /// `.mcp.json` could not be read, parsed or written.
    #[error("{0}")]
    McpJson(String),
    /// The name is not a valid server name.
    #[error(transparent)]
    Name(#[from] crate::config::NameError),
    /// No server of that name in that scope.
    #[error("no MCP server named {name:?} in the {scope} configuration")]
    NotFound {
        /// The server.
        name: String,
        /// The scope, in words.
        scope: &'static str,
    },
}

/// The scope in words (`strata mcp list`).
pub fn scope_name(scope: McpConfigScope) -> &'static str {
    match scope {
        McpConfigScope::User => "user",
        McpConfigScope::Project => "project",
        McpConfigScope::Local => "local",
        McpConfigScope::Plugin => "plugin",
        McpConfigScope::Dynamic => "dynamic",
        McpConfigScope::Managed => "managed",
    }
}

fn object_at<'a>(obj: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = obj
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(map) => map,
        // Just made an object above.
        _ => unreachable!("an object was put here"),
    }
}

fn edit_scope<T>(
    global: &GlobalConfigFile,
    root: &Path,
    scope: McpConfigScope,
    mut edit: impl FnMut(&mut Map<String, Value>) -> T,
) -> Result<T, EditError> {
    match scope {
        McpConfigScope::Project => {
            let path = root.join(".mcp.json");
            let mut doc: Map<String, Value> = match std::fs::read_to_string(&path) {
                Ok(text) => serde_json::from_str(&text).map_err(|e| {
                    EditError::McpJson(format!(
                        "{}:{}:{}: {e}",
                        path.display(),
                        e.line(),
                        e.column()
                    ))
                })?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
                Err(e) => return Err(EditError::McpJson(format!("{}: {e}", path.display()))),
            };
            let value = edit(object_at(&mut doc, "mcpServers"));
            let mut text = serde_json::to_string_pretty(&doc)
                .map_err(|e| EditError::McpJson(e.to_string()))?;
            text.push('\n');
            std::fs::write(&path, text)
                .map_err(|e| EditError::McpJson(format!("{}: {e}", path.display())))?;
            Ok(value)
        }
        McpConfigScope::Local => Ok(global
            .update_raw(|g| {
                let projects = object_at(g, "projects");
                let entry = object_at(projects, &project_key(root));
                edit(object_at(entry, "mcpServers"))
            })?
            .value),
        _ => Ok(global
            .update_raw(|g| edit(object_at(g, "mcpServers")))?
            .value),
    }
}

/// Adds (or replaces) server `name` in `scope` (`strata mcp add`).
pub fn add_server(
    global: &GlobalConfigFile,
    root: &Path,
    scope: McpConfigScope,
    name: &str,
    server: &ServerConfig,
) -> Result<(), EditError> {
    config::check_name(name).map_err(EditError::Name)?;
    let value = server.to_json();
    edit_scope(global, root, scope, |servers| {
        servers.insert(name.to_owned(), value.clone());
    })
}

/// Removes server `name` from `scope` (`strata mcp remove`).
pub fn remove_server(
    global: &GlobalConfigFile,
    root: &Path,
    scope: McpConfigScope,
    name: &str,
) -> Result<(), EditError> {
    let removed = edit_scope(global, root, scope, |servers| {
        servers.shift_remove(name).is_some()
    })?;
    if removed {
        Ok(())
    } else {
        Err(EditError::NotFound {
            name: name.to_owned(),
            scope: scope_name(scope),
        })
    }
}

/// Whether project server `name` still waits for the user's answer: neither approved
/// (by name or with every project server) nor rejected. A UI asks about these at start;
/// a rejected server is not asked about again.
pub fn approval_pending(global: &GlobalConfigFile, root: &Path, name: &str) -> bool {
    let Ok(raw) = global.read_raw() else {
        // An unreadable config file: nothing is approved (fail closed), nothing asked.
        return false;
    };
    let entry = project_entry(&raw, root);
    let all = entry
        .and_then(|e| e.get("enableAllProjectMcpServers"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let name = name.to_owned();
    !all && !names_in(entry, "enabledMcpjsonServers").contains(&name)
        && !names_in(entry, "disabledMcpjsonServers").contains(&name)
}

/// Approves every server of the project's `.mcp.json`, now and later ones
/// (`enableAllProjectMcpServers`, the reference agent's key).
pub fn approve_all_project_servers(
    global: &GlobalConfigFile,
    root: &Path,
) -> Result<(), EditError> {
    global.update_raw(|g| {
        let projects = object_at(g, "projects");
        let entry = object_at(projects, &project_key(root));
        entry.insert("enableAllProjectMcpServers".to_owned(), Value::Bool(true));
    })?;
    Ok(())
}

/// Why a rejected project server is not started (its status).
pub fn rejected_reason(name: &str) -> String {
    format!(
        "project server {name:?} from .mcp.json was rejected; approve it with `strata mcp approve {name}`"
    )
}

/// Remembers the user's answer for project server `name` (approved or rejected).
pub fn set_project_approval(
    global: &GlobalConfigFile,
    root: &Path,
    name: &str,
    approved: bool,
) -> Result<(), EditError> {
    global.update_raw(|g| {
        let projects = object_at(g, "projects");
        let entry = object_at(projects, &project_key(root));
        let (add_to, remove_from) = if approved {
            ("enabledMcpjsonServers", "disabledMcpjsonServers")
        } else {
            ("disabledMcpjsonServers", "enabledMcpjsonServers")
        };
        if let Some(Value::Array(list)) = entry.get_mut(remove_from) {
            list.retain(|v| v.as_str() != Some(name));
        }
        let list = entry
            .entry(add_to.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list
            && !list.iter().any(|v| v.as_str() == Some(name))
        {
            list.push(Value::String(name.to_owned()));
        }
    })?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, GlobalConfigFile, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let global = GlobalConfigFile::new(&tmp.path().join("cfg"));
        (tmp, global, root)
    }

    fn load_with(global: &GlobalConfigFile, root: &Path, flags: &[String], strict: bool) -> Loaded {
        load(Inputs {
            project_root: root,
            global,
            flags,
            strict,
            sdk: None,
        })
    }

    #[test]
    fn project_servers_are_not_started_until_approved_once() {
        let (_t, global, root) = setup();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers":{"p":{"command":"x"}}}"#,
        )
        .unwrap();
        let loaded = load_with(&global, &root, &[], false);
        let blocked = loaded.servers[0].blocked.as_deref().unwrap();
        assert!(blocked.contains("strata mcp approve p"), "{blocked}");
        set_project_approval(&global, &root, "p", true).unwrap();
        assert_eq!(
            load_with(&global, &root, &[], false).servers[0].blocked,
            None
        );
        set_project_approval(&global, &root, "p", false).unwrap();
        assert!(
            load_with(&global, &root, &[], false).servers[0]
                .blocked
                .as_deref()
                .unwrap()
                .contains("rejected")
        );
    }

    #[test]
    fn only_undecided_project_servers_are_pending_and_approve_all_covers_later_ones() {
        let (_t, global, root) = setup();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers":{"p":{"command":"x"},"q":{"command":"y"}}}"#,
        )
        .unwrap();
        assert!(approval_pending(&global, &root, "p"));
        set_project_approval(&global, &root, "p", false).unwrap();
        assert!(
            !approval_pending(&global, &root, "p"),
            "rejected: not asked again"
        );
        assert!(approval_pending(&global, &root, "q"));
        approve_all_project_servers(&global, &root).unwrap();
        assert!(!approval_pending(&global, &root, "q"));
        let loaded = load_with(&global, &root, &[], false);
        assert!(loaded.servers.iter().all(|s| s.blocked.is_none()));
    }

    #[test]
    fn later_scopes_win_and_strict_keeps_only_the_flags() {
        let (tmp, global, root) = setup();
        add_server(
            &global,
            &root,
            McpConfigScope::User,
            "a",
            &ServerConfig::Stdio {
                command: "user".into(),
                args: vec![],
                env: IndexMap::new(),
            },
        )
        .unwrap();
        add_server(
            &global,
            &root,
            McpConfigScope::Local,
            "a",
            &ServerConfig::Stdio {
                command: "local".into(),
                args: vec![],
                env: IndexMap::new(),
            },
        )
        .unwrap();
        add_server(
            &global,
            &root,
            McpConfigScope::User,
            "u",
            &ServerConfig::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: IndexMap::new(),
            },
        )
        .unwrap();
        let file = tmp.path().join("flag.json");
        std::fs::write(&file, r#"{"mcpServers":{"f":{"command":"fromfile"}}}"#).unwrap();
        let flags = vec![
            file.display().to_string(),
            r#"{"mcpServers":{"a":{"command":"flag"}}}"#.to_owned(),
        ];
        let loaded = load_with(&global, &root, &flags, false);
        let by_name = |n: &str| loaded.servers.iter().find(|s| s.name == n).unwrap().clone();
        assert!(
            matches!(by_name("a").config, ServerConfig::Stdio { ref command, .. } if command == "flag")
        );
        assert_eq!(by_name("u").scope, McpConfigScope::User);
        let strict = load_with(&global, &root, &flags, true);
        let names: Vec<_> = strict.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["f", "a"]);
        remove_server(&global, &root, McpConfigScope::User, "u").unwrap();
        assert!(matches!(
            remove_server(&global, &root, McpConfigScope::User, "u"),
            Err(EditError::NotFound { .. })
        ));
    }

    #[test]
    fn a_broken_source_is_reported_and_the_others_still_load() {
        let (_t, global, root) = setup();
        std::fs::write(
            root.join(".mcp.json"),
            "{\"mcpServers\": {\n \"x\": {\"type\": \"http\"}}}",
        )
        .unwrap();
        let flags = vec![r#"{"mcpServers":{"ok":{"command":"c"}}}"#.to_owned()];
        let loaded = load_with(&global, &root, &flags, false);
        assert_eq!(loaded.servers.len(), 1);
        assert!(
            loaded.errors[0].to_string().contains(".mcp.json:2:"),
            "{}",
            loaded.errors[0]
        );
    }
}
