//! Printing a command's output to stdout.
//!
//! A reader that closes the pipe early (`strata sessions show … | head`) has what it
//! wanted: that is not an error, and it must not become a panic (which `print!` turns a
//! write error into). Every subcommand prints through here.

use std::io::{self, Write};

/// Writes `text` to stdout as it is; a closed pipe counts as success.
pub(crate) fn print(text: &str) -> anyhow::Result<()> {
    quiet_pipe(write_all(text.as_bytes()))
}

/// Writes `text` and a newline to stdout; a closed pipe counts as success.
pub(crate) fn println(text: &str) -> anyhow::Result<()> {
    quiet_pipe(write_all(text.as_bytes()).and_then(|()| write_all(b"\n")))
}

fn write_all(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// Ignores a closed pipe (the reader has what it wanted); other errors are real.
pub(crate) fn quiet_pipe(result: io::Result<()>) -> anyhow::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_success_and_other_errors_are_not() {
        assert!(quiet_pipe(Err(io::ErrorKind::BrokenPipe.into())).is_ok());
        assert!(quiet_pipe(Err(io::ErrorKind::PermissionDenied.into())).is_err());
        assert!(quiet_pipe(Ok(())).is_ok());
    }
}
