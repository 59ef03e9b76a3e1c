//! WebFetch against a local web server on 127.0.0.1 only (issue 18, item 1): the page is
//! turned into markdown and the prompt applied by the small model (here a recording
//! stand-in for the session's), same-host redirects are followed and cross-host ones
//! reported, size and time caps hold, pages are cached, and bad input is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use strata_agent::tools::{
    SmallModelFuture, Tool, ToolCall, ToolContext, ToolHooks, ToolOutput, WebFetch, WebFetchLimits,
};
use strata_testkit::{Page, PageServer};
use tokio_util::sync::CancellationToken;

/// Answers every small-model request with a fixed text and keeps the prompts.
#[derive(Default)]
struct SmallModel {
    prompts: Mutex<Vec<String>>,
}

impl ToolHooks for SmallModel {
    fn before_edit(&self, _path: &Path) -> Result<(), String> {
        Ok(())
    }

    fn store_large_output(&self, _id: &str, _content: &str) -> Result<PathBuf, String> {
        Err("none".into())
    }

    fn set_todos(&self, _todos: Value) {}

    fn ask_small_model(
        &self,
        _system: String,
        prompt: String,
        _cancel: CancellationToken,
    ) -> SmallModelFuture<'_> {
        self.prompts.lock().unwrap().push(prompt);
        Box::pin(async { Ok("The page says hello.".to_owned()) })
    }
}

struct Fixture {
    pages: PageServer,
    hooks: Arc<SmallModel>,
    ctx: ToolContext,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(SmallModel::default());
    let ctx = ToolContext::new(dir.path(), hooks.clone());
    Fixture {
        pages: PageServer::start().await.unwrap(),
        hooks,
        ctx,
        _dir: dir,
    }
}

async fn fetch(tool: &WebFetch, ctx: &ToolContext, url: &str) -> ToolOutput {
    tool.call(
        ToolCall {
            id: "t".into(),
            input: json!({"url": url, "prompt": "What does it say?"}),
        },
        ctx,
    )
    .await
}

#[tokio::test]
async fn a_page_becomes_markdown_and_the_small_models_answer_is_the_result() {
    let f = fixture().await;
    f.pages.page(
        "/doc",
        Page::html("<html><body><h1>Greeting</h1><p>Hello <em>world</em>.</p><script>evil()</script></body></html>"),
    );
    let out = fetch(&WebFetch::default(), &f.ctx, &f.pages.url("/doc")).await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(out.content, "The page says hello.");
    let prompts = f.hooks.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 1);
    assert!(prompts[0].contains("# Greeting"), "{}", prompts[0]);
    assert!(prompts[0].contains("What does it say?"));
    assert!(!prompts[0].contains("evil()"), "scripts are dropped");
    let detail = out.detail.unwrap();
    assert_eq!(detail["code"], 200);
    assert_eq!(detail["url"], f.pages.url("/doc"));
    assert_eq!(detail["result"], "The page says hello.");
}

#[tokio::test]
async fn a_page_is_cached_so_a_second_question_does_not_fetch_it_again() {
    let f = fixture().await;
    f.pages.page("/c", Page::html("<p>cached</p>"));
    let tool = WebFetch::default();
    fetch(&tool, &f.ctx, &f.pages.url("/c")).await;
    let again = fetch(&tool, &f.ctx, &f.pages.url("/c")).await;
    assert!(!again.is_error, "{}", again.content);
    assert_eq!(f.pages.hits(), ["/c"], "fetched once");
    assert_eq!(f.hooks.prompts.lock().unwrap().len(), 2, "asked twice");
}

#[tokio::test]
async fn a_same_host_redirect_is_followed_and_a_cross_host_one_is_reported_not_followed() {
    let f = fixture().await;
    f.pages.page("/old", Page::redirect(301, "/new"));
    f.pages.page("/new", Page::html("<p>moved here</p>"));
    let elsewhere = format!("http://localhost:{}/new", f.pages.port());
    f.pages.page("/away", Page::redirect(302, &elsewhere));
    let tool = WebFetch::default();

    let followed = fetch(&tool, &f.ctx, &f.pages.url("/old")).await;
    assert!(!followed.is_error, "{}", followed.content);
    assert_eq!(f.pages.hits(), ["/old", "/new"]);

    let reported = fetch(&tool, &f.ctx, &f.pages.url("/away")).await;
    assert!(!reported.is_error, "{}", reported.content);
    assert!(
        reported.content.contains(&elsewhere),
        "{}",
        reported.content
    );
    assert!(
        reported.content.contains("not followed"),
        "{}",
        reported.content
    );
    assert_eq!(reported.detail.unwrap()["code"], 302);
    assert_eq!(
        f.pages.hits(),
        ["/old", "/new", "/away"],
        "the other host was not fetched"
    );
}

#[tokio::test]
async fn size_and_time_caps_end_a_fetch_with_a_clear_error() {
    let f = fixture().await;
    f.pages
        .page("/big", Page::ok("text/plain", vec![b'x'; 4096]));
    f.pages.page(
        "/slow",
        Page::html("<p>late</p>").delayed(Duration::from_secs(5)),
    );
    let tool = WebFetch::with_limits(WebFetchLimits {
        timeout: Duration::from_millis(300),
        max_bytes: 1024,
    });
    let big = fetch(&tool, &f.ctx, &f.pages.url("/big")).await;
    assert!(big.is_error);
    assert!(big.content.contains("larger than"), "{}", big.content);
    let slow = fetch(&tool, &f.ctx, &f.pages.url("/slow")).await;
    assert!(slow.is_error);
    assert!(slow.content.contains("within"), "{}", slow.content);
    assert!(f.hooks.prompts.lock().unwrap().is_empty());
}

#[tokio::test]
async fn errors_binary_content_and_bad_input_are_tool_errors() {
    let f = fixture().await;
    f.pages.page("/missing", Page::status(404, "gone"));
    f.pages
        .page("/img", Page::ok("image/png", b"\x89PNG".to_vec()));
    let tool = WebFetch::default();
    let missing = fetch(&tool, &f.ctx, &f.pages.url("/missing")).await;
    assert!(missing.is_error);
    assert!(missing.content.contains("404"), "{}", missing.content);
    let img = fetch(&tool, &f.ctx, &f.pages.url("/img")).await;
    assert!(img.is_error);
    assert!(img.content.contains("image/png"), "{}", img.content);
    for bad in [
        json!({"url": "ftp://example.com/x", "prompt": "p"}),
        json!({"url": "no url", "prompt": "p"}),
        json!({"url": "https://example.com", "prompt": "  "}),
        json!({"prompt": "p"}),
    ] {
        let err = tool.validate(&bad).unwrap_err();
        assert!(
            err.content.starts_with("Invalid input for WebFetch"),
            "{}",
            err.content
        );
    }
}
