//! The WebSearch tool's request: the Anthropic API's server-side web search tool
//! (`web_search_20250305`), run by the session's model in a request of its own.
//!
//! The model searches (the service runs the searches; their cost is the service's) and
//! answers; the answer's text and the `web_search_tool_result` blocks, as the API returns
//! them, are the tool's result. The domain lists are passed through as the API takes
//! them. Another provider has no such tool: the call is refused with a clear reason.

use std::sync::Arc;

use serde_json::Value;
use strata_protocol::message::{ContentBlock, Message};
use tokio_util::sync::CancellationToken;

use super::BootstrapHandle;
use crate::provider::{ModelRequest, Provider, ServerTool, ToolDefinition, WebSearchSpec};
use crate::tools::{WebSearchAnswer, WebSearchQuery};

/// The most searches one call may run.
const MAX_USES: u32 = 8;

const SYSTEM: &str = "You search the web for a coding agent. Run web searches for the \
query you are given, then answer it briefly from what you found, citing the pages.";

/// Runs `query` with `model` through `provider`.
pub(super) async fn search(
    provider: &dyn Provider,
    bootstrap: &BootstrapHandle,
    model: String,
    query: WebSearchQuery,
    cancel: CancellationToken,
) -> Result<WebSearchAnswer, String> {
    if provider.name() != "anthropic" {
        return Err(format!(
            "web search is not available with the {} provider (it is the Anthropic API's \
             server-side tool)",
            provider.name()
        ));
    }
    let spec = WebSearchSpec {
        max_uses: Some(MAX_USES),
        allowed_domains: query.allowed_domains.clone(),
        blocked_domains: query.blocked_domains.clone(),
    };
    let request = ModelRequest {
        model,
        system: SYSTEM.to_owned(),
        messages: vec![Arc::new(Message::user_text(format!(
            "Perform a web search for the query: {}",
            query.query
        )))],
        tools: vec![ToolDefinition::server_tool(ServerTool::WebSearch(spec))],
        max_tokens: 8_192,
        thinking_budget: None,
    };
    let blocks = super::small_model::complete(provider, bootstrap, request, cancel).await?;
    let mut answer = WebSearchAnswer::default();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => answer.text.push_str(&t.text),
            ContentBlock::Unknown(m)
                if m.get("type").and_then(Value::as_str) == Some("web_search_tool_result") =>
            {
                answer.results.push(Value::Object(m));
            }
            _ => {}
        }
    }
    Ok(answer)
}
