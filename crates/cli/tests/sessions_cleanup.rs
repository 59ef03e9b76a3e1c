//! `cleanupPeriodDays` through the real binary: `strata sessions cleanup [--dry-run]`,
//! and the sweep when a session starts, which never deletes the session it resumes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use strata_testkit::transcripts::TranscriptBuilder;
use strata_testkit::{MockServer, Reply};

use headless_support::{Env, folder_name};

const DAY: Duration = Duration::from_secs(86_400);

/// A session of this project, with a tool output in its side folder, last written
/// `days` days ago.
fn session(env: &Env, id: &str, days: u32) -> PathBuf {
    let mut b = TranscriptBuilder::new(id, env.proj.to_str().unwrap());
    b.prompt("hello");
    b.response(
        &format!("msg_{id}"),
        vec![strata_protocol::message::ContentBlock::text("Hi.")],
    );
    let dir = env.cfg.join("projects").join(folder_name(&env.proj));
    let path = b.write_session(&dir, &[]).unwrap();
    let side = dir.join(id).join("tool-results");
    fs::create_dir_all(&side).unwrap();
    fs::write(side.join("toolu_1.txt"), "output").unwrap();
    let f = fs::File::options().append(true).open(&path).unwrap();
    f.set_modified(SystemTime::now() - DAY * days).unwrap();
    path
}

async fn sessions(env: &Env, args: &[&str]) -> headless_support::Run {
    let mut all = vec!["sessions"];
    all.extend_from_slice(args);
    env.run(None, &all).await
}

fn settings(env: &Env, text: &str) {
    fs::create_dir_all(&env.cfg).unwrap();
    fs::write(env.cfg.join("settings.json"), text).unwrap();
}

fn exists(p: &Path) -> bool {
    p.exists()
}

#[tokio::test]
async fn cleanup_dry_run_lists_what_would_go_then_cleanup_deletes_it() {
    let env = Env::new();
    let old = session(&env, "old-one", 45);
    let recent = session(&env, "recent-one", 3);

    let dry = sessions(&env, &["cleanup", "--dry-run"]).await;
    assert_eq!(dry.code, Some(0), "{dry:?}");
    assert!(
        dry.stdout
            .starts_with("Would delete 1 session last active more than 30 days ago"),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains("old-one.jsonl") && dry.stdout.contains("45 days ago"));
    assert!(!dry.stdout.contains("recent-one"));
    assert!(exists(&old), "a dry run deletes nothing");

    let json: Value = serde_json::from_str(
        &sessions(&env, &["cleanup", "--dry-run", "--json"])
            .await
            .stdout,
    )
    .unwrap();
    assert_eq!(json["cleanupPeriodDays"], 30);
    assert_eq!(json["dryRun"], true);
    assert_eq!(json["sessions"][0]["sessionId"], "old-one");
    assert_eq!(json["sessions"][0]["status"], "wouldDelete");

    let run = sessions(&env, &["cleanup"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.starts_with("Deleted 1 session"),
        "{}",
        run.stdout
    );
    assert!(!exists(&old) && !exists(&old.with_extension("")));
    assert!(exists(&recent) && exists(&recent.with_extension("")));
    let again = sessions(&env, &["cleanup"]).await;
    assert!(
        again.stdout.contains("nothing to delete"),
        "{}",
        again.stdout
    );
}

#[tokio::test]
async fn cleanup_period_comes_from_settings_and_broken_settings_delete_nothing() {
    let env = Env::new();
    let old = session(&env, "old-one", 45);
    settings(&env, r#"{"cleanupPeriodDays": 60}"#);
    let run = sessions(&env, &["cleanup"]).await;
    assert!(run.stdout.contains("more than 60 days"), "{}", run.stdout);
    assert!(exists(&old));

    settings(&env, r#"{"cleanupPeriodDays": 0}"#);
    let run = sessions(&env, &["cleanup"]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("cleanupPeriodDays is 0"),
        "{}",
        run.stderr
    );
    assert!(exists(&old));

    // The broken file might hold a longer period: nothing is deleted on a guess.
    settings(&env, "{\"cleanupPeriodDays\": 7,");
    let run = sessions(&env, &["cleanup"]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("settings.json"), "{}", run.stderr);
    assert!(exists(&old));
}

/// The reference agent sweeps at start; so does `strata -p`, but the session it resumes
/// is in use, however old.
#[tokio::test]
async fn a_session_start_deletes_old_sessions_but_not_the_one_it_resumes() {
    let env = Env::new();
    let resumed = session(&env, "old-resumed", 90);
    let other = session(&env, "old-other", 90);
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Back again."));
    let run = env
        .run(
            Some(&server),
            &["-p", "continue", "--resume", "old-resumed"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Back again.\n");
    assert!(exists(&resumed), "the resumed session is kept");
    assert!(exists(&resumed.with_extension("")));
    assert!(!exists(&other), "the other old session is deleted");
    assert!(!exists(&other.with_extension("")));
}
