//! The WebSearch tool: searches the web (issue 18, item 2).
//!
//! The search is the Anthropic API's server-side web search tool, run in a request of
//! its own through the session's provider ([`ToolHooks::web_search`](super::ToolHooks::web_search));
//! with another provider the call is refused with a clear reason. `allowed_domains` and
//! `blocked_domains` are passed to the API as they are. The result lists the pages found
//! (title and URL, as the API returned them) and the model's answer with its citations;
//! the transcript's `toolUseResult` has the reference agent's keys (`query`, `results`,
//! `durationSeconds`), the search results kept as the API returned them.

use std::time::Instant;

use serde::Deserialize;
use serde_json::{Value, json};

use super::input::{invalid, parse};
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The WebSearch tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WebSearch;

const NAME: &str = "WebSearch";

const DESCRIPTION: &str = "Searches the web and returns the results: the pages found and \
an answer drawn from them, with sources.\n\
\n\
- Use it for information past your training data or that changes: current versions of \
libraries, recent releases, documentation of new APIs, error messages you do not \
recognise.\n\
- `allowed_domains` limits the search to those sites; `blocked_domains` leaves sites out \
(give one or the other).\n\
- After answering from the results, list the sources you used as markdown links.\n\
- Use the current year in queries about recent things.";

/// What a search is asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebSearchQuery {
    /// The query.
    pub query: String,
    /// Only these sites.
    pub allowed_domains: Vec<String>,
    /// Never these sites.
    pub blocked_domains: Vec<String>,
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WebSearchAnswer {
    /// The answer's text.
    pub text: String,
    /// The `web_search_tool_result` blocks, as the API returned them.
    pub results: Vec<Value>,
}

#[derive(Debug, Deserialize)]
struct SearchInput {
    query: String,
    #[serde(default)]
    allowed_domains: Vec<String>,
    #[serde(default)]
    blocked_domains: Vec<String>,
}

fn check(input: &Value) -> Result<WebSearchQuery, ToolOutput> {
    let parsed: SearchInput = parse(NAME, input)?;
    if parsed.query.trim().chars().count() < 2 {
        return Err(invalid(NAME, "query", "must be at least 2 characters"));
    }
    if !parsed.allowed_domains.is_empty() && !parsed.blocked_domains.is_empty() {
        return Err(invalid(
            NAME,
            "blocked_domains",
            "give allowed_domains or blocked_domains, not both",
        ));
    }
    Ok(WebSearchQuery {
        query: parsed.query.trim().to_owned(),
        allowed_domains: parsed.allowed_domains,
        blocked_domains: parsed.blocked_domains,
    })
}

/// The pages of the results: (title, url), in order.
fn pages(results: &[Value]) -> Vec<(String, String)> {
    results
        .iter()
        .filter_map(|r| r["content"].as_array())
        .flatten()
        .filter_map(|page| {
            let url = page["url"].as_str()?;
            Some((
                page["title"].as_str().unwrap_or(url).to_owned(),
                url.to_owned(),
            ))
        })
        .collect()
}

impl Tool for WebSearch {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 2, "description": "The search query"},
                "allowed_domains": {
                    "type": "array", "items": {"type": "string"},
                    "description": "Only include results from these domains"
                },
                "blocked_domains": {
                    "type": "array", "items": {"type": "string"},
                    "description": "Never include results from these domains"
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    // It reads the web and changes nothing here (allowed in plan mode); it still asks
    // unless a rule allows it, as it sends the query out.
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        // `WebSearch(query text)` rules match the query like a command line.
        Some(PermissionSubject::Command(
            input.get("query")?.as_str()?.trim().to_owned(),
        ))
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let started = Instant::now();
            let query = match check(&call.input) {
                Ok(q) => q,
                Err(e) => return e,
            };
            let text_query = query.query.clone();
            let answer = match ctx.hooks.web_search(query, ctx.cancel.clone()).await {
                Ok(answer) => answer,
                Err(why) => return ToolOutput::error(format!("Web search failed: {why}")),
            };
            let found = pages(&answer.results);
            let mut content = format!("Web search results for query: \"{text_query}\"\n\n");
            if found.is_empty() {
                content.push_str("No pages were found.\n\n");
            } else {
                content.push_str("Pages:\n");
                for (title, url) in &found {
                    content.push_str(&format!("- [{title}]({url})\n"));
                }
                content.push('\n');
            }
            content.push_str(answer.text.trim());
            content.push_str(
                "\n\nCite the pages you use from these results as markdown links in your answer.",
            );
            let mut results: Vec<Value> = answer
                .results
                .iter()
                .map(|r| {
                    json!({
                        "tool_use_id": r["tool_use_id"],
                        "content": r["content"],
                    })
                })
                .collect();
            if !answer.text.trim().is_empty() {
                results.push(Value::String(answer.text.trim().to_owned()));
            }
            ToolOutput::ok(content).with_detail(json!({
                "query": text_query,
                "results": results,
                "durationSeconds": started.elapsed().as_secs_f64(),
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_search_refuses_a_short_query_and_both_domain_lists() {
        let err = WebSearch.validate(&json!({"query": "x"})).unwrap_err();
        assert!(err.content.contains("`query`"), "{}", err.content);
        let err = WebSearch
            .validate(&json!({"query": "rust", "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]}))
            .unwrap_err();
        assert!(err.content.contains("not both"), "{}", err.content);
        assert!(WebSearch.validate(&json!({"query": "rust news"})).is_ok());
    }

    #[test]
    fn the_pages_of_search_results_are_their_titles_and_urls() {
        let results = vec![
            json!({"type": "web_search_tool_result", "tool_use_id": "s", "content": [
                {"type": "web_search_result", "title": "A", "url": "https://a.example/"},
                {"type": "web_search_result", "url": "https://b.example/"}
            ]}),
            json!({"type": "web_search_tool_result", "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"}}),
        ];
        assert_eq!(
            pages(&results),
            [
                ("A".to_owned(), "https://a.example/".to_owned()),
                (
                    "https://b.example/".to_owned(),
                    "https://b.example/".to_owned()
                )
            ]
        );
    }

    #[test]
    fn a_web_search_call_names_its_permission_subject() {
        assert!(
            WebSearch
                .permission_subject(&json!({"query": "q"}))
                .is_some()
        );
    }
}
