//! `strata serve [--remote <nats-url>] [--listen 127.0.0.1:PORT] [--allow-non-loopback]`:
//! the live web view of the sessions replicated on a NATS server (issue 17 item 4).
//!
//! Thin: what the server does is `strata-web`'s. This module picks the address, refuses
//! a non-loopback one unless asked for explicitly (the page has no login and changes
//! permission modes, so anyone who reaches it steers the sessions), connects with the
//! same options a session uses (`crate::remote::options`: the settings' `remote` block,
//! its credentials file and TLS, `--remote` overriding its URL), prints the page's
//! address as its first line on stdout, and runs until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use strata_web::ServeOptions;

use crate::commands::output;
use crate::exit::Failure;
use crate::headless::warn;

/// The default address: loopback, a port of strata's own.
const DEFAULT_LISTEN: &str = "127.0.0.1:8377";

/// How long the server waits for the NATS server at start.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// Arguments of `strata serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The NATS JetStream server the sessions replicate on (`nats://host:port`), as
    /// given to `strata --remote`; default: the settings' `remote.url`. The settings'
    /// credentials file and TLS are used either way.
    #[arg(long, value_name = "NATS_URL")]
    remote: Option<String>,
    /// Where the web view listens (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDRESS", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Listen on an address that is not loopback. The page has no login and can change
    /// every session's permission mode: only for a network you trust.
    #[arg(long)]
    allow_non_loopback: bool,
}

/// Runs `strata serve`.
pub(crate) fn run(args: ServeArgs) -> anyhow::Result<()> {
    let loopback = args.listen.ip().is_loopback();
    if !loopback && !args.allow_non_loopback {
        return Err(Failure::usage(format!(
            "--listen {} is not a loopback address: the page has no login and can change the \
             permission mode of every session, so anyone who reaches it steers them. Listen on \
             127.0.0.1, or pass --allow-non-loopback on a network you trust",
            args.listen
        ))
        .into());
    }
    if !loopback {
        warn(format_args!(
            "listening on {}, which is not a loopback address: anyone who can reach it can \
             read every session and change its permission mode (there is no login)",
            args.listen
        ));
    }
    let config_dir =
        strata_config::paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?;
    let remote = crate::remote::options(&config_dir, &cwd, None, args.remote.as_deref())?
        .ok_or_else(|| {
            Failure::usage(
                "strata serve needs the NATS server the sessions replicate on: pass \
                 --remote <nats-url>, or set `remote.url` in the settings",
            )
        })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(serve(args, remote, !loopback));
    // The event streams never end by themselves; their tasks are dropped, not awaited.
    runtime.shutdown_background();
    result
}

async fn serve(
    args: ServeArgs,
    remote: strata_remote::RemoteOptions,
    any_host: bool,
) -> anyhow::Result<()> {
    // The page is about the server: without it there is nothing to show, so it is
    // waited for (ten seconds) and its absence is the command's error.
    let connection = strata_remote::RemoteConnection::connect(&remote, CONNECT_LIMIT)
        .await
        .map_err(|e| Failure::failed(e.to_string()))?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| Failure::failed(format!("cannot listen on {}: {e}", args.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::failed(format!("cannot listen on {}: {e}", args.listen)))?;
    output::println(&format!(
        "strata serve: http://{address}/ (the sessions on {}; Ctrl-C stops)",
        remote.describe()
    ))?;
    let options = ServeOptions { any_host };
    tokio::select! {
        served = strata_web::serve(connection, listener, options) => {
            served.map_err(|e| Failure::failed(e.to_string()))?;
        }
        () = stop_signal() => {}
    }
    Ok(())
}

/// SIGINT or SIGTERM (a server has nothing to finish: it stops at once).
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        warn(format_args!(
            "cannot watch for SIGINT and SIGTERM; stop the server with SIGKILL"
        ));
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}
