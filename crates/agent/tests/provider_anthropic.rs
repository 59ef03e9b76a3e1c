#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Anthropic provider against the mock Messages API server: streaming, tool use,
//! retries, cancellation and errors, over real HTTP on loopback.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use strata_agent::provider::{
    AnthropicConfig, AnthropicProvider, AssistantMessage, CompletedBlock, MessageAccumulator,
    ModelRequest, Provider, ProviderError, RetryPolicy, StreamEvent, ToolDefinition,
    select_provider,
};
use strata_protocol::message::{ContentBlock, Message, Role, StopReason};
use strata_testkit::{Gate, MockResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    }
}

fn provider(server: &MockServer, retry: RetryPolicy) -> AnthropicProvider {
    let mut config = AnthropicConfig::new("test-key");
    config.base_url = server.url();
    config.retry = retry;
    AnthropicProvider::new(config).unwrap()
}

fn request(messages: Vec<Message>) -> ModelRequest {
    let messages = messages.into_iter().map(std::sync::Arc::new).collect();
    ModelRequest {
        model: "claude-test".into(),
        system: "You are a test.".into(),
        messages,
        tools: vec![ToolDefinition::function(
            "Bash",
            "Run a shell command.",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        )],
        max_tokens: 1024,
        thinking_budget: None,
    }
}

/// Everything one call produced: the events, the blocks as they completed, and the
/// message or the error that ended the stream.
struct Outcome {
    events: Vec<StreamEvent>,
    completed: Vec<CompletedBlock>,
    result: Result<AssistantMessage, ProviderError>,
}

async fn run(provider: &dyn Provider, request: ModelRequest, cancel: CancellationToken) -> Outcome {
    let mut stream = provider.stream(request, cancel);
    let mut acc = MessageAccumulator::new();
    let mut events = Vec::new();
    let mut completed = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => {
                if let Some(done) = acc.push(&event).unwrap() {
                    completed.push(done);
                }
                events.push(event);
            }
            Err(e) => {
                return Outcome {
                    events,
                    completed,
                    result: Err(e),
                };
            }
        }
    }
    Outcome {
        events,
        completed,
        result: acc.finish().map_err(ProviderError::from),
    }
}

#[tokio::test]
async fn plain_answer_streams_text_and_sends_a_messages_api_request() {
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .id("msg_plain")
            .text("Hello there, human.")
            .usage(21, 7),
    );
    let p = provider(&server, fast_retries(0));
    let out = run(
        &p,
        request(vec![Message::user_text("hi")]),
        CancellationToken::new(),
    )
    .await;
    let m = out.result.unwrap();
    assert_eq!(m.id, "msg_plain");
    assert_eq!(m.content, vec![ContentBlock::text("Hello there, human.")]);
    assert_eq!(m.stop_reason, Some(StopReason::EndTurn));
    assert_eq!((m.usage.input_tokens, m.usage.output_tokens), (21, 7));
    // Text arrived as several deltas, so a UI can stream it.
    let deltas = out
        .events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ContentBlockDelta { .. }))
        .count();
    assert!(deltas >= 2, "{deltas} deltas");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(r.header("x-api-key"), Some("test-key"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 1024);
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["messages"][0]["content"][0]["text"], "hi");
    assert_eq!(body["tools"][0]["name"], "Bash");
    assert_eq!(body["system"][0]["text"], "You are a test.");
}

