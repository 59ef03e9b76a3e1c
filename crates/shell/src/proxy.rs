//! The allowlist proxy: how a sandboxed command reaches the hosts the settings allow.
//!
//! Strata runs it outside the sandbox, listening on a Unix socket (a filesystem object, so
//! reachable from the command's own network namespace through the forwarder of
//! `child` (the module run in the forked child), which listens on `127.0.0.1` inside and is what `HTTP(S)_PROXY` name).
//! It speaks HTTP/1.1 proxy requests: `CONNECT host:port` (HTTPS and anything else
//! tunnelled; no TLS interception) and absolute-form `GET http://host/…` (plain HTTP,
//! one request per connection). Every target host goes through a [`HostDecider`]: allowed,
//! or refused with `403`. [`AllowlistDecider`] allows the listed domains and hands the
//! others to a callback (the UI asks the user; headless runs refuse).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

/// A boxed future, for the object-safe traits below.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Whether a connection to a host goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Connect.
    Allow,
    /// Answer `403 Forbidden`.
    Refuse,
}

/// Decides each host a sandboxed command asks the proxy for.
pub trait HostDecider: Send + Sync + 'static {
    /// The decision for `host:port` (`host` lower-cased, without brackets).
    fn decide<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, Decision>;
}

/// Resolves host names (a test maps its names to loopback without touching `/etc/hosts`).
pub trait Resolver: Send + Sync + 'static {
    /// The addresses of `host:port`.
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>>;
}

/// The system resolver.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// What a domain list says about a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// On the list.
    Allowed,
    /// Not on it: ask, or refuse.
    Unlisted,
}

/// `sandbox.network.allowedDomains`: exact names, and `*.example.com` for any subdomain
/// (not `example.com` itself). Case-insensitive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainList {
    patterns: Vec<String>,
}

impl DomainList {
    /// The list of `patterns`.
    pub fn new<I: IntoIterator<Item = S>, S: AsRef<str>>(patterns: I) -> Self {
        Self {
            patterns: patterns
                .into_iter()
                .map(|p| p.as_ref().trim().trim_end_matches('.').to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether `host` is on the list.
    pub fn check(&self, host: &str) -> Listing {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let listed = self
            .patterns
            .iter()
            .any(|pattern| match pattern.strip_prefix("*.") {
                Some(suffix) => {
                    host.len() > suffix.len() + 1
                        && host.ends_with(suffix)
                        && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
                }
                None => *pattern == host,
            });
        if listed {
            Listing::Allowed
        } else {
            Listing::Unlisted
        }
    }
}

/// A callback for hosts not on the list (the UI asks the user; remembering an answer is
/// its business).
pub type AskHost = Arc<dyn Fn(String, u16) -> BoxFuture<'static, Decision> + Send + Sync>;

/// Allows the listed domains; the others go to `ask`, or are refused when there is none
/// (headless runs).
#[derive(Clone)]
pub struct AllowlistDecider {
    /// The list.
    pub list: DomainList,
    /// Who decides unlisted hosts.
    pub ask: Option<AskHost>,
}

impl HostDecider for AllowlistDecider {
    fn decide<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            match (self.list.check(host), &self.ask) {
                (Listing::Allowed, _) => Decision::Allow,
                (Listing::Unlisted, Some(ask)) => ask(host.to_owned(), port).await,
                (Listing::Unlisted, None) => Decision::Refuse,
            }
        })
    }
}

/// A running proxy; dropping it stops accepting and removes the socket file.
#[derive(Debug)]
pub struct Proxy {
    socket: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Binds `socket` and serves it on the current tokio runtime.
    pub fn start(
        socket: &Path,
        decider: Arc<dyn HostDecider>,
        resolver: Arc<dyn Resolver>,
    ) -> io::Result<Self> {
        let listener = UnixListener::bind(socket)?;
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (decider, resolver) = (Arc::clone(&decider), Arc::clone(&resolver));
                tokio::spawn(async move {
                    if let Err(error) = serve(stream, &*decider, &*resolver).await {
                        tracing::debug!(%error, "sandbox proxy connection");
                    }
                });
            }
        });
        Ok(Self {
            socket: socket.to_path_buf(),
            task,
        })
    }

    /// The Unix socket it listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;

