//! Issue 25 item 1: `MockServer` is strict by default. A request the real API refuses
//! gets that API's 400 body over the wire, is recorded as refused and does not use the
//! scripted response; the lenient server answers it from the script.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// POSTs `body` to `path` on its own connection and returns the status and body.
async fn post(server: &MockServer, path: &str, body: &Value) -> (u16, String) {
    let body = body.to_string();
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn tool_use_without_tools() -> Value {
    json!({
        "model": "m", "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}
        ]
    })
}

#[tokio::test]
async fn i25_1_the_server_refuses_with_the_messages_api_error_and_keeps_the_script() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Summary."));
    let (status, body) = post(&server, "/v1/messages", &tool_use_without_tools()).await;
    assert_eq!(status, 400);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "Requests which include `tool_use` or `tool_result` blocks must define tools."}})
    );
    assert_eq!(server.pending(), 1, "a refused request used the script");
    let refused = server.refused();
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0]
            .refused
            .as_deref()
            .unwrap()
            .contains("must define tools")
    );

    // The request the real API would answer gets the scripted reply.
    let mut fixed = tool_use_without_tools();
    fixed["tools"] = json!([{"name": "Bash", "input_schema": {"type": "object"}}]);
    let (status, body) = post(&server, "/v1/messages", &fixed).await;
    assert_eq!(status, 200);
    assert!(body.contains("message_stop"), "{body}");
    assert_eq!(server.pending(), 0);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.refused().len(), 1);
}

#[tokio::test]
async fn i25_1_the_server_refuses_with_the_openai_error_shape() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hi."));
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_1", "content": "x"}
    ]});
    let (status, text) = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(status, 400);
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        error,
        json!({"error": {
            "message": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            "type": "invalid_request_error", "param": "messages.[1].role", "code": null}})
    );
    assert_eq!(server.pending(), 1);
}

#[tokio::test]
async fn i25_1_the_lenient_server_answers_anything_from_the_script() {
    let server = MockServer::start_lenient().await.unwrap();
    server.push(Reply::new().text("Summary."));
    let (status, body) = post(&server, "/v1/messages", &tool_use_without_tools()).await;
    assert_eq!(status, 200);
    assert!(body.contains("message_stop"), "{body}");
    assert!(server.refused().is_empty());
}
