#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The replay provider on the reference agent's corpus: recorded responses come back in
//! order, rebuilt exactly, and running out is a clear error.

use std::path::{Path, PathBuf};

use futures::StreamExt;
use strata_agent::provider::{
    AssistantMessage, MessageAccumulator, ModelRequest, Provider, ProviderError, ReplayProvider,
    select_provider,
};
use strata_protocol::message::{ContentBlock, Message, StopReason};
use tokio_util::sync::CancellationToken;

/// The reference agent's corpus (`STRATA_CORPUS_DIR`); every test that reads it starts
/// with `require_corpus!()`, which skips the test on a fresh clone.
fn corpus() -> PathBuf {
    strata_testkit::corpus::claude_code().expect("checked by require_corpus!() first")
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "ignored".into(),
        system: String::new(),
        messages: vec![std::sync::Arc::new(Message::user_text("go"))],
        tools: Vec::new(),
        max_tokens: 100,
        thinking_budget: None,
    }
}

async fn next_response(p: &dyn Provider) -> Result<AssistantMessage, ProviderError> {
    let mut stream = p.stream(request(), CancellationToken::new());
    let mut acc = MessageAccumulator::new();
    while let Some(event) = stream.next().await {
        acc.push(&event?)?;
    }
    Ok(acc.finish()?)
}

fn tool_names(m: &AssistantMessage) -> Vec<&str> {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse(t) => Some(t.name.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn replays_a_corpus_session_response_by_response_in_file_order() {
    strata_testkit::require_corpus!();
    let path = corpus().join("spotter/tool_heavy.jsonl");
    let p = ReplayProvider::open(&path).unwrap();
    assert_eq!(p.name(), "replay");
    assert_eq!(p.default_model(), Some("claude-opus-4-6"));
    assert_eq!(p.remaining(), 4);

    let mut played = Vec::new();
    for _ in 0..4 {
        played.push(next_response(&p).await.unwrap());
    }
    let ids: Vec<&str> = played.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "msg_0167kgZUrgcT7dg7uZK7hVSg",
            "msg_01NUXWeNeduGBJVib8gyo9kz",
            "msg_01LbyjvsALGe2gMsTgDSj7e6",
            "msg_019BN3FRqb7NU4DgBN5jdsym",
        ]
    );
    // A response split over several transcript lines comes back whole, blocks in order.
    assert_eq!(tool_names(&played[2]), ["WebSearch", "Glob"]);
    assert_eq!(
        played[2]
            .content
            .iter()
            .map(ContentBlock::type_name)
            .collect::<Vec<_>>(),
        ["text", "thinking", "tool_use", "tool_use"]
    );
    let ContentBlock::ToolUse(t) = &played[1].content[1] else {
        panic!("tool use")
    };
    assert_eq!(t.name, "Bash");
    assert!(t.input["command"].as_str().unwrap().starts_with("tail -5 "));
    // The recording had no stop reasons (split lines): calls mean tool_use.
    assert!(
        played
            .iter()
            .all(|m| m.stop_reason == Some(StopReason::ToolUse))
    );
    // Exactly what was recorded, response by response.
    for (m, recorded) in played.iter().zip(p.responses()) {
        let mut expected = recorded.clone();
        expected.stop_reason = Some(StopReason::ToolUse);
        assert_eq!(m, &expected);
    }

    assert_eq!(p.remaining(), 0);
    let err = next_response(&p).await.unwrap_err();
    assert!(matches!(err, ProviderError::Replay(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("all 4 recorded responses") && text.contains("tool_heavy.jsonl"),
        "{text}"
    );
}

fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            jsonl_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

#[tokio::test]
async fn every_corpus_transcript_replays_and_each_response_rebuilds_exactly() {
    strata_testkit::require_corpus!();
    let mut files = Vec::new();
    jsonl_files(&corpus(), &mut files);
    assert_eq!(files.len(), 30);
    let mut total = 0;
    for file in files {
        let p = ReplayProvider::open(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(p.skipped_lines(), 0, "{}", file.display());
        let recorded = p.responses().to_vec();
        assert!(!recorded.is_empty());
        for r in &recorded {
            let played = next_response(&p).await.unwrap();
            assert_eq!(played.content, r.content, "{} {}", file.display(), r.id);
            assert_eq!(played.usage, r.usage);
            assert_eq!(played.id, r.id);
        }
        total += recorded.len();
    }
    // Every main session's responses plus the sub-agent files' own.
    assert!(total > 1000, "{total} responses");
}

#[tokio::test]
async fn replay_is_chosen_by_the_replay_path_and_labelled_as_a_replay() {
    strata_testkit::require_corpus!();
    let path = corpus().join("spotter/short.jsonl");
    let p = select_provider(None, &|_| None, Some(&path)).unwrap();
    assert_eq!(p.name(), "replay");
    let m = next_response(p.as_ref()).await.unwrap();
    assert_eq!(tool_names(&m), ["Bash", "Glob"]);
}

#[tokio::test]
async fn a_file_without_responses_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("strata-replay-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("notes.jsonl");
    std::fs::write(
        &file,
        "hello\n{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let err = ReplayProvider::open(&file).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("notes.jsonl holds no recorded model responses"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let err = ReplayProvider::open(&dir.join("missing.jsonl")).unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot read the session to replay"),
        "{err}"
    );
}
