//! What a command line will run, as permission rules and the read-only check see it.
//!
//! Rules name programs (`Bash(rm:*)`), so they must be matched against what runs, not
//! against how the line spells it: `/bin/rm x`, `'rm' x`, `$'\x72m' x`, `timeout 5 rm
//! x`, `sudo -u u rm x`, `xargs rm`, `find . -exec rm {} \;` and `bash -c 'rm x'` all run
//! `rm`. [`analyze`] takes the simple commands of [`split_command`] (words after quote
//! removal) and lists every command they run: each simple command itself, then what
//! it runs through a wrapper (`tools/bash/wrappers.rs`), `xargs`, `find -exec`,
//! `parallel`, `watch`, `su -c`, a shell's `-c` string, `eval`, `trap` and `alias`
//! bodies (strings parsed again, at most [`MAX_DEPTH`] deep). `git`'s global options
//! are looked through too (`git -C x push` is `git push`), as a spelling for deny and
//! ask rules only.
//!
//! A command whose program cannot be known before it runs is reported as
//! [`Unknown`]: an expansion, substitution or glob in command position (`$X x`,
//! `$(echo rm) x`, `rm${IFS}x`, `/bin/r?`), `source` or `.` of a file, a shell that
//! reads its commands from input (`echo 'rm x' | sh`, a here-document into `sh`), a
//! wrapper option this module does not know, `xargs`/`find` placeholders in command
//! position. The permission check never allows such a command by a pattern rule and
//! denies it when a deny rule names a Bash command.
//!
//! **Decision: the hand-written lexer stays** (no `tree-sitter-bash`, no C build). It
//! was extended (ANSI-C quoting, which words are dynamic, unquoted globs and brace
//! expansion) and is proven on the bypass corpus in `tests/permissions_bypass.rs`
//! (every row in every permission mode) and its property test. What it cannot
//! classify ends up unknown or in a word no rule matches, so a gap costs a prompt or
//! a denial, not an allow.

mod in_place;
mod options;
mod runners;
pub mod writes;

use super::shell::{Redirect, SimpleCommand, split_command};
use super::wrappers::{self, WrapError};

/// How deep strings run by other commands (`bash -c "eval 'sh -c …'"`) are followed;
/// deeper is unknown.
pub const MAX_DEPTH: usize = 8;

/// Shells: `-c STRING` runs the string; with neither a string nor a script file they
/// read commands from input.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "ksh93", "mksh", "pdksh", "oksh", "ash", "yash", "posh",
    "rbash", "fish", "csh", "tcsh",
];

/// Variables whose value a shell runs or expands as code (`PS4='$(cmd)'` with `set -x`,
/// `BASH_ENV`, exported functions) or that make every program load code.
const RUNS_CODE_VARS: &[&str] = &[
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "LD_PRELOAD",
    "LD_AUDIT",
];

/// Programs that run a shell with `-c STRING` and otherwise an interactive one.
pub(super) const SU_LIKE: &[&str] = &["su", "runuser", "sg", "script", "ksu"];

/// Programs that run a command given on their command line in ways not modelled here
/// (many options, or a string for another system): what they run is unknown.
const NOT_MODELLED: &[&str] = &[
    "unshare",
    "nsenter",
    "setpriv",
    "prlimit",
    "numactl",
    "cgexec",
    "systemd-run",
    "run0",
    "pkexec",
    "strace",
    "ltrace",
    "valgrind",
    "gdb",
    "perf",
    "firejail",
    "bwrap",
    "proot",
    "fakeroot",
    "faketime",
    "sshpass",
    "tmux",
    "screen",
    "dtach",
    "at",
    "batch",
    "daemonize",
    "start-stop-daemon",
    "chpst",
    "unbuffer",
    "chronic",
    "caffeinate",
    "torsocks",
    "torify",
    "proxychains",
    "proxychains4",
    "xvfb-run",
    "dbus-run-session",
    "dbus-launch",
];

/// Everything a command line runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The commands, each simple command followed by what it runs.
    pub runs: Vec<Run>,
    /// Commands whose program is only known when they run.
    pub unknown: Vec<Unknown>,
    /// The output redirections of every simple command read (on the line and in the
    /// strings it runs).
    pub redirects: Vec<Redirection>,
}

