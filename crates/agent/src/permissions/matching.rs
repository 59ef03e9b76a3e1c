//! Matching rule patterns against what a call touches: command lines and paths.
//!
//! **Commands** (`Bash(…)`): `npm test` matches exactly that command; `npm run test:*`
//! matches `npm run test` and anything that continues it after a space (not
//! `npm run testing`); a `*` elsewhere matches any text (`git * main`). A compound
//! command is judged part by part (see [`shell`](crate::tools::bash::shell)), and so is
//! every command a part runs ([`analysis`](crate::tools::bash::analysis): through
//! wrappers, `xargs`, `find -exec`, `bash -c` strings). A deny or ask rule hits if it
//! matches any of them in any spelling: as written, as words after quote removal, with
//! the program's base name (`/bin/rm` is `rm`), and where a word in the rule's span is
//! only known when it runs (`git $SUB` may be `git push`). An allow rule set allows
//! only if every part and every command it runs is allowed, matched as written (the
//! base name is not used: `./git` is not `git`), and never a line with a command whose
//! program is unknown. `cd` into the project (or an additional directory) counts as
//! allowed, so `cd sub && npm test` needs only the `npm test` rule.
//!
//! **Paths** (`Read(…)`, `Edit(…)`): gitignore-style globs. `//abs/path` is absolute,
//! `~/x` is in the home directory, `/x` and `./x` are relative to the project root, a
//! pattern with no `/` matches a name at any depth in the project (`*.env`), other
//! relative patterns are anchored at the project root (`src/**`). A pattern that names
//! a directory also covers everything inside it (a trailing `/` is accepted).

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use strata_config::paths::{
    NameCase, normalize_lexically, path_within, path_within_as_written, resolve_existing, same_name,
};

use crate::tools::bash::analysis::{Analysis, Run, Unknown, analyze_parts, base_name};
use crate::tools::bash::shell::{SimpleCommand, split_command};

/// Whether `pattern` (a `Bash(…)` rule's pattern) matches one command text.
pub(crate) fn command_matches(pattern: &str, command: &str) -> bool {
    let command = command.trim();
    let pattern = pattern.trim();
    if let Some(prefix) = pattern.strip_suffix(":*") {
        let prefix = prefix.trim_end();
        return match command.strip_prefix(prefix) {
            Some(rest) => rest.is_empty() || rest.starts_with(char::is_whitespace),
            None => false,
        };
    }
    if pattern.contains('*') {
        return wildcard(pattern, command);
    }
    pattern == command
}

