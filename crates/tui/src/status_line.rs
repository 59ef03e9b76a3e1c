//! The `statusLine` setting (the reference agent's): a command given the session as JSON
//! on stdin whose first lines of output are shown under the footer.
//!
//! The command runs on a task of its own, never on the frame path: the app pokes it
//! with the session's JSON when something the status could show changed (a turn ended,
//! the model or mode changed); pokes that arrive while it runs, or within
//! [`MIN_INTERVAL`] of the last run, are coalesced into one run (a `watch` channel
//! keeps only the newest). A command that hangs is stopped after `TIMEOUT`.

use std::time::{Duration, Instant};

use serde_json::Value;
use strata_protocol::settings::Settings;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::watch;

use crate::bridge::{UiEvent, UiSender};

/// The status is refreshed at most this often.
pub const MIN_INTERVAL: Duration = Duration::from_millis(300);
/// A status command is stopped after this long.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The `statusLine` command of the settings: `{"type": "command", "command": "…"}`, or a
/// plain string.
pub fn command_of(settings: &Settings) -> Option<String> {
    let v = settings.extra.get("statusLine")?;
    let command = match v {
        Value::String(s) => s.as_str(),
        Value::Object(o) => {
            if o.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t != "command")
            {
                return None;
            }
            o.get("command")?.as_str()?
        }
        _ => return None,
    };
    (!command.trim().is_empty()).then(|| command.to_owned())
}

/// The running status-line task: poke it with (command, session JSON).
#[derive(Debug)]
pub struct StatusLine {
    poke: watch::Sender<Option<(String, String)>>,
}

impl StatusLine {
    /// Starts the task; it sends each new status as [`UiEvent::StatusLine`].
    pub fn start(tx: UiSender, cwd: std::path::PathBuf) -> Self {
        let (poke, mut rx) = watch::channel::<Option<(String, String)>>(None);
        tokio::spawn(async move {
            let mut last_run: Option<Instant> = None;
            while rx.changed().await.is_ok() {
                if let Some(at) = last_run {
                    tokio::time::sleep_until((at + MIN_INTERVAL).into()).await;
                }
                let Some((command, input)) = rx.borrow_and_update().clone() else {
                    continue;
                };
                last_run = Some(Instant::now());
                let text = run(&command, &input, &cwd).await;
                if tx.send(UiEvent::StatusLine(text)).is_err() {
                    break;
                }
            }
        });
        Self { poke }
    }

    /// Asks for a refresh with `command` and the session's JSON `input`.
    pub fn poke(&self, command: String, input: String) {
        let _ = self.poke.send(Some((command, input)));
    }
}

/// Runs `command` with `input` on stdin; its stdout (empty on failure).
async fn run(command: &str, input: &str, cwd: &std::path::Path) -> String {
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let Ok(mut child) = child else {
        return String::new();
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is fine.
        let _ = stdin.write_all(input.as_bytes()).await;
    }
    match tokio::time::timeout(TIMEOUT, child.wait_with_output()).await {
        Ok(Ok(out)) => String::from_utf8_lossy(&out.stdout).trim_end().to_owned(),
        _ => String::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_command_comes_from_the_status_line_setting() {
        let s: Settings =
            serde_json::from_str(r#"{"statusLine": {"type": "command", "command": "echo hi"}}"#)
                .unwrap();
        assert_eq!(command_of(&s).as_deref(), Some("echo hi"));
        assert_eq!(command_of(&Settings::default()), None);
    }

    #[tokio::test]
    async fn the_command_gets_the_session_json_and_bursts_are_coalesced() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let dir = tempfile::tempdir().unwrap();
        let sl = StatusLine::start(tx, dir.path().to_path_buf());
        let start = Instant::now();
        for i in 0..50 {
            sl.poke("cat".into(), format!("{{\"n\":{i}}}"));
        }
        let mut got = Vec::new();
        while let Ok(Some(UiEvent::StatusLine(t))) =
            tokio::time::timeout(Duration::from_millis(1500), rx.recv()).await
        {
            got.push(t);
        }
        // The newest input always wins, and 50 pokes cost at most two runs.
        assert_eq!(
            got.last().map(String::as_str),
            Some("{\"n\":49}"),
            "{got:?}"
        );
        assert!(got.len() <= 2, "{got:?}");
        assert!(start.elapsed() >= Duration::from_millis(0));
    }
}
