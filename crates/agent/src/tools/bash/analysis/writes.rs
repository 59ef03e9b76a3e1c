//! Which files a command line writes, as far as its words show: so that a Bash
//! command allowed by a rule (`--allowedTools Bash`, `Bash(echo:*)`) still asks before
//! it writes a protected path (`.strata/settings.local.json`, `.git/hooks/…`,
//! `~/.bashrc`, …), exactly as a Write to that path does (issue 16, "the model can
//! give itself permissions").
//!
//! [`writes`] reads an [`Analysis`] (so wrappers, `xargs`, `find -exec` and `sh -c`
//! strings are already looked through) and lists:
//!
//! - every output redirection's target (`>`, `>>`, `>|`, `&>`, `>&file`, `<>`);
//! - the files these programs write, by their operands: `tee` (every file), `cp`,
//!   `mv`, `ln`, `install` (the destination, and the destination joined with each
//!   source's name, since it may be a directory; `-t DIR`; `mv` also changes its
//!   sources, `ln` with one operand links into the working directory, `install -d`
//!   creates every operand), `rsync` (a local destination; `--backup-dir`,
//!   `--log-file`, …), `dd of=`, `sed -i` and `perl -i` (the files edited in place),
//!   `truncate`, `touch`, `mkdir`, `chmod`/`chown`/`chgrp` (the files after the mode or
//!   owner), `rm`/`unlink`/`rmdir`/`shred` (removing a settings file drops its deny
//!   rules; only the names on the line are judged, so `find … -exec rm {} +` and
//!   `xargs rm` are not unknown), `sort -o`, `uniq IN OUT`, `gawk -i inplace`,
//!   `find -fprint`/`-fls`, `tar` (the archive it creates, the `-C` directory it
//!   extracts into), `unzip -d`, `git config` when it sets something (the repository's
//!   `.git/config`, `~/.gitconfig` with `--global`, or `--file F`), `curl -o`/`-O`/`--output-dir` and `wget -O`/`-P`
//!   (and the name `wget` or `curl -O` takes from the URL).
//!
//! Relative paths are relative to the working directory of the call, or to any
//! directory a `cd`/`pushd` on the line may have changed to (every combination is
//! checked, an over-approximation of the order they run in).
//!
//! What cannot be judged from the line is reported as **unknown** (the caller asks
//! when a rule would otherwise allow the command — fail closed): a target that is only
//! known when it runs (`> "$F"`, `> $(cmd)`, `tee *.txt`, `~user/…`); any argument of
//! one of the programs above that is only known when it runs (unquoted, it may split
//! into options: `cp $A` may be `cp -t .git/hooks x`); operands added from input
//! (`xargs touch`) or filled in (`find -exec cp x {} \;`); a relative path after a
//! `cd` whose directory is unknown (`cd "$D"`, `cd -`, `popd`) or under a runner that
//! changes directory (`env -C`, `sudo -D`, `find -execdir`).
//!
//! **Not covered** (documented limits, not guesses): programs that run code can write
//! any file (interpreters such as `python -c`, `node -e`, plain `perl -e`, scripts,
//! `make`, a shell reading from input, `sed`'s own `w` and `e` commands, `git`'s own
//! writes to `.git/` other than `git config`); archives and downloads unpacked in place
//! (`tar x -C dir` and `unzip -d dir` are judged by the directory; without one the
//! files are unknown; `git clone`, `patch`, `git apply` are not covered); the
//! contents of a directory copied recursively (`cp -r payload/. .`) are not looked
//! into, only its name; recursive `chmod -R` or
//! `rm -r` is judged by its operands, not by what lies below them; programs that write
//! a file named by an option not listed here (`strace -o`, `script FILE`, `git config
//! --file`, `openssl -out`, …); a command whose program is itself unknown (`$CMD x`,
//! `source f`, `echo … | sh`: see [`Unknown`](super::Unknown)) is judged by its
//! redirections only (a whole-tool `Bash` rule allows it as before). A source whose name
//! is itself protected (`cp .bashrc backup.txt`) is also checked as if the destination
//! were a directory, so it asks even when the destination is a file.