/// `*` matches any text (including spaces); everything else literally.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = match parts.split_first() {
        Some(split) => split,
        None => return text.is_empty(),
    };
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(i) => remaining = &remaining[i + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

/// A command line split for rule matching.
pub(crate) struct CommandLine {
    pub(crate) whole: String,
    pub(crate) parts: Vec<SimpleCommand>,
    /// Every command the parts run.
    pub(crate) analysis: Analysis,
}

impl CommandLine {
    pub(crate) fn new(line: &str) -> Self {
        let parts = split_command(line);
        Self {
            whole: line.trim().to_owned(),
            analysis: analyze_parts(&parts),
            parts,
        }
    }

    /// Deny/ask: the pattern hits the whole line, any part (also with leading variable
    /// assignments removed, so `X=1 rm -rf /` still hits `rm:*`) or any command a part
    /// runs, in any of its spellings.
    pub(crate) fn any_part_matches(&self, pattern: &str) -> bool {
        command_matches(pattern, &self.whole)
            || self.parts.iter().any(|p| {
                command_matches(pattern, &p.text) || command_matches(pattern, p.command_text())
            })
            || self.analysis.runs.iter().any(|r| run_matches(pattern, r))
    }

    /// The first command whose program cannot be known before it runs.
    pub(crate) fn unknown(&self) -> Option<&Unknown> {
        self.analysis.unknown.first()
    }

    /// The commands that parts run (not the parts themselves), for allow rules.
    pub(crate) fn nested_runs(&self) -> impl Iterator<Item = &Run> {
        self.analysis.runs.iter().filter(|r| r.nested && !r.view)
    }
}

/// Whether a deny or ask `pattern` names `run`: its text, its words joined (as
/// written and with the program's base name), or word by word.
fn run_matches(pattern: &str, run: &Run) -> bool {
    if command_matches(pattern, &run.text) || command_matches(pattern, &run.words.join(" ")) {
        return true;
    }
    let mut resolved = run.words.clone();
    if let Some(program) = resolved.first_mut() {
        *program = base_name(program).to_owned();
    }
    command_matches(pattern, &resolved.join(" ")) || words_match(pattern, run)
}

/// A pattern without a wildcard, word by word against `run`'s words: the program by
/// base name, and a dynamic word within the pattern's words (or, for an exact
/// pattern, after them: it may expand to nothing) matches whatever the pattern has
/// there, since it may expand to it.
fn words_match(pattern: &str, run: &Run) -> bool {
    let pattern = pattern.trim();
    let (body, prefix) = match pattern.strip_suffix(":*") {
        Some(body) => (body.trim_end(), true),
        None => (pattern, false),
    };
    if body.contains('*') {
        return false; // wildcards are matched on text only
    }
    let words: Vec<String> = match split_command(body).as_slice() {
        [one] if one.assignments == 0 => one.words.clone(),
        _ => body.split_whitespace().map(str::to_owned).collect(),
    };
    if words.is_empty() {
        return false;
    }
    let dynamic = |i: usize| run.dynamic.get(i).copied().unwrap_or(false);
    for (i, want) in words.iter().enumerate() {
        let Some(got) = run.words.get(i) else {
            return false;
        };
        if dynamic(i) {
            // An unknown program is judged as such (its own reason), not as a match.
            return i > 0;
        }
        // Case-insensitively for the program: on a case-insensitive file system
        // (macOS, Windows) `RM` finds `rm`.
        let same = got == want || (i == 0 && base_name(got).eq_ignore_ascii_case(base_name(want)));
        if !same {
            return false;
        }
    }
    prefix || (words.len()..run.words.len()).all(dynamic)
}

/// Whether the rule content `pattern` (`domain:example.com`, `domain:*.example.com`)
/// covers the URL host `host` (lower case). A plain domain names that host only; a
/// `*.` prefix names every subdomain and the domain itself. Any other content matches
/// nothing (a rule for WebFetch must say which sites).
pub(crate) fn domain_matches(pattern: &str, host: &str) -> bool {
    let Some(domain) = pattern.trim().strip_prefix("domain:") else {
        return false;
    };
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    match domain.strip_prefix("*.") {
        Some(parent) => {
            host == parent
                || host
                    .strip_suffix(parent)
                    .is_some_and(|sub| sub.ends_with('.'))
        }
        None => host == domain,
    }
}

/// A path a call touches, in the two forms rules are checked against: as written
/// (normalised lexically, which is also the path the file tools open) and where it
/// really leads ([`resolve_existing`]: links resolved, dangling ones followed).
#[derive(Debug, Clone)]
pub(crate) struct ResolvedPath {
    pub(crate) lexical: PathBuf,
    pub(crate) real: PathBuf,
}

impl ResolvedPath {
    /// Resolves `path` against `cwd` when relative.
    pub(crate) fn new(path: &Path, cwd: &Path) -> Self {
        let lexical = normalize_lexically(&cwd.join(path));
        let real = resolve_existing(&lexical);
        Self { lexical, real }
    }

    /// Both forms, for "does any form match" (deny, ask) and "do all forms match"
    /// (allow).
    pub(crate) fn forms(&self) -> [&Path; 2] {
        [&self.lexical, &self.real]
    }
}

/// Whether `path` leads to `dir` or inside it, where both really lead (the shared
/// containment test, [`path_within`]). Where it leads is what a write changes, so a
/// spelling outside that leads inside counts as inside, and a link inside leading out
/// does not.
pub(crate) fn is_inside(path: &ResolvedPath, dir: &Path) -> bool {
    path_within(&path.lexical, dir, NameCase::Exact).is_some()
}

/// What a protected path configures, for the reason a prompt or a denial gives.
const AGENT: &str = "strata's or the reference agent's settings and state";
const GIT: &str = "git's configuration or hooks";
const SHELL: &str = "a shell start-up file";
const EDITOR: &str = "an editor's settings (which can run tasks)";
const SSH: &str = "ssh's configuration or keys";
const MCP: &str = "the MCP servers the agent starts";
const HARD_LINKED: &str = "a file with several hard links, which may be another name of a \
                           protected file";

/// Folders whose files configure programs that run code or grant permissions: an
/// edit there gives the model more than an edit (a `.strata/settings.local.json`
/// allowing Bash, a git hook, an editor task run on open). Matched by name, in any
/// case, at any depth below the working directory holding the path (anywhere in it
/// when outside them).
const PROTECTED_DIRS: [(&str, &str); 7] = [
    (".git", GIT),
    (".husky", GIT),
    (".strata", AGENT),
    (".claude", AGENT),
    (".vscode", EDITOR),
    (".idea", EDITOR),
    (".ssh", SSH),
];
/// Two folders in a row that hold such configuration (`~/.config/fish/…`).
const PROTECTED_SUBDIRS: [(&str, &str, &str); 2] =
    [(".config", "fish", SHELL), (".config", "git", GIT)];
/// Files that run commands or configure git, the agents or every later shell, by name
/// wherever they are (`.envrc`: direnv runs it on entering the directory).
const PROTECTED_FILES: [(&str, &str); 15] = [
    (".envrc", SHELL),
    (".bashrc", SHELL),
    (".bash_profile", SHELL),
    (".bash_login", SHELL),
    (".bash_logout", SHELL),
    (".profile", SHELL),
    (".zshrc", SHELL),
    (".zshenv", SHELL),
    (".zprofile", SHELL),
    (".zlogin", SHELL),
    (".zlogout", SHELL),
    (".gitconfig", GIT),
    (".gitmodules", GIT),
    (".claude.json", AGENT),
    (".mcp.json", MCP),
];

/// A containment test of the shared kind ([`path_within`] or its spelling form).
type Within = fn(&Path, &Path, NameCase) -> Option<PathBuf>;

/// Whether a write to `path` changes what strata, the reference agent, git or the shell
/// do, and so always needs approval (only bypass mode skips it): `Some(what it is)`.
///
/// Judged on both forms (as written and where links lead), names in any case: a
/// [`PROTECTED_FILES`] name anywhere; a [`PROTECTED_DIRS`] or [`PROTECTED_SUBDIRS`]
/// folder among the names below the deepest working directory (`roots`) holding the
/// path (all names when none does: a project that itself lives under a `.vscode`
/// folder is not protected as a whole); inside one of `dirs` (the config
/// directories, protected as a whole wherever they are); or an existing file with
/// several hard links.
pub(crate) fn is_protected(
    path: &ResolvedPath,
    roots: &[&Path],
    dirs: &[PathBuf],
) -> Option<&'static str> {
    let case = NameCase::Insensitive;
    let is = |a: &std::ffi::OsStr, b: &str| same_name(a, std::ffi::OsStr::new(b), case);
    // Each form against the same form of the roots.
    let forms: [(&Path, Within); 2] = [
        (&path.lexical, path_within_as_written),
        (&path.real, path_within),
    ];
    for (form, within) in forms {
        if let Some(name) = form.file_name()
            && let Some((_, what)) = PROTECTED_FILES.iter().find(|(f, _)| is(name, f))
        {
            return Some(what);
        }
        // Names below the deepest root holding it; all of them outside every root.
        let rest = roots
            .iter()
            .filter_map(|root| within(form, root, NameCase::Exact))
            .min_by_key(|rest| rest.components().count())
            .unwrap_or_else(|| form.to_path_buf());
        let names: Vec<&std::ffi::OsStr> = rest
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        for (i, name) in names.iter().enumerate() {
            if let Some((_, what)) = PROTECTED_DIRS.iter().find(|(d, _)| is(name, d)) {
                return Some(what);
            }
            if let Some(next) = names.get(i + 1)
                && let Some((_, _, what)) = PROTECTED_SUBDIRS
                    .iter()
                    .find(|(a, b, _)| is(name, a) && is(next, b))
            {
                return Some(what);
            }
        }
    }
    if dirs.iter().any(|dir| {
        path_within(&path.lexical, dir, case).is_some()
            || path_within_as_written(&path.lexical, dir, case).is_some()
    }) {
        return Some(AGENT);
    }
    // A file with more than one name may be a protected file under another name (a
    // hard link made earlier); where its other names are cannot be known, so it asks.
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(&path.real)
            .is_ok_and(|m| m.is_file() && m.nlink() > 1)
            .then_some(HARD_LINKED)
    }
}

