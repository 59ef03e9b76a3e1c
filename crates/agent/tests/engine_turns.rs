//! The engine end to end against a mock model server on 127.0.0.1: a plain answer, a
//! tool round trip, a denied call, an interrupt, max turns, and resume sending the
//! restored conversation. Each session has handles of its own (`EngineHandles::private`),
//! so the tests run side by side as threads of one process (plain `cargo test`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use strata_agent::engine::{Engine, EngineHandles, EngineOptions, EventSink, ResumeTarget};
use strata_agent::provider::{ProviderChoice, select_provider};
use strata_protocol::message::Message;
use strata_protocol::sdk::{ResultSubtype, SdkMessage};
use strata_testkit::{Gate, MockResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Collect(Mutex<Vec<SdkMessage>>);

impl EventSink for Collect {
    fn emit(&self, message: SdkMessage) {
        self.0.lock().unwrap().push(message);
    }
}

impl Collect {
    fn types(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|m| {
                serde_json::to_value(m).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }
}

struct Env {
    _dir: tempfile::TempDir,
    config: PathBuf,
    project: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    Env {
        config,
        project: std::fs::canonicalize(&project).unwrap(),
        _dir: dir,
    }
}

fn options(env: &Env, server: &MockServer, events: Arc<dyn EventSink>) -> EngineOptions {
    let url = server.url();
    let lookup = move |k: &str| match k {
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        "ANTHROPIC_API_KEY" => Some("test-key".to_owned()),
        _ => None,
    };
    EngineOptions {
        model: Some("claude-sonnet-4-5".into()),
        verbose: true,
        ..EngineOptions::new(
            env.project.clone(),
            env.config.clone(),
            EngineHandles::private(),
            select_provider(Some(ProviderChoice::Anthropic), &lookup, None).unwrap(),
            events,
        )
    }
}

/// The session's transcript (each test records one session).
fn transcript_path(config: &Path) -> PathBuf {
    let projects = config.join("projects");
    let dir = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap()
}

fn transcript_lines(config: &Path) -> Vec<Value> {
    let file = transcript_path(config);
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn a_plain_answer_is_streamed_recorded_and_reported() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hello from the model.").usage(12, 5));
    let events = Arc::new(Collect::default());
    let engine = Engine::open(options(&env, &server, events.clone()))
        .await
        .unwrap();
    let result = engine
        .run_prompt(Message::user_text("hi"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    assert_eq!(result.result.as_deref(), Some("Hello from the model."));
    assert_eq!(result.num_turns, 1);
    assert!(result.total_cost_usd > 0.0);
    assert_eq!(result.usage["input_tokens"], 12);
    assert_eq!(events.types(), ["assistant", "result"]);
    let request = &server.requests()[0].json();
    assert_eq!(request["messages"][0]["role"], "user");
    assert_eq!(request["messages"][0]["content"][0]["text"], "hi");
    assert_eq!(request["model"], "claude-sonnet-4-5");
    let session = engine.session_id();
    engine.close().await.unwrap();

    let lines = transcript_lines(&env.config);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "file-history-snapshot", "assistant"]);
    assert_eq!(lines[0]["parentUuid"], Value::Null);
    assert_eq!(
        lines[2]["parentUuid"], lines[0]["uuid"],
        "the chain continues"
    );
    assert_eq!(lines[0]["sessionId"], session.as_str());
    // SP-4: the project's cost slot names this session.
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(env.config.join("config.json")).unwrap())
            .unwrap();
    let slot = &config["projects"][env.project.to_str().unwrap()];
    assert_eq!(slot["lastSessionId"], session.as_str());
    assert!(slot["lastCost"].as_f64().unwrap() > 0.0);
}

#[tokio::test]
async fn a_tool_round_trip_runs_bash_and_sends_the_result_back() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Running it.").tool_use(
        "toolu_1",
        "Bash",
        json!({"command": "echo hi"}),
    ));
    server.push(Reply::new().text("It printed hi."));
    let events = Arc::new(Collect::default());
    let mut opts = options(&env, &server, events.clone());
    opts.permission.allowed_tools = vec!["Bash(echo:*)".into()];
    let engine = Engine::open(opts).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("say hi"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    assert_eq!(result.num_turns, 2);
    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    let tool_result = &messages[2]["content"][0];
    assert_eq!(tool_result["type"], "tool_result");
    assert_eq!(tool_result["tool_use_id"], "toolu_1");
    assert!(
        tool_result["content"].as_str().unwrap().contains("hi"),
        "{tool_result}"
    );
    assert_eq!(
        events.types(),
        ["assistant", "assistant", "user", "assistant", "result"]
    );
    engine.close().await.unwrap();
    let lines = transcript_lines(&env.config);
    let result_line = lines
        .iter()
        .find(|l| l["toolUseResult"].is_object())
        .unwrap();
    assert!(result_line["sourceToolAssistantUUID"].is_string());
}

