//! Which model provider a run uses: `--provider`, `--replay`, else the environment.
//!
//! `strata_agent::provider::select_provider` makes the choice; this module adds what only
//! the binary knows: `--replay demo` means the demo session built into the binary (see
//! [`super::demo`]), a provider that is not configured is a setup problem (exit code
//! 2) whose message says how to configure one, and the settings' `apiKeyHelper` is read
//! only when the environment gives no Anthropic key (it comes first).

use std::path::Path;
use std::sync::Arc;

use strata_agent::provider::{
    ApiKeyHelper, Provider, ProviderChoice, ProviderError, ReplayProvider,
    select_provider_with_key_helper,
};
use strata_config::{FlagSettings, SettingsFiles, SettingsLocations, SettingsSource, paths};

use crate::exit::Failure;

/// The name `--replay` takes for the built-in demo session.
pub(crate) const DEMO: &str = "demo";

/// The settings' `apiKeyHelper`, when it can matter: an Anthropic provider may be
/// chosen and the environment has no key of its own. Broken settings files are reported
/// where the session loads them; here they only mean no helper.
pub(crate) fn key_helper(
    choice: Option<ProviderChoice>,
    replay: Option<&str>,
    env: &impl Fn(&str) -> Option<String>,
    config_dir: &Path,
    cwd: &Path,
    settings_flag: Option<&str>,
) -> Option<Arc<ApiKeyHelper>> {
    key_helper_from(choice, replay, env, config_dir, cwd, settings_flag, None)
}

/// [`key_helper`] with `--setting-sources`: a settings file that does not load does not
/// name the helper either (a project's `apiKeyHelper` is a command from the checkout).
pub(crate) fn key_helper_from(
    choice: Option<ProviderChoice>,
    replay: Option<&str>,
    env: &impl Fn(&str) -> Option<String>,
    config_dir: &Path,
    cwd: &Path,
    settings_flag: Option<&str>,
    sources: Option<&[SettingsSource]>,
) -> Option<Arc<ApiKeyHelper>> {
    let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
    if replay.is_some()
        || matches!(
            choice,
            Some(ProviderChoice::OpenAi | ProviderChoice::Replay)
        )
        || set("ANTHROPIC_API_KEY")
        || set("ANTHROPIC_AUTH_TOKEN")
    {
        return None;
    }
    let mut locations = SettingsLocations::new(config_dir, &paths::project_root(cwd));
    if let Some(flag) = settings_flag {
        locations = locations.with_flag(FlagSettings::from_arg(flag));
    }
    if let Some(sources) = sources {
        locations = locations.with_sources(sources);
    }
    let command = SettingsFiles::new(locations)
        .load()
        .settings
        .api_key_helper?;
    (!command.trim().is_empty()).then(|| ApiKeyHelper::new(command))
}

/// Builds the provider the flags and the environment ask for (`key_helper`: see
/// [`key_helper`]).
pub(crate) fn choose(
    choice: Option<ProviderChoice>,
    replay: Option<&str>,
    env: &impl Fn(&str) -> Option<String>,
    key_helper: Option<Arc<ApiKeyHelper>>,
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
        Some(path) => select_provider_with_key_helper(choice, env, Some(Path::new(path)), None),
        None => select_provider_with_key_helper(choice, env, None, key_helper),
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
        let p = choose(None, Some(DEMO), &none, None).unwrap();
        assert_eq!(p.name(), "replay");
        assert!(p.default_model().is_some());
        let p = choose(Some(ProviderChoice::Replay), Some(DEMO), &none, None).unwrap();
        assert_eq!(p.name(), "replay");
    }

    #[test]
    fn nothing_configured_is_exit_2_saying_how_to_configure() {
        let (code, message) = failure(choose(None, None, &none, None));
        assert_eq!(code, 2);
        assert!(message.contains("ANTHROPIC_API_KEY") && message.contains("--replay demo"));
        let (code, message) = failure(choose(
            Some(ProviderChoice::OpenAi),
            Some(DEMO),
            &none,
            None,
        ));
        assert_eq!(code, 2);
        assert!(message.contains("cannot be combined"), "{message}");
    }

    #[test]
    fn a_missing_replay_file_is_exit_1_naming_it() {
        let (code, message) = failure(choose(None, Some("no/such/file.jsonl"), &none, None));
        assert_eq!(code, 1);
        assert!(message.contains("no/such/file.jsonl"), "{message}");
    }
}
