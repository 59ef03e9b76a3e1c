//! Keeping credentials out of tool processes and out of what tools return.
//!
//! Two defences, because either alone leaks:
//!
//! - **Environment.** A tool process (a Bash command) gets strata's environment without
//!   the variables strata knows to be credentials: [`CREDENTIAL_VARS`] plus the names the
//!   settings list under `credentialEnvVars`. The settings `env` overlay cannot put them
//!   back either. So `env` or `echo $ANTHROPIC_API_KEY` shows nothing.
//! - **Output.** The values of those variables (from strata's environment and from the
//!   settings `env`) and any value registered with [`Secrets::add_value`] (a key strata
//!   obtained some other way, e.g. from a key helper) are replaced by
//!   `[redacted $NAME]` in every tool result — its text, its structured detail and the
//!   side file a long output is stored in — before anything is recorded or sent. That
//!   catches the key read back from a file (`cat .env`, the Read tool), which the
//!   environment alone cannot.
//!
//! Tools redact their output before cutting it ([`crate::tools::ToolHooks::redact`]), so
//! a secret at the inline cut leaves no recognisable half. `credentialEnvVars` is read
//! when the session opens; values are looked up at every call, so a key that changes
//! in the settings `env` is redacted at once.
//!
//! What is deliberately *not* in the built-in list: credentials of the user's own tools
//! (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, …). Commands the user asks for (`gh pr
//! create`, `aws s3 ls`) need them; a user who wants them hidden adds them to
//! `credentialEnvVars`. Values shorter than [`MIN_SECRET_LEN`] characters are removed
//! from the environment but not redacted from text: replacing every `abc` in every output
//! would garble results and protect nothing. A secret transformed by the command (base64,
//! split over lines) is not recognised.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::procs::CommandEnv;
use crate::sync::lock;

/// The environment variables strata treats as credentials without being told: the
/// model-provider keys and tokens strata itself reads, and those of the other common
/// model providers (a user running strata often has several set).
pub const CREDENTIAL_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "OPENROUTER_API_KEY",
];

/// Values shorter than this are not redacted from text (see the module doc).
pub const MIN_SECRET_LEN: usize = 8;

/// The credentials of a session: which variable names are credentials, and values known
/// to be secret. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct Secrets {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    names: Vec<String>,
    values: Mutex<Vec<(String, String)>>,
}

impl Default for Secrets {
    /// The built-in [`CREDENTIAL_VARS`], no extra names or values.
    fn default() -> Self {
        Self::new(std::iter::empty::<String>()).0
    }
}

impl Secrets {
    /// The built-in names plus `extra` (the `credentialEnvVars` setting). Returns the
    /// secrets and a warning for each extra name that cannot be a variable name.
    pub fn new(extra: impl IntoIterator<Item = impl Into<String>>) -> (Self, Vec<String>) {
        let mut names: Vec<String> = CREDENTIAL_VARS.iter().map(|&n| n.to_owned()).collect();
        let mut warnings = Vec::new();
        for name in extra {
            let name = name.into();
            if name.is_empty() || name.contains(['=', '\0']) {
                warnings.push(format!(
                    "credentialEnvVars: {name:?} is not an environment variable name (it is \
                     empty or contains `=`); it is ignored"
                ));
            } else if !names.contains(&name) {
                names.push(name);
            }
        }
        let inner = Inner {
            names,
            values: Mutex::new(Vec::new()),
        };
        (
            Self {
                inner: Arc::new(inner),
            },
            warnings,
        )
    }

    /// The variable names treated as credentials.
    pub fn names(&self) -> &[String] {
        &self.inner.names
    }

    /// Registers `value` as secret (redacted as `[redacted label]`), e.g. an API key
    /// that did not come from a variable.
    pub fn add_value(&self, label: impl Into<String>, value: impl Into<String>) {
        let (label, value) = (label.into(), value.into());
        let mut values = lock(&self.inner.values);
        if !values.iter().any(|(_, v)| *v == value) {
            values.push((label, value));
        }
    }

    fn is_credential(&self, name: &str) -> bool {
        self.inner.names.iter().any(|n| n == name)
    }