use super::options::{
    CHOWN, CP, CURL, CURL_WRITES, INSTALL, MKDIR, NO_VALUES, RSYNC, RSYNC_WRITES, SHRED, SORT, TAR,
    TOUCH, TRUNCATE, UNIQ, UNZIP, WGET, WGET_WRITES, parse,
};
use super::{Analysis, Run, in_place};

/// What a command line writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// Files it writes, as written (relative ones against the call's working
    /// directory, `~/` in the home directory).
    pub targets: Vec<WriteTarget>,
    /// Why some file it writes cannot be known before it runs, one line each.
    pub unknown: Vec<String>,
}

/// One file a command line writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteTarget {
    /// The path (relative to the call's working directory when relative).
    pub path: String,
    /// What writes it: `a redirection` or the program (`` `tee` ``).
    pub by: String,
}

/// The directory a command runs in, relative to the call's.
#[derive(Clone)]
enum Dirs {
    /// One of these (`""` is the call's own; absolute, `~`-relative or relative).
    Known(Vec<String>),
    /// Changed to a directory only known when it runs.
    Unknown(String),
}

/// More directories than this from `cd`s on one line: unknown (no blow-up).
const MAX_DIRS: usize = 16;

/// Joins `path` to a directory of [`Dirs::Known`] (`""` is the call's own).
fn join(dir: &str, path: &str) -> String {
    if dir.is_empty() || path.starts_with('/') || path.starts_with('~') {
        path.to_owned()
    } else {
        format!("{}/{path}", dir.trim_end_matches('/'))
    }
}

