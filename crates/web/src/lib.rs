//! `strata serve`: the live web view of remote sessions (issue 17 item 4).
//!
//! Sessions that run with `--remote` keep their metadata in the NATS key-value bucket
//! `strata_sessions` and their transcript lines on the stream `STRATA_TRANSCRIPTS`
//! (`strata-remote`). This crate serves what a person needs to watch and steer them from
//! a browser:
//!
//! - `/`: every session of the bucket — title, working directory, model, permission
//!   mode, status, last update — kept current from a watch of the bucket (server-sent
//!   events);
//! - `/sessions/<id>`: the session's conversation (prompts, the assistant's text, tool
//!   calls as one line each) read from the stream and growing as the session works, and
//!   a control for its permission mode. A change is a request written into the
//!   session's metadata document ([`strata_remote::request_mode`], compare-and-set); the
//!   running session applies it through its one mode gate and answers with the mode it
//!   is really in, which the page shows (a `bypassPermissions` the session may not enter
//!   is refused there, and the page says why).
//!
//! It owns the HTTP side only: `hub` keeps one live view of the remote per server,
//! `routes`/`events` answer the pages and the API, `html` writes the pages with
//! everything from a session escaped, `guard` keeps other sites and other hosts out.
//! The page is plain HTML with one small script (`EventSource`, `fetch`, `textContent`),
//! built into the binary: no front-end build step.
//!
//! Above `strata-remote` (through which everything it reads and writes goes) and beside
//! the terminal UI; only the binary uses it.

mod conversation;
mod events;
mod guard;
mod html;
mod hub;
mod routes;
mod row;

use std::sync::Arc;

use strata_remote::RemoteConnection;
use tokio::net::TcpListener;

/// How the server runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeOptions {
    /// Answer to any `Host` name, not only loopback ones: for a server listening beyond
    /// loopback on purpose (`--allow-non-loopback`). Cross-site changes stay refused.
    pub any_host: bool,
}

/// Why the server stopped.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// Accepting connections failed.
    #[error("the web server stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// Serves the web view on `listener` until the returned future is dropped (or accepting
/// fails). The bucket is read once before the first answer, so the first page lists
/// every session.
pub async fn serve(
    connection: RemoteConnection,
    listener: TcpListener,
    options: ServeOptions,
) -> Result<(), WebError> {
    let hub = Arc::new(hub::Hub::start(connection).await);
    let app = routes::App { hub, options };
    axum::serve(listener, routes::router(app))
        .await
        .map_err(WebError::Serve)
}
