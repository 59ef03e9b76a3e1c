//! Which provider to use: `--provider`, `--replay`, else the environment.
//!
//! | asked for                         | needs                                              | default model |
//! |-----------------------------------|----------------------------------------------------|---------------|
//! | `--provider anthropic`            | `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`, or the settings' `apiKeyHelper`); `ANTHROPIC_BASE_URL` optional | `ANTHROPIC_MODEL`, else [`ANTHROPIC_DEFAULT_MODEL`](super::ANTHROPIC_DEFAULT_MODEL) |
//! | `--provider openai`               | `OPENAI_API_KEY` or `OPENAI_BASE_URL` (a local server needs no key) | `OPENAI_MODEL`, else [`OPENAI_DEFAULT_MODEL`](super::OPENAI_DEFAULT_MODEL) |
//! | `--provider replay` / `--replay`  | the transcript to play                             | the recording's |
//! | nothing                           | an Anthropic key or `apiKeyHelper` → anthropic; else an OpenAI key or base URL → openai; else [`ProviderError::NotConfigured`] | |
//!
//! The CLI resolves `--replay demo` to the demo session it ships and passes the path;
//! `--model` overrides every default.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use super::anthropic::{AnthropicConfig, AnthropicProvider};
use super::key_helper::ApiKeyHelper;
use super::openai::{OpenAiConfig, OpenAiProvider};
use super::replay::ReplayProvider;
use super::{Provider, ProviderError};

/// A provider named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderChoice {
    /// The Anthropic Messages API.
    Anthropic,
    /// An OpenAI-compatible chat-completions API.
    OpenAi,
    /// Playback of a recorded session.
    Replay,
}

impl ProviderChoice {
    /// The name as written on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::Replay => "replay",
        }
    }
}

impl fmt::Display for ProviderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProviderChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Ok(Self::Anthropic),
            "openai" => Ok(Self::OpenAi),
            "replay" => Ok(Self::Replay),
            other => Err(format!(
                "unknown provider {other:?}; expected one of: anthropic, openai, replay"
            )),
        }
    }
}

