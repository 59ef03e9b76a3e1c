//! The process supervisor as a binary of its own, for programs that embed strata's agent
//! without re-executing themselves, and for this crate's tests (which cannot re-execute
//! a test harness as a supervisor). See `strata_agent::procs` for what it does.

fn main() -> std::process::ExitCode {
    strata_agent::procs::run_if_supervisor().unwrap_or_else(|| {
        #[allow(clippy::print_stderr)] // the only thing this binary says
        {
            eprintln!(
                "strata-supervise is started by strata to run one tool command (first \
                 argument {}); it is not meant to be run by hand",
                strata_agent::procs::SUPERVISE_ARG
            );
        }
        std::process::ExitCode::from(2)
    })
}
