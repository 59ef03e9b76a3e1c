//! Programs that run their arguments as a command (`sudo`, `env`, `timeout 5`, `nice -n
//! 5`, …): where in their arguments the command they run starts.
//!
//! Finding it means skipping the wrapper's own options exactly: `timeout -s KILL 5 rm`
//! runs `rm`, and reading `KILL` as the program would let a deny rule on `rm` miss. So
//! each wrapper lists which short and long options take a value, and an option that is
//! not listed (or any word that is only known when it runs) makes the command
//! [unknown](WrapError) rather than a guess. Long options may be abbreviated as
//! `getopt_long` allows (`--sig KILL`). These wrappers stop reading options at their
//! first operand, as the real ones do, so options after the command are its own.

use super::shell::is_assignment;

/// How one wrapper reads its arguments.
pub(crate) struct Wrapper {
    /// Program names (base names) it applies to.
    pub(crate) names: &'static [&'static str],
    /// Short options that take a value, attached (`-n5`) or as the next word.
    short_value: &'static str,
    /// Short options that take a value only when attached (`xargs -i{}`).
    short_optional: &'static str,
    /// Short options without a value.
    short_flags: &'static str,
    /// Short options after which nothing is run (`command -v`, `sudo -l`).
    short_no_run: &'static str,
    /// Short options that make it run a shell (`sudo -s`): with no command, that shell
    /// reads its commands from input.
    short_shell: &'static str,
    /// Long options that take a value (`--signal KILL`, `--signal=KILL`).
    long_value: &'static [&'static str],
    /// Long options without a value (or with an optional one given only after `=`).
    long_flags: &'static [&'static str],
    /// Long options after which nothing is run.
    long_no_run: &'static [&'static str],
    /// Long options that make it run a shell.
    long_shell: &'static [&'static str],
    /// Operands before the command (`timeout DURATION`, `chroot DIR`).
    operands: usize,
    /// Whether `NAME=value` words may come before the command (`env`, `sudo`).
    assignments: bool,
    /// Whether `-N` (a number) is an option (`nice -5`).
    numeric: bool,
    /// The option (short, long) whose value is split into the command's words
    /// (`env -S 'rm x'`).
    split: Option<(char, &'static str)>,
    /// The option (short, long) that names a replacement string (`xargs -I {}`), and
    /// the string a short option without a value stands for (`-i` is `{}`).
    replace: Option<(char, char, &'static str)>,
}

const NONE: Wrapper = Wrapper {
    names: &[],
    short_value: "",
    short_optional: "",
    short_flags: "",
    short_no_run: "",
    short_shell: "",
    long_value: &[],
    long_flags: &[],
    long_no_run: &["help", "version"],
    long_shell: &[],
    operands: 0,
    assignments: false,
    numeric: false,
    split: None,
    replace: None,
};

/// The wrappers, from coreutils, util-linux, sudo and bash (`command`, `builtin`,
/// `exec`, `time`).
pub(crate) const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        names: &["command"],
        short_flags: "p",
        short_no_run: "vV",
        ..NONE
    },
    Wrapper {
        names: &[
            "builtin",
            "nohup",
            "busybox",
            "toybox",
            "eatmydata",
            "nocache",
        ],
        ..NONE
    },
    Wrapper {
        names: &["exec"],
        short_value: "a",
        short_flags: "cl",
        ..NONE
    },
    Wrapper {
        names: &["setsid"],
        short_flags: "cfw",
        long_flags: &["ctty", "fork", "wait"],
        ..NONE
    },
    Wrapper {
        names: &["nice"],
        short_value: "n",
        long_value: &["adjustment"],
        numeric: true,
        ..NONE
    },
    Wrapper {
        names: &["timeout"],
        short_value: "sk",
        short_flags: "v",
        long_value: &["signal", "kill-after"],
        long_flags: &["preserve-status", "foreground", "verbose"],
        operands: 1,
        ..NONE
    },
    Wrapper {
        names: &["env"],
        short_value: "uCS",
        short_flags: "i0v",
        long_value: &["unset", "chdir", "split-string"],
        long_flags: &[
            "ignore-environment",
            "null",
            "debug",
            "block-signal",
            "default-signal",
            "ignore-signal",
            "list-signal-handling",
        ],
        assignments: true,
        split: Some(('S', "split-string")),
        ..NONE
    },
    Wrapper {
        names: &["stdbuf"],
        short_value: "ioe",
        long_value: &["input", "output", "error"],
        ..NONE
    },
    Wrapper {
        names: &["time"],
        short_value: "fo",
        short_flags: "apqv",
        long_value: &["format", "output"],
        long_flags: &["append", "portability", "quiet", "verbose"],
        ..NONE
    },
    Wrapper {
        names: &["sudo"],
        short_value: "ugCDprtTUcR",
        short_flags: "AbEHknPSBN",
        short_no_run: "eKlvVh",
        short_shell: "si",
        long_value: &[
            "user",
            "group",
            "close-from",
            "chdir",
            "prompt",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "host",
            "chroot",
            "login-class",
        ],
        long_flags: &[
            "askpass",
            "background",
            "bell",
            "preserve-env",
            "preserve-groups",
            "set-home",
            "non-interactive",
            "stdin",
            "reset-timestamp",
            "no-update",
        ],
        long_no_run: &[
            "edit",
            "help",
            "list",
            "remove-timestamp",
            "validate",
            "version",
        ],
        long_shell: &["shell", "login"],
        assignments: true,
        ..NONE
    },
    Wrapper {
        names: &["doas"],
        short_value: "Cu",
        short_flags: "n",
        short_no_run: "L",
        short_shell: "s",
        ..NONE
    },
    Wrapper {
        names: &["ionice"],
        short_value: "cnpPu",
        short_flags: "t",
        long_value: &["class", "classdata", "pid", "pgid", "uid"],
        long_flags: &["ignore"],
        ..NONE
    },
    Wrapper {
        names: &["chrt"],
        short_value: "T",
        short_flags: "abdfiorRv",
        short_no_run: "mp",
        operands: 1,
        ..NONE
    },
    Wrapper {
        names: &["taskset"],
        short_flags: "ac",
        short_no_run: "p",
        long_flags: &["all-tasks", "cpu-list"],
        long_no_run: &["pid", "help", "version"],
        operands: 1,
        ..NONE
    },
    Wrapper {
        names: &["chroot"],
        long_value: &["userspec", "groups"],
        long_flags: &["skip-chdir"],
        operands: 1,
        ..NONE
    },
    Wrapper {
        names: &["xargs"],
        short_value: "adEILnPs",
        short_optional: "eil",
        short_flags: "0oprtx",
        long_value: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        long_flags: &[
            "null",
            "open-tty",
            "interactive",
            "no-run-if-empty",
            "verbose",
            "exit",
            "show-limits",
            "eof",
            "replace",
            "max-lines",
        ],
        replace: Some(('I', 'i', "replace")),
        ..NONE
    },
];