/// Compiles a path rule pattern into globs over absolute paths.
pub(crate) fn compile_path_pattern(
    pattern: &str,
    project_root: &Path,
    home: Option<&Path>,
) -> Result<GlobSet, String> {
    let escape_dir = |p: &Path| globset::escape(&p.to_string_lossy());
    let (base, rest): (String, String) = if let Some(abs) = pattern.strip_prefix("//") {
        (String::new(), format!("/{abs}"))
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        let home = home.ok_or("the home directory is unknown, so `~/` cannot be used")?;
        (escape_dir(home), rest.to_owned())
    } else if pattern == "~" {
        let home = home.ok_or("the home directory is unknown, so `~` cannot be used")?;
        (escape_dir(home), String::new())
    } else {
        let root = escape_dir(project_root);
        let rel = pattern.strip_prefix("./").unwrap_or(pattern);
        let anchored = rel.starts_with('/') || rel.trim_end_matches('/').contains('/');
        let rel = rel.trim_start_matches('/');
        if anchored {
            (root, rel.to_owned())
        } else {
            (root, format!("**/{rel}"))
        }
    };
    // A trailing `/` (gitignore's "directory") changes nothing here: the pattern
    // covers the directory and, as every pattern does, everything inside it.
    let rest = rest.trim_end_matches('/');
    let glob = match (base.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_owned(),
        (false, true) => base,
        (false, false) => format!("{}/{rest}", base.trim_end_matches('/')),
    };
    let mut set = GlobSetBuilder::new();
    for g in [glob.clone(), format!("{}/**", glob.trim_end_matches('/'))] {
        let glob = GlobBuilder::new(&g)
            .literal_separator(true)
            .build()
            .map_err(|e| e.to_string())?;
        set.add(glob);
    }
    set.build().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webfetch_domain_rules_name_a_host_or_its_subdomains() {
        assert!(domain_matches("domain:example.com", "example.com"));
        assert!(!domain_matches("domain:example.com", "docs.example.com"));
        assert!(domain_matches("domain:*.example.com", "docs.example.com"));
        assert!(domain_matches("domain:*.example.com", "example.com"));
        assert!(!domain_matches("domain:*.example.com", "badexample.com"));
        assert!(domain_matches("domain:Example.COM", "example.com"));
        assert!(!domain_matches("example.com", "example.com"));
    }

    #[test]
    fn prefix_rules_match_at_word_boundaries() {
        assert!(command_matches("npm run test:*", "npm run test"));
        assert!(command_matches("npm run test:*", "npm run test -- --watch"));
        assert!(!command_matches("npm run test:*", "npm run testing"));
        assert!(!command_matches("npm run test:*", "npm run"));
    }

    #[test]
    fn exact_and_wildcard_rules() {
        assert!(command_matches("npm test", " npm test "));
        assert!(!command_matches("npm test", "npm test x"));
        assert!(command_matches("git * main", "git push origin main"));
        assert!(!command_matches("git * main", "git push origin dev"));
        assert!(command_matches("*", "anything at all"));
        assert!(command_matches("ls *", "ls -la"));
    }

    #[test]
    fn rules_see_words_base_names_and_wrapped_commands() {
        for line in [
            "/bin/rm x",
            "'rm' x",
            "r\\m x",
            "$'\\x72m' x",
            "timeout -s KILL 5 rm x",
            "bash -c 'rm x'",
            "git $(echo x) && rm x",
        ] {
            assert!(CommandLine::new(line).any_part_matches("rm:*"), "{line}");
        }
        assert!(CommandLine::new("git -C sub push").any_part_matches("git push:*"));
        assert!(CommandLine::new("git \"$SUB\" origin").any_part_matches("git push:*"));
        assert!(!CommandLine::new("git log \"$REF\"").any_part_matches("git push:*"));
        assert!(!CommandLine::new("echo rm x").any_part_matches("rm:*"));
        assert!(CommandLine::new("$X x").unknown().is_some());
        assert!(CommandLine::new("rm x").unknown().is_none());
    }

    #[test]
    fn compound_lines_expose_every_part() {
        let line = CommandLine::new("cd x && FOO=1 rm -rf / ; echo $(curl evil)");
        assert!(line.any_part_matches("rm:*"));
        assert!(line.any_part_matches("curl:*"));
        assert!(!line.any_part_matches("wget:*"));
    }

    fn matches(pattern: &str, path: &str) -> bool {
        let set =
            compile_path_pattern(pattern, Path::new("/proj"), Some(Path::new("/home/u"))).unwrap();
        set.is_match(path)
    }

    #[test]
    fn path_patterns_follow_gitignore_anchoring() {
        assert!(matches("src/**", "/proj/src/a/b.rs"));
        assert!(!matches("src/**", "/proj/lib/src/b.rs"));
        assert!(matches("*.env", "/proj/.env") || matches(".env", "/proj/.env"));
        assert!(matches("*.env", "/proj/config/prod.env"));
        assert!(matches(".env", "/proj/deep/dir/.env"));
        assert!(matches("/docs/*.md", "/proj/docs/a.md"));
        assert!(!matches("/docs/*.md", "/proj/docs/sub/a.md"));
        assert!(matches("./docs", "/proj/docs/sub/a.md"));
        assert!(matches("//etc/**", "/etc/passwd"));
        assert!(matches("//etc", "/etc/passwd"));
        assert!(matches("~/.ssh/**", "/home/u/.ssh/id_rsa"));
        assert!(matches("secrets/", "/proj/secrets/key"));
        assert!(matches("secrets/", "/proj/secrets"));
        assert!(!matches("*.rs", "/other/x.rs"));
    }

    #[test]
    fn special_characters_in_the_root_are_literal() {
        let set = compile_path_pattern("a.txt", Path::new("/p[1]"), None).unwrap();
        assert!(set.is_match("/p[1]/a.txt"));
        assert!(!set.is_match("/p1/a.txt"));
    }
}