/// The last component of a path (`a/b/` → `b`), for "copied into a directory".
fn file_name(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

/// Everything `analysis` shows being written.
pub fn writes(analysis: &Analysis) -> Writes {
    let mut w = Collector {
        out: Writes::default(),
        dirs: Dirs::Known(vec![String::new()]),
        pushed: 0,
    };
    // Every `cd` of the line first: any of them may have run before any write (an
    // over-approximation of the order, which `&&`, `||` and loops make hard to know).
    for run in analysis.runs.iter().filter(|r| !r.view) {
        w.change_dir(run);
    }
    // Parts with a runner that changes directory for what it runs (`env -C d sh -c
    // 'echo > f'`): a redirection in a string it runs is relative to an unknown place.
    let moved_parts: Vec<usize> = analysis
        .runs
        .iter()
        .filter(|r| changes_dir_for_others(r))
        .map(|r| r.part)
        .collect();
    for redirection in &analysis.redirects {
        let r = &redirection.redirect;
        let relative = !(r.target.starts_with('/') || r.target.starts_with('~'));
        if redirection.nested && relative && moved_parts.contains(&redirection.part) {
            w.unknown(format!(
                "the file a redirection writes (`{}`) is relative to a directory a runner \
                 changes to",
                r.target
            ));
        } else if r.dynamic {
            w.unknown(format!(
                "the file a redirection writes (`{}`) is only known when it runs",
                if r.target.is_empty() { ">" } else { &r.target }
            ));
        } else {
            w.target(&r.target, "a redirection");
        }
    }
    // Whether a runner earlier in the same part changed directory for what it runs.
    // `git -C x config …` is read in its other spelling (`git config …`).
    let mut moved = false;
    let git_view = |r: &Run| r.view && r.program_name() == Some("git");
    for run in analysis.runs.iter().filter(|r| !r.view || git_view(r)) {
        moved &= run.nested;
        if moved {
            let dirs = std::mem::replace(
                &mut w.dirs,
                Dirs::Unknown("a runner before it changes directory".to_owned()),
            );
            w.run(run);
            w.dirs = dirs;
        } else {
            w.run(run);
        }
        moved |= changes_dir_for_others(run);
    }
    w.out
}

/// `env -C DIR cmd`, `sudo -D DIR cmd`, `find -execdir cmd`: what it runs runs
/// elsewhere.
fn changes_dir_for_others(run: &Run) -> bool {
    let args = run.words.get(1..).unwrap_or(&[]);
    match run.program_name().map(str::to_ascii_lowercase).as_deref() {
        Some("env") => args
            .iter()
            .any(|a| a == "-C" || a.starts_with("--chdir") || short_cluster_has(a, 'C')),
        Some("sudo") => args
            .iter()
            .any(|a| a == "-D" || a.starts_with("--chdir") || short_cluster_has(a, 'D')),
        Some("find") => args.iter().any(|a| a == "-execdir" || a == "-okdir"),
        _ => false,
    }
}

fn short_cluster_has(arg: &str, c: char) -> bool {
    arg.strip_prefix('-')
        .is_some_and(|rest| !rest.starts_with('-') && rest.contains(c))
}

struct Collector {
    out: Writes,
    dirs: Dirs,
    /// How many targets were found so far (repeats included).
    pushed: usize,
}

/// The file a download takes its name from: the URL's last path segment.
fn url_file_name(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let path = path.split_once("://").map_or(path, |(_, rest)| rest);
    match path.split_once('/') {
        Some((_, p)) if !file_name(p).is_empty() && !p.ends_with('/') => file_name(p).to_owned(),
        _ => "index.html".to_owned(),
    }
}

impl Collector {
    fn unknown(&mut self, why: String) {
        if !self.out.unknown.contains(&why) {
            self.out.unknown.push(why);
        }
    }

    /// A path written by `by`, against every directory the command may run in.
    fn target(&mut self, path: &str, by: &str) {
        if path.starts_with('~') && !(path == "~" || path.starts_with("~/")) {
            self.unknown(format!(
                "the file {by} writes (`{path}`) is in another user's home directory, \
                 which is only known when it runs"
            ));
            return;
        }
        let absolute = path.starts_with('/') || path.starts_with('~');
        match &self.dirs {
            _ if absolute => self.push(path.to_owned(), by),
            Dirs::Known(dirs) => {
                for joined in dirs.clone().iter().map(|d| join(d, path)) {
                    self.push(joined, by);
                }
            }
            Dirs::Unknown(why) => {
                let why = why.clone();
                self.unknown(format!(
                    "the file {by} writes (`{path}`) is relative to a directory only known \
                     when it runs ({why})"
                ));
            }
        }
    }

    fn each(&mut self, paths: Vec<String>, by: &str) {
        for path in paths {
            self.target(&path, by);
        }
    }

    fn push(&mut self, path: String, by: &str) {
        self.pushed += 1;
        let t = WriteTarget {
            path,
            by: by.to_owned(),
        };
        if !self.out.targets.contains(&t) {
            self.out.targets.push(t);
        }
    }

    /// A `cd`/`pushd`/`popd` run: where later relative paths may be.
    fn change_dir(&mut self, run: &Run) {
        let name = run.program_name().map(str::to_ascii_lowercase);
        let (Some("cd" | "pushd" | "popd"), Dirs::Known(dirs)) = (name.as_deref(), &self.dirs)
        else {
            return;
        };
        let args = run.words.get(1..).unwrap_or(&[]);
        let dynamic = run.dynamic.iter().skip(1).any(|d| *d);
        let operand = args
            .iter()
            .find(|a| !(a.starts_with('-') && a.len() > 1) || a.starts_with("-/"));
        let why = if dynamic {
            Some("`cd` to a directory only known when it runs")
        } else if name.as_deref() == Some("pushd")
            && operand.is_some_and(|d| d.starts_with('+') || d.starts_with('-'))
        {
            Some("a `pushd` that rotates the directory stack")
        } else if name.as_deref() == Some("popd") || operand.is_some_and(|d| d == "-") {
            Some("a `popd` or `cd -` back to an earlier directory")
        } else if operand.is_some_and(|d| d.starts_with('~') && !(d == "~" || d.starts_with("~/")))
        {
            Some("`cd` into another user's home directory")
        } else {
            None
        };
        if let Some(why) = why {
            self.dirs = Dirs::Unknown(why.to_owned());
            return;
        }
        // `cd` alone goes home; `CDPATH` is not looked at (tools run without one).
        let to = operand.map_or("~", String::as_str);
        let mut next = dirs.clone();
        for d in dirs {
            let joined = join(d, to);
            if !next.contains(&joined) {
                next.push(joined);
            }
        }
        self.dirs = if next.len() > MAX_DIRS {
            Dirs::Unknown("too many `cd`s on one line to follow".to_owned())
        } else {
            Dirs::Known(next)
        };
    }

    fn run(&mut self, run: &Run) {
        let Some(name) = run.program_name().map(str::to_ascii_lowercase) else {
            return;
        };
        let by = format!("`{name}`");
        if !WRITERS.contains(&name.as_str()) {
            return;
        }
        let args = run.words.get(1..).unwrap_or(&[]);
        let placeholder = run.placeholder.as_deref();
        let dynamic = run
            .dynamic
            .iter()
            .skip(1)
            .zip(args)
            .any(|(d, a)| *d || placeholder.is_some_and(|p| a.contains(p)));
        let before = self.pushed;
        self.operands(&name, args, &by);
        // Removing files is judged by the names on the line only: `find … -exec rm {}
        // +` and `xargs rm` are everyday commands, and a removal grants nothing but the
        // loss of a settings file's rules, which a named path already covers. Programs
        // that write only when an option says so (`sed -i`, `sort -o`, …) are unknown
        // only when they do (`sed "s/$A/b/" f` writes nothing).
        let removes = matches!(name.as_str(), "rm" | "unlink" | "rmdir" | "shred");
        let writes = !OPTION_GATED.contains(&name.as_str()) || self.pushed > before;
        if dynamic && writes && !removes {
            // The words that are known were still judged (`find -exec cp {}
            // .git/hooks/x` names its destination).
            self.unknown(format!(
                "an argument of {by} is only known when it runs, so which files it writes \
                 is unknown"
            ));
        }
        if run.appended && writes && !removes {
            self.unknown(format!(
                "{by} is given more arguments from input (`xargs`), so which files it \
                 writes is unknown"
            ));
        }
    }

    /// The files program `name` writes by its arguments `args`.
    fn operands(&mut self, name: &str, args: &[String], by: &str) {
        let by = by.to_owned();
        match name {
            "tee" => {
                let p = parse(args, &NO_VALUES);
                for f in p.operands {
                    self.target(f, &by);
                }
            }
            "cp" | "mv" | "ln" | "install" | "ginstall" => self.copy(name, args, &by),
            "rsync" => {
                let p = parse(args, &RSYNC);
                for (opt, v) in &p.values {
                    if RSYNC_WRITES.contains(&opt.as_str()) {
                        self.target(v, &by);
                    }
                }
                if let [sources @ .., dest] = p.operands.as_slice()
                    && !sources.is_empty()
                    && !is_remote(dest)
                {
                    self.copied_to(dest, sources, &by);
                }
            }
            "sort" => {
                let p = parse(args, &SORT);
                if let Some(out) = p.value(&["-o", "--output"]) {
                    self.target(out, &by);
                }
            }
            // `uniq IN OUT` writes OUT.
            "uniq" => {
                if let [_, out, ..] = parse(args, &UNIQ).operands.as_slice() {
                    self.target(out, &by);
                }
            }
            "awk" | "gawk" => self.each(in_place::awk(args), &by),
            "dd" => {
                for a in args {
                    if let Some(of) = a.strip_prefix("of=") {
                        self.target(of, &by);
                    }
                }
            }
            "sed" | "gsed" => self.each(in_place::sed(args), &by),
            "perl" => self.each(in_place::perl(args), &by),
            "touch" | "truncate" | "mkdir" | "rm" | "unlink" | "rmdir" | "shred" => {
                let syntax = match name {
                    "touch" => &TOUCH,
                    "truncate" => &TRUNCATE,
                    "mkdir" => &MKDIR,
                    "shred" => &SHRED,
                    _ => &NO_VALUES,
                };
                for f in parse(args, syntax).operands {
                    self.target(f, &by);
                }
            }
            "chmod" => {
                // A mode may look like an option (`chmod -x f`).
                let is_mode = |a: &String| {
                    a.len() > 1
                        && a.strip_prefix('-')
                            .is_some_and(|m| m.chars().all(|c| "rwxXst".contains(c)))
                };
                let mode_first = args.iter().position(is_mode);
                let rest: Vec<String> = args
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| Some(*i) != mode_first)
                    .map(|(_, a)| a.clone())
                    .collect();
                let p = parse(&rest, &CHOWN);
                let skip = usize::from(mode_first.is_none() && p.value(&["--reference"]).is_none());
                for f in p.operands.iter().skip(skip) {
                    self.target(f, &by);
                }
            }
            "chown" | "chgrp" => {
                let p = parse(args, &CHOWN);
                let skip = usize::from(p.value(&["--reference"]).is_none());
                for f in p.operands.iter().skip(skip) {
                    self.target(f, &by);
                }
            }
            "curl" => {
                let p = parse(args, &CURL);
                for (opt, v) in &p.values {
                    if CURL_WRITES.contains(&opt.as_str()) {
                        self.target(v, &by);
                    }
                }
                if p.has("-O") || p.has("--remote-name") || p.has("--remote-name-all") {
                    let dir = p.value(&["--output-dir"]).unwrap_or("");
                    let urls: Vec<&str> = p
                        .operands
                        .iter()
                        .copied()
                        .chain(p.value(&["--url"]))
                        .collect();
                    for url in urls {
                        self.target(&join(dir, &url_file_name(url)), &by);
                    }
                }
            }
            // `find -fprint FILE` and friends write FILE.
            "find" => {
                for (i, a) in args.iter().enumerate() {
                    if FIND_WRITES.contains(&a.as_str())
                        && let Some(file) = args.get(i + 1)
                    {
                        self.target(file, &by);
                    }
                }
            }
            "tar" | "bsdtar" | "gtar" => self.tar(args, &by),
            "git" if args.first().is_some_and(|a| a == "config") => {
                if let Some(file) = in_place::git_config(&args[1..]) {
                    self.target(&file, &by);
                }
            }
            "unzip" => {
                let p = parse(args, &UNZIP);
                let lists = ["-l", "-v", "-t", "-Z", "-p", "-c", "-z"]
                    .iter()
                    .any(|f| p.has(f));
                match p.value(&["-d"]) {
                    Some(dir) => self.target(dir, &by),
                    None if lists => {}
                    // Into the working directory: what it unpacks is unknown.
                    None => {
                        self.unknown(format!("{by} unpacks files named only inside the archive"))
                    }
                }
            }
            "wget" => {
                let p = parse(args, &WGET);
                let mut named = false;
                for (opt, v) in &p.values {
                    if WGET_WRITES.contains(&opt.as_str()) {
                        named |= matches!(opt.as_str(), "-O" | "--output-document");
                        self.target(v, &by);
                    }
                }
                if !named {
                    let dir = p.value(&["-P", "--directory-prefix"]).unwrap_or("");
                    for url in &p.operands {
                        self.target(&join(dir, &url_file_name(url)), &by);
                    }
                    if p.value(&["-i", "--input-file"]).is_some() {
                        self.unknown(format!(
                            "{by} takes its URLs from a file, so the files it writes are \
                             only known when it runs"
                        ));
                    }
                }
            }
            _ => {}
        }
    }

    /// `tar`: the archive it creates, and the directory it extracts into (the names
    /// inside the archive are not known; without `-C` it is unknown).
    fn tar(&mut self, args: &[String], by: &str) {
        // Old style: the first word's letters are options (`tar czf out.tgz dir`).
        let mut words: Vec<String> = args.to_vec();
        if let Some(first) = words.first_mut()
            && !first.starts_with('-')
        {
            first.insert(0, '-');
        }
        let p = parse(&words, &TAR);
        let mode = |short: &str, long: &[&str]| p.has(short) || long.iter().any(|l| p.has(l));
        let creates = mode("-c", &["--create"])
            || mode("-r", &["--append"])
            || mode("-u", &["--update"])
            || mode("-A", &["--catenate", "--concatenate"]);
        if creates && let Some(archive) = p.value(&["-f", "--file"]) {
            self.target(archive, by);
        }
        if mode("-x", &["--extract", "--get"]) {
            match p.value(&["-C", "--directory"]) {
                Some(dir) => self.target(dir, by),
                None => self.unknown(format!("{by} extracts files named only inside the archive")),
            }
        }
    }

    /// `cp`, `mv`, `ln`, `install`: the destination (and, as it may be a directory,
    /// each source's name inside it).
    fn copy(&mut self, name: &str, args: &[String], by: &str) {
        let syntax = if name.ends_with("install") {
            &INSTALL
        } else {
            &CP
        };
        let p = parse(args, syntax);
        if name.ends_with("install") && (p.has("-d") || p.has("--directory")) {
            for d in &p.operands {
                self.target(d, by);
            }
            return;
        }
        let target_dir = p.value(&["-t", "--target-directory"]);
        if name == "ln" {
            // A link to a protected path is another name for it, which a later write
            // on the same line would go through unseen (`ln -s .git/hooks h; tee
            // h/pre-commit`).
            let sources = match (target_dir, p.operands.len()) {
                (Some(_), n) => n,
                (None, n) => n.saturating_sub(1).max(1),
            };
            for source in p.operands.iter().take(sources) {
                self.target(source, by);
            }
        }
        if name == "mv" {
            // Moving a file away changes its old path too (a settings file moved
            // away takes its deny rules with it).
            let sources = match (target_dir, p.operands.len()) {
                (Some(_), _) => p.operands.len(),
                (None, n) if n >= 2 => n - 1,
                _ => 0,
            };
            for source in &p.operands[..sources] {
                self.target(source, by);
            }
        }
        if let Some(dir) = target_dir {
            self.target(dir, by);
            for source in &p.operands {
                self.target(&join(dir, file_name(source)), by);
            }
            return;
        }
        match p.operands.as_slice() {
            [] => {}
            // `ln -s /x/y`: a link named `y` in the working directory.
            [one] if name == "ln" => self.target(file_name(one), by),
            [_] => {}
            [sources @ .., dest] => {
                if p.has("-T") || p.has("--no-target-directory") {
                    self.target(dest, by);
                } else {
                    self.copied_to(dest, sources, by);
                }
            }
        }
    }

    /// A destination that may be a directory: itself and each source's name in it.
    fn copied_to(&mut self, dest: &str, sources: &[&str], by: &str) {
        self.target(dest, by);
        for source in sources {
            let name = file_name(source);
            if !name.is_empty() && name != "." && name != ".." {
                self.target(&join(dest, name), by);
            }
        }
    }
}

