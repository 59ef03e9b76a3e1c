//! `strata config` against settings paths that are not plain files (issue 16): a dangling
//! user `settings.json` link must not make `config set -g` create directories where it
//! points; a settings file linked to `/dev/zero` or a FIFO is refused at once, naming it.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(unix)]

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

struct Env {
    _tmp: tempfile::TempDir,
    base: PathBuf,
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
        fs::create_dir_all(proj.join(".strata")).unwrap();
        fs::create_dir_all(&cfg).unwrap();
        Self {
            _tmp: tmp,
            base,
            cfg,
            proj,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("config")
            .args(args)
            .current_dir(&self.proj)
            .env("STRATA_CONFIG_DIR", &self.cfg)
            .env("HOME", &self.base)
            .output()
            .unwrap()
    }
}

#[test]
fn config_set_global_through_a_dangling_user_settings_link_creates_no_directories() {
    let env = Env::new();
    let target = env.base.join("nowhere/a/b/settings.json");
    std::os::unix::fs::symlink(&target, env.cfg.join("settings.json")).unwrap();
    let out = env.run(&["set", "-g", "model", "opus"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("settings.json"), "{stderr}");
    assert!(stderr.contains("outside"), "{stderr}");
    assert!(
        !env.base.join("nowhere").exists(),
        "no directory was created"
    );
    assert!(
        fs::symlink_metadata(env.cfg.join("settings.json"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link is left as it was"
    );
}

#[test]
fn config_list_with_project_settings_linked_to_dev_zero_fails_at_once_naming_the_file() {
    let env = Env::new();
    let project = env.proj.join(".strata/settings.json");
    std::os::unix::fs::symlink("/dev/zero", &project).unwrap();
    let started = Instant::now();
    let out = env.run(&["list"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&project.display().to_string()) && stderr.contains("character device"),
        "{stderr}"
    );
}

#[test]
fn config_get_with_a_fifo_as_local_settings_does_not_hang() {
    let env = Env::new();
    let local = env.proj.join(".strata/settings.local.json");
    assert!(
        Command::new("mkfifo")
            .arg(&local)
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    let out = env.run(&["get", "model"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("FIFO"), "{stderr}");
    // Writing is refused the same way (the write reads first), and the FIFO stays.
    let out = env.run(&["set", "model", "opus"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("FIFO"));
}
