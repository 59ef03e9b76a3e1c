#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The OpenAI-compatible provider against the mock chat-completions server: text, tool
//! calls, reasoning, usage, conversion of the conversation, retries and errors.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use strata_agent::provider::{
    AssistantMessage, MessageAccumulator, ModelRequest, OpenAiConfig, OpenAiProvider, Provider,
    ProviderError, RetryPolicy, ToolDefinition, select_provider,
};
use strata_protocol::message::{ContentBlock, Message, Role, StopReason, ThinkingBlock};
use strata_testkit::{MockResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

fn provider(server: &MockServer, key: Option<&str>) -> OpenAiProvider {
    let mut config = OpenAiConfig::new(server.openai_url());
    config.api_key = key.map(str::to_owned);
    config.retry = RetryPolicy {
        max_retries: 3,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
    };
    OpenAiProvider::new(config).unwrap()
}

fn request(messages: Vec<Message>) -> ModelRequest {
    let messages = messages.into_iter().map(std::sync::Arc::new).collect();
    ModelRequest {
        model: "local-model".into(),
        system: "Be brief.".into(),
        messages,
        tools: vec![ToolDefinition::function(
            "Bash",
            "Run a shell command.",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        )],
        max_tokens: 512,
        thinking_budget: None,
    }
}

async fn run(p: &dyn Provider, request: ModelRequest) -> Result<AssistantMessage, ProviderError> {
    let mut stream = p.stream(request, CancellationToken::new());
    let mut acc = MessageAccumulator::new();
    while let Some(event) = stream.next().await {
        acc.push(&event?)?;
    }
    Ok(acc.finish()?)
}

#[tokio::test]
async fn streams_text_and_sends_a_chat_completions_request() {
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .id("chatcmpl-1")
            .model("gpt-test")
            .text("Hello from a local model.")
            .usage(30, 8),
    );
    let p = provider(&server, Some("sk-test"));
    let m = run(&p, request(vec![Message::user_text("hi")]))
        .await
        .unwrap();
    assert_eq!(
        (m.id.as_str(), m.model.as_str()),
        ("chatcmpl-1", "gpt-test")
    );
    assert_eq!(
        m.content,
        vec![ContentBlock::text("Hello from a local model.")]
    );
    assert_eq!(m.stop_reason, Some(StopReason::EndTurn));
    assert_eq!((m.usage.input_tokens, m.usage.output_tokens), (30, 8));

    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    let body = r.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "Bash");
}

#[tokio::test]
async fn parallel_tool_calls_become_tool_use_blocks_and_results_go_back_as_tool_messages() {
    let server = MockServer::start().await.unwrap();
    server.push(
        Reply::new()
            .text("Checking both.")
            .tool_use("call_1", "Bash", json!({"command": "echo hi"}))
            .tool_use("call_2", "Bash", json!({"command": "pwd"}))
            .usage(100, 20)
            .cache(0, 60),
    );
    server.push(Reply::new().text("Done."));
    let p = provider(&server, None);
    let m = run(&p, request(vec![Message::user_text("go")]))
        .await
        .unwrap();
    assert_eq!(
        m.content,
        vec![
            ContentBlock::text("Checking both."),
            ContentBlock::tool_use("call_1", "Bash", json!({"command": "echo hi"})),
            ContentBlock::tool_use("call_2", "Bash", json!({"command": "pwd"})),
        ]
    );
    assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
    // prompt_tokens 160 with 60 cached → 100 uncached input, 60 cache reads.
    assert_eq!(m.usage.input_tokens, 100);
    assert_eq!(m.usage.cache_read_input_tokens, Some(60));
    assert_eq!(m.usage.output_tokens, 20);
    assert_eq!(
        server.requests()[0].header("authorization"),
        None,
        "no key, no header"
    );

    let conversation = vec![
        Message::user_text("go"),
        Message::blocks(Role::Assistant, m.content.clone()),
        Message::blocks(
            Role::User,
            vec![
                ContentBlock::tool_result("call_1", "hi", false),
                ContentBlock::tool_result("call_2", "/work", false),
            ],
        ),
    ];
    run(&p, request(conversation)).await.unwrap();
    let messages = server.requests()[1].json()["messages"].clone();
    assert_eq!(
        messages,
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "Checking both.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"echo hi\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"pwd\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "hi"},
            {"role": "tool", "tool_call_id": "call_2", "content": "/work"},
        ])
    );
}