    /// The environment for a tool process: the credential variables removed, and the
    /// overlay (settings `env`) applied without them.
    pub(crate) fn command_env(&self, overlay: &BTreeMap<String, String>) -> CommandEnv {
        CommandEnv {
            set: overlay
                .iter()
                .filter(|(k, _)| !self.is_credential(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            remove: self.inner.names.clone(),
        }
    }

    /// What to redact now: the current values of the credential variables in strata's
    /// environment and in `overlay`, and the registered values.
    pub fn redactor(&self, overlay: &BTreeMap<String, String>) -> Redactor {
        let mut values: Vec<(String, String)> = Vec::new();
        for name in &self.inner.names {
            if let Ok(value) = std::env::var(name) {
                values.push((name.clone(), value));
            }
            if let Some(value) = overlay.get(name) {
                values.push((name.clone(), value.clone()));
            }
        }
        values.extend(lock(&self.inner.values).iter().cloned());
        Redactor::new(values)
    }
}

/// Replaces known secret values in text. Built by [`Secrets::redactor`].
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// (replacement, value), longest value first so a key that contains another is
    /// replaced whole.
    values: Vec<(String, String)>,
}

impl Redactor {
    fn new(values: Vec<(String, String)>) -> Self {
        let mut values: Vec<(String, String)> = values
            .into_iter()
            .map(|(label, value)| (label, value.trim().to_owned()))
            .filter(|(_, value)| value.chars().count() >= MIN_SECRET_LEN)
            .map(|(label, value)| (format!("[redacted {label}]"), value))
            .collect();
        values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.1.cmp(&b.1)));
        values.dedup_by(|a, b| a.1 == b.1);
        Self { values }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every known secret value replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (replacement, value) in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), replacement));
            }
        }
        out
    }

    /// `bytes` with every known secret value replaced: the same as [`Self::redact`] for
    /// raw output that need not be UTF-8 (a background task's output file keeps its
    /// bytes as the command wrote them, secrets aside).
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = Cow::Borrowed(bytes);
        for (replacement, value) in &self.values {
            let needle = value.as_bytes();
            if !out.windows(needle.len()).any(|w| w == needle) {
                continue;
            }
            let mut next = Vec::with_capacity(out.len());
            let mut rest: &[u8] = &out;
            while let Some(at) = rest.windows(needle.len()).position(|w| w == needle) {
                next.extend_from_slice(&rest[..at]);
                next.extend_from_slice(replacement.as_bytes());
                rest = &rest[at + needle.len()..];
            }
            next.extend_from_slice(rest);
            out = Cow::Owned(next);
        }
        out
    }

    /// Redacts every string (keys included) in `value`.
    pub fn redact_json(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                let redacted_keys = map.keys().any(|k| matches!(self.redact(k), Cow::Owned(_)));
                if redacted_keys {
                    let old = std::mem::take(map);
                    for (k, mut v) in old {
                        self.redact_json(&mut v);
                        map.insert(self.redact(&k).into_owned(), v);
                    }
                } else {
                    map.values_mut().for_each(|v| self.redact_json(v));
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn redactor(values: &[(&str, &str)]) -> Redactor {
        Redactor::new(
            values
                .iter()
                .map(|(l, v)| ((*l).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn known_values_are_replaced_longest_first() {
        let r = redactor(&[("A", "sk-secret-123"), ("B", "sk-secret-123-long")]);
        assert_eq!(
            r.redact("x=sk-secret-123-long y=sk-secret-123"),
            "x=[redacted B] y=[redacted A]"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_values_are_not_redacted_from_text() {
        let r = redactor(&[("A", "abc"), ("B", "  ")]);
        assert!(r.is_empty());
        assert_eq!(r.redact("abc"), "abc");
    }

    #[test]
    fn json_strings_and_keys_are_redacted() {
        let r = redactor(&[("K", "sk-secret-123")]);
        let mut v = json!({"stdout": "k=sk-secret-123", "sk-secret-123": [1, "sk-secret-123"]});
        r.redact_json(&mut v);
        assert_eq!(
            v,
            json!({"stdout": "k=[redacted K]", "[redacted K]": [1, "[redacted K]"]})
        );
    }

    #[test]
    fn credential_names_leave_the_environment_and_the_overlay() {
        let (s, warnings) = Secrets::new(["MY_TOKEN", "", "A=B"]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        let overlay: BTreeMap<String, String> = [
            ("MY_TOKEN".to_owned(), "overlay-token-1".to_owned()),
            ("PORT".to_owned(), "8080".to_owned()),
            (
                "ANTHROPIC_API_KEY".to_owned(),
                "sk-from-settings".to_owned(),
            ),
        ]
        .into();
        let env = s.command_env(&overlay);
        assert_eq!(env.set, [("PORT".to_owned(), "8080".to_owned())]);
        assert!(env.remove.iter().any(|n| n == "MY_TOKEN"));
        assert!(env.remove.iter().any(|n| n == "ANTHROPIC_API_KEY"));
        let r = s.redactor(&overlay);
        assert_eq!(
            r.redact("overlay-token-1 sk-from-settings"),
            "[redacted MY_TOKEN] [redacted ANTHROPIC_API_KEY]"
        );
    }

    #[test]
    fn added_values_are_redacted() {
        let s = Secrets::default();
        s.add_value("apiKeyHelper", "helper-key-0001");
        let r = s.redactor(&BTreeMap::new());
        assert_eq!(r.redact("k helper-key-0001"), "k [redacted apiKeyHelper]");
    }
}