/// The wrapper named `program` (a base name), if it is one.
pub(crate) fn wrapper(program: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.names.contains(&program))
}

/// Why a wrapper's command cannot be found statically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WrapError {
    /// A word before the command is only known when it runs.
    Dynamic,
    /// An option this table does not know (it may take a value).
    UnknownOption(String),
    /// It runs a shell that reads its commands from input.
    ShellFromInput,
}

/// Where the command a wrapper runs starts, once its options are skipped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Wrapped {
    /// Index (into the wrapper's arguments) of the command's first word; `None` when it
    /// runs nothing (`env` alone, `command -v rm`).
    pub(crate) command: Option<usize>,
    /// Words given to split into the command (`env -S 'rm x'`), run before the rest.
    pub(crate) split: Option<String>,
    /// The replacement string its command's words are filled in with (`xargs -I X`).
    pub(crate) replace: Option<String>,
}

/// Reads `args` (the words after the wrapper's name, with whether each is dynamic) as
/// `w` does.
pub(crate) fn unwrap(w: &Wrapper, args: &[String], dynamic: &[bool]) -> Result<Wrapped, WrapError> {
    let mut out = Wrapped::default();
    let mut shell = false;
    let mut i = 0;
    // A value given as the next word: `None` at the end of the arguments.
    let next_value = |i: &mut usize| -> Result<Option<String>, WrapError> {
        *i += 1;
        if dynamic.get(*i).copied().unwrap_or(false) {
            return Err(WrapError::Dynamic);
        }
        Ok(args.get(*i).cloned())
    };
    while let Some(arg) = args.get(i) {
        if dynamic.get(i).copied().unwrap_or(false) {
            return Err(WrapError::Dynamic);
        }
        if arg == "--" {
            i += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--").filter(|l| !l.is_empty()) {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let is = |list: &[&str]| list.iter().any(|o| o.starts_with(name));
            if is(w.long_no_run) {
                return Ok(Wrapped::default());
            }
            if is(w.long_shell) {
                shell = true;
            } else if is(w.long_value) {
                let value = match inline {
                    Some(v) => Some(v),
                    None => next_value(&mut i)?,
                };
                take_value(w, &mut out, None, Some(name), value);
            } else if is(w.long_flags) {
                if let Some((_, _, long)) = w.replace
                    && long.starts_with(name)
                {
                    out.replace = Some(inline.unwrap_or_else(|| "{}".to_owned()));
                }
            } else {
                return Err(WrapError::UnknownOption(arg.clone()));
            }
            i += 1;
            continue;
        }
        let cluster = match arg.strip_prefix('-') {
            Some(c) if !c.is_empty() => c,
            _ if arg == "-" && w.assignments => {
                i += 1; // `env -`: an empty environment
                continue;
            }
            _ => break,
        };
        if w.numeric && cluster.chars().all(|c| c.is_ascii_digit()) {
            i += 1;
            continue;
        }
        for (at, c) in cluster.char_indices() {
            let rest = &cluster[at + c.len_utf8()..];
            if w.short_no_run.contains(c) {
                return Ok(Wrapped::default());
            }
            if w.short_shell.contains(c) {
                shell = true;
            } else if w.short_value.contains(c) {
                let value = if rest.is_empty() {
                    next_value(&mut i)?
                } else {
                    Some(rest.to_owned())
                };
                take_value(w, &mut out, Some(c), None, value);
                break;
            } else if w.short_optional.contains(c) {
                if let Some((_, bare, _)) = w.replace
                    && c == bare
                {
                    out.replace = Some(if rest.is_empty() { "{}" } else { rest }.to_owned());
                }
                break;
            } else if !w.short_flags.contains(c) {
                return Err(WrapError::UnknownOption(arg.clone()));
            }
        }
        i += 1;
    }
    for _ in 0..w.operands {
        if dynamic.get(i).copied().unwrap_or(false) {
            return Err(WrapError::Dynamic);
        }
        i += 1;
    }
    if w.assignments {
        // `env` takes any word with a `=` as an assignment, whatever its name
        // (`BASH_FUNC_f%%=() { … }` defines a function for a bash it runs).
        let env = w.names.contains(&"env");
        while args
            .get(i)
            .is_some_and(|a| is_assignment(a) || (env && a.contains('=')))
        {
            i += 1;
        }
    }
    if i < args.len() {
        out.command = Some(i);
    } else if shell {
        return Err(WrapError::ShellFromInput);
    }
    Ok(out)
}