#[tokio::test]
async fn reasoning_content_becomes_a_thinking_block() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().thinking("Let me think.", "").text("42"));
    let p = provider(&server, None);
    let m = run(&p, request(vec![Message::user_text("?")]))
        .await
        .unwrap();
    assert_eq!(
        m.content,
        vec![
            ContentBlock::Thinking(ThinkingBlock {
                thinking: "Let me think.".into(),
                ..ThinkingBlock::default()
            }),
            ContentBlock::text("42"),
        ]
    );
}

#[tokio::test]
async fn length_finish_maps_to_max_tokens() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("cut").stop(StopReason::MaxTokens));
    let p = provider(&server, None);
    let m = run(&p, request(vec![Message::user_text("?")]))
        .await
        .unwrap();
    assert_eq!(m.stop_reason, Some(StopReason::MaxTokens));
}

#[tokio::test]
async fn retries_a_503_but_not_a_400_and_keeps_the_servers_message() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::error(503, "server_error", "busy"));
    server.push(Reply::new().text("ok"));
    let p = provider(&server, None);
    assert_eq!(
        run(&p, request(vec![Message::user_text("x")]))
            .await
            .unwrap()
            .content,
        vec![ContentBlock::text("ok")]
    );
    assert_eq!(server.requests().len(), 2);

    server.push(MockResponse::error(
        400,
        "invalid_request_error",
        "model 'nope' not found",
    ));
    let err = run(&p, request(vec![Message::user_text("x")]))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "openai API error (HTTP 400): model 'nope' not found"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_an_api_error() {
    let server = MockServer::start().await.unwrap();
    server.push(
        MockResponse::from(Reply::new().text("some text then failure")).error_after(
            3,
            "server_error",
            "the model crashed",
        ),
    );
    let p = provider(&server, None);
    let err = run(&p, request(vec![Message::user_text("x")]))
        .await
        .unwrap_err();
    let ProviderError::Api { message, kind, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (message.as_str(), kind.as_deref()),
        ("the model crashed", Some("server_error"))
    );
}

#[tokio::test]
async fn a_server_that_closes_after_the_finish_reason_without_done_is_accepted() {
    let server = MockServer::start().await.unwrap();
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    // A tool call without an id, split across chunks; finish_reason `stop` (as some
    // local servers report tool calls); no usage, no [DONE].
    let body = [
        chunk(json!({"role": "assistant"}), json!(null)),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"name": "Bash", "arguments": "{\"comm"}}]}), json!(null)),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "and\":\"ls\"}"}}]}), json!(null)),
        chunk(json!({}), json!("stop")),
    ]
    .concat();
    server.push(MockResponse::raw_sse(body));
    let p = provider(&server, None);
    let m = run(&p, request(vec![Message::user_text("x")]))
        .await
        .unwrap();
    assert_eq!(
        m.content,
        vec![ContentBlock::tool_use(
            "call_c1_0",
            "Bash",
            json!({"command": "ls"})
        )]
    );
    assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn a_local_server_needs_only_a_base_url() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("local"));
    let url = server.openai_url();
    let env = move |k: &str| (k == "OPENAI_BASE_URL").then(|| url.clone());
    let p = select_provider(None, &env, None).unwrap();
    assert_eq!(p.name(), "openai");
    assert_eq!(
        run(p.as_ref(), request(vec![Message::user_text("x")]))
            .await
            .unwrap()
            .content,
        vec![ContentBlock::text("local")]
    );
}