/// An output redirection and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirection {
    /// Which simple command of the line it belongs to.
    pub part: usize,
    /// Whether it is in a string another command runs (`sh -c 'echo > f'`).
    pub nested: bool,
    /// Where it writes.
    pub redirect: Redirect,
}

/// One command that runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Its words from the program on, after quote removal (the program as written).
    pub words: Vec<String>,
    /// For each word, whether its value is only known when it runs.
    pub dynamic: Vec<bool>,
    /// Its source text: the simple command's for one on the line or in a string, the
    /// words joined by spaces for one a wrapper runs.
    pub text: String,
    /// Whether it redirects output into a file.
    pub writes_file: bool,
    /// Which simple command of the line it belongs to.
    pub part: usize,
    /// Whether another command runs it (a wrapper, `xargs`, a shell string, …).
    pub nested: bool,
    /// Whether the commands it runs were found and are listed after it.
    pub runs_others: bool,
    /// Another spelling of the run before it (`git -C x push` as `git push`), for deny
    /// and ask rules only: an allow rule must match what was written.
    pub view: bool,
    /// Whether more arguments are added when it runs (`xargs CMD`): its operands are
    /// not all on the line.
    pub appended: bool,
    /// A string replaced by other words when it runs (`{}` of `find -exec`, `xargs
    /// -I`): a word holding it is only known then.
    pub placeholder: Option<String>,
}

impl Run {
    /// The program's base name (`/usr/bin/rm` → `rm`).
    pub fn program_name(&self) -> Option<&str> {
        self.words.first().map(|p| base_name(p))
    }
}

/// A command whose program cannot be known statically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// The command, as its words.
    pub command: String,
    /// Why, for the reason the model and the user read.
    pub why: String,
}

/// A program or script path that is not a file of its own: `/proc/self/exe` is the
/// shell itself, `/dev/stdin` and `/dev/fd/N` are its input.
fn is_special_file(path: &str) -> bool {
    path.starts_with("/proc/") || path.starts_with("/dev/")
}

/// The last component of a program path (`./bin/rm` → `rm`).
pub fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Everything `line` runs.
pub fn analyze(line: &str) -> Analysis {
    analyze_parts(&split_command(line))
}

/// Everything the simple commands `parts` (of one line) run.
pub fn analyze_parts(parts: &[SimpleCommand]) -> Analysis {
    let mut a = Analysis::default();
    for (i, part) in parts.iter().enumerate() {
        let cx = Cx {
            part: i,
            ..Cx::default()
        };
        a.part(part, &cx);
    }
    a
}

/// Where a command is being read.
#[derive(Clone, Default)]
struct Cx {
    part: usize,
    depth: usize,
    nested: bool,
    /// More arguments are appended when it runs (`xargs CMD`): a wrapper or shell that
    /// looks like it runs nothing will run what comes from input.
    appended: bool,
    /// A string replaced by other words when it runs (`{}` of `find -exec`, `xargs -I`).
    placeholder: Option<String>,
}

impl Cx {
    fn inner(&self) -> Self {
        Self {
            depth: self.depth + 1,
            nested: true,
            ..self.clone()
        }
    }
}

impl Analysis {
    fn unknown(&mut self, words: &[String], why: impl Into<String>) {
        self.unknown.push(Unknown {
            command: words.join(" "),
            why: why.into(),
        });
    }

    fn part(&mut self, part: &SimpleCommand, cx: &Cx) {
        let argv = part.argv();
        let dynamic = part.dynamic.get(part.assignments..).unwrap_or(&[]);
        self.assignments(&part.words[..part.assignments.min(part.words.len())]);
        self.redirects
            .extend(part.redirects.iter().map(|r| Redirection {
                part: cx.part,
                nested: cx.nested,
                redirect: r.clone(),
            }));
        self.command(argv, dynamic, part.text.clone(), part.writes_file, cx);
    }

    /// Assignments (`NAME=value` before a command, or given to `env`, `export`, …) to a
    /// variable that makes a shell or the loader run code of its choosing.
    fn assignments(&mut self, words: &[String]) {
        for word in words {
            let Some((name, _)) = word.split_once('=') else {
                continue;
            };
            if RUNS_CODE_VARS.contains(&name) || name.starts_with("BASH_FUNC_") {
                self.unknown(
                    std::slice::from_ref(word),
                    format!("setting {name} makes a shell or the loader run code it names"),
                );
            }
        }
    }