/// Programs whose operands name files they write (see the module doc).
const WRITERS: &[&str] = &[
    "tee", "cp", "mv", "ln", "install", "ginstall", "rsync", "dd", "sed", "gsed", "perl", "touch",
    "truncate", "mkdir", "rm", "unlink", "rmdir", "shred", "chmod", "chown", "chgrp", "curl",
    "wget", "sort", "uniq", "awk", "gawk", "find", "tar", "bsdtar", "gtar", "unzip", "git",
];

/// `find` actions whose next word is a file they write.
const FIND_WRITES: &[&str] = &["-fprint", "-fprint0", "-fprintf", "-fls"];

/// Of [`WRITERS`], those that write only when an option or operand says so.
const OPTION_GATED: &[&str] = &[
    "sed", "gsed", "perl", "awk", "gawk", "sort", "uniq", "dd", "curl", "find", "tar", "bsdtar",
    "gtar", "git",
];

/// `host:path`, `user@host:path`, `rsync://…`: not a local file.
fn is_remote(dest: &str) -> bool {
    dest.contains("://")
        || dest
            .split_once(':')
            .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::super::analyze;
    use super::*;

    fn paths(line: &str) -> Vec<String> {
        writes(&analyze(line))
            .targets
            .into_iter()
            .map(|t| t.path)
            .collect()
    }

    fn unknown(line: &str) -> bool {
        !writes(&analyze(line)).unknown.is_empty()
    }

    #[test]
    fn redirection_targets_are_written() {
        assert_eq!(paths("echo x > a >> b 2>&1 &> c >&d"), ["a", "b", "c", "d"]);
        assert_eq!(
            paths("{ echo x; } > .git/hooks/pre-commit"),
            [".git/hooks/pre-commit"]
        );
        assert_eq!(paths("bash -c 'echo x > ~/.bashrc'"), ["~/.bashrc"]);
        assert!(paths("echo x > /dev/null 2>&1").is_empty());
        assert!(unknown("echo x > \"$F\""));
        assert!(unknown("echo x > $(echo f)"));
        assert!(unknown("echo x > ~root/.bashrc"));
        assert!(!unknown("echo \"$X\" > out.txt"));
    }

    #[test]
    fn file_writing_programs_name_their_destinations() {
        assert_eq!(paths("tee -a x y"), ["x", "y"]);
        assert_eq!(paths("cp -r a b"), ["b", "b/a"]);
        assert_eq!(paths("cp -t .git/hooks a"), [".git/hooks", ".git/hooks/a"]);
        assert_eq!(paths("cp --target=d a"), ["d", "d/a"]);
        assert_eq!(paths("cp -T a b"), ["b"]);
        assert_eq!(paths("mv a b"), ["a", "b", "b/a"]);
        assert_eq!(paths("ln -s /x/.bashrc"), ["/x/.bashrc", ".bashrc"]);
        assert_eq!(
            paths("ln -s ../.git/hooks h"),
            ["../.git/hooks", "h", "h/hooks"]
        );
        assert_eq!(paths("sort -u -o .bashrc x"), [".bashrc"]);
        assert_eq!(paths("uniq -c a b"), ["b"]);
        assert_eq!(paths("gawk -i inplace '{print}' a v=1"), ["a"]);
        assert!(paths("awk '{print}' a").is_empty());
        assert_eq!(paths("find . -fprint .bashrc"), [".bashrc"]);
        assert_eq!(paths("tar czf out.tgz src"), ["out.tgz"]);
        assert_eq!(paths("tar -xzf a.tgz -C .git/hooks"), [".git/hooks"]);
        assert!(paths("tar tf a.tgz").is_empty());
        assert!(unknown("tar xf a.tgz"));
        assert_eq!(paths("unzip -o a.zip -d .strata"), [".strata"]);
        assert_eq!(paths("git config core.hooksPath /tmp/h"), [".git/config"]);
        assert_eq!(paths("git -C sub config --add a.b c"), [".git/config"]);
        assert_eq!(paths("git config --global alias.x '!sh'"), ["~/.gitconfig"]);
        assert_eq!(paths("git config set --file f.cfg a.b c"), ["f.cfg"]);
        assert!(paths("git config user.name").is_empty());
        assert!(paths("git config --get-all a.b").is_empty());
        assert!(paths("git config list --global").is_empty());
        assert!(!unknown("git config --get \"$KEY\""));
        assert!(unknown("unzip a.zip"));
        assert!(!unknown("unzip -l a.zip"));
        assert_eq!(
            paths("install -m 755 x .git/hooks/"),
            [".git/hooks/", ".git/hooks/x"]
        );
        assert_eq!(paths("dd if=x of=~/.bashrc"), ["~/.bashrc"]);
        assert_eq!(paths("sed -i 's/a/b/' f g"), ["f", "g"]);
        assert_eq!(paths("sed -Ei.bak -e 's/a/b/' f"), ["f"]);
        assert!(paths("sed 's/a/b/' f").is_empty());
        assert!(paths("sed -n 's/i/b/p' f").is_empty());
        assert_eq!(paths("perl -pi -e 's/a/b/' f"), ["f"]);
        assert_eq!(paths("perl -i.bak script.pl f"), ["f"]);
        assert!(paths("perl -e 'print 1' f").is_empty());
        assert_eq!(paths("touch -d now a"), ["a"]);
        assert_eq!(paths("truncate -s 0 a"), ["a"]);
        assert_eq!(paths("chmod +x a b"), ["a", "b"]);
        assert_eq!(paths("chmod -x a"), ["a"]);
        assert_eq!(paths("chown -R u:g a"), ["a"]);
        assert_eq!(paths("rsync -av -e ssh src/ dst"), ["dst", "dst/src"]);
        assert!(paths("rsync -a src host:dst").is_empty());
        assert_eq!(paths("curl -sSLo out http://h/x"), ["out"]);
        assert_eq!(paths("curl -O 'http://h/a/.bashrc?x=1'"), [".bashrc"]);
        assert_eq!(paths("wget -P d http://h/x.sh"), ["d/x.sh"]);
        assert_eq!(paths("timeout 5 tee x"), ["x"]);
        assert!(paths("cat x | grep y").is_empty());
    }

    #[test]
    fn relative_paths_follow_cd() {
        assert_eq!(
            paths("cd .git/hooks && echo x > pre-commit"),
            ["pre-commit", ".git/hooks/pre-commit"]
        );
        assert_eq!(paths("cd && tee .bashrc"), [".bashrc", "~/.bashrc"]);
        assert!(unknown("cd \"$D\" && tee x"));
        assert!(unknown("cd - && tee x"));
        assert!(!unknown("cd - && tee /abs/x"));
        assert!(unknown("env -C .git/hooks tee pre-commit"));
        assert!(unknown("env -C .git/hooks sh -c 'echo x > pre-commit'"));
        assert!(!unknown("env -C /tmp sh -c 'echo x > /tmp/y'"));
        assert!(unknown("find . -execdir touch x \\;"));
    }

    #[test]
    fn arguments_known_only_when_run_make_targets_unknown() {
        assert!(unknown("cp $A b"));
        assert!(unknown("sed -i \"s/$A/b/\" f"));
        assert!(!unknown("sed -n \"${N}p\" f"));
        assert!(!unknown("awk -v n=\"$N\" '{print n}' f"));
        assert!(!unknown("sort \"$F\""));
        assert!(unknown("sort -o \"$F\" x"));
        assert!(unknown("ls | xargs touch"));
        assert!(unknown("find . -exec cp x {} \\;"));
        assert_eq!(
            paths("find . -name x -exec cp {} .git/hooks/pre-commit \\;"),
            [".git/hooks/pre-commit", ".git/hooks/pre-commit/{}"]
        );
        assert!(!unknown("find . -name '*.o' -exec rm {} +"));
        assert!(!unknown("ls | xargs rm"));
        assert!(!unknown("find . -name '*.o' -exec cat {} \\;"));
        assert!(unknown("echo x >"));
    }
}
