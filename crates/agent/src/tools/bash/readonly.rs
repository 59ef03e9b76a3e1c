//! Which command lines only read: allowed in plan mode and safe to run in parallel.
//!
//! The list is deliberately short and every entry is a program that cannot write files
//! or run other programs with the arguments allowed here. A line is read-only only if
//! every command it runs (see [`analysis`](super::analysis): substitutions, and what
//! wrappers, `xargs`, `find -exec` and `sh -c` strings run) is, and none redirects
//! output into a file. A few wrappers that only change how a command runs (`timeout`,
//! `nice`, `xargs`, …) are read-only when what they run is: `timeout 5 cat x` is,
//! `timeout 5 rm x` is not. A command whose program is unknown is not read-only.
//! Anything unknown is "not read-only", which in plan mode means denied and elsewhere
//! means the normal permission check: a missed entry costs a prompt, a wrong entry
//! would cost a file.

use super::analysis::{Run, analyze};

/// Programs that only read, whatever their arguments.
const READ_ONLY_PROGRAMS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "which",
    "type",
    "file",
    "stat",
    "du",
    "df",
    "tree",
    "diff",
    "cmp",
    "uniq",
    "cut",
    "tr",
    "date",
    "whoami",
    "id",
    "uname",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "true",
    "false",
    "test",
    "[",
    "nl",
    "sha256sum",
    "sha1sum",
    "md5sum",
    "jq",
    "column",
    "seq",
];

/// `git` subcommands that only read (when given directly after `git`).
const READ_ONLY_GIT: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "describe",
    "shortlog",
    "grep",
];

/// Wrappers that neither write nor change who runs the command, when the command they
/// run was found (it is judged on its own).
const READ_ONLY_WRAPPERS: &[&str] = &[
    "timeout", "nice", "time", "command", "builtin", "env", "stdbuf", "xargs", "find", "sh",
    "bash", "dash", "zsh", "eval",
];

/// `find` actions that write or delete (`-exec` and friends run a command, which is
/// judged on its own).
const FIND_WRITES: &[&str] = &["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];

/// Whether every command of `line` only reads.
pub fn is_read_only_command(line: &str) -> bool {
    let analysis = analyze(line);
    let parts = super::shell::split_command(line);
    // A program listed here may still write by its operands (`uniq IN OUT`): what the
    // write analysis finds decides.
    let written = super::analysis::writes::writes(&analysis);
    !parts.is_empty()
        && analysis.unknown.is_empty()
        && written.targets.is_empty()
        && written.unknown.is_empty()
        && parts
            .iter()
            .all(|p| !p.writes_file && p.assignments == 0 && !p.argv().is_empty())
        && analysis
            .runs
            .iter()
            .filter(|r| !r.view)
            .all(is_read_only_run)
}

fn is_read_only_run(run: &Run) -> bool {
    if run.writes_file {
        return false;
    }
    let argv = &run.words;
    let Some(program) = argv.first() else {
        return false;
    };
    if run.runs_others && READ_ONLY_WRAPPERS.contains(&program.as_str()) {
        // `find` still must not delete or write files of its own.
        return program != "find" || !argv.iter().any(|a| FIND_WRITES.contains(&a.as_str()));
    }
    let args = &argv[1..];
    match program.as_str() {
        "sort" => !args
            .iter()
            .any(|a| a.starts_with("-o") || a.starts_with("--output")),
        "find" => !args.iter().any(|a| FIND_WRITES.contains(&a.as_str())),
        // `rg --pre` runs a program on every file.
        "rg" => !args.iter().any(|a| a.starts_with("--pre")),
        "git" => {
            args.first()
                .is_some_and(|sub| READ_ONLY_GIT.contains(&sub.as_str()))
                && !args
                    .iter()
                    .any(|a| a.starts_with("--output") || a == "--ext-diff")
        }
        p => READ_ONLY_PROGRAMS.contains(&p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_reads_are_read_only() {
        for line in [
            "ls -la",
            "cat a.txt | grep foo | wc -l",
            "git status && git diff HEAD~1",
            "find . -name '*.rs'",
            "rg -n todo src 2>/dev/null",
            "echo $(pwd)",
            "timeout 5 cat x",
            "find . -name '*.rs' -exec grep -l todo {} +",
            "xargs grep -l todo",
        ] {
            assert!(is_read_only_command(line), "{line}");
        }
    }

    #[test]
    fn anything_that_writes_or_runs_programs_is_not() {
        for line in [
            "echo hi > x",
            "ls && rm x",
            "find . -delete",
            "find . -exec rm {} ;",
            "sort -o out in",
            "git commit -m x",
            "git -c core.pager=x log",
            "cat $(touch y)",
            "timeout 5 rm x",
            "nice -n 5 touch y",
            "env rm x",
            "xargs -0 rm",
            "sh -c 'rm x'",
            "find . -exec grep -q x {} \\; -delete",
            "$X",
            "echo x | sh",
            "/bin/rm x",
            "cd src",
            "FOO=1 ls",
            "xargs rm",
            "",
            "npm test",
        ] {
            assert!(!is_read_only_command(line), "{line}");
        }
    }
}