#[tokio::test]
async fn a_call_needing_approval_is_denied_without_a_prompt_channel() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Bash", json!({"command": "rm -rf build"})));
    server.push(Reply::new().text("I could not run it."));
    let engine = Engine::open(options(&env, &server, Arc::new(Collect::default())))
        .await
        .unwrap();
    let result = engine
        .run_prompt(Message::user_text("clean"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success);
    assert_eq!(result.permission_denials.len(), 1);
    assert_eq!(result.permission_denials[0].tool_name, "Bash");
    let second = server.requests()[1].json();
    let told = &second["messages"][2]["content"][0];
    assert_eq!(told["is_error"], true, "the model is told: {told}");
    assert_eq!(engine.store().get().denial_tracking.total, 1);
    engine.close().await.unwrap();
}

#[tokio::test]
async fn an_interrupt_mid_stream_is_recorded_and_the_session_resumes() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    let gate = Gate::new();
    let reply = Reply::new().text("first part").text("second part").build();
    // Pause right after the first block is complete, in the middle of the response.
    let frames = strata_testkit::render::anthropic_frames(&reply);
    let first_stop = frames
        .iter()
        .position(|f| f.event.as_deref() == Some("content_block_stop"))
        .unwrap();
    server.push(MockResponse::message(reply).pause_after(first_stop + 1, &gate));
    let events = Arc::new(Collect::default());
    let engine = Engine::open(options(&env, &server, events.clone()))
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    let paused = gate.clone();
    tokio::spawn(async move {
        paused.reached().await;
        // Give the client a moment to read what was sent before the pause.
        tokio::time::sleep(Duration::from_millis(100)).await;
        stopper.cancel();
    });
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        engine.run_prompt(Message::user_text("go"), cancel),
    )
    .await
    .expect("the interrupt ends the turn promptly");
    assert_eq!(result.subtype, ResultSubtype::ErrorDuringExecution);
    assert!(result.is_error);
    let session = engine.session_id();
    engine.close().await.unwrap();
    gate.release();

    let lines = transcript_lines(&env.config);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["user", "file-history-snapshot", "assistant", "user"],
        "the completed block is kept"
    );
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "user");
    assert!(
        last["message"]["content"]
            .to_string()
            .contains("[Request interrupted by user]")
    );

    // Resume: the restored conversation goes to the model.
    server.push(Reply::new().text("continuing"));
    let mut opts = options(&env, &server, Arc::new(Collect::default()));
    opts.resume = Some(ResumeTarget::Session(session.clone()));
    let engine = Engine::open(opts).await.unwrap();
    assert_eq!(engine.session_id(), session);
    let result = engine
        .run_prompt(Message::user_text("again"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    let request = server.requests().last().unwrap().json();
    let text = request["messages"].to_string();
    assert!(
        text.contains("\"go\""),
        "the first prompt is restored: {text}"
    );
    assert!(
        text.contains("first part"),
        "the completed block is restored: {text}"
    );
    assert!(text.contains("again"));
    engine.close().await.unwrap();
}

#[tokio::test]
async fn max_turns_ends_the_run_with_error_max_turns() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Glob", json!({"pattern": "*.rs"})));
    server.push(Reply::new().text("never asked"));
    let mut opts = options(&env, &server, Arc::new(Collect::default()));
    opts.max_turns = Some(1);
    let engine = Engine::open(opts).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("look"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::ErrorMaxTurns);
    assert_eq!(server.requests().len(), 1);
    engine.close().await.unwrap();
}

#[tokio::test]
async fn resuming_an_unknown_session_says_so() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    let mut opts = options(&env, &server, Arc::new(Collect::default()));
    opts.resume = Some(ResumeTarget::Session(
        "0b5e9d2c-0000-4000-8000-000000000000".into(),
    ));
    let err = Engine::open(opts).await.err().expect("no such session");
    assert_eq!(
        err.to_string(),
        "No conversation found with session ID: 0b5e9d2c-0000-4000-8000-000000000000"
    );
}

