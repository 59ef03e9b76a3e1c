//! The one place where errors become user messages and exit codes.
//!
//! Commands return `anyhow::Result`. A [`Failure`] anywhere in the chain carries the exit
//! code and the exact one-line message the user sees; any other error is reported with
//! its context chain on one line and exit code 1.

use std::fmt;
use std::process::ExitCode;

/// A failure whose message and exit code are chosen by the command.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The process exit code.
    pub(crate) code: u8,
    /// The one-line message printed to stderr.
    pub(crate) message: String,
}

impl Failure {
    /// Exit code 1: the command could not do what was asked (bad file, unknown id, …).
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }

    /// Exit code 2: the command line or the environment is wrong (usage, missing setup).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }

    /// Exit with `code` and print nothing more: the command already told the user (a
    /// headless run whose output ends with an error `result`).
    pub(crate) fn reported(code: u8) -> Self {
        Self {
            code,
            message: String::new(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Prints the outcome of a command and returns its exit code.
#[allow(clippy::print_stderr)] // this is the one place that talks to the user about errors
pub(crate) fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if let Some(failure) = err.downcast_ref::<Failure>() {
                if !failure.message.is_empty() {
                    eprintln!("{}", failure.message);
                }
                return ExitCode::from(failure.code);
            }
            eprintln!("strata: {err:#}");
            ExitCode::from(1)
        }
    }
}
