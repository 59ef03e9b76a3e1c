//! Model and configuration facts fixed at start-up, and API request tracking (BS-2, BS-7).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::Bootstrap;
use crate::sync::lock;

/// The client type reported when none was set: the interactive command-line program.
pub const DEFAULT_CLIENT_TYPE: &str = "cli";

pub(crate) struct ModelConfig {
    main_loop_model_override: Option<Arc<str>>,
    initial_main_loop_model: Option<Arc<str>>,
    client_type: Arc<str>,
    flag_settings_path: Option<Arc<Path>>,
}

/// Model and configuration state.
pub(crate) struct ConfigState {
    model: Mutex<ModelConfig>,
    interactive: AtomicBool,
}

impl ConfigState {
    pub(crate) fn new() -> Self {
        Self {
            model: Mutex::new(ModelConfig {
                main_loop_model_override: None,
                initial_main_loop_model: None,
                client_type: Arc::from(DEFAULT_CLIENT_TYPE),
                flag_settings_path: None,
            }),
            interactive: AtomicBool::new(false),
        }
    }
}

/// What bootstrap remembers about the latest API request.
#[derive(Default)]
pub(crate) struct ApiTracking {
    last_request: Option<Arc<str>>,
    last_request_id: Option<Arc<str>>,
    last_completion: Option<Instant>,
}

/// Model and configuration (BS-2, BS-7).
impl Bootstrap {
    /// The main-loop model override: a **mirror** of the app state's main-loop model (BS-7).
    /// App state is the authority; only its change hook (FX-2) calls the setter, so read this
    /// only where app state is out of reach (the API client's request builder, say).
    pub fn main_loop_model_override(&self) -> Option<Arc<str>> {
        lock(&self.config.model).main_loop_model_override.clone()
    }

    /// Mirrors the app state's main-loop model (BS-7). Only FX-2 calls this; everyone else
    /// changes the model through the app store so the setting is persisted too.
    pub fn set_main_loop_model_override(&self, model: Option<&str>) {
        lock(&self.config.model).main_loop_model_override = model.map(Arc::from);
    }

    /// The model the session started with (from flags or settings), before any change.
    pub fn initial_main_loop_model(&self) -> Option<Arc<str>> {
        lock(&self.config.model).initial_main_loop_model.clone()
    }

    /// Records the model the session started with.
    pub fn set_initial_main_loop_model(&self, model: Option<&str>) {
        lock(&self.config.model).initial_main_loop_model = model.map(Arc::from);
    }

    /// Whether a person is at the terminal (interactive UI) rather than a script (headless).
    pub fn is_interactive(&self) -> bool {
        self.config.interactive.load(Ordering::Acquire)
    }

    /// Records whether the session is interactive.
    pub fn set_interactive(&self, interactive: bool) {
        self.config
            .interactive
            .store(interactive, Ordering::Release);
    }

    /// The kind of client driving the agent (`cli`, an SDK, a remote worker), reported with
    /// requests and telemetry. Defaults to [`DEFAULT_CLIENT_TYPE`].
    pub fn client_type(&self) -> Arc<str> {
        Arc::clone(&lock(&self.config.model).client_type)
    }

    /// Sets the client type.
    pub fn set_client_type(&self, client_type: &str) {
        lock(&self.config.model).client_type = Arc::from(client_type);
    }

    /// The settings file given with `--settings <file>`, if any (inline JSON has no path).
    pub fn flag_settings_path(&self) -> Option<Arc<Path>> {
        lock(&self.config.model).flag_settings_path.clone()
    }

    /// Records the `--settings` file path.
    pub fn set_flag_settings_path(&self, path: Option<PathBuf>) {
        lock(&self.config.model).flag_settings_path = path.map(Arc::from);
    }
}

/// API request tracking (BS-2).
impl Bootstrap {
    /// The last API request sent, as the serialized request body (kept for bug reports; the
    /// API client owns the format).
    pub fn last_api_request(&self) -> Option<Arc<str>> {
        lock(&self.api).last_request.clone()
    }

    /// Records the request about to be sent.
    pub fn set_last_api_request(&self, request: Option<Arc<str>>) {
        lock(&self.api).last_request = request;
    }

    /// The provider's id of the last request (`request-id` header), for support.
    pub fn last_request_id(&self) -> Option<Arc<str>> {
        lock(&self.api).last_request_id.clone()
    }

    /// Records the provider's id of the last request.
    pub fn set_last_request_id(&self, id: Option<&str>) {
        lock(&self.api).last_request_id = id.map(Arc::from);
    }

    /// When the last API call completed, if one did.
    pub fn last_api_completion(&self) -> Option<Instant> {
        lock(&self.api).last_completion
    }

    /// Records that an API call completed at `at` (pass `Instant::now()`).
    pub fn mark_api_completion(&self, at: Instant) {
        lock(&self.api).last_completion = Some(at);
    }

    /// Time since the last API call completed (whether the prompt cache is likely still
    /// warm), `None` before the first call.
    pub fn since_last_api_completion(&self) -> Option<Duration> {
        self.last_api_completion().map(|at| at.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bs7_model_override_is_a_settable_mirror_defaulting_to_none() {
        let state = Bootstrap::new(Path::new("/"));
        assert_eq!(state.main_loop_model_override(), None);
        state.set_main_loop_model_override(Some("opus"));
        assert_eq!(state.main_loop_model_override().as_deref(), Some("opus"));
        // FX-2 clears the mirror when app state clears the model.
        state.set_main_loop_model_override(None);
        assert_eq!(state.main_loop_model_override(), None);
    }

    #[test]
    fn bs2_configuration_facts_round_trip() {
        let state = Bootstrap::new(Path::new("/"));
        assert_eq!(&*state.client_type(), DEFAULT_CLIENT_TYPE);
        assert!(!state.is_interactive());
        state.set_interactive(true);
        state.set_client_type("sdk-py");
        state.set_initial_main_loop_model(Some("sonnet"));
        state.set_flag_settings_path(Some(PathBuf::from("/tmp/flags.json")));
        assert!(state.is_interactive());
        assert_eq!(&*state.client_type(), "sdk-py");
        assert_eq!(state.initial_main_loop_model().as_deref(), Some("sonnet"));
        assert_eq!(
            state.flag_settings_path().as_deref(),
            Some(Path::new("/tmp/flags.json"))
        );
    }

    #[test]
    fn bs2_api_request_tracking_records_the_latest_request() {
        let state = Bootstrap::new(Path::new("/"));
        assert_eq!(state.since_last_api_completion(), None);
        state.set_last_api_request(Some(Arc::from("{\"model\":\"a\"}")));
        state.set_last_api_request(Some(Arc::from("{\"model\":\"b\"}")));
        state.set_last_request_id(Some("req_2"));
        let before = Instant::now();
        state.mark_api_completion(before);
        assert_eq!(
            state.last_api_request().as_deref(),
            Some("{\"model\":\"b\"}")
        );
        assert_eq!(state.last_request_id().as_deref(), Some("req_2"));
        assert_eq!(state.last_api_completion(), Some(before));
        assert!(state.since_last_api_completion().is_some());
    }
}
