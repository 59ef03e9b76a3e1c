//! `strata-bench`: the workloads whose targets the issues set, each printing one JSON
//! object per line so results can be compared across runs and machines.
//!
//! ```text
//! cargo run --release -p strata-bench -- store       # the store engine (issue: workspace and store)
//! cargo run --release -p strata-bench -- bootstrap   # bootstrap accumulators
//! cargo run --release -p strata-bench -- tasks       # task retain/release/evict memory (state, then 1,000 real agents)
//! cargo run --release -p strata-bench -- sessions    # resume, list, append
//! cargo build --release -p strata && cargo run --release -p strata-bench -- headless  # strata -p start-up and resume
//! cargo build --release -p strata && cargo run --release -p strata-bench -- tui       # the interactive UI (issue 12)
//! strata-bench tui --only launch [--codex PATH]     # launch → echo in tmux, beside Codex (issue 25)
//! cargo run --release -p strata-bench -- remote      # a turn while 100,000 entries go to NATS (issue 17)
//! ```
//!
//! Each workload lives in its own module; `measure` holds the shared timing helpers.

#![allow(clippy::print_stdout)] // printing results is this binary's job

mod agents;
mod bootstrap;
mod headless;
mod measure;
mod remote;
mod sessions;
mod sessions_append;
mod store;
mod tasks;
mod tui;
mod tui_launch;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(workload) = args.first() else {
        return usage();
    };
    let rest = &args[1..];
    let result = match workload.as_str() {
        "store" => store::run(rest),
        "bootstrap" => bootstrap::run(rest),
        "tasks" => tasks::run(rest),
        "sessions" => sessions::run(rest),
        "headless" => headless::run(rest),
        "tui" => tui::run(rest),
        "remote" => remote::run(rest),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("strata-bench {workload}: {err:#}");
            }
            ExitCode::FAILURE
        }
    }
}

#[allow(clippy::print_stderr)]
fn usage() -> ExitCode {
    eprintln!("usage: strata-bench <store|bootstrap|tasks|sessions|headless|tui|remote> [options]");
    ExitCode::from(2)
}