/// How to configure a provider, for [`ProviderError::NotConfigured`].
const HOW_TO_CONFIGURE: &str = "\
No model provider is configured. Configure one of:
  - Anthropic: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a proxy or gateway),
    or apiKeyHelper in the settings (a command that prints the key)
  - OpenAI or a compatible server (llama.cpp, Ollama, vLLM): set OPENAI_API_KEY, or
    OPENAI_BASE_URL for a local server (e.g. OPENAI_BASE_URL=http://127.0.0.1:11434/v1)
  - offline: --replay demo plays back a recorded demo session
    (or --replay <transcript.jsonl> for any recorded session)
Choose one explicitly with --provider anthropic|openai|replay.";

/// Picks and builds the provider (see the module docs). `env` reads an environment
/// variable (tests pass a map); `replay_path` is `--replay`'s transcript, already
/// resolved by the caller.
pub fn select_provider(
    choice: Option<ProviderChoice>,
    env: &impl Fn(&str) -> Option<String>,
    replay_path: Option<&Path>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    select_provider_with_key_helper(choice, env, replay_path, None)
}

/// [`select_provider`], with the settings' `apiKeyHelper` as a source of Anthropic keys
/// when the environment has none (the environment's key comes first, as in the
/// reference agent).
pub fn select_provider_with_key_helper(
    choice: Option<ProviderChoice>,
    env: &impl Fn(&str) -> Option<String>,
    replay_path: Option<&Path>,
    key_helper: Option<Arc<ApiKeyHelper>>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let anthropic =
        |config: Option<AnthropicConfig>| -> Option<Result<Arc<dyn Provider>, ProviderError>> {
            match (config, &key_helper) {
                (Some(config), _) => Some(AnthropicProvider::new(config).map(|p| Arc::new(p) as _)),
                (None, Some(helper)) => Some(
                    AnthropicProvider::with_key_helper(
                        AnthropicConfig::endpoint_from_env(env),
                        helper.clone(),
                    )
                    .map(|p| Arc::new(p) as _),
                ),
                (None, None) => None,
            }
        };
    let choice = match (choice, replay_path) {
        (Some(ProviderChoice::Replay), _) | (None, Some(_)) => ProviderChoice::Replay,
        (Some(live), Some(_)) => {
            return Err(ProviderError::NotConfigured(format!(
                "--replay plays back a recorded session and cannot be combined with \
                 --provider {live}; drop one of them"
            )));
        }
        (Some(live), None) => live,
        (None, None) => {
            if let Some(provider) = anthropic(AnthropicConfig::from_env(env)) {
                return provider;
            }
            if let Some(config) = OpenAiConfig::from_env(env) {
                return Ok(Arc::new(OpenAiProvider::new(config)?));
            }
            return Err(ProviderError::NotConfigured(HOW_TO_CONFIGURE.to_owned()));
        }
    };
    match choice {
        ProviderChoice::Replay => {
            let path = replay_path.ok_or_else(|| {
                ProviderError::NotConfigured(
                    "--provider replay needs a recorded session to play: add --replay \
                     <transcript.jsonl>, or --replay demo for the demo session"
                        .into(),
                )
            })?;
            Ok(Arc::new(ReplayProvider::open(path)?))
        }
        ProviderChoice::Anthropic => {
            anthropic(AnthropicConfig::from_env(env)).unwrap_or_else(|| {
                Err(ProviderError::NotConfigured(
                    "--provider anthropic needs an API key: set ANTHROPIC_API_KEY (or \
                 ANTHROPIC_AUTH_TOKEN for a gateway that takes bearer tokens, or \
                 apiKeyHelper in the settings)"
                        .into(),
                ))
            })
        }
        ProviderChoice::OpenAi => {
            let config = OpenAiConfig::from_env(env).ok_or_else(|| {
                ProviderError::NotConfigured(
                    "--provider openai needs OPENAI_API_KEY, or OPENAI_BASE_URL for a \
                     local server that takes no key (e.g. http://127.0.0.1:8080/v1)"
                        .into(),
                )
            })?;
            Ok(Arc::new(OpenAiProvider::new(config)?))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn nothing_configured_says_how_to_configure_one() {
        let err = select_provider(None, &env(&[]), None).unwrap_err();
        let ProviderError::NotConfigured(msg) = &err else {
            panic!("expected NotConfigured, got {err:?}");
        };
        for needle in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "--replay demo",
            "--provider anthropic|openai|replay",
        ] {
            assert!(msg.contains(needle), "message lacks {needle}: {msg}");
        }
    }

    #[test]
    fn environment_picks_anthropic_first_then_openai() {
        let both = env(&[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")]);
        assert_eq!(
            select_provider(None, &both, None).unwrap().name(),
            "anthropic"
        );
        let local = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]);
        let p = select_provider(None, &local, None).unwrap();
        assert_eq!(p.name(), "openai");
        assert_eq!(
            p.default_model(),
            Some(crate::provider::OPENAI_DEFAULT_MODEL)
        );
        let empty_key = env(&[("ANTHROPIC_API_KEY", " ")]);
        assert!(select_provider(None, &empty_key, None).is_err());
    }

    #[test]
    fn explicit_choice_needs_its_own_configuration() {
        let only_openai = env(&[("OPENAI_API_KEY", "o")]);
        let err = select_provider(Some(ProviderChoice::Anthropic), &only_openai, None).unwrap_err();
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
        let p = select_provider(Some(ProviderChoice::OpenAi), &only_openai, None).unwrap();
        assert_eq!(p.name(), "openai");
        let err = select_provider(Some(ProviderChoice::Replay), &only_openai, None).unwrap_err();
        assert!(err.to_string().contains("--replay"), "{err}");
    }

    #[test]
    fn default_models_come_from_the_environment_when_set() {
        let e = env(&[
            ("ANTHROPIC_API_KEY", "a"),
            ("ANTHROPIC_MODEL", "claude-custom"),
        ]);
        let p = select_provider(None, &e, None).unwrap();
        assert_eq!(p.default_model(), Some("claude-custom"));
        let e = env(&[("ANTHROPIC_API_KEY", "a")]);
        let p = select_provider(None, &e, None).unwrap();
        assert_eq!(
            p.default_model(),
            Some(crate::provider::ANTHROPIC_DEFAULT_MODEL)
        );
    }

    #[test]
    fn replay_cannot_be_combined_with_a_live_provider_and_missing_files_are_named() {
        let e = env(&[("ANTHROPIC_API_KEY", "a")]);
        let path = Path::new("no/such/session.jsonl");
        let err = select_provider(Some(ProviderChoice::Anthropic), &e, Some(path)).unwrap_err();
        assert!(err.to_string().contains("cannot be combined"), "{err}");
        let err = select_provider(None, &e, Some(path)).unwrap_err();
        assert!(matches!(err, ProviderError::Replay(_)));
        assert!(err.to_string().contains("no/such/session.jsonl"), "{err}");
    }

    #[test]
    fn choice_parses_case_insensitively_and_rejects_others() {
        assert_eq!(
            "OpenAI".parse::<ProviderChoice>(),
            Ok(ProviderChoice::OpenAi)
        );
        assert!(
            "gemini"
                .parse::<ProviderChoice>()
                .unwrap_err()
                .contains("anthropic, openai, replay")
        );
    }
}
