//! The `remote` settings block (issue 17): where a session is replicated.
//!
//! ```json
//! "remote": {
//!   "url": "tls://nats.example.com:4222",
//!   "credentialsFile": "~/.strata/nats.creds",
//!   "tls": { "required": true, "caFile": "~/.strata/ca.pem",
//!            "certFile": "~/.strata/client.pem", "keyFile": "~/.strata/client-key.pem" }
//! }
//! ```
//!
//! Values are checked while the file is read, so a mistake is reported at its line and
//! column: the URL must name a NATS server (several may be separated by commas), file
//! paths must be absolute or start with `~/` (a relative path would depend on the
//! directory strata happens to start in), and a client certificate needs its key.

use serde_json::{Map, Value};

use super::ordered::{KeyOrder, known_keys};

/// `remote`: the NATS server sessions are replicated on.
///
/// ```
/// use strata_protocol::settings::Settings;
/// let s: Settings = serde_json::from_str(
///     r#"{"remote": {"url": "nats://127.0.0.1:4222", "tls": {"required": true}}}"#,
/// ).unwrap();
/// let remote = s.remote.unwrap();
/// assert_eq!(remote.url.as_deref(), Some("nats://127.0.0.1:4222"));
/// assert_eq!(remote.tls.unwrap().required, Some(true));
/// let bad = serde_json::from_str::<Settings>(r#"{"remote": {"url": "http://x"}}"#);
/// assert!(bad.unwrap_err().to_string().contains("nats://"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RemoteSettings {
    /// `url`: `nats://host:port` (or `tls://`, `ws://`, `wss://`); several, separated by
    /// commas, for a cluster.
    pub url: Option<String>,
    /// `credentialsFile`: a NATS credentials file (`.creds`: user JWT and NKey seed).
    pub credentials_file: Option<String>,
    /// `tls`: TLS for the connection.
    pub tls: Option<RemoteTlsSettings>,
    /// Every key this version does not know, in file order, exactly as read.
    pub extra: Map<String, Value>,
    /// The order keys were read in; ignored by equality.
    pub key_order: KeyOrder,
}

known_keys!(RemoteSettings, "a remote object", {
    "url" => url,
    "credentialsFile" => credentials_file,
    "tls" => tls,
}, check = check_remote);

/// `remote.tls`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RemoteTlsSettings {
    /// `required`: refuse a connection that is not TLS.
    pub required: Option<bool>,
    /// `caFile`: PEM certificates of the authorities the server's certificate is checked
    /// against.
    pub ca_file: Option<String>,
    /// `certFile`: a PEM client certificate (with `keyFile`).
    pub cert_file: Option<String>,
    /// `keyFile`: the client certificate's PEM private key.
    pub key_file: Option<String>,
    /// Every key this version does not know, in file order, exactly as read.
    pub extra: Map<String, Value>,
    /// The order keys were read in; ignored by equality.
    pub key_order: KeyOrder,
}

known_keys!(RemoteTlsSettings, "a tls object", {
    "required" => required,
    "caFile" => ca_file,
    "certFile" => cert_file,
    "keyFile" => key_file,
}, check = check_tls);

const SCHEMES: [&str; 4] = ["nats://", "tls://", "ws://", "wss://"];

fn check_remote(remote: &RemoteSettings) -> Result<(), String> {
    if let Some(url) = &remote.url {
        let servers: Vec<&str> = url
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if servers.is_empty() {
            return Err(
                "url is empty: give the NATS server, e.g. \"nats://127.0.0.1:4222\"".into(),
            );
        }
        for server in servers {
            let known = SCHEMES.iter().any(|scheme| server.starts_with(scheme));
            if !known
                || server
                    .split_once("://")
                    .is_some_and(|(_, rest)| rest.is_empty())
            {
                return Err(format!(
                    "url {server:?} is not a NATS server URL: expected nats://host:port \
                     (or tls://, ws://, wss://)"
                ));
            }
        }
    }
    if let Some(path) = &remote.credentials_file {
        check_path("credentialsFile", path)?;
    }
    Ok(())
}

fn check_tls(tls: &RemoteTlsSettings) -> Result<(), String> {
    for (key, path) in [
        ("caFile", &tls.ca_file),
        ("certFile", &tls.cert_file),
        ("keyFile", &tls.key_file),
    ] {
        if let Some(path) = path {
            check_path(key, path)?;
        }
    }
    match (&tls.cert_file, &tls.key_file) {
        (Some(_), None) => {
            Err("certFile needs keyFile (the client certificate's private key)".into())
        }
        (None, Some(_)) => Err("keyFile needs certFile (the client certificate)".into()),
        _ => Ok(()),
    }
}

fn check_path(key: &str, path: &str) -> Result<(), String> {
    if path.starts_with('/') || path.starts_with("~/") {
        Ok(())
    } else {
        Err(format!(
            "{key} {path:?} must be an absolute path or start with ~/"
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::settings::Settings;

    fn error(text: &str) -> String {
        serde_json::from_str::<Settings>(text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_remote_block_reads_with_unknown_keys_kept() {
        let text = r#"{"remote":{"url":"nats://a:1,tls://b:2","credentialsFile":"~/x.creds","tls":{"caFile":"/ca.pem","certFile":"/c.pem","keyFile":"/k.pem","z":1},"later":true}}"#;
        let s: Settings = serde_json::from_str(text).unwrap();
        let remote = s.remote.as_ref().unwrap();
        assert_eq!(remote.credentials_file.as_deref(), Some("~/x.creds"));
        assert_eq!(remote.extra["later"], true);
        assert_eq!(serde_json::to_string(&s).unwrap(), text);
    }

    #[test]
    fn a_bad_remote_block_is_an_error_at_its_place() {
        let e = error("{\n  \"remote\": {\"url\": \"http://x:1\"}\n}");
        assert!(e.contains("not a NATS server URL"), "{e}");
        assert!(e.contains("line 2"), "{e}");
        let e = error(r#"{"remote": {"tls": {"certFile": "/c.pem"}}}"#);
        assert!(e.contains("certFile needs keyFile"), "{e}");
        let e = error(r#"{"remote": {"credentialsFile": "x.creds"}}"#);
        assert!(e.contains("absolute path"), "{e}");
        let e = error(r#"{"remote": {"tls": {"required": "yes"}}}"#);
        assert!(e.contains("invalid type"), "{e}");
        let e = error(r#"{"remote": "nats://x"}"#);
        assert!(e.contains("a remote object"), "{e}");
    }
}
