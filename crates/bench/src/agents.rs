//! The real-agents half of the `tasks` workload (issue 11): 1,000 background sub-agents
//! through a whole engine — started by the main agent's Agent calls, each reading a file
//! and answering, finished, viewed (its conversation loaded from its transcript) and
//! released, then evicted (SL-3) — with the resident memory before, at the peak and after.
//!
//! ```text
//! cargo run --release -p strata-bench -- tasks [--agents N] [--batch N] [--file-kb N]
//! ```
//!
//! The model is played back in process (the replay provider, one recorded response per
//! request chosen by who asks: the main agent gets a batch of Agent calls, each sub-agent
//! a Read of a file then its answer), so everything else is what a session runs: the
//! query loop, the tools, transcripts, the root store's task map, notifications, the held
//! back result. After each batch the main conversation is compacted (`/compact`, as a
//! long session does), so what stays is what the agents leave behind: memory must come
//! back to within 10% of the baseline once they are evicted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use strata_agent::engine::{Engine, EngineHandles, EngineOptions, EventSink, SdkOptions};
use strata_agent::provider::{EventStream, ModelRequest, Provider, ReplayProvider};
use strata_protocol::message::{
    AssistantMessage, ContentBlock, MessageContent, Role, StopReason, Usage,
};
use strata_protocol::sdk::SdkMessage;
use strata_state::tasks::TaskKind;
use tokio_util::sync::CancellationToken;

use crate::measure::{peak_rss_mb, reset_peak_rss, rss_mb};

/// What marks a sub-agent's request (the general-purpose type's prompt).
const SUBAGENT: &str = "You are a sub-agent of strata";
/// What marks a batch prompt.
const BATCH: &str = "BENCH-BATCH";

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let agents = crate::store::flag(args, "--agents")?.unwrap_or(1_000);
    let batch = crate::store::flag(args, "--batch")?
        .unwrap_or(strata_agent::agents::MAX_RUNNING_AGENTS)
        .min(strata_agent::agents::MAX_RUNNING_AGENTS);
    let file_kb = crate::store::flag(args, "--file-kb")?.unwrap_or(64);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(workload(agents, batch, file_kb))
}

async fn workload(agents: usize, batch: usize, file_kb: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".git"))?;
    let line = "the quick brown fox jumps over the lazy dog, again and again\n";
    std::fs::write(
        project.join("big.txt"),
        line.repeat(file_kb * 1024 / line.len()),
    )?;
    let engine = Engine::open(EngineOptions {
        model: Some("bench-model".into()),
        sdk: SdkOptions {
            hold_result_for_agents: true,
            ..SdkOptions::default()
        },
        ..EngineOptions::new(
            project.clone(),
            dir.path().join("config"),
            EngineHandles::private(),
            Arc::new(Routed { batch }),
            Arc::new(Quiet),
        )
    })
    .await?;
    // Long enough for every agent of a batch to be viewed before it is due, short
    // enough not to make the run wait long at its end.
    let grace = Duration::from_secs(5);
    engine.agents().set_eviction_grace(grace);

    // Warm up: a quarter of the workload through every phase, so code pages, thread
    // stacks, the runtime's and the allocator's caches are in their steady state before
    // the baseline.
    lifecycle(&engine, (agents / 4).max(batch), batch, grace).await?;
    release_free_memory();
    let baseline = rss_mb().unwrap_or(0.0);
    let peak_is_own = reset_peak_rss();
    let started = Instant::now();
    lifecycle(&engine, agents, batch, grace).await?;
    let elapsed = started.elapsed();
    let peak = peak_rss_mb().filter(|_| peak_is_own).unwrap_or(0.0);
    release_free_memory();
    let after = rss_mb().unwrap_or(0.0);
    let state = engine.store().get();
    let main_messages = state.messages.len();
    let main_kb = state
        .messages
        .iter()
        .map(|m| serde_json::to_string(&**m).map_or(0, |s| s.len()))
        .sum::<usize>() as f64
        / 1024.0;
    drop(state);
    let round = |mb: f64| (mb * 10.0).round() / 10.0;
    println!(
        "{}",
        json!({
            "workload": "tasks",
            "kind": "real_agents",
            "agents": agents,
            "concurrent": batch,
            "file_kb_per_agent": file_kb,
            "seconds": (elapsed.as_secs_f64() * 10.0).round() / 10.0,
            "baseline_rss_mb": round(baseline),
            "peak_rss_mb": round(peak),
            "after_eviction_rss_mb": round(after),
            "after_vs_baseline_pct": if baseline > 0.0 { ((after / baseline - 1.0) * 1000.0).round() / 10.0 } else { 0.0 },
            "agents_held_after": engine.agents().held(),
            "main_conversation_messages": main_messages,
            "main_conversation_json_kb": main_kb.round(),
        })
    );
    engine.close().await?;
    Ok(())
}

