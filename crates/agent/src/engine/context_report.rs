//! The `get_context_usage` report: how the context window is used, by category.
//!
//! The total is the exact count of the last response (app state `context_usage`) plus an
//! estimate of what was added since; the categories are estimates (four characters a
//! token) of what the next request sends: the system prompt without the memory files,
//! the tool definitions, the memory files, and the messages (the rest of the total).

use serde_json::{Value, json};

use super::Inner;
use crate::context_window::{estimate_text, window};
use crate::prompt::MemorySource;
use crate::query::LongSession;

pub(super) fn report(inner: &Inner) -> Value {
    let state = inner.store.get();
    let model = inner.model();
    let max = window(&state.settings, &model);
    let prompt = inner
        .long
        .prompt
        .current(state.tool_permission_context.mode);
    let memory = (prompt.memory_chars as u64).div_ceil(4);
    let system = estimate_text(&prompt.text).saturating_sub(memory);
    let tools: u64 = inner
        .tools
        .definitions()
        .iter()
        .map(|t| estimate_text(&t.description) + estimate_text(&t.input_schema.to_string()))
        .sum();
    let counted = inner.long.current_tokens(&state);
    let estimated_messages: u64 = state
        .messages
        .iter()
        .map(|m| crate::context_window::estimate_message(m))
        .sum();
    // Before the first response nothing was counted exactly: the estimate stands in.
    let total = if state.context_usage.tokens > 0 {
        counted
    } else {
        system + tools + memory + estimated_messages
    };
    let messages = total.saturating_sub(system + tools + memory);
    let free = max.saturating_sub(total);
    let threshold = LongSession::threshold(&state, &model);
    let memory_files: Vec<Value> = prompt
        .memory_files
        .iter()
        .map(|(path, source, chars)| {
            json!({
                "path": path.display().to_string(),
                "type": match source {
                    MemorySource::User => "User",
                    MemorySource::Project => "Project",
                    MemorySource::Local => "Local",
                    MemorySource::Import => "Import",
                },
                "tokens": (*chars as u64).div_ceil(4),
            })
        })
        .collect();
    json!({
        "totalTokens": total,
        "maxTokens": max,
        "rawMaxTokens": max,
        "percentage": if max == 0 { 0.0 } else { (total as f64 * 100.0 / max as f64).min(100.0) },
        "model": model,
        "categories": [
            {"name": "System prompt", "tokens": system},
            {"name": "System tools", "tokens": tools},
            {"name": "Memory files", "tokens": memory},
            {"name": "Messages", "tokens": messages},
            {"name": "Free space", "tokens": free},
        ],
        "memoryFiles": memory_files,
        "autoCompactThreshold": threshold,
        "isAutoCompactEnabled": threshold.is_some(),
    })
}
