//! Cost and usage: pricing responses, the run's totals for the `result` line, and the
//! project's cost slot in `config.json` (SP-4).
//!
//! The slot is saved when a session closes and restored when the session it belongs to
//! is resumed; any other resumed session gets its totals from its transcript, so the
//! cost never silently resets (the reference agent's issue #78136).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};
use strata_bootstrap::{Bootstrap, CostSummary, ModelUsage as BootModelUsage, Usage as BootUsage};
use strata_config::GlobalConfigFile;
use strata_protocol::global_config::{ModelUsage as SlotUsage, ProjectConfig};
use strata_protocol::message::Usage;
use strata_session::usage::{ModelUsage, UsageReport, cost, price_for};

/// The bootstrap's usage counters for one response.
pub(crate) fn boot_usage(usage: &Usage) -> BootUsage {
    BootUsage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_input_tokens: usage.cache_read_tokens(),
        cache_creation_input_tokens: usage.cache_write_tokens(),
        web_search_requests: web_search_requests(usage),
    }
}

/// Server-side web searches a response made (`usage.server_tool_use.web_search_requests`).
fn web_search_requests(usage: &Usage) -> u64 {
    usage
        .extra
        .get("server_tool_use")
        .and_then(|s| s.get("web_search_requests"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// What one response of `model` cost.
pub(crate) fn response_cost(model: &str, usage: &Usage) -> f64 {
    let (price, _) = price_for(model);
    cost(
        price,
        &ModelUsage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_input_tokens: usage.cache_read_tokens(),
            cache_creation_input_tokens: usage.cache_write_tokens(),
            cache_creation_1h_input_tokens: usage.cache_write_1h_tokens(),
            requests: 1,
            cost_usd: 0.0,
        },
    )
}

/// Usage and cost of one run (one prompt to its `result`), by model.
#[derive(Debug, Default)]
pub(crate) struct RunTotals {
    by_model: BTreeMap<String, (BootUsage, f64)>,
}

impl RunTotals {
    pub(crate) fn add(&mut self, model: &str, usage: &Usage, cost_usd: f64) {
        let (total, cost) = self.by_model.entry(model.to_owned()).or_default();
        total.accumulate(&boot_usage(usage));
        *cost += cost_usd;
    }

    /// Adds another run's totals (a sub-agent's, counted in its caller's `result`).
    pub(crate) fn merge(&mut self, other: &RunTotals) {
        for (model, (usage, cost)) in &other.by_model {
            let (total, c) = self.by_model.entry(model.clone()).or_default();
            total.accumulate(usage);
            *c += cost;
        }
    }

    /// Every token of every response (input, cache read and creation, output): the
    /// `totalTokens` of an agent's result.
    pub(crate) fn total_tokens(&self) -> u64 {
        self.by_model
            .values()
            .map(|(u, _)| {
                u.input_tokens
                    + u.cache_creation_input_tokens
                    + u.cache_read_input_tokens
                    + u.output_tokens
            })
            .sum()
    }

    pub(crate) fn cost_usd(&self) -> f64 {
        // A fold from +0.0: `Sum` for floats starts at -0.0, which would print as
        // `-0.0` for a run that cost nothing.
        self.by_model.values().fold(0.0, |total, (_, c)| total + c)
    }

    /// The `result` line's `usage` object.
    pub(crate) fn usage_json(&self) -> Value {
        let mut total = BootUsage::default();
        for (u, _) in self.by_model.values() {
            total.accumulate(u);
        }
        json!({
            "input_tokens": total.input_tokens,
            "cache_creation_input_tokens": total.cache_creation_input_tokens,
            "cache_read_input_tokens": total.cache_read_input_tokens,
            "output_tokens": total.output_tokens,
            "server_tool_use": {"web_search_requests": total.web_search_requests},
            "service_tier": "standard",
        })
    }

    /// The `result` line's `modelUsage` object.
    pub(crate) fn model_usage_json(&self) -> Map<String, Value> {
        self.by_model
            .iter()
            .map(|(model, (u, c))| {
                (
                    model.clone(),
                    json!({
                        "inputTokens": u.input_tokens,
                        "outputTokens": u.output_tokens,
                        "cacheReadInputTokens": u.cache_read_input_tokens,
                        "cacheCreationInputTokens": u.cache_creation_input_tokens,
                        "webSearchRequests": u.web_search_requests,
                        "costUSD": c,
                    }),
                )
            })
            .collect()
    }
}

/// Saves the session's totals into the project's cost slot.
pub(crate) fn save_cost_slot(
    global: &GlobalConfigFile,
    project_root: &Path,
    summary: &CostSummary,
) -> Result<(), String> {
    let root = project_root.to_string_lossy().into_owned();
    let total = summary.total_usage();
    global
        .update(|config| {
            let slot = config.project_mut(&root);
            slot.last_cost = Some(summary.total_cost_usd);
            slot.last_api_duration = Some(millis(summary.api_duration));
            slot.last_tool_duration = Some(millis(summary.tool_duration));
            slot.last_duration = Some(millis(summary.wall_duration));
            slot.last_lines_added = Some(summary.lines_added);
            slot.last_lines_removed = Some(summary.lines_removed);
            slot.last_total_input_tokens = Some(total.input_tokens);
            slot.last_total_output_tokens = Some(total.output_tokens);
            slot.last_total_cache_creation_input_tokens = Some(total.cache_creation_input_tokens);
            slot.last_total_cache_read_input_tokens = Some(total.cache_read_input_tokens);
            slot.last_model_usage = Some(
                summary
                    .model_usage
                    .iter()
                    .map(|(model, m)| {
                        let mut usage = slot
                            .last_model_usage
                            .as_ref()
                            .and_then(|u| u.get(model).cloned())
                            .unwrap_or_default();
                        usage.input_tokens = Some(m.usage.input_tokens);
                        usage.output_tokens = Some(m.usage.output_tokens);
                        usage.cache_read_input_tokens = Some(m.usage.cache_read_input_tokens);
                        usage.cache_creation_input_tokens =
                            Some(m.usage.cache_creation_input_tokens);
                        usage.web_search_requests = Some(m.usage.web_search_requests);
                        usage.cost_usd = Some(m.cost_usd);
                        (model.clone(), usage)
                    })
                    .collect::<IndexMap<String, SlotUsage>>(),
            );
            slot.last_session_id = Some(summary.session_id.to_string());
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The totals to start a resumed session with: the project's slot when it belongs to
/// this session, else what its transcript records (SP-4).
pub(crate) fn restored_cost(
    slot: Option<&ProjectConfig>,
    session_id: uuid::Uuid,
    transcript: &UsageReport,
) -> CostSummary {
    if let Some(slot) =
        slot.filter(|s| s.last_session_id.as_deref() == Some(&session_id.to_string()))
    {
        return CostSummary {
            session_id,
            total_cost_usd: slot.last_cost.unwrap_or(0.0),
            api_duration: from_millis(slot.last_api_duration),
            api_duration_without_retries: from_millis(slot.last_api_duration),
            tool_duration: from_millis(slot.last_tool_duration),
            wall_duration: from_millis(slot.last_duration),
            lines_added: slot.last_lines_added.unwrap_or(0),
            lines_removed: slot.last_lines_removed.unwrap_or(0),
            model_usage: slot
                .last_model_usage
                .iter()
                .flatten()
                .map(|(model, u)| {
                    let usage = BootUsage {
                        input_tokens: u.input_tokens.unwrap_or(0),
                        output_tokens: u.output_tokens.unwrap_or(0),
                        cache_read_input_tokens: u.cache_read_input_tokens.unwrap_or(0),
                        cache_creation_input_tokens: u.cache_creation_input_tokens.unwrap_or(0),
                        web_search_requests: u.web_search_requests.unwrap_or(0),
                    };
                    (
                        model.clone(),
                        BootModelUsage {
                            usage,
                            cost_usd: u.cost_usd.unwrap_or(0.0),
                        },
                    )
                })
                .collect(),
        };
    }
    CostSummary {
        session_id,
        total_cost_usd: transcript.total_cost_usd,
        api_duration: Duration::ZERO,
        api_duration_without_retries: Duration::ZERO,
        tool_duration: Duration::ZERO,
        wall_duration: Duration::ZERO,
        lines_added: 0,
        lines_removed: 0,
        model_usage: transcript
            .by_model
            .iter()
            .map(|(model, u)| {
                let usage = BootUsage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    cache_read_input_tokens: u.cache_read_input_tokens,
                    cache_creation_input_tokens: u.cache_creation_input_tokens,
                    web_search_requests: 0,
                };
                (
                    model.clone(),
                    BootModelUsage {
                        usage,
                        cost_usd: u.cost_usd,
                    },
                )
            })
            .collect(),
    }
}

/// Restores `summary` into the bootstrap after switching to its session.
pub(crate) fn restore(bootstrap: &Bootstrap, summary: &CostSummary) {
    if let Err(e) = bootstrap.restore_cost(summary) {
        bootstrap.log_error(format!("cost of the resumed session not restored: {e}"));
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn from_millis(ms: Option<f64>) -> Duration {
    ms.filter(|m| m.is_finite() && *m >= 0.0)
        .map(|m| Duration::from_secs_f64(m / 1000.0))
        .unwrap_or_default()
}
