//! The programs that run commands in their own way, each read as it reads its
//! arguments: `su -c`, `find -exec`, GNU `parallel`, `watch`, `flock`, and `git` (its
//! global options, and `-c` settings that run a program).

use super::{Analysis, Cx, Run};

/// `find` actions that run a command up to `;` or `{} +`.
const FIND_RUNS: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

impl Analysis {
    pub(super) fn su(&mut self, name: &str, args: &[String], adyn: &[bool], cx: &Cx) {
        let mut words = vec![name.to_owned()];
        words.extend_from_slice(args);
        for (i, arg) in args.iter().enumerate() {
            let src = match arg.as_str() {
                "-c" | "--command" => args.get(i + 1).map(|s| (i + 1, s.clone())),
                _ => arg.strip_prefix("--command=").map(|s| (i, s.to_owned())),
            };
            if let Some((at, src)) = src {
                self.string_of(&args[at..=at], &adyn[at..=at], src, cx, name);
                return;
            }
            if arg == "--" && name == "runuser" {
                let rest = &args[i + 1..];
                self.command(rest, &adyn[i + 1..], rest.join(" "), false, &cx.inner());
                return;
            }
        }
        self.unknown(
            &words,
            format!("`{name}` runs a shell that reads its commands from input"),
        );
    }

    pub(super) fn find(&mut self, args: &[String], adyn: &[bool], cx: &Cx) {
        let mut inner = cx.inner();
        inner.placeholder = Some("{}".to_owned());
        let mut i = 0;
        while i < args.len() {
            if !FIND_RUNS.contains(&args[i].as_str()) {
                i += 1;
                continue;
            }
            let start = i + 1;
            let mut end = start;
            while end < args.len() {
                let a = args[end].as_str();
                if a == ";" || (a == "+" && end > start && args[end - 1] == "{}") {
                    break;
                }
                end += 1;
            }
            let cmd = &args[start..end];
            self.command(cmd, &adyn[start..end], cmd.join(" "), false, &inner);
            i = end + 1;
        }
    }

