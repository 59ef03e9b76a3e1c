//! Which model provider a run uses: `--provider`, `--replay`, else the environment.
//!
//! `strata_agent::provider::select_provider` makes the choice; this module adds what only
//! the binary knows: `--replay demo` means the demo session built into the binary (see
//! [`super::demo`]), and a provider that is not configured is a setup problem (exit code
//! 2) whose message says how to configure one.

use std::path::Path;
use std::sync::Arc;

use strata_agent::provider::{
    Provider, ProviderChoice, ProviderError, ReplayProvider, select_provider,
};

use crate::exit::Failure;

/// The name `--replay` takes for the built-in demo session.
pub(crate) const DEMO: &str = "demo";

/// Builds the provider the flags and the environment ask for.
pub(crate) fn choose(
    choice: Option<ProviderChoice>,
    replay: Option<&str>,
    env: &impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Arc<dyn Provider>> {
    let result = match replay {
        Some(DEMO) => match choice {
            None | Some(ProviderChoice::Replay) => {
                ReplayProvider::from_bytes(DEMO, super::demo::TRANSCRIPT.as_bytes())
                    .map(|p| Arc::new(p) as Arc<dyn Provider>)
            }
            Some(live) => Err(ProviderError::NotConfigured(format!(
                "--replay plays back a recorded session and cannot be combined with \
                 --provider {live}; drop one of them"
            ))),
        },
        Some(path) => select_provider(choice, env, Some(Path::new(path))),
        None => select_provider(choice, env, None),
    };
    result.map_err(|err| match err {
        ProviderError::NotConfigured(message) => Failure::usage(message).into(),
        other => Failure::failed(other.to_string()).into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    fn failure(result: anyhow::Result<Arc<dyn Provider>>) -> (u8, String) {
        let err = result.err().unwrap();
        let f = err.downcast_ref::<Failure>().unwrap();
        (f.code, f.message.clone())
    }

    #[test]
    fn the_demo_replays_offline_and_says_it_is_a_replay() {
        let p = choose(None, Some(DEMO), &none).unwrap();
        assert_eq!(p.name(), "replay");
        assert!(p.default_model().is_some());
        let p = choose(Some(ProviderChoice::Replay), Some(DEMO), &none).unwrap();
        assert_eq!(p.name(), "replay");
    }

    #[test]
    fn nothing_configured_is_exit_2_saying_how_to_configure() {
        let (code, message) = failure(choose(None, None, &none));
        assert_eq!(code, 2);
        assert!(message.contains("ANTHROPIC_API_KEY") && message.contains("--replay demo"));
        let (code, message) = failure(choose(Some(ProviderChoice::OpenAi), Some(DEMO), &none));
        assert_eq!(code, 2);
        assert!(message.contains("cannot be combined"), "{message}");
    }

    #[test]
    fn a_missing_replay_file_is_exit_1_naming_it() {
        let (code, message) = failure(choose(None, Some("no/such/file.jsonl"), &none));
        assert_eq!(code, 1);
        assert!(message.contains("no/such/file.jsonl"), "{message}");
    }
}
