//! The tmux pane the UI's end-to-end tests drive: the real `strata` binary started in a
//! tmux server of its own (own socket), keys sent with `send-keys`, the screen and its
//! scrollback read with `capture-pane`; every wait polls with a deadline.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::print_stderr)]

use std::process::Command;
use std::time::{Duration, Instant};

use strata_testkit::MockServer;

use crate::headless_support::Env;

/// How long a wait for a text may take.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// One tmux server (its own socket) with one pane running strata.
pub struct Pane {
    pub socket: String,
}

impl Pane {
    /// Starts `strata <args>` in `env`'s project on a `cols` × `rows` pane, or `None`
    /// when tmux is missing.
    pub fn start(
        env: &Env,
        server: Option<&MockServer>,
        args: &[&str],
        cols: u16,
        rows: u16,
    ) -> Option<Pane> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("tmux is not installed: skipping the tmux end-to-end test");
            return None;
        }
        let mut cmd = session_env(env, "xterm-256color");
        if let Some(s) = server {
            cmd.push_str(&format!(
                " ANTHROPIC_BASE_URL='{}' ANTHROPIC_API_KEY=test-key",
                s.url()
            ));
        }
        cmd.push_str(&format!(" '{}'", env!("CARGO_BIN_EXE_strata")));
        for a in args {
            cmd.push_str(&format!(" '{a}'"));
        }
        // Keep the pane after strata exits so its last screen can be read.
        cmd.push_str("; echo STRATA-EXITED=$?; sleep 30");
        let pane = Self::open(&cmd, (cols, rows));
        let _ = Command::new("tmux")
            .args([
                "-L",
                &pane.socket,
                "set-option",
                "-g",
                "history-limit",
                "50000",
            ])
            .status();
        Some(pane)
    }

    /// A tmux server of its own running `cmd` in a `cols` × `rows` pane.
    fn open(cmd: &str, (cols, rows): (u16, u16)) -> Pane {
        let socket = format!("strata-test-{}-{}", std::process::id(), uuid_like());
        let ok = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-x"])
            .arg(cols.to_string())
            .arg("-y")
            .arg(rows.to_string())
            .arg(cmd)
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux did not start");
        Pane { socket }
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's scrollback and screen.
    pub fn capture(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-E", "-"])
    }

    pub fn keys(&self, keys: &[&str]) {
        self.tmux(&[&["send-keys"][..], keys].concat());
    }

    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-l", text]);
    }

    /// Waits until the pane shows `text`; fails with the pane's content after the
    /// deadline.
    pub fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let pane = self.capture();
            if pane.contains(text) {
                return pane;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "waited for {text:?}; the pane:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

pub fn uuid_like() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed) * 1000
        + u64::from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_micros(),
        )
}

impl Pane {
    /// A pane running an interactive `bash` (job control on, for Ctrl-Z and `fg`) in
    /// `env`'s project with `TERM=term` and no model configured; `None` when tmux or bash
    /// is missing. Every byte the pane is sent to show is also appended to `raw` when given
    /// (`pipe-pane`), to check what strata wrote, not only how tmux drew it.
    pub fn shell(
        env: &Env,
        (cols, rows): (u16, u16),
        term: &str,
        raw: Option<&std::path::Path>,
    ) -> Option<Pane> {
        if Command::new("tmux").arg("-V").output().is_err()
            || Command::new("bash").arg("--version").output().is_err()
        {
            eprintln!("tmux or bash is not installed: skipping the tmux end-to-end test");
            return None;
        }
        let cmd = format!(
            "{} PS1='$ ' bash --norc --noprofile -i",
            session_env(env, term)
        );
        let pane = Self::open(&cmd, (cols, rows));
        if let Some(raw) = raw {
            pane.tmux(&["pipe-pane", "-o", &format!("cat >> '{}'", raw.display())]);
        }
        pane.wait_for("$ ");
        Some(pane)
    }
}

/// The start of a pane's command line: `env`'s project as the directory, its config and
/// home, `TERM=term`, and no model configured.
fn session_env(env: &Env, term: &str) -> String {
    format!(
        "cd '{}' && env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u OPENAI_BASE_URL \
         STRATA_CONFIG_DIR='{}' HOME='{}' TERM={term}",
        env.proj.display(),
        env.cfg.display(),
        env.home.display()
    )
}