async fn serve(
    mut client: UnixStream,
    decider: &dyn HostDecider,
    resolver: &dyn Resolver,
) -> io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let end = loop {
        let mut buf = [0u8; 4096];
        let n = client.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(pos) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        if head.len() > MAX_HEAD {
            return respond(
                &mut client,
                "431 Request Header Fields Too Large",
                "request head too large",
            )
            .await;
        }
    };
    let (head, rest) = head.split_at(end);
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target, version) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let connect = method.eq_ignore_ascii_case("CONNECT");
    let parsed = if connect {
        parse_authority(target, 443).map(|(h, p)| (h, p, String::new()))
    } else {
        parse_http_url(target)
    };
    let Some((host, port, path)) = parsed else {
        return respond(
            &mut client,
            "400 Bad Request",
            "strata's sandbox proxy takes CONNECT host:port or an absolute http:// URL",
        )
        .await;
    };
    if decider.decide(&host, port).await == Decision::Refuse {
        return respond(
            &mut client,
            "403 Forbidden",
            &format!("{host} is not in sandbox.network.allowedDomains"),
        )
        .await;
    }
    let addrs = match resolver.resolve(&host, port).await {
        Ok(addrs) if !addrs.is_empty() => addrs,
        _ => {
            return respond(
                &mut client,
                "502 Bad Gateway",
                &format!("cannot resolve {host}"),
            )
            .await;
        }
    };
    let Ok(mut upstream) = TcpStream::connect(&addrs[..]).await else {
        return respond(
            &mut client,
            "502 Bad Gateway",
            &format!("cannot connect to {host}:{port}"),
        )
        .await;
    };
    if connect {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
    } else {
        // Origin-form request line, the client's headers minus the proxy ones, and one
        // request per connection (a second one could name another host).
        let mut out = format!("{method} {path} {version}\r\n");
        for line in lines.filter(|l| !l.is_empty()) {
            let name = line
                .split(':')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if !matches!(
                name.as_str(),
                "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
            ) {
                out.push_str(line);
                out.push_str("\r\n");
            }
        }
        out.push_str("Connection: close\r\n\r\n");
        upstream.write_all(out.as_bytes()).await?;
    }
    upstream.write_all(rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

async fn respond(client: &mut UnixStream, status: &str, message: &str) -> io::Result<()> {
    let body = format!("strata sandbox: {message}\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

/// `host:port` (or `[v6]:port`), lower-cased host.
fn parse_authority(authority: &str, default_port: u16) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default_port,
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// `http://authority/path` split into host, port and origin-form path.
fn parse_http_url(url: &str) -> Option<(String, u16, String)> {
    let rest = url
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &url[7..])?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = parse_authority(authority, 80)?;
    Some((host, port, path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i26_3_domain_patterns() {
        let list = DomainList::new(["github.com", "*.npmjs.org"]);
        assert_eq!(list.check("GitHub.com"), Listing::Allowed);
        assert_eq!(list.check("api.github.com"), Listing::Unlisted);
        assert_eq!(list.check("registry.npmjs.org"), Listing::Allowed);
        assert_eq!(list.check("npmjs.org"), Listing::Unlisted);
        assert_eq!(list.check("evilnpmjs.org"), Listing::Unlisted);
        assert_eq!(
            parse_authority("[::1]:8080", 443),
            Some(("::1".into(), 8080))
        );
        assert_eq!(
            parse_http_url("http://u@Example.com:81/x?y"),
            Some(("example.com".into(), 81, "/x?y".into()))
        );
        assert_eq!(parse_http_url("https://example.com/"), None);
    }
}