#[tokio::test]
async fn tool_use_round_trip_assembles_input_and_sends_the_result_back() {
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .id("msg_tool")
            .thinking("The user wants output.", "c2lnbmF0dXJl")
            .text("Running it.")
            .tool_use(
                "toolu_01",
                "Bash",
                json!({"command": "echo hi", "timeout": 5000}),
            ),
    );
    server.push(Reply::new().text("It printed hi."));
    let p = provider(&server, fast_retries(0));

    let first = run(
        &p,
        request(vec![Message::user_text("say hi")]),
        CancellationToken::new(),
    )
    .await;
    // Each block is handed out as it completes, in order: the query loop writes one
    // transcript line per block.
    let kinds: Vec<&str> = first
        .completed
        .iter()
        .map(|c| c.block.type_name())
        .collect();
    assert_eq!(kinds, ["thinking", "text", "tool_use"]);
    let m = first.result.unwrap();
    assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
    let ContentBlock::Thinking(t) = &m.content[0] else {
        panic!("thinking first")
    };
    assert_eq!(
        (t.thinking.as_str(), t.signature.as_str()),
        ("The user wants output.", "c2lnbmF0dXJl")
    );
    assert_eq!(
        m.content[2],
        ContentBlock::tool_use(
            "toolu_01",
            "Bash",
            json!({"command": "echo hi", "timeout": 5000})
        )
    );

    let conversation = vec![
        Message::user_text("say hi"),
        Message::blocks(Role::Assistant, m.content.clone()),
        Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result("toolu_01", "hi\n", false)],
        ),
    ];
    let second = run(&p, request(conversation), CancellationToken::new()).await;
    assert_eq!(
        second.result.unwrap().content,
        vec![ContentBlock::text("It printed hi.")]
    );

    let body = server.requests()[1].json();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"][0]["signature"], "c2lnbmF0dXJl",
        "thinking goes back signed"
    );
    assert_eq!(
        messages[1]["content"][2]["input"],
        json!({"command": "echo hi", "timeout": 5000})
    );
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_01");
    assert_eq!(messages[2]["content"][0]["content"], "hi\n");
    assert_eq!(
        messages[2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    // What a resume test compares: the conversation as built, without cache marks.
    let sent = server.requests()[1].messages();
    assert_eq!(
        sent[2]["content"][0],
        json!({"tool_use_id": "toolu_01", "type": "tool_result", "content": "hi\n"})
    );
    assert_eq!(sent[0], json!({"role": "user", "content": "say hi"}));
}

#[tokio::test]
async fn parallel_tool_calls_arrive_as_separate_blocks() {
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .tool_use("toolu_a", "Read", json!({"file_path": "/a.rs"}))
            .tool_use("toolu_b", "Read", json!({"file_path": "/b.rs"}))
            .tool_use("toolu_c", "Glob", json!({"pattern": "**/*.toml"})),
    );
    let p = provider(&server, fast_retries(0));
    let out = run(
        &p,
        request(vec![Message::user_text("read")]),
        CancellationToken::new(),
    )
    .await;
    let m = out.result.unwrap();
    let calls: Vec<(String, serde_json::Value)> = m
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::ToolUse(t) => (t.id.clone(), t.input.clone()),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_a".to_owned(), json!({"file_path": "/a.rs"})),
            ("toolu_b".to_owned(), json!({"file_path": "/b.rs"})),
            ("toolu_c".to_owned(), json!({"pattern": "**/*.toml"})),
        ]
    );
    assert_eq!(out.completed.len(), 3);
}

#[tokio::test]
async fn usage_includes_cache_tokens() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("cached").usage(3, 9).cache(1500, 22_000));
    let p = provider(&server, fast_retries(0));
    let m = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await
    .result
    .unwrap();
    assert_eq!(m.usage.cache_creation_input_tokens, Some(1500));
    assert_eq!(m.usage.cache_read_input_tokens, Some(22_000));
    assert_eq!((m.usage.input_tokens, m.usage.output_tokens), (3, 9));
}

#[tokio::test]
async fn retries_after_a_529_overloaded_and_then_succeeds() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::overloaded());
    server.push(MockResponse::overloaded());
    server.push(Reply::new().text("finally"));
    let p = provider(&server, fast_retries(3));
    let out = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        out.result.unwrap().content,
        vec![ContentBlock::text("finally")]
    );
    assert_eq!(server.requests().len(), 3);
    // The failed attempts left nothing in the stream: one message_start only.
    let starts = out
        .events
        .iter()
        .filter(|e| matches!(e, StreamEvent::MessageStart { .. }))
        .count();
    assert_eq!(starts, 1);
}

#[tokio::test]
async fn retries_after_a_429_honouring_retry_after() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::rate_limited(1));
    server.push(Reply::new().text("ok"));
    // A 1 ms backoff: the one-second wait can only come from the header.
    let p = provider(
        &server,
        RetryPolicy {
            max_retries: 2,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_secs(5),
        },
    );
    let out = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await;
    out.result.unwrap();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let waited = reqs[1].received_at - reqs[0].received_at;
    assert!(
        waited >= Duration::from_millis(950),
        "retried after {waited:?}"
    );
}

