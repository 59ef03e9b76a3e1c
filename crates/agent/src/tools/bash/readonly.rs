//! Which command lines only read: allowed in plan mode and safe to run in parallel.
//!
//! The list is deliberately short and every entry is a program that cannot write files
//! or run other programs with the arguments allowed here. A line is read-only only if
//! every simple command in it (including substitutions) is, and none redirects output
//! into a file. Anything unknown is "not read-only", which in plan mode means denied and
//! elsewhere means the normal permission check: a missed entry costs a prompt, a wrong
//! entry would cost a file.

use super::shell::{SimpleCommand, split_command};

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

/// `find` actions that write, delete or run programs.
const FIND_WRITES: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Whether every command of `line` only reads.
pub fn is_read_only_command(line: &str) -> bool {
    let cmds = split_command(line);
    !cmds.is_empty() && cmds.iter().all(is_read_only_simple)
}

fn is_read_only_simple(cmd: &SimpleCommand) -> bool {
    if cmd.writes_file || cmd.assignments > 0 {
        return false;
    }
    let argv = cmd.argv();
    let Some(program) = argv.first() else {
        return false;
    };
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
