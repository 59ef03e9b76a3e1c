//! Who may use the server, and the headers every answer carries.
//!
//! The page can change a session's permission mode and has no login: on a loopback
//! address only programs of this machine reach it, which is the point of listening
//! there by default. Two browser attacks reach loopback servers anyway, and both are
//! refused here (failing closed):
//!
//! - DNS rebinding: a web site whose name resolves to 127.0.0.1 makes the browser talk to
//!   this server as that site. Its requests carry that name in `Host`, so unless the
//!   server was told to listen beyond loopback, only `127.0.0.1`, `localhost` and
//!   `[::1]` are accepted as hosts.
//! - Cross-site requests: another site's page can send a form POST here. A change
//!   (anything but GET and HEAD) is accepted only from this server's own pages — the
//!   browser's `Origin` (else `Sec-Fetch-Site`) must say so — and only as
//!   `application/json`, which a form cannot send and a cross-site script cannot send
//!   without a CORS preflight this server never grants. A request without either header
//!   is not a browser's and is let through (a script on this machine can reach NATS
//!   itself anyway).
//!
//! Every answer forbids framing, sniffing and any script, style or connection not of
//! this server (content security policy).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::routes::{App, error_response};

/// The hosts a loopback server answers to.
const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// The content security policy of every answer.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                   connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// The host part of a `Host` header value (`name:port`, `[v6]:port`, `name`).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// Whether `headers` name a host this server answers to.
pub(crate) fn host_allowed(headers: &HeaderMap, any_host: bool) -> bool {
    if any_host {
        return true;
    }
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = host_name(host);
    LOOPBACK_HOSTS
        .iter()
        .any(|allowed| name.eq_ignore_ascii_case(allowed))
}

/// Whether a change request comes from this server's own pages (or from no browser).
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    if let Some(origin) = text(header::ORIGIN) {
        let Some(host) = text(header::HOST) else {
            return false;
        };
        return origin.eq_ignore_ascii_case(&format!("http://{host}"));
    }
    match text(axum::http::HeaderName::from_static("sec-fetch-site")) {
        Some(site) => site == "same-origin" || site == "none",
        None => true,
    }
}

/// The middleware: refuses what the module docs say, then adds the headers.
pub(crate) async fn guard(State(app): State<App>, request: Request, next: Next) -> Response {
    if !host_allowed(request.headers(), app.options.any_host) {
        return error_response(
            StatusCode::MISDIRECTED_REQUEST,
            "this server answers only to 127.0.0.1, localhost and [::1] (start it with \
             --allow-non-loopback to answer to other names)",
        );
    }
    let reads = matches!(*request.method(), Method::GET | Method::HEAD);
    if !reads && !same_origin(request.headers()) {
        return error_response(
            StatusCode::FORBIDDEN,
            "a change must come from this server's own pages",
        );
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn only_loopback_names_are_accepted_as_the_host() {
        for host in ["127.0.0.1:8377", "localhost:1", "LOCALHOST", "[::1]:80"] {
            assert!(host_allowed(&headers(&[("host", host)]), false), "{host}");
        }
        for host in ["evil.example:8377", "127.0.0.1.evil.example", "[::2]:80"] {
            assert!(!host_allowed(&headers(&[("host", host)]), false), "{host}");
            assert!(host_allowed(&headers(&[("host", host)]), true), "{host}");
        }
        assert!(
            !host_allowed(&HeaderMap::new(), false),
            "no Host, no answer"
        );
    }

    #[test]
    fn a_change_from_another_origin_is_refused() {
        let ours = headers(&[("host", "127.0.0.1:9"), ("origin", "http://127.0.0.1:9")]);
        assert!(same_origin(&ours));
        let theirs = headers(&[("host", "127.0.0.1:9"), ("origin", "http://evil.example")]);
        assert!(!same_origin(&theirs));
        let null = headers(&[("host", "127.0.0.1:9"), ("origin", "null")]);
        assert!(!same_origin(&null));
        let cross = headers(&[("host", "127.0.0.1:9"), ("sec-fetch-site", "cross-site")]);
        assert!(!same_origin(&cross));
        assert!(
            same_origin(&headers(&[("host", "127.0.0.1:9")])),
            "not a browser"
        );
    }
}
