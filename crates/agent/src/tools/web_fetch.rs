//! The WebFetch tool: fetches a URL and answers a prompt about it (issue 18, item 1).
//!
//! What happens to a call, in order:
//! - the URL must be `http` or `https`; `http` is upgraded to `https` except for a
//!   loopback host (`localhost`, `127.0.0.0/8`, `::1`: a local server seldom has TLS);
//! - the permission rules match the host (`WebFetch(domain:example.com)`,
//!   `WebFetch(domain:*.example.com)`: [`PermissionSubject::Domain`]);
//! - the page is fetched with caps on time ([`WebFetchLimits::timeout`]) and size
//!   ([`WebFetchLimits::max_bytes`]); redirects within the same host (`www.` aside) are
//!   followed, one to another host is not: the model is told where it leads and may
//!   fetch that URL itself, so the permission rules judge the new host too;
//! - HTML becomes markdown (the `htmd` crate), other text is kept as it is, anything
//!   else is refused;
//! - the prompt is applied to the content by a small, fast model through the session's
//!   provider ([`ToolHooks::ask_small_model`]); its answer is the result.
//!
//! Fetched pages are kept for 15 minutes ([`CACHE_TTL`]), so asking another question
//! about the same page does not fetch it again.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use super::input::{invalid, parse};
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};
use crate::sync::lock;

const NAME: &str = "WebFetch";

/// How long a fetched page is reused.
pub const CACHE_TTL: Duration = Duration::from_secs(15 * 60);

/// The most characters of a page the small model reads.
const MAX_CONTENT_CHARS: usize = 100_000;

/// The most redirects followed within one host.
const MAX_REDIRECTS: usize = 10;

const DESCRIPTION: &str = "Fetches a web page and answers a prompt about its content.\n\
\n\
- Give a full `url` and a `prompt` saying what to find or extract from the page. The page \
is converted to markdown and a small, fast model answers the prompt from it; the answer is \
what you get back, not the raw page.\n\
- http URLs are upgraded to https. The tool is read-only and does not send data: no \
forms, no logins, no private pages.\n\
- When the URL redirects to another host, the result says where it leads; fetch that URL \
with another WebFetch call if you still need it.\n\
- Pages are kept for 15 minutes, so asking another question about the same URL is fast.\n\
- If an MCP tool for fetching is available, prefer it: it may have fewer restrictions.";

/// The caps of a fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebFetchLimits {
    /// The longest a fetch may take, redirects included.
    pub timeout: Duration,
    /// The largest body read, in bytes; a larger page is refused.
    pub max_bytes: usize,
}

impl Default for WebFetchLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            max_bytes: 10 * 1024 * 1024,
        }
    }
}

/// A fetched page, as markdown (or text).
#[derive(Debug, Clone)]
struct Page {
    content: String,
    bytes: usize,
    code: u16,
    code_text: String,
}

/// The WebFetch tool (with its page cache).
#[derive(Debug, Clone, Default)]
pub struct WebFetch {
    limits: WebFetchLimits,
    cache: Arc<Mutex<HashMap<String, (Instant, Page)>>>,
}