    /// The commands of a string that a shell will parse (`bash -c STRING`, `eval`).
    fn line(&mut self, src: &str, cx: &Cx) {
        for part in split_command(src) {
            self.part(&part, cx);
        }
    }

    fn command(&mut self, words: &[String], dynamic: &[bool], text: String, writes: bool, cx: &Cx) {
        // `time { rm x; }`, `nice ! rm x`: a group or negation opens the command a
        // wrapper (or the `time` keyword) runs.
        let lead = words
            .iter()
            .zip(dynamic.iter().chain(std::iter::repeat(&false)))
            .take_while(|(w, d)| !**d && (w.as_str() == "{" || w.as_str() == "!"))
            .count();
        let words = &words[lead..];
        // One flag per word, whatever the caller passed (slices below rely on it).
        let mut flags = dynamic.get(lead..).unwrap_or(&[]).to_vec();
        flags.resize(words.len(), false);
        let dynamic = flags.as_slice();
        let Some(program) = words.first() else {
            return;
        };
        if cx.depth > MAX_DEPTH {
            self.unknown(
                words,
                "it is nested too deeply in strings run by other commands",
            );
            return;
        }
        let at = self.runs.len();
        self.runs.push(Run {
            words: words.to_vec(),
            dynamic: dynamic.to_vec(),
            text,
            writes_file: writes,
            part: cx.part,
            nested: cx.nested,
            runs_others: false,
            view: false,
            appended: cx.appended,
            placeholder: cx.placeholder.clone(),
        });
        let placeholder = cx
            .placeholder
            .as_deref()
            .is_some_and(|p| program.contains(p));
        if is_special_file(program) {
            self.unknown(
                words,
                "its program is a file under /proc or /dev (the shell itself, or its input)",
            );
            return;
        }
        if dynamic.first().copied().unwrap_or(false) || placeholder {
            self.unknown(
                words,
                "its program is only known when it runs (an expansion, substitution, glob or \
                 placeholder stands in command position)",
            );
            return;
        }
        let args = &words[1..];
        let adyn = dynamic.get(1..).unwrap_or(&[]);
        let before = self.runs.len();
        let name = base_name(program);
        match name {
            _ if wrappers::wrapper(name).is_some() => self.wrapper(name, args, adyn, cx),
            _ if SHELLS.contains(&name) => self.shell(name, args, adyn, cx),
            _ if SU_LIKE.contains(&name) => self.su(name, args, adyn, cx),
            "eval" => self.string_of(args, adyn, args.join(" "), cx, "eval"),
            "source" | "." => self.unknown(words, "it runs the commands of a file"),
            "export" | "declare" | "typeset" | "local" | "readonly" => self.assignments(args),
            "enable" if args.iter().any(|a| a.starts_with("-f")) => {
                self.unknown(words, "it loads a builtin from a shared object");
            }
            "mapfile" | "readarray" if args.iter().any(|a| a.starts_with("-C")) => {
                self.unknown(words, "its callback (`-C`) is a command string");
            }
            _ if NOT_MODELLED.contains(&name) => self.unknown(
                words,
                format!("`{name}` runs a command in a way this check does not follow"),
            ),
            "hash" if args.iter().any(|a| a.starts_with("-p")) => {
                self.unknown(words, "it binds a command name to another program");
            }
            "trap" => {
                let rest: Vec<usize> = (0..args.len()).filter(|&i| args[i] != "--").collect();
                if let [first, _, ..] = rest.as_slice()
                    && !args[*first].starts_with('-')
                {
                    let i = *first;
                    self.string_of(&args[i..=i], &adyn[i..=i], args[i].clone(), cx, "trap");
                }
            }
            "alias" => {
                for (i, arg) in args.iter().enumerate() {
                    if let Some((_, body)) = arg.split_once('=') {
                        self.string_of(&args[i..=i], &adyn[i..=i], body.to_owned(), cx, "alias");
                    }
                }
            }
            "function" | "coproc" => {
                // `function f { rm x; }`, `coproc NAME { …; }`: the body's first command
                // is in this simple command, after the `{`.
                let start = args.iter().position(|a| a == "{" || a == "(");
                let body = match (name, start) {
                    (_, Some(k)) => k + 1,
                    ("coproc", None) => 0,
                    _ => args.len(),
                };
                let rest = &args[body.min(args.len())..];
                self.command(
                    rest,
                    &adyn[body.min(adyn.len())..],
                    rest.join(" "),
                    writes,
                    &cx.inner(),
                );
            }
            "find" => self.find(args, adyn, cx),
            "parallel" => self.parallel(words, args, adyn, cx),
            "watch" => self.watch(words, args, adyn, cx),
            "flock" => self.flock(words, args, adyn, cx),
            "git" => self.git(args, adyn, cx),
            _ => {}
        }
        if self.runs.len() > before
            && let Some(run) = self.runs.get_mut(at)
        {
            run.runs_others = true;
        }
    }