    /// GNU parallel joins its command words into a shell command line.
    pub(super) fn parallel(&mut self, words: &[String], args: &[String], adyn: &[bool], cx: &Cx) {
        const VALUE: &[&str] = &[
            "-j",
            "-a",
            "-S",
            "-d",
            "-I",
            "-E",
            "-n",
            "-N",
            "-L",
            "-P",
            "-s",
            "-C",
            "--jobs",
            "--arg-file",
            "--sshlogin",
            "--delimiter",
            "--colsep",
            "--max-args",
            "--max-lines",
            "--timeout",
            "--joblog",
            "--results",
            "--tmpdir",
            "--workdir",
            "--retries",
            "--delay",
            "--halt",
            "--env",
        ];
        const FLAGS: &[&str] = &[
            "-0",
            "-k",
            "-q",
            "-v",
            "-u",
            "-X",
            "-m",
            "-g",
            "-r",
            "--keep-order",
            "--verbose",
            "--dry-run",
            "--null",
            "--tag",
            "--progress",
            "--bar",
            "--eta",
            "--line-buffer",
            "--lb",
            "--group",
            "--ungroup",
            "--no-run-if-empty",
            "--will-cite",
            "--xapply",
        ];
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            if adyn.get(i).copied().unwrap_or(false) {
                self.unknown(words, "an option of `parallel` is only known when it runs");
                return;
            }
            if !arg.starts_with('-') || arg == "--" {
                break;
            }
            if VALUE.contains(&arg.as_str()) {
                i += 1;
            } else if !(FLAGS.contains(&arg.as_str()) || arg.starts_with("--") && arg.contains('='))
            {
                self.unknown(
                    words,
                    format!("`parallel` is given an option this check does not know (`{arg}`)"),
                );
                return;
            }
            i += 1;
        }
        let end = args[i..]
            .iter()
            .position(|a| a.starts_with(":::"))
            .map_or(args.len(), |p| i + p);
        if end <= i {
            self.unknown(
                words,
                "`parallel` reads the commands it runs from its input",
            );
            return;
        }
        let mut inner = cx.clone();
        inner.placeholder = Some("{".to_owned());
        let program = &args[i];
        if program.contains('{') || adyn[i] {
            self.unknown(
                words,
                "the program `parallel` runs is filled in when it runs",
            );
            return;
        }
        let src = args[i..end].join(" ");
        inner.placeholder = None;
        self.string_of(&args[i..end], &adyn[i..end], src, &inner, "parallel");
    }

    /// `watch` runs its words joined, with `sh -c` (or as they are with `-x`).
    pub(super) fn watch(&mut self, words: &[String], args: &[String], adyn: &[bool], cx: &Cx) {
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            if adyn.get(i).copied().unwrap_or(false) {
                self.unknown(words, "an option of `watch` is only known when it runs");
                return;
            }
            match arg.as_str() {
                "-n" | "--interval" | "-q" | "--equexit" => i += 1,
                "--" => {
                    i += 1;
                    break;
                }
                a if a.starts_with('-') => {}
                _ => break,
            }
            i += 1;
        }
        if i < args.len() {
            let src = args[i..].join(" ");
            self.string_of(&args[i..], &adyn[i..], src, cx, "watch");
        }
    }

    /// `flock [options] FILE COMMAND…` or `flock [options] FILE -c STRING`.
    pub(super) fn flock(&mut self, words: &[String], args: &[String], adyn: &[bool], cx: &Cx) {
        if args.iter().any(|a| a == "-c" || a.starts_with("--command")) {
            self.su("flock", args, adyn, cx);
            return;
        }
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            if adyn.get(i).copied().unwrap_or(false) {
                self.unknown(words, "an option of `flock` is only known when it runs");
                return;
            }
            match arg.as_str() {
                "-w" | "--timeout" | "-E" | "--conflict-exit-code" => i += 1,
                a if a.starts_with('-') => {}
                _ => break,
            }
            i += 1;
        }
        let start = (i + 1).min(args.len()); // after the lock file
        let rest = &args[start..];
        self.command(rest, &adyn[start..], rest.join(" "), false, &cx.inner());
    }

    /// `git`'s global options: the command without them, as another spelling; a `-c`
    /// setting that makes git run a program is unknown (an alias with `!` is followed).
    pub(super) fn git(&mut self, args: &[String], adyn: &[bool], cx: &Cx) {
        const VALUE: &[&str] = &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--super-prefix",
            "--config-env",
            "--exec-path",
        ];
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            if adyn.get(i).copied().unwrap_or(false) || !arg.starts_with('-') {
                break;
            }
            let setting = match arg.as_str() {
                "-c" | "--config-env" => args.get(i + 1).cloned(),
                a => a.strip_prefix("--config-env=").map(str::to_owned),
            };
            if let Some(setting) = setting {
                let (key, value) = setting.split_once('=').unwrap_or((&setting, ""));
                let key = key.to_ascii_lowercase();
                if key.starts_with("alias.")
                    && let Some(body) = value.strip_prefix('!')
                {
                    let at = (i + 1).min(args.len() - 1);
                    self.string_of(
                        &args[at..=at],
                        &adyn[at..=at],
                        body.to_owned(),
                        cx,
                        "git alias",
                    );
                } else if runs_a_program(&key)
                    || arg.starts_with("--config-env") && key.starts_with("alias.")
                {
                    let mut words = vec!["git".to_owned()];
                    words.extend_from_slice(args);
                    self.unknown(
                        &words,
                        format!("`git -c {key}` makes git run a program given on the command line"),
                    );
                }
            }
            if VALUE.contains(&arg.as_str()) {
                i += 1;
            }
            i += 1;
        }
        if i > 0 && i < args.len() {
            let mut words = vec!["git".to_owned()];
            words.extend_from_slice(&args[i..]);
            let mut dynamic = vec![false];
            dynamic.extend_from_slice(&adyn[i..]);
            self.runs.push(Run {
                text: words.join(" "),
                words,
                dynamic,
                writes_file: false,
                part: cx.part,
                nested: true,
                runs_others: false,
                view: true,
                appended: cx.appended,
                placeholder: cx.placeholder.clone(),
            });
        }
    }
}

/// git settings whose value is a program or command git runs.
fn runs_a_program(key: &str) -> bool {
    const PARTS: &[&str] = &[
        "pager",
        "editor",
        "sshcommand",
        "fsmonitor",
        "hookspath",
        "askpass",
        "external",
        "textconv",
        "command",
        "driver",
        "filter.",
        "helper",
        "program",
        "uploadpack",
        "receivepack",
        "proxy",
        "difffilter",
        "gitproxy",
        "tool",
        "cmd",
    ];
    PARTS.iter().any(|p| key.contains(p))
}