impl WebFetch {
    /// A WebFetch with other caps (tests, embedders).
    pub fn with_limits(limits: WebFetchLimits) -> Self {
        Self {
            limits,
            cache: Arc::default(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct FetchInput {
    url: String,
    prompt: String,
}

/// Whether the URL's host is this machine.
fn is_loopback(url: &Url) -> bool {
    let host = host_of(url);
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The URL to fetch: checked, `http` upgraded to `https` except for loopback hosts.
fn target(input: &FetchInput) -> Result<Url, ToolOutput> {
    let mut url = Url::parse(input.url.trim())
        .map_err(|e| invalid(NAME, "url", format!("not a valid URL ({e})")))?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => {
            // `set_scheme` only fails between special and non-special schemes.
            let _ = url.set_scheme("https");
        }
        other => {
            return Err(invalid(
                NAME,
                "url",
                format!("only http and https URLs can be fetched, not {other}:"),
            ));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid(NAME, "url", "the URL names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            NAME,
            "url",
            "a URL with a user name or password is not fetched",
        ));
    }
    Ok(url)
}

fn check(input: &Value) -> Result<(FetchInput, Url), ToolOutput> {
    let parsed: FetchInput = parse(NAME, input)?;
    if parsed.prompt.trim().is_empty() {
        return Err(invalid(NAME, "prompt", "must say what to find on the page"));
    }
    let url = target(&parsed)?;
    Ok((parsed, url))
}

/// The host as rules name it: lower case, without a trailing dot.
fn host_of(url: &Url) -> String {
    url.host_str()
        .unwrap_or("")
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Whether a redirect from `from` to `to` stays on the same site (`www.` aside; the
/// same port, or an upgrade from http to https).
fn same_host(from: &Url, to: &Url) -> bool {
    let bare = |u: &Url| {
        let host = host_of(u);
        host.strip_prefix("www.").map(str::to_owned).unwrap_or(host)
    };
    let upgrade = from.scheme() == "http" && to.scheme() == "https";
    bare(from) == bare(to)
        && (upgrade || from.port_or_known_default() == to.port_or_known_default())
}

/// What a fetch ended with.
enum Fetched {
    Page(Page),
    /// A redirect to another host: where, and the status.
    Redirect {
        to: Url,
        code: u16,
        text: String,
    },
}

impl WebFetch {
    async fn fetch(&self, url: &Url) -> Result<Fetched, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.limits.timeout)
            .user_agent(concat!("strata/", env!("CARGO_PKG_VERSION"), " (WebFetch)"))
            .build()
            .map_err(|e| format!("the HTTP client could not start: {e}"))?;
        let mut current = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let response = client
                .get(current.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "text/markdown, text/html, text/plain;q=0.9, */*;q=0.5",
                )
                .send()
                .await
                .map_err(|e| describe_error(&e, self.limits.timeout))?;
            let status = response.status();
            let text = status.canonical_reason().unwrap_or("").to_owned();
            if status.is_redirection() {
                let Some(location) = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                else {
                    return Err(format!("{status} without a Location to go to"));
                };
                let next = current
                    .join(location)
                    .map_err(|e| format!("{status} to an invalid URL `{location}` ({e})"))?;
                if !same_host(&current, &next) {
                    return Ok(Fetched::Redirect {
                        to: next,
                        code: status.as_u16(),
                        text,
                    });
                }
                current = next;
                continue;
            }
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            let body = read_capped(response, self.limits.max_bytes, self.limits.timeout).await?;
            let bytes = body.len();
            let content = to_markdown(&content_type, &body)?;
            if !status.is_success() {
                return Err(format!("the server answered {status}{}", snippet(&content)));
            }
            return Ok(Fetched::Page(Page {
                content,
                bytes,
                code: status.as_u16(),
                code_text: text,
            }));
        }
        Err(format!("more than {MAX_REDIRECTS} redirects"))
    }
}

/// The body, up to `max` bytes (a larger one is refused, however it is sent).
async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    if response
        .content_length()
        .is_some_and(|n| usize::try_from(n).unwrap_or(usize::MAX) > max)
    {
        return Err(format!("the page is larger than the {} limit", size(max)));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| describe_error(&e, timeout))?
    {
        if body.len() + chunk.len() > max {
            return Err(format!("the page is larger than the {} limit", size(max)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn size(bytes: usize) -> String {
    if bytes >= 1024 * 1024 {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

fn describe_error(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!("no complete answer within {} s", timeout.as_secs_f64())
    } else if e.is_connect() {
        format!("could not connect ({e})")
    } else {
        e.to_string()
    }
}

/// The start of an error page, for the model.
fn snippet(content: &str) -> String {
    let text: String = content.trim().chars().take(300).collect();
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// The body as the model reads it: HTML as markdown, other text as it is.
fn to_markdown(content_type: &str, body: &[u8]) -> Result<String, String> {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    let looks_html = mime.is_empty() && {
        let start = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
        start.contains("<html") || start.contains("<!doctype html")
    };
    if mime == "text/html" || mime == "application/xhtml+xml" || looks_html {
        let html = String::from_utf8_lossy(body);
        return htmd::HtmlToMarkdown::builder()
            .skip_tags(vec!["script", "style", "noscript", "svg", "head"])
            .build()
            .convert(&html)
            .map_err(|e| format!("the HTML could not be read: {e}"));
    }
    let textual = mime.is_empty()
        || mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || [
            "application/json",
            "application/xml",
            "application/javascript",
        ]
        .contains(&mime);
    if !textual {
        return Err(format!(
            "the content is {mime}, not a page of text; WebFetch reads HTML and text only"
        ));
    }
    Ok(String::from_utf8_lossy(body).into_owned())
}

/// What the small model is asked.
fn small_model_prompt(content: &str, prompt: &str) -> String {
    let mut shown: String = content.chars().take(MAX_CONTENT_CHARS).collect();
    if shown.len() < content.len() {
        shown.push_str("\n[…the page is longer; only its start is shown]");
    }
    let content = shown;
    format!(
        "The content of a web page follows, between the lines.\n\n---\n{content}\n---\n\n\
         {prompt}\n\n\
         Answer from this content only, concisely. Quote at most a sentence or two \
         word for word, in quotation marks; summarise the rest in your own words. If the \
         content does not answer the question, say so."
    )
}

const SMALL_MODEL_SYSTEM: &str = "You answer questions about the content of one web page \
for a coding agent. Be accurate and brief.";

impl Tool for WebFetch {
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
                "url": {
                    "type": "string",
                    "format": "uri",
                    "description": "The URL of the page to fetch"
                },
                "prompt": {
                    "type": "string",
                    "description": "What to find or extract from the page"
                }
            },
            "required": ["url", "prompt"],
            "additionalProperties": false
        })
    }

    // It reads a page and changes nothing here: allowed in plan mode (the domain rules
    // still decide whether it may go out).
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        let url = input.get("url")?.as_str()?;
        let url = Url::parse(url.trim()).ok()?;
        Some(PermissionSubject::Domain(host_of(&url)))
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let started = Instant::now();
            let (input, url) = match check(&call.input) {
                Ok(v) => v,
                Err(e) => return e,
            };
            let key = url.to_string();
            let cached = {
                let mut cache = lock(&self.cache);
                cache.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
                cache.get(&key).map(|(_, page)| page.clone())
            };
            let page = match cached {
                Some(page) => page,
                None => {
                    let fetched = tokio::select! {
                        biased;
                        () = ctx.cancel.cancelled() => {
                            return ToolOutput::error("The fetch was interrupted.");
                        }
                        fetched = self.fetch(&url) => fetched,
                    };
                    match fetched {
                        Ok(Fetched::Page(page)) => {
                            lock(&self.cache).insert(key.clone(), (Instant::now(), page.clone()));
                            page
                        }
                        Ok(Fetched::Redirect { to, code, text }) => {
                            let message = format!(
                                "{url} redirects ({code} {text}) to another host: {to}\n\n\
                                 It was not followed. To read it, call WebFetch again with \
                                 url \"{to}\" and the same prompt."
                            );
                            return ToolOutput::ok(message.clone()).with_detail(json!({
                                "bytes": message.len(),
                                "code": code,
                                "codeText": text,
                                "result": message,
                                "durationMs": elapsed_ms(started),
                                "url": key,
                            }));
                        }
                        Err(why) => {
                            return ToolOutput::error(format!("Could not fetch {url}: {why}"));
                        }
                    }
                }
            };
            let asked = ctx
                .hooks
                .ask_small_model(
                    SMALL_MODEL_SYSTEM.to_owned(),
                    small_model_prompt(&page.content, &input.prompt),
                    ctx.cancel.clone(),
                )
                .await;
            let answer = match asked {
                Ok(answer) => answer,
                Err(why) => {
                    return ToolOutput::error(format!(
                        "{url} was fetched, but the prompt could not be applied to it: {why}"
                    ));
                }
            };
            ToolOutput::ok(answer.clone()).with_detail(json!({
                "bytes": page.bytes,
                "code": page.code,
                "codeText": page.code_text,
                "result": answer,
                "durationMs": elapsed_ms(started),
                "url": key,
            }))
        })
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_of(url: &str) -> Result<Url, ToolOutput> {
        target(&FetchInput {
            url: url.into(),
            prompt: "p".into(),
        })
    }

    #[test]
    fn http_is_upgraded_to_https_except_for_loopback_hosts() {
        assert_eq!(
            url_of("http://example.com/a").unwrap().as_str(),
            "https://example.com/a"
        );
        for local in [
            "http://127.0.0.1:8080/x",
            "http://localhost/x",
            "http://[::1]:3000/",
        ] {
            assert_eq!(url_of(local).unwrap().scheme(), "http", "{local}");
        }
        assert!(url_of("ftp://example.com/").is_err());
        assert!(url_of("file:///etc/passwd").is_err());
        assert!(url_of("not a url").is_err());
        assert!(url_of("https://user:pw@example.com/").is_err());
    }

    #[test]
    fn the_permission_subject_is_the_lower_case_host() {
        let subject = WebFetch::default()
            .permission_subject(&json!({"url": "https://Docs.Example.COM/x", "prompt": "p"}));
        assert_eq!(
            subject,
            Some(PermissionSubject::Domain("docs.example.com".into()))
        );
    }

    #[test]
    fn redirects_within_a_host_are_followed_and_www_is_the_same_site() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_host(&u("https://a.com/x"), &u("https://a.com/y")));
        assert!(same_host(&u("https://a.com/x"), &u("https://www.a.com/y")));
        assert!(same_host(&u("http://a.com/x"), &u("https://a.com/x")));
        assert!(!same_host(&u("https://a.com/x"), &u("https://b.com/x")));
        assert!(!same_host(
            &u("http://127.0.0.1:1/x"),
            &u("http://localhost:1/x")
        ));
    }

    #[test]
    fn html_becomes_markdown_and_binary_content_is_refused() {
        let md = to_markdown(
            "text/html; charset=utf-8",
            b"<html><head><title>T</title><script>x()</script></head><body><h1>Title</h1><p>Some <b>bold</b> text.</p></body></html>",
        )
        .unwrap();
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert!(!md.contains("x()"), "{md}");
        assert_eq!(to_markdown("text/plain", b"plain").unwrap(), "plain");
        assert!(to_markdown("image/png", b"\x89PNG").is_err());
    }
}