    /// A string some command will parse as shell: unknown when it is dynamic or holds
    /// a placeholder, else its commands.
    fn string_of(&mut self, words: &[String], dynamic: &[bool], src: String, cx: &Cx, what: &str) {
        if dynamic.iter().any(|d| *d) {
            self.unknown(
                words,
                format!("the string `{what}` runs is only known when it runs"),
            );
        } else if cx.placeholder.as_deref().is_some_and(|p| src.contains(p)) {
            self.unknown(
                words,
                format!("the string `{what}` runs is filled in from input when it runs"),
            );
        } else if cx.appended && what == "eval" {
            self.unknown(words, "`eval` is given more words from input");
        } else {
            let mut inner = cx.inner();
            inner.appended = false;
            self.line(&src, &inner);
        }
    }

    fn wrapper(&mut self, name: &str, args: &[String], adyn: &[bool], cx: &Cx) {
        let Some(w) = wrappers::wrapper(name) else {
            return;
        };
        let found = match wrappers::unwrap(w, args, adyn) {
            Ok(found) => found,
            Err(err) => {
                let why = match err {
                    WrapError::Dynamic => {
                        format!(
                            "an argument of `{name}` before its command is only known when it runs"
                        )
                    }
                    WrapError::UnknownOption(o) => format!(
                        "`{name}` is given an option this check does not know (`{o}`), so \
                         where its command starts is unclear"
                    ),
                    WrapError::ShellFromInput => {
                        format!("`{name}` runs a shell that reads its commands from input")
                    }
                };
                let mut words = vec![name.to_owned()];
                words.extend_from_slice(args);
                self.unknown(&words, why);
                return;
            }
        };
        if matches!(name, "env" | "sudo") {
            // Their `NAME=value` words set the environment of what they run.
            let before = found.command.unwrap_or(args.len());
            self.assignments(&args[..before]);
        }
        let mut inner = cx.inner();
        if name == "xargs" {
            match &found.replace {
                Some(r) => inner.placeholder = Some(r.clone()),
                None => inner.appended = true,
            }
        }
        let rest = found.command.map_or(&args[args.len()..], |c| &args[c..]);
        let rest_dyn = found
            .command
            .map_or(&[][..], |c| &adyn[c.min(adyn.len())..]);
        if let Some(split) = &found.split {
            let parts = split_command(split);
            match parts.as_slice() {
                [one] => {
                    let mut words = one.words.clone();
                    let mut dynamic = one.dynamic.clone();
                    words.extend_from_slice(rest);
                    dynamic.extend_from_slice(rest_dyn);
                    self.command(&words, &dynamic, words.join(" "), false, &inner);
                }
                _ => self.unknown(
                    args,
                    format!("`{name} -S` is given a string it splits unclearly"),
                ),
            }
        } else if !rest.is_empty() {
            self.command(rest, rest_dyn, rest.join(" "), false, &inner);
        } else if cx.appended {
            let mut words = vec![name.to_owned()];
            words.extend_from_slice(args);
            self.unknown(
                &words,
                format!("`{name}` is given its command by xargs from input"),
            );
        }
    }