/// UI-4: the tools and the API client read and write the very store a UI reads. A
/// subscriber standing in for the UI sees the todo list the model wrote through
/// TodoWrite, the tool call in progress and then finished, and the whole conversation.
#[tokio::test]
async fn ui_4_tools_and_the_api_client_write_the_store_a_ui_reads() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_todo",
        "TodoWrite",
        json!({"todos": [{"content": "Write the test", "status": "in_progress",
                          "activeForm": "Writing the test"}]}),
    ));
    server.push(Reply::new().text("Planned."));
    let engine = Engine::open(options(&env, &server, Arc::new(Collect::default())))
        .await
        .unwrap();
    let todos_seen = Arc::new(Mutex::new(Vec::new()));
    let busy_seen = Arc::new(Mutex::new(Vec::new()));
    let (todos_log, busy_log) = (Arc::clone(&todos_seen), Arc::clone(&busy_seen));
    let _todos = engine.store().subscribe_select(
        |s| {
            s.todos.of("main").map(|l| {
                l.iter()
                    .map(|t| t.active_form.to_string())
                    .collect::<Vec<_>>()
            })
        },
        move |t| todos_log.lock().unwrap().push(t.clone()),
    );
    let _busy = engine.store().subscribe_select(
        |s| {
            s.in_progress_tool_use_ids
                .iter()
                .map(|id| id.to_string())
                .collect::<Vec<_>>()
        },
        move |ids| busy_log.lock().unwrap().push(ids.clone()),
    );

    let result = engine
        .run_prompt(Message::user_text("plan it"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    assert_eq!(
        *todos_seen.lock().unwrap(),
        [Some(vec!["Writing the test".to_owned()])]
    );
    assert_eq!(
        *busy_seen.lock().unwrap(),
        [vec!["toolu_todo".to_owned()], vec![]],
        "the call shows as in progress while it runs, and not after"
    );
    // prompt, tool call, tool result, answer
    assert_eq!(engine.store().get().messages.len(), 4);
    engine.close().await.unwrap();
}

/// Regression: every assistant line was written with the usage of `message_start`, which
/// carries no output tokens, so the cost rebuilt from the transcript on resume (and by
/// `strata sessions show`) left out the output, the expensive part. The last line of a
/// response now carries its final usage.
#[tokio::test]
async fn regression_the_transcript_records_each_responses_output_tokens() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .text("Running it.")
            .tool_use("toolu_1", "Bash", json!({"command": "echo hi"}))
            .usage(40, 321),
    );
    server.push(Reply::new().text("It printed hi.").usage(50, 7));
    let mut opts = options(&env, &server, Arc::new(Collect::default()));
    opts.permission.allowed_tools = vec!["Bash(echo:*)".into()];
    let engine = Engine::open(opts).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("say hi"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    engine.close().await.unwrap();

    let lines = transcript_lines(&env.config);
    let outputs: Vec<(String, u64)> = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .map(|l| {
            (
                l["message"]["content"][0]["type"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                l["message"]["usage"]["output_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    // The first block's line is written when the second completes (usage so far); the
    // response's last line carries the final count.
    assert_eq!(
        outputs,
        [
            ("text".to_owned(), 1),
            ("tool_use".to_owned(), 321),
            ("text".to_owned(), 7)
        ]
    );
    // Cost rebuilt from the transcript is the cost the run reported.
    let file = transcript_path(&env.config);
    let usage = strata_session::usage::session_usage(&file).unwrap();
    assert!(
        (usage.total_cost_usd - result.total_cost_usd).abs() < 1e-9,
        "rebuilt {} vs reported {}",
        usage.total_cost_usd,
        result.total_cost_usd
    );
}

/// Regression: a tool call whose streamed input was cut off (a large Write stopped by
/// the output token limit) ended the whole run with a protocol error. The call now gets
/// an error result the model can read, nothing runs, and the turn goes on.
#[tokio::test]
async fn regression_a_tool_call_with_cut_off_input_is_answered_with_an_error() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    let target = env.project.join("big.txt");
    let reply = Reply::new()
        .tool_use(
            "toolu_cut",
            "Write",
            json!({"file_path": target, "content": "a long file"}),
        )
        .build();
    let mut frames = strata_testkit::render::anthropic_frames(&reply);
    // The input's last fragment never comes: the JSON stops mid-way.
    let last_fragment = frames
        .iter()
        .rposition(|f| f.data.contains("input_json_delta"))
        .unwrap();
    frames.remove(last_fragment);
    server.push(MockResponse::raw_sse(strata_testkit::render::to_sse(
        &frames,
    )));
    server.push(Reply::new().text("I will write it in parts."));
    let mut opts = options(&env, &server, Arc::new(Collect::default()));
    opts.permission.allowed_tools = vec!["Write".into()];
    let engine = Engine::open(opts).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("write it"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    assert_eq!(result.result.as_deref(), Some("I will write it in parts."));
    assert!(!target.exists(), "nothing ran");
    let second = server.requests()[1].json();
    let tool_result = &second["messages"][2]["content"][0];
    assert_eq!(tool_result["tool_use_id"], "toolu_cut");
    assert_eq!(tool_result["is_error"], true);
    let text = tool_result["content"].to_string();
    assert!(
        text.contains("invalid JSON") && text.contains("cut off"),
        "{text}"
    );
    // The call itself is sent back with a valid (empty) input.
    assert_eq!(second["messages"][1]["content"][0]["input"], json!({}));
    engine.close().await.unwrap();
}

/// Regression: a tool output longer than the 30,000 characters shown inline but shorter
/// than the transcript's 50,000-byte inline limit said "could not be saved (the output
/// was small enough to keep inline)" and the cut part was lost. It is stored whole now.
#[tokio::test]
async fn regression_an_output_between_the_tool_cap_and_the_transcript_limit_is_stored_whole() {
    let env = env();
    std::fs::write(env.project.join("big.txt"), "0123456789\n".repeat(3_600)).unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_big", "Bash", json!({"command": "cat big.txt"})));
    server.push(Reply::new().text("Done."));
    let events = Arc::new(Collect::default());
    let mut opts = options(&env, &server, events.clone());
    opts.permission.allowed_tools = vec!["Bash(cat:*)".into()];
    let engine = Engine::open(opts).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("show it"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    let second = server.requests()[1].json();
    let sent = second["messages"][2]["content"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(sent.contains("The full output was saved to"), "{sent:.300}");
    assert!(!sent.contains("could not be saved"), "{sent:.300}");
    engine.close().await.unwrap();
    let stored = transcript_path(&env.config)
        .with_extension("")
        .join("tool-results");
    let files: Vec<_> = std::fs::read_dir(&stored).unwrap().collect();
    assert_eq!(files.len(), 1, "one stored output in {}", stored.display());
    let whole = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    // The whole output (the Bash tool drops the final newline), not the inline part.
    assert_eq!(whole, "0123456789\n".repeat(3_600).trim_end());
}

/// Issue 18 item 7: Read of an image sends it to the model as an image block of the
/// tool result, after a line of text, and the transcript records it the same way.
#[tokio::test]
async fn read_of_an_image_sends_an_image_block_in_the_tool_result() {
    let env = env();
    let file = env.project.join("shot.png");
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(3, 2, image::Rgb([1, 2, 3])))
        .write_to(&mut png, image::ImageFormat::Png)
        .unwrap();
    std::fs::write(&file, png.get_ref()).unwrap();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "Read", json!({"file_path": file})));
    server.push(Reply::new().text("A tiny image."));
    let events = Arc::new(Collect::default());
    let engine = Engine::open(options(&env, &server, events)).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("look"), CancellationToken::new())
        .await;
    assert_eq!(result.subtype, ResultSubtype::Success, "{result:?}");
    let second = server.requests()[1].json();
    let tool_result = &second["messages"][2]["content"][0];
    assert_eq!(tool_result["type"], "tool_result");
    let blocks = tool_result["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "text");
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["source"]["media_type"], "image/png");
    assert!(blocks[1]["source"]["data"].as_str().unwrap().len() > 20);
    engine.close().await.unwrap();
    let lines = transcript_lines(&env.config);
    let recorded = lines
        .iter()
        .find(|l| l["toolUseResult"]["type"] == "image")
        .unwrap();
    assert_eq!(
        recorded["message"]["content"][0]["content"][1]["type"],
        "image"
    );
}
