//! MCP server configuration as the reference agent writes it: the `mcpServers` object of
//! `.mcp.json`, of the config file's user and per-project (local) entries, of
//! `--mcp-config` and of the SDK's `initialize`.
//!
//! Parsing is strict about shape and names what is wrong with file, line and column;
//! `${VAR}` / `${VAR:-default}` references are kept as written and expanded only when a
//! server is started ([`ServerConfig::expanded`]), so a missing variable fails that one
//! server (its status says which variable) and not the whole file.

use std::fmt;
use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;

/// How to reach one MCP server, as configured (variables not yet expanded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerConfig {
    /// A child process spoken to over stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: IndexMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: IndexMap<String, String>,
    },
    /// The older HTTP with server-sent events transport.
    Sse {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: IndexMap<String, String>,
    },
}

/// The wire shape of one entry, before the transport is decided.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: IndexMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: IndexMap<String, String>,
}

impl TryFrom<RawServer> for ServerConfig {
    type Error = String;

    fn try_from(raw: RawServer) -> Result<Self, String> {
        let need_url = |url: Option<String>, kind: &str| {
            url.filter(|u| !u.trim().is_empty())
                .ok_or_else(|| format!("a \"{kind}\" server needs a \"url\""))
        };
        match raw.kind.as_deref() {
            None | Some("stdio") => {
                let command = raw.command.filter(|c| !c.trim().is_empty()).ok_or(
                    "a stdio server needs a \"command\" (or give \"type\": \"http\" and a \"url\")",
                )?;
                Ok(Self::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                })
            }
            Some("http") => Ok(Self::Http {
                url: need_url(raw.url, "http")?,
                headers: raw.headers,
            }),
            Some("sse") => Ok(Self::Sse {
                url: need_url(raw.url, "sse")?,
                headers: raw.headers,
            }),
            Some(other) => Err(format!(
                "unknown server \"type\" {other:?}; use \"stdio\", \"http\" or \"sse\""
            )),
        }
    }
}

impl<'de> Deserialize<'de> for ServerConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawServer::deserialize(d)?;
        Self::try_from(raw).map_err(serde::de::Error::custom)
    }
}

/// A configuration that could not be used: where and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}:{column}: {message}")]
pub struct ConfigError {
    /// The file, or `--mcp-config` / `initialize` for inline JSON.
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong and what to do.
    pub message: String,
}

/// Parses a document whose top level has an `mcpServers` object (`.mcp.json`,
/// `--mcp-config`). `origin` names it in errors.
pub fn parse_document(
    text: &str,
    origin: &str,
) -> Result<IndexMap<String, ServerConfig>, ConfigError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Document {
        #[serde(default)]
        mcp_servers: IndexMap<String, ServerConfig>,
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let doc: Document = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // serde places an entry's own errors (a missing url) after the entry; the
        // entry's key is where the user has to look.
        let (line, column) = match path.strip_prefix("mcpServers.") {
            Some(server) if inner.is_data() => {
                line_of(text, server.split('.').next().unwrap_or(server))
            }
            _ => (inner.line(), inner.column()),
        };
        ConfigError {
            origin: origin.to_owned(),
            line,
            column,
            message: if path == "." {
                format!("{inner}")
            } else {
                format!("at {path}: {inner}")
            },
        }
    })?;
    de.end().map_err(|e| ConfigError {
        origin: origin.to_owned(),
        line: e.line(),
        column: e.column(),
        message: format!("{e}"),
    })?;
    for name in doc.mcp_servers.keys() {
        check_name(name).map_err(|e| {
            let (line, column) = line_of(text, name);
            ConfigError {
                origin: origin.to_owned(),
                line,
                column,
                message: e.to_string(),
            }
        })?;
    }
    Ok(doc.mcp_servers)
}

/// Parses the value of an `mcpServers` key given on its own (the SDK's `initialize`).
pub fn parse_servers_value(
    value: &serde_json::Value,
    origin: &str,
) -> Result<IndexMap<String, ServerConfig>, ConfigError> {
    let text = serde_json::json!({ "mcpServers": value }).to_string();
    parse_document(&text, origin)
}

/// Reads and parses a file with an `mcpServers` object; a missing file has no servers.
pub fn read_document(path: &Path) -> Result<IndexMap<String, ServerConfig>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_document(&text, &path.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(IndexMap::new()),
        Err(e) => Err(ConfigError {
            origin: path.display().to_string(),
            line: 1,
            column: 1,
            message: format!("cannot be read: {e}"),
        }),
    }
}

/// A server name that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty or blank.
    #[error("a server name cannot be empty")]
    Empty,
    /// A character tool names and rules cannot carry.
    #[error("server name {0:?} may only use letters, digits, '_', '-', '.' and spaces")]
    BadCharacter(String),
}

/// A server name is used in tool names and rules: non-empty, no `__` separator confusion.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.trim().is_empty() {
        return Err(NameError::Empty);
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ' '))
    {
        return Err(NameError::BadCharacter(name.to_owned()));
    }
    Ok(())
}

/// The line and column of the first `"name"` key in `text` (for name errors, which
/// serde cannot place).
fn line_of(text: &str, name: &str) -> (usize, usize) {
    let needle = format!("\"{name}\"");
    let Some(at) = text.find(&needle) else {
        return (1, 1);
    };
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// A `${VAR}` reference without a default whose variable is not set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "environment variable {name} is not set (set it, or write ${{{name}:-default}} in the configuration)"
)]
pub struct MissingVariable {
    /// The variable.
    pub name: String,
}