/// `agents` background agents, `batch` at a time, through start → finish → view →
/// release → evict.
async fn lifecycle(
    engine: &Engine,
    agents: usize,
    batch: usize,
    grace: Duration,
) -> anyhow::Result<()> {
    let mut left = agents;
    let mut viewed = std::collections::HashSet::new();
    while left > 0 {
        let n = left.min(batch);
        // The result is held back until the batch's agents have ended.
        let result = engine
            .run_prompt(
                strata_protocol::message::Message::user_text(format!("{BATCH} {n}")),
                CancellationToken::new(),
            )
            .await;
        anyhow::ensure!(!result.is_error, "a batch failed: {:?}", result.errors);
        left -= n;
        // View each finished agent (its conversation loaded from its transcript) and
        // leave the view (released: messages dropped, eviction scheduled).
        let ids: Vec<String> = engine
            .store()
            .get()
            .tasks
            .tasks
            .iter()
            .filter(|t| matches!(t.kind, TaskKind::LocalAgent(_)) && t.status.is_terminal())
            .map(|t| t.id.to_string())
            .filter(|id| !viewed.contains(id))
            .collect();
        anyhow::ensure!(
            ids.len() == n,
            "{} of the batch's {n} agents ended",
            ids.len()
        );
        for id in ids {
            viewed.insert(id.clone());
            engine.view_agent(&id).map_err(anyhow::Error::msg)?;
            engine.leave_agent_view();
        }
        // A long session compacts (issue 13): what the main conversation kept of the
        // batch (its calls, launches and notifications) becomes a summary, so what is
        // measured is what the agents leave behind.
        let compacted = engine
            .run_prompt(
                strata_protocol::message::Message::user_text("/compact"),
                CancellationToken::new(),
            )
            .await;
        anyhow::ensure!(
            !compacted.is_error,
            "compaction failed: {:?}",
            compacted.errors
        );
    }
    // The grace period passes and the sweeps run.
    let deadline = Instant::now() + grace * 4;
    while !engine.store().get().tasks.tasks.is_empty() || engine.agents().held() > 0 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "eviction left {} tasks",
            engine.store().get().tasks.tasks.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The model, played back: one recorded response per request, chosen by who asks.
#[derive(Debug)]
struct Routed {
    batch: usize,
}

impl Provider for Routed {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let response = if request.system.contains(SUBAGENT) {
            if request.messages.len() == 1 {
                answer(vec![ContentBlock::tool_use(
                    format!("toolu_read_{}", uuid()),
                    "Read",
                    json!({"file_path": "big.txt"}),
                )])
            } else {
                answer(vec![ContentBlock::text("done: the file is read")])
            }
        } else {
            match last_text(&request).and_then(|t| t.strip_prefix(BATCH).map(str::to_owned)) {
                Some(n) => {
                    let n: usize = n.trim().parse().unwrap_or(self.batch);
                    answer(
                        (0..n)
                            .map(|i| {
                                ContentBlock::tool_use(
                                    format!("toolu_agent_{}", uuid()),
                                    "Agent",
                                    json!({
                                        "description": format!("bench agent {i}"),
                                        "prompt": format!("Read big.txt and say done ({i})"),
                                        "run_in_background": true,
                                    }),
                                )
                            })
                            .collect(),
                    )
                }
                None => answer(vec![ContentBlock::text("ok")]),
            }
        };
        ReplayProvider::from_messages("bench", vec![response]).stream(request, cancel)
    }
}

fn last_text(request: &ModelRequest) -> Option<String> {
    let last = request.messages.last()?;
    if last.role != Role::User {
        return None;
    }
    match &last.content {
        MessageContent::Text(t) => Some(t.clone()),
        // The last text: a prompt after a compaction's summary is merged into one message.
        MessageContent::Blocks(blocks) => blocks
            .iter()
            .rev()
            .find_map(ContentBlock::as_text)
            .map(str::to_owned),
    }
}

fn answer(content: Vec<ContentBlock>) -> AssistantMessage {
    let uses_tools = content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolUse(_)));
    AssistantMessage {
        model: "bench-model".into(),
        id: format!("msg_{}", uuid()),
        content,
        stop_reason: Some(if uses_tools {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        }),
        stop_sequence: None,
        usage: Usage {
            input_tokens: 100,
            output_tokens: 20,
            ..Usage::default()
        },
        extra: Default::default(),
    }
}

fn uuid() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The stream goes nowhere.
struct Quiet;

impl EventSink for Quiet {
    fn emit(&self, _message: SdkMessage) {}
}

/// Asks glibc to hand freed pages back to the system (see `tasks.rs`).
fn release_free_memory() {
    crate::tasks::release_free_memory();
}
