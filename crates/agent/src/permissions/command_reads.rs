//! What a read-only command reads: the files a Bash line that the analysis classes
//! read-only ([`is_read_only_command`](crate::tools::bash::readonly::is_read_only_command))
//! may open, so that it can be decided like a Read of those files (issue 25 item 7).
//!
//! `ls`, `grep -r foo src` or `git log` inside the project read nothing the Read tool
//! could not read without asking, and plan mode exists to let the model explore: asking
//! for them (and, headless, refusing them) made plan mode useless in `-p` runs. But a
//! read-only command can still read a secret (`cat ~/.ssh/id_ed25519`), so it is allowed
//! without a prompt only when every file it can name is known and lies inside the
//! working or readable directories; anything this module cannot see through — an
//! expansion, an input redirection or here-document, an option value glued to its flag,
//! a `~user` — leaves the call to the normal check (fail closed).

use std::path::{Path, PathBuf};

use super::matching::CommandLine;

/// The paths `line` may read, resolved against `cwd` (the working directory itself for
/// a program that reads it by default, such as `ls` or `grep -r`), or `None` when they
/// cannot all be known before it runs.
///
/// Every operand counts as a path, including a `grep` pattern or an `echo` word: a word
/// that is not a file resolves inside the working directory anyway, so treating it as
/// one can only make the call ask more, never less.
pub(crate) fn paths_read(
    line: &CommandLine,
    cwd: &Path,
    home: Option<&Path>,
) -> Option<Vec<PathBuf>> {
    // Input redirections and here-documents are not in the analysis (it keeps output
    // redirections only): any `<` makes the files read unknown.
    if line.whole.contains('<') || !line.analysis.unknown.is_empty() {
        return None;
    }
    let mut paths = vec![cwd.to_path_buf()];
    for run in &line.analysis.runs {
        if run.appended || run.placeholder.is_some() {
            return None;
        }
        for (word, dynamic) in run.words.iter().zip(&run.dynamic).skip(1) {
            if *dynamic {
                return None;
            }
            if let Some(path) = operand_path(word, cwd, home)? {
                paths.push(path);
            }
        }
    }
    Some(paths)
}

/// The path an operand names: `Some(None)` for an option that names none (`-la`,
/// `--color=auto`), `None` when it cannot be told.
fn operand_path(word: &str, cwd: &Path, home: Option<&Path>) -> Option<Option<PathBuf>> {
    let value = if let Some(option) = word.strip_prefix('-') {
        match option.split_once('=') {
            // `--file=/etc/x`: the value may be a file.
            Some((_, value)) => value,
            // `-f/etc/x`: a value glued to a short option cannot be told from flags.
            None if option.contains('/') || option.contains('~') => return None,
            None => return Some(None),
        }
    } else {
        word
    };
    if value.is_empty() {
        return Some(None);
    }
    let path = if value == "~" {
        home?.to_path_buf()
    } else if let Some(rest) = value.strip_prefix("~/") {
        home?.join(rest)
    } else if value.starts_with('~') {
        // `~user/…`: another user's home, not resolved here.
        return None;
    } else {
        cwd.join(value)
    };
    Some(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Option<Vec<String>> {
        paths_read(
            &CommandLine::new(line),
            Path::new("/p/src"),
            Some(Path::new("/home/u")),
        )
        .map(|v| v.iter().map(|p| p.display().to_string()).collect())
    }

    #[test]
    fn operands_are_paths_against_the_working_directory() {
        assert_eq!(read("ls").unwrap(), ["/p/src"]);
        assert_eq!(
            read("ls -la ../docs").unwrap(),
            ["/p/src", "/p/src/../docs"]
        );
        assert_eq!(
            read("cat ~/.ssh/id_ed25519 /etc/passwd").unwrap(),
            ["/p/src", "/home/u/.ssh/id_ed25519", "/etc/passwd"]
        );
        assert_eq!(
            read("grep --file=/etc/x foo").unwrap(),
            ["/p/src", "/etc/x", "/p/src/foo"]
        );
    }

    #[test]
    fn what_cannot_be_seen_before_it_runs_is_unknown() {
        for line in [
            "cat < /etc/shadow",
            "cat <<EOF\nx\nEOF",
            "cat $HOME/.ssh/id_rsa",
            "cat \"$(echo /etc/passwd)\"",
            "ls ~root",
            "grep -f/etc/shadow x",
            "cat *.txt",
            "find . -name x | xargs cat",
        ] {
            assert_eq!(read(line), None, "{line}");
        }
    }
}