/// Records an option's value when it is the split string or the replacement string.
fn take_value(
    w: &Wrapper,
    out: &mut Wrapped,
    short: Option<char>,
    long: Option<&str>,
    value: Option<String>,
) {
    let hit = |(s, l): (char, &str)| short == Some(s) || long.is_some_and(|n| l.starts_with(n));
    if w.split.is_some_and(hit) {
        out.split = value;
    } else if w.replace.is_some_and(|(s, _, l)| hit((s, l))) {
        out.replace = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(line: &str) -> Result<Option<String>, WrapError> {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        let w = wrapper(&words[0]).unwrap();
        let dynamic: Vec<bool> = words[1..].iter().map(|w| w.starts_with('$')).collect();
        unwrap(w, &words[1..], &dynamic).map(|r| r.command.map(|i| words[1 + i].clone()))
    }

    #[test]
    fn options_and_their_values_are_skipped() {
        let rm = Ok(Some("rm".to_owned()));
        for line in [
            "timeout 5 rm",
            "timeout -s KILL 5 rm",
            "timeout --signal=KILL -k 1 5 rm",
            "timeout --sig KILL 5 rm",
            "env -i A=1 rm",
            "env -u HOME -C /tmp rm",
            "env - rm",
            "nice -n 5 rm",
            "nice -5 rm",
            "nice --adjustment=3 rm",
            "sudo -u x rm",
            "sudo -E -H -u root -- rm",
            "sudo A=1 rm",
            "stdbuf -oL -e 0 rm",
            "xargs -0 -n 1 -I {} rm",
            "xargs -i rm",
            "exec -a name rm",
            "command -p rm",
            "chroot / rm",
            "time -p rm",
            "ionice -c 3 rm",
            "taskset 0x1 rm",
        ] {
            assert_eq!(start(line), rm, "{line}");
        }
    }

    #[test]
    fn no_command_and_unknowns() {
        assert_eq!(start("command -v rm"), Ok(None));
        assert_eq!(start("sudo -l rm"), Ok(None));
        assert_eq!(start("env"), Ok(None));
        assert_eq!(start("sudo -s"), Err(WrapError::ShellFromInput));
        assert_eq!(start("timeout $T rm"), Err(WrapError::Dynamic));
        assert!(matches!(
            start("timeout --frobnicate 5 rm"),
            Err(WrapError::UnknownOption(_))
        ));
        assert!(matches!(
            start("nice -Z rm"),
            Err(WrapError::UnknownOption(_))
        ));
    }
}
