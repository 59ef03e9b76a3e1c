//! `strata mcp add|remove|list|get|approve|reject` through the real binary: scopes,
//! the reference format written, project servers needing approval, clear errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

struct Env {
    tmp: tempfile::TempDir,
    cfg: PathBuf,
    proj: PathBuf,
}

impl Env {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let cfg = base.join("cfg");
        let proj = base.join("proj");
        fs::create_dir_all(proj.join(".git")).unwrap();
        Self { tmp, cfg, proj }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("mcp")
            .args(args)
            .current_dir(&self.proj)
            .env("STRATA_CONFIG_DIR", &self.cfg)
            .env("HOME", self.tmp.path())
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

#[test]
fn add_list_get_remove_round_trip_in_every_scope() {
    let env = Env::new();
    env.ok(&[
        "add",
        "fs",
        "-e",
        "ROOT=${HOME:-/tmp}",
        "npx",
        "-y",
        "server-filesystem",
        "/data",
    ]);
    env.ok(&[
        "add",
        "--scope",
        "user",
        "--transport",
        "http",
        "-H",
        "X-Key: k",
        "web",
        "http://127.0.0.1:9/mcp",
    ]);
    env.ok(&["add", "--scope", "project", "shared", "node", "srv.js"]);
    let list: Value = serde_json::from_str(&env.ok(&["list", "--json"])).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "shared", "fs"], "user, project, local order");
    let fs_entry = &list[2];
    assert_eq!(fs_entry["scope"], "local");
    assert_eq!(fs_entry["config"]["args"][2], "/data");
    assert_eq!(
        fs_entry["config"]["env"]["ROOT"], "${HOME:-/tmp}",
        "variables are kept as written"
    );
    assert_eq!(list[0]["config"]["headers"]["X-Key"], "k");
    let mcp_json: Value =
        serde_json::from_str(&fs::read_to_string(env.proj.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(mcp_json["mcpServers"]["shared"]["command"], "node");
    assert!(
        list[1]["notStarted"]
            .as_str()
            .unwrap()
            .contains("strata mcp approve shared")
    );
    env.ok(&["approve", "shared"]);
    let got: Value = serde_json::from_str(&env.ok(&["get", "shared", "--json"])).unwrap();
    assert!(got.get("notStarted").is_none(), "{got}");
    env.ok(&["remove", "fs"]);
    let out = env.run(&["get", "fs"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no MCP server named \"fs\""));
}

#[test]
fn bad_mcp_json_and_bad_flags_get_clear_errors() {
    let env = Env::new();
    fs::write(
        env.proj.join(".mcp.json"),
        "{\"mcpServers\": {\n  \"x\": {\"type\": \"http\"}\n}}",
    )
    .unwrap();
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(".mcp.json:2:"), "{stderr}");
    assert!(stderr.contains("needs a \"url\""), "{stderr}");
    let out = env.run(&["add", "-e", "NOVALUE", "a", "prog"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KEY=VALUE"));
    let out = env.run(&["approve", "nope"]);
    assert_eq!(out.status.code(), Some(1));
}
