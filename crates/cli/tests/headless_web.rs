//! WebFetch through the real binary in headless mode (issue 18, item 1), against a local
//! page server and the mock model server, both on 127.0.0.1: a domain allow rule lets it
//! fetch, the small model (Haiku, through the session's provider) applies the prompt to
//! the page's markdown, and without a rule nothing is fetched. WebSearch (item 2) runs the
//! Anthropic API's server-side search tool, and is refused with another provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::{Value, json};
use strata_protocol::message::ContentBlock;
use strata_testkit::{MockServer, Page, PageServer, Reply};

use headless_support::Env;

/// The tool result the model was sent for `id`.
fn tool_result(server: &MockServer, id: &str) -> Value {
    for request in server.requests() {
        for message in request.json()["messages"].as_array().unwrap() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" && block["tool_use_id"] == id {
                    return block.clone();
                }
            }
        }
    }
    panic!("no tool result for {id}");
}

fn text_of(result: &Value) -> String {
    match &result["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn web_fetch_allowed_by_a_domain_rule_answers_through_the_small_model() {
    let env = Env::new();
    let pages = PageServer::start().await.unwrap();
    pages.page(
        "/release",
        Page::html(
            "<html><body><h2>Release 2.0</h2><p>Adds <code>--fast</code>.</p></body></html>",
        ),
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_fetch",
        "WebFetch",
        json!({"url": pages.url("/release"), "prompt": "What does 2.0 add?"}),
    ));
    server.push(Reply::new().text("Version 2.0 adds the --fast flag."));
    server.push(Reply::new().text("It adds --fast."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "what is new?",
                "--output-format",
                "json",
                "--model",
                "claude-sonnet-4-5",
                "--allowedTools",
                "WebFetch(domain:127.0.0.1)",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.result()["result"], "It adds --fast.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let small = requests[1].json();
    assert!(
        small["model"].as_str().unwrap().contains("haiku"),
        "the small fast model: {}",
        small["model"]
    );
    let asked = small["messages"].to_string();
    assert!(
        asked.contains("## Release 2.0"),
        "markdown of the page: {asked}"
    );
    assert!(asked.contains("What does 2.0 add?"), "{asked}");
    assert!(small["tools"].as_array().is_none_or(Vec::is_empty));
    let told = tool_result(&server, "toolu_fetch");
    assert_ne!(told["is_error"], true, "{told}");
    assert_eq!(text_of(&told), "Version 2.0 adds the --fast flag.");
    assert_eq!(pages.hits(), ["/release"]);
}

#[tokio::test]
async fn web_fetch_without_a_rule_is_denied_headless_and_fetches_nothing() {
    let env = Env::new();
    let pages = PageServer::start().await.unwrap();
    pages.page("/p", Page::html("<p>x</p>"));
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_fetch",
        "WebFetch",
        json!({"url": pages.url("/p"), "prompt": "?"}),
    ));
    server.push(Reply::new().text("Could not fetch."));
    // A rule for another site does not cover this one.
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "fetch",
                "--output-format",
                "json",
                "--allowedTools",
                "WebFetch(domain:example.com)",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let told = tool_result(&server, "toolu_fetch");
    assert_eq!(told["is_error"], true, "{told}");
    assert!(text_of(&told).contains("WebFetch on 127.0.0.1"), "{told}");
    assert!(pages.hits().is_empty(), "nothing was fetched");
    assert_eq!(
        run.result()["permission_denials"][0]["tool_name"],
        "WebFetch"
    );
}

#[tokio::test]
async fn a_web_fetch_deny_rule_wins_over_an_allow_rule() {
    let env = Env::new();
    let pages = PageServer::start().await.unwrap();
    pages.page("/p", Page::html("<p>x</p>"));
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_fetch",
        "WebFetch",
        json!({"url": pages.url("/p"), "prompt": "?"}),
    ));
    server.push(Reply::new().text("Denied."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "fetch",
                "--output-format",
                "json",
                "--allowedTools",
                "WebFetch",
                "--disallowedTools",
                "WebFetch(domain:127.0.0.1)",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let told = tool_result(&server, "toolu_fetch");
    assert_eq!(told["is_error"], true, "{told}");
    assert!(text_of(&told).contains("domain:127.0.0.1"), "{told}");
    assert!(pages.hits().is_empty());
}

/// A search answer as the Anthropic API streams it: the server tool's call, its result
/// block, and the model's text.
fn search_reply() -> Reply {
    let block = |v: Value| ContentBlock::Unknown(v.as_object().unwrap().clone());
    Reply::new()
        .block(block(json!({
            "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
            "input": {"query": "tokio 2 release"}
        })))
        .block(block(json!({
            "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
            "content": [{"type": "web_search_result", "title": "Tokio 2.0 released",
                "url": "https://tokio.rs/blog/2", "encrypted_content": "xyz", "page_age": "1 day"}]
        })))
        .text("Tokio 2.0 was released yesterday.")
}

#[tokio::test]
async fn web_search_runs_the_apis_server_tool_and_records_its_results() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_search",
        "WebSearch",
        json!({"query": "tokio 2 release", "allowed_domains": ["tokio.rs"]}),
    ));
    server.push(search_reply());
    server.push(Reply::new().text("Tokio 2 is out."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "news?",
                "--output-format",
                "json",
                "--allowedTools",
                "WebSearch",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let search = server.requests()[1].json();
    let tool = &search["tools"][0];
    assert_eq!(tool["type"], "web_search_20250305", "{search}");
    assert_eq!(tool["name"], "web_search");
    assert_eq!(tool["allowed_domains"], json!(["tokio.rs"]));
    assert!(search["messages"].to_string().contains("tokio 2 release"));
    let told = tool_result(&server, "toolu_search");
    assert_ne!(told["is_error"], true, "{told}");
    let text = text_of(&told);
    assert!(
        text.contains("[Tokio 2.0 released](https://tokio.rs/blog/2)"),
        "{text}"
    );
    assert!(text.contains("Tokio 2.0 was released yesterday."), "{text}");
    let (_, lines) = env.transcripts().pop().unwrap();
    let recorded = lines
        .iter()
        .find(|l| l["toolUseResult"]["query"] == "tokio 2 release")
        .expect("the WebSearch toolUseResult");
    assert_eq!(
        recorded["toolUseResult"]["results"][0]["content"][0]["url"],
        "https://tokio.rs/blog/2"
    );
}

#[tokio::test]
async fn web_search_with_another_provider_is_a_clear_error() {
    let env = Env::new();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_search", "WebSearch", json!({"query": "rust news"})));
    server.push(Reply::new().text("No search here."));
    let mut cmd = env.command(
        None,
        &[
            "-p",
            "news?",
            "--model",
            "local-model",
            "--allowedTools",
            "WebSearch",
        ],
    );
    cmd.env("OPENAI_BASE_URL", server.openai_url());
    let run = headless_support::run_command(cmd, "").await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(server.requests().len(), 2, "no search request was made");
    let told = server.requests()[1].body_text();
    assert!(
        told.contains("not available with the openai provider"),
        "{told}"
    );
}
