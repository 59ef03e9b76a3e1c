//! Shared by the permission decision tests: a temp project with an additional
//! directory and a home, a context builder, and table rows.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // not every file uses every helper

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use strata_agent::permissions::{PermissionDecision, PermissionEnv};
use strata_agent::tools::Tool;
use strata_protocol::permission::PermissionMode;
use strata_state::{RuleSource, SettingsPermissions, ToolPermissionContext};

/// What a decision reads: the store's permission context (built by hand here, as a
/// store snapshot would hold it) and the session's fixed facts.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub(crate) state: ToolPermissionContext,
    pub(crate) env: PermissionEnv,
}

impl Ctx {
    /// A context for `root` in `default` mode with no rules.
    pub(crate) fn new(root: &Path) -> Self {
        Self {
            state: ToolPermissionContext::default(),
            env: PermissionEnv::new(root),
        }
    }

    pub(crate) fn check(&self, tool: &dyn Tool, input: &Value, cwd: &Path) -> PermissionDecision {
        self.env.check(&self.state, tool, input, cwd)
    }

    pub(crate) fn protected_write(&self, path: &Path, cwd: &Path) -> Option<String> {
        self.env.view(&self.state).protected_write(path, cwd)
    }

    /// `bypassPermissions` may be entered (launched with the flag, not disabled).
    pub(crate) fn bypass_available(&mut self, available: bool) {
        self.state.is_bypass_permissions_mode_available = available;
    }
}

/// What a row expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    Allow,
    Ask,
    Deny,
}

pub(crate) struct Env {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) extra: PathBuf,
    pub(crate) home: PathBuf,
}

pub(crate) fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("proj");
    let extra = base.join("shared-lib");
    let home = base.join("home");
    for d in [&root, &extra, &home, &root.join("src"), &root.join("sub")] {
        std::fs::create_dir_all(d).unwrap();
    }
    Env {
        _dir: dir,
        root,
        extra,
        home,
    }
}

pub(crate) fn ctx(
    e: &Env,
    mode: PermissionMode,
    allow: &[&str],
    deny: &[&str],
    ask: &[&str],
) -> Ctx {
    let settings: strata_protocol::settings::Settings = serde_json::from_value(json!({
        "permissions": {"allow": allow, "deny": deny, "ask": ask}
    }))
    .unwrap();
    let (by_source, errors) =
        SettingsPermissions::parse_settings(&settings, RuleSource::LocalSettings);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = Ctx::new(&e.root);
    c.state = c.state.with_settings_permissions(&by_source);
    c.state.mode = mode;
    c.state
        .additional_working_directories
        .insert(Arc::from(e.extra.as_path()), RuleSource::CliArg);
    c.env.home = Some(e.home.clone());
    c
}

pub(crate) fn want(d: &PermissionDecision) -> Want {
    match d {
        PermissionDecision::Allow => Want::Allow,
        PermissionDecision::Ask { .. } => Want::Ask,
        PermissionDecision::Deny { .. } => Want::Deny,
    }
}

pub(crate) fn edit(path: &Path) -> Value {
    json!({"file_path": path, "old_string": "a", "new_string": "b"})
}

pub(crate) fn bash(cmd: &str) -> Value {
    json!({"command": cmd})
}

pub(crate) struct Row<'a> {
    pub(crate) name: &'a str,
    pub(crate) mode: PermissionMode,
    pub(crate) allow: &'a [&'a str],
    pub(crate) deny: &'a [&'a str],
    pub(crate) ask: &'a [&'a str],
    pub(crate) tool: &'a dyn Tool,
    pub(crate) input: Value,
    pub(crate) want: Want,
}

pub(crate) fn run(e: &Env, rows: Vec<Row<'_>>) {
    let mut failures = Vec::new();
    for row in rows {
        let c = ctx(e, row.mode, row.allow, row.deny, row.ask);
        let got = c.check(row.tool, &row.input, &e.root);
        if want(&got) != row.want {
            failures.push(format!("{}: want {:?}, got {got:?}", row.name, row.want));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

pub(crate) fn row<'a>(
    name: &'a str,
    mode: PermissionMode,
    tool: &'a dyn Tool,
    input: Value,
    want: Want,
) -> Row<'a> {
    Row {
        name,
        mode,
        allow: &[],
        deny: &[],
        ask: &[],
        tool,
        input,
        want,
    }
}