#[tokio::test]
async fn gives_up_after_the_configured_number_of_retries() {
    let server = MockServer::start().await.unwrap();
    for _ in 0..5 {
        server.push(MockResponse::overloaded());
    }
    let p = provider(&server, fast_retries(2));
    let err = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await
    .result
    .unwrap_err();
    let ProviderError::Api {
        status,
        kind,
        retryable,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (*status, kind.as_deref(), *retryable),
        (Some(529), Some("overloaded_error"), true)
    );
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
}

#[tokio::test]
async fn no_retry_on_400_and_the_api_message_is_kept() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::error(
        400,
        "invalid_request_error",
        "max_tokens: too large",
    ));
    server.push(Reply::new().text("never sent"));
    let p = provider(&server, fast_retries(5));
    let err = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await
    .result
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "anthropic API error (HTTP 400): max_tokens: too large"
    );
    assert!(!err.is_retryable());
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.pending(), 1);
}

#[tokio::test]
async fn cancellation_mid_stream_returns_promptly_and_closes_the_connection() {
    let server = MockServer::start().await.unwrap();
    let gate = Gate::new();
    // message_start, ping, block start, two deltas … then the server stalls.
    server.push(
        MockResponse::from(Reply::new().text("a long answer that stalls")).pause_after(5, &gate),
    );
    let p = provider(&server, fast_retries(3));
    let cancel = CancellationToken::new();
    let mut stream = p.stream(request(vec![Message::user_text("x")]), cancel.clone());
    let mut seen = Vec::new();
    // Read what the server sent before stalling.
    while seen.len() < 4 {
        seen.push(stream.next().await.unwrap().unwrap());
    }
    gate.reached().await;
    let started = Instant::now();
    cancel.cancel();
    let next = tokio::time::timeout(Duration::from_secs(2), stream.next())
        .await
        .expect("the stream ends promptly after cancel");
    assert!(
        matches!(next, Some(Err(ProviderError::Cancelled))),
        "{next:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert!(stream.next().await.is_none(), "nothing after Cancelled");
    drop(stream);
    tokio::time::timeout(Duration::from_secs(2), gate.client_gone())
        .await
        .expect("the connection is closed");
    assert_eq!(
        server.requests().len(),
        1,
        "a cancelled request is not retried"
    );
}

#[tokio::test]
async fn cancellation_during_a_retry_wait_returns_promptly() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::overloaded().header("retry-after", "30"));
    let p = provider(
        &server,
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(60),
        },
    );
    let cancel = CancellationToken::new();
    let task = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            run(&p, request(vec![Message::user_text("x")]), cancel)
                .await
                .result
        })
    };
    server.wait_for_requests(1, Duration::from_secs(5)).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(2), task)
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(result, Err(ProviderError::Cancelled)),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn an_error_event_after_content_ends_the_stream_with_the_api_error() {
    let server = MockServer::start().await.unwrap();
    // message_start, ping, text start, 3 deltas: then `event: error`.
    server.push(
        MockResponse::from(Reply::new().text("partial answer here")).error_after(
            6,
            "overloaded_error",
            "Overloaded",
        ),
    );
    server.push(Reply::new().text("not used: no transparent retry after content"));
    let p = provider(&server, fast_retries(3));
    let out = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await;
    let err = out.result.unwrap_err();
    assert_eq!(err.to_string(), "anthropic API error: Overloaded");
    assert!(err.is_retryable(), "the query loop may offer to retry");
    let text: String = out
        .events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ContentBlockDelta {
                delta: strata_agent::provider::BlockDelta::Text(t),
                ..
            } => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "partial answer here");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_overloaded_error_event_before_any_content_is_retried() {
    let server = MockServer::start().await.unwrap();
    // message_start and ping, then the error: nothing the consumer acts on has streamed.
    server.push(MockResponse::from(Reply::new().text("lost")).error_after(
        2,
        "overloaded_error",
        "Overloaded",
    ));
    server.push(Reply::new().id("msg_ok").text("second try"));
    let p = provider(&server, fast_retries(3));
    let out = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await;
    let m = out.result.unwrap();
    assert_eq!(
        (m.id.as_str(), m.content.clone()),
        ("msg_ok", vec![ContentBlock::text("second try")])
    );
    let starts = out
        .events
        .iter()
        .filter(|e| matches!(e, StreamEvent::MessageStart { .. }))
        .count();
    assert_eq!(
        starts, 1,
        "the abandoned attempt's message_start was never released"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_dropped_connection_is_retried_before_content_and_reported_after() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::from(Reply::new().text("x")).disconnect_after(1));
    server.push(Reply::new().text("recovered"));
    let p = provider(&server, fast_retries(3));
    let out = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        out.result.unwrap().content,
        vec![ContentBlock::text("recovered")]
    );

    server.push(MockResponse::from(Reply::new().text("cut mid-way through")).disconnect_after(5));
    let out = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await;
    let err = out.result.unwrap_err();
    assert!(matches!(err, ProviderError::Transport { .. }), "{err:?}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_body_written_in_tiny_pieces_decodes_the_same() {
    let server = MockServer::start().await.unwrap();
    let reply = Reply::new()
        .thinking("ünïcode thinking ✓", "sig")
        .text("Grüße — ✓ done")
        .tool_use(
            "toolu_x",
            "Write",
            json!({"file_path": "/tmp/ä.txt", "content": "line1\nline2 ✓"}),
        );
    let expected = reply.clone().build();
    server.push(MockResponse::from(reply).write_size(3));
    let p = provider(&server, fast_retries(0));
    let m = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await
    .result
    .unwrap();
    assert_eq!(m, expected);
}