/// Expands `${VAR}` and `${VAR:-default}` in `text` with `lookup`. An unset variable
/// with a default takes the default (also when set but empty, as in the shell's `:-`);
/// without one it is an error. Text that is not a complete `${…}` is kept as written.
pub fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, MissingVariable> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let valid = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            out.push_str(&rest[start..start + 2 + end + 1]);
        } else {
            match (
                lookup(name).filter(|v| default.is_none() || !v.is_empty()),
                default,
            ) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(MissingVariable {
                        name: name.to_owned(),
                    });
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl ServerConfig {
    /// This configuration with every variable reference expanded (command, args, env,
    /// url, headers).
    pub fn expanded(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, MissingVariable> {
        let map =
            |m: &IndexMap<String, String>| -> Result<IndexMap<String, String>, MissingVariable> {
                m.iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v, lookup)?)))
                    .collect()
            };
        Ok(match self {
            Self::Stdio { command, args, env } => Self::Stdio {
                command: expand(command, lookup)?,
                args: args
                    .iter()
                    .map(|a| expand(a, lookup))
                    .collect::<Result<_, _>>()?,
                env: map(env)?,
            },
            Self::Http { url, headers } => Self::Http {
                url: expand(url, lookup)?,
                headers: map(headers)?,
            },
            Self::Sse { url, headers } => Self::Sse {
                url: expand(url, lookup)?,
                headers: map(headers)?,
            },
        })
    }

    /// The transport, as the app state names it.
    pub fn transport(&self) -> strata_state::McpTransport {
        match self {
            Self::Stdio { .. } => strata_state::McpTransport::Stdio,
            Self::Http { .. } => strata_state::McpTransport::Http,
            Self::Sse { .. } => strata_state::McpTransport::Sse,
        }
    }

    /// The JSON the configuration files hold for this server (`strata mcp add`, `get`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Stdio { command, args, env } => {
                serde_json::json!({"type": "stdio", "command": command, "args": args, "env": env})
            }
            Self::Http { url, headers } => {
                serde_json::json!({"type": "http", "url": url, "headers": headers})
            }
            Self::Sse { url, headers } => {
                serde_json::json!({"type": "sse", "url": url, "headers": headers})
            }
        }
    }
}

impl fmt::Display for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio { command, args, .. } => {
                write!(f, "{command}")?;
                for a in args {
                    write!(f, " {a}")?;
                }
                Ok(())
            }
            Self::Http { url, .. } => write!(f, "{url} (http)"),
            Self::Sse { url, .. } => write!(f, "{url} (sse)"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME_X" => Some("/h".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_expand_like_the_shell() {
        assert_eq!(expand("${HOME_X}/bin", &env).unwrap(), "/h/bin");
        assert_eq!(expand("${NOPE:-8080}", &env).unwrap(), "8080");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(
            expand("a ${ not a var } $HOME_X", &env).unwrap(),
            "a ${ not a var } $HOME_X"
        );
        assert_eq!(expand("${open", &env).unwrap(), "${open");
        assert_eq!(
            expand("x${NOPE}", &env).unwrap_err().name,
            "NOPE",
            "a missing variable without a default is reported by name"
        );
    }

    #[test]
    fn every_transport_of_the_reference_format_parses() {
        let doc = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "${HOME_X}"}},
            "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}},
            "old": {"type": "sse", "url": "http://127.0.0.1:2/sse"}
        }}"#;
        let servers = parse_document(doc, ".mcp.json").unwrap();
        assert_eq!(servers.len(), 3);
        assert!(matches!(&servers["fs"], ServerConfig::Stdio { command, .. } if command == "npx"));
        assert!(
            matches!(&servers["web"], ServerConfig::Http { headers, .. } if headers["A"] == "b")
        );
        assert!(matches!(&servers["old"], ServerConfig::Sse { .. }));
        let ServerConfig::Stdio { env: e, .. } = servers["fs"].expanded(&env).unwrap() else {
            panic!("stdio");
        };
        assert_eq!(e["K"], "/h");
    }

    #[test]
    fn a_bad_entry_names_file_line_column_and_the_fix() {
        let doc = "{\"mcpServers\": {\n  \"web\": {\"type\": \"http\"}\n}}";
        let e = parse_document(doc, ".mcp.json").unwrap_err();
        assert_eq!((e.origin.as_str(), e.line), (".mcp.json", 2));
        assert!(e.message.contains("mcpServers.web"), "{e}");
        assert!(e.message.contains("needs a \"url\""), "{e}");
        let e = parse_document(
            "{\"mcpServers\": {\"a\": {\"type\": \"ws\", \"url\": \"x\"}}}",
            "f",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("f:1:"), "{e}");
        assert!(e.message.contains("unknown server \"type\" \"ws\""), "{e}");
        let e = parse_document("{\"mcpServers\": {", "f").unwrap_err();
        assert_eq!(e.line, 1);
        let e =
            parse_document("{\"mcpServers\": {\"a/b\": {\"command\": \"x\"}}}", "f").unwrap_err();
        assert!(e.message.contains("may only use"), "{e}");
    }
}
