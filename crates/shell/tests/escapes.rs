//! Issue 26's escape attempts: each runs under the sandbox through `std::process::Command`
//! and must fail, while the same action inside the project succeeds. What the Bash
//! analysis cannot see into (interpreters, make, a renamed shell) is stopped by the kernel.
//!
//! A tool that is not installed is skipped with a line on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(target_os = "linux")]
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use strata_shell::policy::PolicyContext;
use strata_shell::{Sandbox, SandboxPolicy, SandboxSettings};

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    outside: PathBuf,
    tmp: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    let project = home.join("proj");
    let outside = base.join("outside");
    let tmp = base.join("session-tmp");
    for d in [
        home.join(".ssh"),
        project.join(".git/hooks"),
        project.join(".claude"),
        project.join(".strata"),
        outside.clone(),
        tmp.clone(),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY").unwrap();
    std::fs::write(project.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(project.join(".mcp.json"), "{}").unwrap();
    World {
        _dir: dir,
        home,
        project,
        outside,
        tmp,
    }
}

impl World {
    fn policy(&self) -> SandboxPolicy {
        let context = PolicyContext {
            project_dir: self.project.clone(),
            additional_dirs: vec![],
            home: self.home.clone(),
            session_tmp: self.tmp.clone(),
        };
        SandboxPolicy::from_settings(&SandboxSettings::default(), &context, None).unwrap()
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let sandbox = Sandbox::prepare(&self.policy()).unwrap();
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(&self.project);
        sandbox.apply(&mut cmd);
        cmd.output().unwrap()
    }
}

fn installed(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: {tool} is not installed");
    }
    found
}

/// `(tool, program, args)` writing `x` to `{}`; `program` may be a file the test makes.
fn writers(w: &World) -> Vec<(&'static str, String, Vec<String>)> {
    let shell_copy = w.tmp.join("notashell");
    std::fs::copy("/bin/sh", &shell_copy).unwrap();
    vec![
        (
            "python3",
            "python3".into(),
            vec!["-c".into(), "open('{}','w').write('x')".into()],
        ),
        (
            "perl",
            "perl".into(),
            vec![
                "-e".into(),
                "open(F,'>','{}') or die $!; print F 'x'; close(F) or die".into(),
            ],
        ),
        (
            "awk",
            "awk".into(),
            vec!["BEGIN{ if (system(\"echo x > {}\") != 0) exit 1 }".into()],
        ),
        (
            "node",
            "node".into(),
            vec!["-e".into(), "require('fs').writeFileSync('{}','x')".into()],
        ),
        ("make", "make".into(), vec!["-f".into(), "MAKEFILE".into()]),
        (
            "sh",
            shell_copy.display().to_string(),
            vec!["-c".into(), "echo x > {}".into()],
        ),
    ]
}

fn attempt(w: &World, tool: &str, program: &str, args: &[String], target: &Path) -> Output {
    let target = target.display().to_string();
    let makefile = w.tmp.join(format!("Makefile-{}", target.len()));
    std::fs::write(&makefile, format!("all:\n\techo x > {target}\n")).unwrap();
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if tool == "make" && a == "MAKEFILE" {
                makefile.display().to_string()
            } else {
                a.replace("{}", &target)
            }
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    w.run(program, &args)
}

#[test]
fn i26_tests_interpreters_make_and_renamed_shell_cannot_write_outside_the_project() {
    let w = world();
    for (tool, program, args) in writers(&w) {
        if !installed(tool) {
            continue;
        }
        let outside = w.outside.join(format!("{tool}.txt"));
        let out = attempt(&w, tool, &program, &args, &outside);
        assert!(
            !outside.exists(),
            "{tool} wrote outside the project: {out:?}"
        );
        assert!(!out.status.success(), "{tool} claims success: {out:?}");
        let home_file = w.home.join(format!("{tool}.txt"));
        attempt(&w, tool, &program, &args, &home_file);
        assert!(!home_file.exists(), "{tool} wrote into the home directory");

        let inside = w.project.join(format!("{tool}.txt"));
        let out = attempt(&w, tool, &program, &args, &inside);
        assert!(
            out.status.success(),
            "{tool} inside the project failed: {out:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&inside).unwrap().trim(),
            "x",
            "{tool}"
        );
    }
}

