//! The global config file (`config.json`): view flags and per-project cost slots.
//!
//! The reference agent keeps many more keys in this file (start-up counters, tips, OAuth
//! account data); strata types the ones it uses and keeps every other key untouched and
//! in order, at the top level, inside `projects` entries and inside model-usage entries,
//! so both programs can share one file.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::settings::KeyOrder;
use crate::settings::ordered::known_keys;

/// The top-level keys of `config.json` that are user-facing flags (as opposed to data
/// strata records, such as `projects`). `strata config` routes these keys to this file.
pub const FLAG_KEYS: [&str; 4] = [
    "verbose",
    "showExpandedTodos",
    "showSpinnerTree",
    "fileCheckpointingEnabled",
];

/// The global config file.
///
/// ```
/// use strata_protocol::global_config::GlobalConfig;
/// let text = r#"{"numStartups":3,"verbose":true,"projects":{"/p":{"lastCost":0.5,"x":1}}}"#;
/// let cfg: GlobalConfig = serde_json::from_str(text).unwrap();
/// assert_eq!(cfg.verbose, Some(true));
/// assert_eq!(cfg.project("/p").and_then(|p| p.last_cost), Some(0.5));
/// assert_eq!(serde_json::to_string(&cfg).unwrap(), text);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GlobalConfig {
    /// `verbose`: show full tool output (FX-4).
    pub verbose: Option<bool>,
    /// `showExpandedTodos`: the task list is expanded (FX-3).
    pub show_expanded_todos: Option<bool>,
    /// `showSpinnerTree`: the teammate tree is expanded (FX-3).
    pub show_spinner_tree: Option<bool>,
    /// `fileCheckpointingEnabled`: keep pre-edit backups for rewind.
    pub file_checkpointing_enabled: Option<bool>,
    /// `projects`: per-project data keyed by the project root path.
    pub projects: Option<IndexMap<String, ProjectConfig>>,
    /// Every key this version does not know, in file order, exactly as read.
    pub extra: Map<String, Value>,
    /// The order keys were read in; ignored by equality.
    pub key_order: KeyOrder,
}

known_keys!(GlobalConfig, "a global config object", {
    "verbose" => verbose,
    "showExpandedTodos" => show_expanded_todos,
    "showSpinnerTree" => show_spinner_tree,
    "fileCheckpointingEnabled" => file_checkpointing_enabled,
    "projects" => projects,
});

/// One project's entry in `projects`: the cost slot of its last session (SP-4), restored
/// when that session is resumed. Durations are milliseconds; costs are US dollars.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProjectConfig {
    /// `lastCost`: total cost of the last session.
    pub last_cost: Option<f64>,
    /// `lastAPIDuration`: time spent waiting for the model.
    pub last_api_duration: Option<f64>,
    /// `lastToolDuration`: time spent running tools.
    pub last_tool_duration: Option<f64>,
    /// `lastDuration`: wall-clock duration.
    pub last_duration: Option<f64>,
    /// `lastLinesAdded`.
    pub last_lines_added: Option<u64>,
    /// `lastLinesRemoved`.
    pub last_lines_removed: Option<u64>,
    /// `lastTotalInputTokens`.
    pub last_total_input_tokens: Option<u64>,
    /// `lastTotalOutputTokens`.
    pub last_total_output_tokens: Option<u64>,
    /// `lastTotalCacheCreationInputTokens`.
    pub last_total_cache_creation_input_tokens: Option<u64>,
    /// `lastTotalCacheReadInputTokens`.
    pub last_total_cache_read_input_tokens: Option<u64>,
    /// `lastModelUsage`: usage per model id.
    pub last_model_usage: Option<IndexMap<String, ModelUsage>>,
    /// `lastSessionId`: the session these totals belong to.
    pub last_session_id: Option<String>,
    /// Every key this version does not know, in file order, exactly as read.
    pub extra: Map<String, Value>,
    /// The order keys were read in; ignored by equality.
    pub key_order: KeyOrder,
}

known_keys!(ProjectConfig, "a project config object", {
    "lastCost" => last_cost,
    "lastAPIDuration" => last_api_duration,
    "lastToolDuration" => last_tool_duration,
    "lastDuration" => last_duration,
    "lastLinesAdded" => last_lines_added,
    "lastLinesRemoved" => last_lines_removed,
    "lastTotalInputTokens" => last_total_input_tokens,
    "lastTotalOutputTokens" => last_total_output_tokens,
    "lastTotalCacheCreationInputTokens" => last_total_cache_creation_input_tokens,
    "lastTotalCacheReadInputTokens" => last_total_cache_read_input_tokens,
    "lastModelUsage" => last_model_usage,
    "lastSessionId" => last_session_id,
});

/// One model's usage inside `lastModelUsage`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelUsage {
    /// `inputTokens`.
    pub input_tokens: Option<u64>,
    /// `outputTokens`.
    pub output_tokens: Option<u64>,
    /// `cacheReadInputTokens`.
    pub cache_read_input_tokens: Option<u64>,
    /// `cacheCreationInputTokens`.
    pub cache_creation_input_tokens: Option<u64>,
    /// `webSearchRequests`.
    pub web_search_requests: Option<u64>,
    /// `costUSD`.
    pub cost_usd: Option<f64>,
    /// Every key this version does not know, in file order, exactly as read.
    pub extra: Map<String, Value>,
    /// The order keys were read in; ignored by equality.
    pub key_order: KeyOrder,
}

known_keys!(ModelUsage, "a model usage object", {
    "inputTokens" => input_tokens,
    "outputTokens" => output_tokens,
    "cacheReadInputTokens" => cache_read_input_tokens,
    "cacheCreationInputTokens" => cache_creation_input_tokens,
    "webSearchRequests" => web_search_requests,
    "costUSD" => cost_usd,
});

impl GlobalConfig {
    /// The entry of the project at `root`, if any.
    pub fn project(&self, root: &str) -> Option<&ProjectConfig> {
        self.projects.as_ref().and_then(|p| p.get(root))
    }

    /// The entry of the project at `root`, created empty when missing.
    ///
    /// ```
    /// use strata_protocol::global_config::GlobalConfig;
    /// let mut cfg = GlobalConfig::default();
    /// cfg.project_mut("/p").last_session_id = Some("abc".into());
    /// assert_eq!(cfg.project("/p").unwrap().last_session_id.as_deref(), Some("abc"));
    /// ```
    pub fn project_mut(&mut self, root: &str) -> &mut ProjectConfig {
        self.projects
            .get_or_insert_default()
            .entry(root.to_owned())
            .or_default()
    }
}
