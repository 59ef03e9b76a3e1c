//! Test helpers for strata: a scripted mock model server, the location of the reference
//! agent's corpus, and generated transcripts.
//!
//! strata's tests never reach a real model service. [`MockServer`] is a real HTTP/1.1
//! server on `127.0.0.1` (a random port) that speaks the two streaming protocols strata's
//! providers use, so tests exercise the whole network path (headers, SSE framing,
//! retries, cancellation) rather than a fake inside the process:
//!
//! - the Anthropic Messages API (`POST …/v1/messages`, `stream: true`);
//! - OpenAI chat completions (`POST …/chat/completions`, `stream: true`).
//!
//! Each test scripts the responses, in order, and inspects the requests afterwards:
//!
//! ```no_run
//! # async fn t() -> std::io::Result<()> {
//! use serde_json::json;
//! use strata_testkit::{MockResponse, MockServer, Reply};
//!
//! let server = MockServer::start().await?;
//! server.push(MockResponse::overloaded()); // 529 first: the client must retry
//! server.push(Reply::new().text("Running it.").tool_use("toolu_1", "Bash", json!({"command": "echo hi"})));
//! server.push(Reply::new().text("It printed hi."));
//! // ANTHROPIC_BASE_URL = server.url(), or OPENAI_BASE_URL = server.openai_url()
//! // … run strata …
//! let requests = server.requests();
//! assert_eq!(requests[2].json()["messages"][2]["content"][0]["type"], "tool_result");
//! # Ok(()) }
//! ```
//!
//! A scripted [`MockResponse`] is written in the dialect of the request it answers (the
//! path decides), so one script serves both providers. See [`MockResponse`] for errors,
//! mid-stream errors, dropped connections and pausing a stream until the test releases it
//! (interrupt tests), and [`render`] for the exact events sent.
//!
//! The server is strict by default: a request the real API would refuse (a `tool_use`
//! without `tools`, a `tool_result` that answers nothing, an empty text block, …; see
//! [`strict`]) is answered with that API's 400 error and leaves the script as it was.
//! [`MockServer::start_lenient`] answers anything; a test using it says why.
//!
//! [`PageServer`] serves fixed web pages on `127.0.0.1` for the tools that fetch URLs.
//!
//! [`nats`] starts real `nats-server -js` processes (one node or a three-node cluster) on
//! loopback ports for the remote-session tests, and kills and restarts them.
//!
//! The real-corpus tests find the reference agent's transcripts through [`corpus`] (an
//! environment variable; skipped with one line on a fresh clone), and [`transcripts`]
//! writes transcripts in the reference format from the product's own entry types, so the
//! resume rules are tested without the corpus too.
//!
//! This crate is a dev-dependency only and sits at the bottom layer: it uses
//! `strata-protocol`'s message types and no other crate of ours.

pub mod corpus;
pub mod nats;
mod pages;
pub mod render;
mod reply;
mod script;
mod server;
pub mod strict;
pub mod transcripts;

pub use nats::NatsServer;
pub use pages::{Page, PageServer};
pub use reply::Reply;
pub use script::{Gate, MockResponse};
pub use server::{MockServer, RecordedRequest};