    fn shell(&mut self, name: &str, args: &[String], adyn: &[bool], cx: &Cx) {
        let mut words = vec![name.to_owned()];
        words.extend_from_slice(args);
        let mut has_c = false;
        let mut stdin = false;
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            if adyn.get(i).copied().unwrap_or(false) {
                self.unknown(
                    &words,
                    format!("an option of `{name}` is only known when it runs"),
                );
                return;
            }
            if arg == "--" || arg == "-" {
                i += 1;
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                match long {
                    "version" | "help" => return,
                    "rcfile" | "init-file" => i += 1,
                    "command" => has_c = true,
                    _ if long.starts_with("command=") => {
                        let src = long["command=".len()..].to_owned();
                        self.string_of(&args[i..=i], &adyn[i..=i], src, cx, name);
                        return;
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            let Some(cluster) = arg.strip_prefix(['-', '+']).filter(|c| !c.is_empty()) else {
                break;
            };
            for c in cluster.chars() {
                match c {
                    'c' => has_c = true,
                    's' => stdin = true,
                    'o' | 'O' => i += 1, // `-o pipefail`: its value is the next word
                    _ => {}
                }
            }
            i += 1;
        }
        if has_c {
            match args.get(i) {
                Some(src) => {
                    let src = src.clone();
                    self.string_of(&args[i..=i], &adyn[i..=i], src, cx, name);
                }
                None => self.unknown(
                    &words,
                    format!("`{name} -c` gets its command string from input"),
                ),
            }
        } else if stdin || i >= args.len() {
            self.unknown(
                &words,
                format!("`{name}` reads the commands it runs from its input"),
            );
        } else if adyn.get(i).copied().unwrap_or(false)
            || cx
                .placeholder
                .as_deref()
                .is_some_and(|p| args[i].contains(p))
            || is_special_file(&args[i])
        {
            self.unknown(
                &words,
                format!("the script `{name}` runs is only known when it runs"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(line: &str) -> Vec<String> {
        analyze(line)
            .runs
            .iter()
            .map(|r| r.words.join(" "))
            .collect()
    }

    #[test]
    fn wrapped_and_string_commands_are_listed_after_their_runner() {
        assert_eq!(
            programs("timeout -s KILL 5 rm x"),
            ["timeout -s KILL 5 rm x", "rm x"]
        );
        assert_eq!(
            programs("sudo -u u bash -c 'nice rm \"$1\"' _ y"),
            [
                "sudo -u u bash -c nice rm \"$1\" _ y",
                "bash -c nice rm \"$1\" _ y",
                "nice rm $1",
                "rm $1"
            ]
        );
        assert_eq!(
            programs("find . -exec grep -l x {} + -exec rm {} \\;"),
            [
                "find . -exec grep -l x {} + -exec rm {} ;",
                "grep -l x {}",
                "rm {}"
            ]
        );
        let a = analyze("timeout 5 rm x");
        assert!(a.runs[0].runs_others && !a.runs[0].nested);
        assert!(a.runs[1].nested && !a.runs[1].runs_others);
        assert!(a.unknown.is_empty());
    }

    #[test]
    fn git_global_options_give_another_spelling() {
        let a = analyze("git -C sub --no-pager push origin");
        assert_eq!(a.runs.len(), 2);
        assert!(a.runs[1].view);
        assert_eq!(a.runs[1].words, ["git", "push", "origin"]);
        assert_eq!(analyze("git push").runs.len(), 1);
        assert!(!analyze("git -c core.pager=./x log").unknown.is_empty());
    }

    #[test]
    fn programs_known_only_when_run_are_unknown() {
        for line in [
            "$X y",
            "\"$(echo rm)\" y",
            "/bin/r? y",
            "echo y | sh",
            "source ./x.sh",
            "eval \"$S\"",
            "sudo $C",
            "ls | xargs env",
            "xargs -I % sh -c 'echo %'",
            "find . -exec {} \\;",
            "bash -c",
        ] {
            assert!(!analyze(line).unknown.is_empty(), "{line}");
        }
        for line in [
            "rm x",
            "echo $X",
            "bash script.sh",
            "command -v rm",
            "ls *.rs",
        ] {
            assert!(analyze(line).unknown.is_empty(), "{line}");
        }
    }

    #[test]
    fn strings_are_followed_only_so_deep() {
        let mut line = "rm x".to_owned();
        for _ in 0..=MAX_DEPTH + 1 {
            line = format!("eval '{}'", line.replace('\'', "'\\''"));
        }
        let a = analyze(&line);
        assert!(
            a.unknown
                .iter()
                .any(|u| u.why.contains("nested too deeply")),
            "{a:?}"
        );
    }
}