#[test]
fn i26_tests_reading_ssh_key_fails() {
    let w = world();
    let key = w.home.join(".ssh/id_ed25519");
    let out = w.run("cat", &[key.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("SECRET"));
    // The rest of home and the project stay readable.
    std::fs::write(w.home.join("notes.txt"), "hello").unwrap();
    let out = w.run(
        "cat",
        &[w.home.join("notes.txt").to_str().unwrap(), ".git/config"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello[core]\n");
}

#[test]
fn i26_tests_protected_paths_stay_read_only() {
    let w = world();
    for (script, path) in [
        (
            "echo 'curl evil' > .git/hooks/pre-commit",
            ".git/hooks/pre-commit",
        ),
        ("echo '[core] hooksPath=/x' >> .git/config", ".git/config"),
        ("echo '{}' > .claude/settings.json", ".claude/settings.json"),
        ("echo '{\"mcpServers\":{}}' > .mcp.json", ".mcp.json"),
        ("rm -rf .strata && mkdir .strata", ".strata"),
        // Root in the command's user namespace still cannot undo the read-only mounts:
        // Landlock forbids mount changes.
        (
            "umount .git/hooks; mount -o remount,bind,rw .git/hooks; echo x > .git/hooks/pre-commit",
            ".git/hooks/pre-commit",
        ),
        (
            "unshare -m sh -c 'umount .git/hooks; echo x > .git/hooks/pre-commit'",
            ".git/hooks/pre-commit",
        ),
        // Regression (review of issue 26): renaming `.git` away and making a new
        // `.git/hooks` beside the read-only mount got around it.
        (
            "mv .git .git2 && mkdir -p .git/hooks && echo x > .git/hooks/pre-commit",
            ".git/hooks/pre-commit",
        ),
        ("rm -rf .git", ".git/config"),
    ] {
        let before = std::fs::read(w.project.join(path)).ok();
        let out = w.run("sh", &["-c", script]);
        assert!(!out.status.success(), "{script}: {out:?}");
        assert_eq!(std::fs::read(w.project.join(path)).ok(), before, "{script}");
    }
    // git's own files next to them stay writable.
    let out = w.run(
        "sh",
        &[
            "-c",
            "echo ref > .git/HEAD && mkdir -p src && echo fn > src/lib.rs",
        ],
    );
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn i26_tests_missing_protected_path_cannot_be_created() {
    let w = world();
    std::fs::remove_file(w.project.join(".mcp.json")).unwrap();
    std::fs::create_dir(w.project.join("src")).unwrap();
    let out = w.run("sh", &["-c", "echo '{}' > .mcp.json"]);
    assert!(!out.status.success());
    assert!(!w.project.join(".mcp.json").exists());
    let out = w.run("sh", &["-c", "echo x > src/new.rs"]);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn i26_tests_tcp_to_host_loopback_fails() {
    let w = world();
    if !installed("python3") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')"
    );
    let control = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        control.status.success(),
        "the unsandboxed control must connect: {control:?}"
    );
    let out = w.run("python3", &["-c", &script]);
    assert!(!out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("connected"));
}

#[test]
fn i26_tests_unix_socket_outside_fails() {
    let w = world();
    if !installed("python3") {
        return;
    }
    let path = w.outside.join("daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let script = format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')",
        path.display()
    );
    let control = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        control.status.success(),
        "the unsandboxed control must connect: {control:?}"
    );
    let out = w.run("python3", &["-c", &script]);
    assert!(!out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("connected"));
}

#[test]
fn i26_tests_tmpdir_is_the_session_directory() {
    let w = world();
    let out = w.run("sh", &["-c", "echo x > \"$TMPDIR/t\" && cat \"$TMPDIR/t\""]);
    assert!(out.status.success(), "{out:?}");
    assert!(w.tmp.join("t").exists());
}

#[test]
fn i26_5_test_switch_makes_the_sandbox_unavailable() {
    // Run in a child process: the switch is an environment variable of the process.
    if std::env::var_os("I26_SWITCH_CHILD").is_some() {
        let w = world();
        let err = Sandbox::prepare(&w.policy()).unwrap_err().to_string();
        assert!(err.contains("STRATA_SANDBOX_UNAVAILABLE"), "{err}");
        assert!(err.contains("\"enabled\": false"), "{err}");
        let support = strata_shell::check();
        assert!(
            support
                .missing()
                .unwrap()
                .contains("STRATA_SANDBOX_UNAVAILABLE")
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            "i26_5_test_switch_makes_the_sandbox_unavailable",
            "--nocapture",
        ])
        .env("I26_SWITCH_CHILD", "1")
        .env("STRATA_SANDBOX_UNAVAILABLE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    // Without the switch this machine supports the sandbox.
    assert_eq!(strata_shell::check().missing(), None);
}

/// Why the socket filter exists: Landlock up to ABI 8 does not check `connect` on a
/// pathname socket (its write rules do not cover it), so with `allowAllUnixSockets` the
/// same connection as above goes through.
#[test]
fn i26_3_allow_all_unix_sockets_lets_the_connection_through() {
    let w = world();
    if !installed("python3") {
        return;
    }
    let path = w.outside.join("daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let mut settings = SandboxSettings::default();
    settings.network.allow_all_unix_sockets = true;
    let context = PolicyContext {
        project_dir: w.project.clone(),
        additional_dirs: vec![],
        home: w.home.clone(),
        session_tmp: w.tmp.clone(),
    };
    let policy = SandboxPolicy::from_settings(&settings, &context, None).unwrap();
    let sandbox = Sandbox::prepare(&policy).unwrap();
    let script = format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')",
        path.display()
    );
    let mut cmd = Command::new("python3");
    cmd.args(["-c", &script]);
    sandbox.apply(&mut cmd);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // Listing sockets by path needs Landlock ABI 9: on older kernels it is refused, never
    // widened to "all".
    let mut settings = SandboxSettings::default();
    settings.network.allow_unix_sockets = vec![path.display().to_string()];
    let policy = SandboxPolicy::from_settings(&settings, &context, None).unwrap();
    match Sandbox::prepare(&policy) {
        Err(err) => assert!(err.to_string().contains("allowUnixSockets"), "{err}"),
        Ok(_) => assert!(strata_shell::check().landlock_abi >= Some(9)),
    }
}
