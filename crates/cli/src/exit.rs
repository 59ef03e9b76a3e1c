//! The one place where errors become user messages and exit codes.
//!
//! Commands return `anyhow::Result`. A [`Failure`] anywhere in the chain carries the exit
//! code and the exact one-line message the user sees; any other error is reported with
//! its context chain on one line and exit code 1. The engine's typed errors become
//! failures here (`From<OpenError>`, `From<CloseError>`), so their exit codes are chosen
//! in this file only.

use std::fmt;
use std::process::ExitCode;

use strata_agent::engine::{CloseError, OpenError};

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

/// A session that could not be opened. Every kind is exit code 1 (the run could not do
/// what was asked; usage errors are caught before the engine opens), listed one by one so
/// that a new kind gets its code chosen here, not by accident.
impl From<OpenError> for Failure {
    fn from(err: OpenError) -> Self {
        match err {
            OpenError::NotFound(_)
            | OpenError::NothingToContinue { .. }
            | OpenError::Resume(_)
            | OpenError::Fork(_)
            | OpenError::NotATranscriptPath { .. }
            | OpenError::DisallowedRule(_)
            | OpenError::Mode(_)
            | OpenError::Root(_)
            | OpenError::Transcript(_)
            | OpenError::Task(_) => Self::failed(err.to_string()),
        }
    }
}

/// A session that did not close cleanly (its transcript may not be durable): exit code 1.
impl From<CloseError> for Failure {
    fn from(err: CloseError) -> Self {
        match err {
            CloseError::Sync(_) | CloseError::Task(_) => {
                Self::failed(format!("could not close the session cleanly: {err}"))
            }
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
