//! Issue 18's last "done when": a session moved from the reference agent to strata does
//! not lose the tools it was using. Every session of the reference agent's corpus is
//! resumed through the binary against the mock model server, and the first request of the
//! continued conversation must offer every tool the session's history called (the legacy
//! `Task` name is read as `Agent`, COMPAT). MCP tools (`mcp__…`) come from servers the
//! copied session does not configure and are left out of the check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use headless_support::{Env, folder_name};
use serde_json::Value;
use strata_testkit::{MockServer, Reply};

/// The top-level sessions of the corpus (not the sub-agent sidechains beside them).
fn corpus_sessions(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "subagents" {
                corpus_sessions(&path, out);
            }
        } else if name.ends_with(".jsonl") && !name.starts_with("agent-") {
            out.push(path);
        }
    }
}

/// The tools a transcript's assistant lines called, by the name strata offers.
fn tools_called(transcript: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(transcript).unwrap();
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if line["type"] != "assistant" || line["isSidechain"] == true {
            continue;
        }
        for block in line["message"]["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_use"
                && let Some(name) = block["name"].as_str()
                && !name.starts_with("mcp__")
            {
                names.insert(if name == "Task" { "Agent" } else { name }.to_owned());
            }
        }
    }
    names
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dst = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dst);
        } else {
            std::fs::copy(&p, dst).unwrap();
        }
    }
}

#[tokio::test]
async fn every_corpus_session_resumes_with_the_tools_its_history_called_offered() {
    strata_testkit::require_corpus!();
    let mut sessions = Vec::new();
    corpus_sessions(
        &strata_testkit::corpus::claude_code().unwrap(),
        &mut sessions,
    );
    sessions.sort();
    let mut checked = BTreeSet::new();
    for transcript in sessions {
        let called = tools_called(&transcript);
        if called.is_empty() {
            continue;
        }
        let env = Env::new();
        let folder = env.cfg.join("projects").join(folder_name(&env.proj));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::copy(&transcript, folder.join(transcript.file_name().unwrap())).unwrap();
        let side = transcript.with_extension("");
        if side.is_dir() {
            copy_dir(&side, &folder.join(side.file_name().unwrap()));
        }
        let id = transcript
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let server = MockServer::start().await.unwrap();
        server.push(Reply::new().text("Continuing."));
        let run = env
            .run(
                Some(&server),
                &["-p", "go on", "-r", &id, "--output-format", "json"],
            )
            .await;
        assert_eq!(
            run.code,
            Some(0),
            "{}: {}",
            transcript.display(),
            run.stderr
        );
        let request = server.requests()[0].json();
        let offered: BTreeSet<String> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        let missing: Vec<&String> = called.difference(&offered).collect();
        assert!(
            missing.is_empty(),
            "{}: the history called {missing:?}, which the resumed session does not offer \
             (offered: {offered:?})",
            transcript.display()
        );
        checked.extend(called);
    }
    // The corpus's whole toolset was seen (so the check above could fail for each).
    for name in [
        "Bash",
        "Read",
        "Edit",
        "Glob",
        "Grep",
        "Write",
        "WebFetch",
        "WebSearch",
        "Agent",
        "TodoWrite",
        "TaskOutput",
        "Skill",
        "ExitPlanMode",
        "AskUserQuestion",
        "EnterPlanMode",
    ] {
        assert!(
            checked.contains(name),
            "{name} was not in the corpus's history"
        );
    }
}