#[tokio::test]
async fn selected_from_the_environment_it_talks_to_anthropic_base_url() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("from env"));
    let url = server.url();
    let env = move |k: &str| match k {
        "ANTHROPIC_API_KEY" => Some("env-key".to_owned()),
        "ANTHROPIC_BASE_URL" => Some(format!("{url}/")),
        _ => None,
    };
    let p: Arc<dyn Provider> = select_provider(None, &env, None).unwrap();
    assert_eq!(p.name(), "anthropic");
    let m = run(
        p.as_ref(),
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await
    .result
    .unwrap();
    assert_eq!(m.content, vec![ContentBlock::text("from env")]);
    let r = &server.requests()[0];
    assert_eq!(
        r.path, "/v1/messages",
        "a trailing slash in the base URL is tolerated"
    );
    assert_eq!(r.header("x-api-key"), Some("env-key"));
}

#[tokio::test]
async fn an_auth_token_is_sent_as_a_bearer_header() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    let url = server.url();
    let env = move |k: &str| match k {
        "ANTHROPIC_AUTH_TOKEN" => Some("tok".to_owned()),
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        _ => None,
    };
    let p = select_provider(None, &env, None).unwrap();
    run(
        p.as_ref(),
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await
    .result
    .unwrap();
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), Some("Bearer tok"));
    assert_eq!(r.header("x-api-key"), None);
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error_naming_the_cause() {
    // Bind and drop a listener: nothing listens on that port any more.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut config = AnthropicConfig::new("k");
    config.base_url = format!("http://127.0.0.1:{port}");
    config.retry = fast_retries(1);
    let p = AnthropicProvider::new(config).unwrap();
    let err = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await
    .result
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ProviderError::Transport { .. }), "{err:?}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[tokio::test]
async fn content_and_an_error_in_one_read_arrive_in_order() {
    // Regression: the error used to overtake the events decoded from the same read.
    let server = MockServer::start().await.unwrap();
    let mut frames = strata_testkit::render::anthropic_frames(&Reply::new().text("abc").build());
    frames.truncate(4); // message_start, ping, text start, first delta
    frames.push(strata_testkit::render::anthropic_error_frame(
        "api_error",
        "Internal",
    ));
    server.push(MockResponse::raw_sse(strata_testkit::render::to_sse(
        &frames,
    )));
    let p = provider(&server, fast_retries(2));
    let out = run(
        &p,
        request(vec![Message::user_text("x")]),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        out.result.unwrap_err().to_string(),
        "anthropic API error: Internal"
    );
    assert!(
        matches!(
            out.events.last(),
            Some(StreamEvent::ContentBlockDelta { delta: strata_agent::provider::BlockDelta::Text(t), .. }) if t == "a"
        ),
        "{:?}",
        out.events
    );
    assert_eq!(out.events.len(), 4);
}
