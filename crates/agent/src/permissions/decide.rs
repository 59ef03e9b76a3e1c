//! The decision for one tool call (the order is documented on the
//! [module](super)).

use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_protocol::permission::PermissionMode;

use super::matching::{CommandLine, ResolvedPath, compile_path_pattern, is_inside, is_protected};
use super::{PermissionDecision, Permissions};
use crate::tools::bash::analysis::Unknown;
use crate::tools::bash::analysis::writes::writes;
use crate::tools::{PermissionSubject, Tool};
use strata_state::{PermissionRule, RuleBehavior, RuleSource};

/// What a call touches, resolved for matching.
enum Subject {
    Command(CommandLine),
    Path(ResolvedPath),
    Domain(String),
    None,
}

/// What kind of call this is, for the `Read(…)` / `Edit(…)` rule aliases.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    ReadsPath,
    EditsPath,
    Other,
}

struct Call<'a> {
    tool: &'a str,
    /// False for a call that needs no permission ([`Tool::needs_permission`]): only a
    /// deny rule decides it.
    needs_permission: bool,
    cwd: &'a Path,
    read_only: bool,
    /// The call is a question to the user ([`Tool::asks_the_user`]): it always asks.
    asks_the_user: bool,
    class: Class,
    subject: Subject,
    /// `Bash with command "…"`, `Edit on /path`: for reasons.
    describe: String,
    /// For a write to a protected path: what the path configures (see
    /// [`is_protected`]). Such a write always asks, whatever allow rule or mode.
    protected: Option<&'static str>,
    /// For a command: what it writes that is protected, or may be (see
    /// [`BashWrites`]).
    bash: BashWrites,
}

/// What a Bash command writes, as far as permissions care (see
/// [`writes`](crate::tools::bash::analysis::writes)).
#[derive(Default)]
struct BashWrites {
    /// A file it writes that is protected: the reason. Asks like a Write to it.
    protected: Option<String>,
    /// Why some file it writes is only known when it runs: it may be protected, so a
    /// rule that would allow the command asks instead.
    unknown: Option<String>,
}

impl Permissions<'_> {
    /// Decides whether `tool` may run with `input`, given the working directory `cwd`
    /// (relative paths in the input are resolved against it).
    pub fn check(&self, tool: &dyn Tool, input: &Value, cwd: &Path) -> PermissionDecision {
        let read_only = tool.is_read_only(input);
        let raw = tool.permission_subject(input);
        let (subject, class, describe) = match &raw {
            Some(PermissionSubject::Command(c)) => (
                Subject::Command(CommandLine::new(c)),
                Class::Other,
                format!("{} with command `{}`", tool.name(), c.trim()),
            ),
            Some(PermissionSubject::Path(p)) => {
                let resolved = ResolvedPath::new(p, cwd);
                let describe = format!("{} on {}", tool.name(), resolved.lexical.display());
                let class = if read_only {
                    Class::ReadsPath
                } else {
                    Class::EditsPath
                };
                (Subject::Path(resolved), class, describe)
            }
            Some(PermissionSubject::Domain(host)) => {
                let describe = format!("{} on {host}", tool.name());
                (Subject::Domain(host.clone()), Class::Other, describe)
            }
            None => (Subject::None, Class::Other, tool.name().to_owned()),
        };
        let protected = match &subject {
            Subject::Path(p) if class == Class::EditsPath => self.protected(p),
            _ => None,
        };
        let bash = match &subject {
            Subject::Command(line) => self.bash_writes(line, cwd),
            _ => BashWrites::default(),
        };
        let call = Call {
            tool: tool.name(),
            needs_permission: tool.needs_permission(input),
            cwd,
            read_only,
            asks_the_user: tool.asks_the_user(),
            class,
            subject,
            describe,
            protected,
            bash,
        };
        let ask_reason = match self.decide(&call) {
            Ok(decision) => return decision,
            Err(ask_reason) => ask_reason,
        };
        // Asked because of a protected file (or one that may be): no rule helps.
        let protected = call.protected.is_some()
            || call.bash.protected.is_some()
            || (call.bash.unknown.is_some() && self.allowed_by_rules(&call));
        if call.asks_the_user
            && (self.state.should_avoid_permission_prompts
                || self.state.mode == PermissionMode::DontAsk)
        {
            return PermissionDecision::Deny {
                reason: format!(
                    "{ask_reason}, and nobody can answer in this run (no interactive UI and no \
                     SDK client answering permission requests), so it could not be asked. \
                     Continue without it, or tell the user in your reply what you need."
                ),
            };
        }
        if self.state.mode == PermissionMode::DontAsk {
            PermissionDecision::Deny {
                reason: format!(
                    "{ask_reason}. Permission mode dontAsk denies anything that would need \
                     approval."
                ),
            }
        } else if self.state.should_avoid_permission_prompts && protected {
            PermissionDecision::Deny {
                reason: format!(
                    "{ask_reason}, and no permission prompt can be shown here, so it was denied \
                     automatically. No allow rule covers a protected file: the user can make \
                     this change themselves, approve it in a session that can ask, or run in \
                     bypassPermissions mode."
                ),
            }
        } else if self.state.should_avoid_permission_prompts {
            PermissionDecision::Deny {
                reason: format!(
                    "{ask_reason}, and no permission prompt can be shown here, so it was denied \
                     automatically. If it is needed, the user can allow it with a permission \
                     rule (for example --allowedTools)."
                ),
            }
        } else {
            PermissionDecision::Ask { reason: ask_reason }
        }
    }

    /// `Ok` for a final decision, `Err(reason)` for "would ask".
    fn decide(&self, call: &Call<'_>) -> Result<PermissionDecision, String> {
        if let Some((source, rule)) = self.first_match(RuleBehavior::Deny, call) {
            return Ok(PermissionDecision::Deny {
                reason: format!(
                    "Permission to use {} was denied by the rule `{rule}` ({} deny).",
                    call.describe,
                    source.describe(RuleBehavior::Deny)
                ),
            });
        }
        if let Some((source, rule, unknown)) = self.unknown_program(RuleBehavior::Deny, call) {
            return Ok(PermissionDecision::Deny {
                reason: format!(
                    "Permission to use {} was denied: what `{}` runs cannot be checked \
                     against the rule `{rule}` ({} deny) before it runs: {}. Write the \
                     command so that the program it runs is spelled out.",
                    call.describe,
                    unknown.command,
                    source.describe(RuleBehavior::Deny),
                    unknown.why
                ),
            });
        }
        // A question to the user is answered by the user, not by a rule or a mode (only a
        // deny rule above refuses it).
        if call.asks_the_user {
            return Err(format!("{} needs the user's answer", call.describe));
        }
        if self.state.mode == PermissionMode::Plan && !call.read_only && call.needs_permission {
            return Ok(PermissionDecision::Deny {
                reason: format!(
                    "{} was denied: plan mode allows only read-only tools. Finish the plan and \
                     present it to the user; changes can be made once they approve it and \
                     leave plan mode.",
                    call.describe
                ),
            });
        }
        // A settings file whose rules cannot be read might deny this call (fail closed).
        if let Some(outcome) = self.unknown_rules_decision(&call.describe) {
            return outcome;
        }
        // What the session itself started (its tasks, its agents) is the session's to
        // manage: past the deny rules (and while every rule can be read), nothing asks
        // or refuses it, plan mode included.
        if !call.needs_permission {
            return Ok(PermissionDecision::Allow);
        }
        if let Some((source, rule)) = self.first_match(RuleBehavior::Ask, call) {
            return Err(format!(
                "{} requires approval by the rule `{rule}` ({} ask)",
                call.describe,
                source.describe(RuleBehavior::Ask)
            ));
        }
        if let Some((source, rule, unknown)) = self.unknown_program(RuleBehavior::Ask, call) {
            return Err(format!(
                "{} requires approval: what `{}` runs cannot be checked against the rule \
                 `{rule}` ({} ask) before it runs: {}",
                call.describe,
                unknown.command,
                source.describe(RuleBehavior::Ask),
                unknown.why
            ));
        }
        if self.state.mode == PermissionMode::BypassPermissions
            && self.state.is_bypass_permissions_mode_available
        {
            return Ok(PermissionDecision::Allow);
        }
        // Before allow rules and accept-edits: a write that changes what the agent, git
        // or the shell do would let the model give itself more than the rule meant
        // (`Write(/**)` writing `.strata/settings.local.json` to allow Bash).
        if let (Some(what), Subject::Path(p)) = (call.protected, &call.subject) {
            return Err(format!(
                "{} requires approval: {} is a protected path ({what}), which no allow rule \
                 or accept-edits mode covers (only bypassPermissions mode skips this)",
                call.describe,
                p.lexical.display()
            ));
        }
        // The same for a command that writes such a path (`echo … > .strata/…`, `tee
        // .git/hooks/pre-commit`): it asks as a Write to the path would.
        if let Some(reason) = &call.bash.protected {
            return Err(format!(
                "{} requires approval: {reason}, which no allow rule or accept-edits mode \
                 covers (only bypassPermissions mode skips this)",
                call.describe
            ));
        }
        if self.allowed_by_rules(call) {
            // Fail closed: a rule allows the command, but not a write to a file that
            // is only known when it runs (`> "$F"`), which may be a protected one.
            if let Some(why) = &call.bash.unknown {
                return Err(format!(
                    "{} requires approval: {why}, and it may be a protected path (agent \
                     settings, .git, shell start-up files), which no allow rule covers. \
                     Spell out the file it writes",
                    call.describe
                ));
            }
            return Ok(PermissionDecision::Allow);
        }
        let inside = match &call.subject {
            Subject::Path(p) => self.inside_working_dirs(p),
            _ => false,
        };
        let readable = match &call.subject {
            Subject::Path(p) => inside || self.in_readable_dirs(p),
            _ => false,
        };
        if call.read_only && (readable || matches!(call.subject, Subject::None)) {
            return Ok(PermissionDecision::Allow);
        }
        // A command the analysis classes read-only is a read of the files it names:
        // allowed as a Read of them would be (issue 25 item 7: plan mode's `ls`).
        if call.read_only
            && let Subject::Command(line) = &call.subject
            && self.command_reads_allowed(line, call.cwd)
        {
            return Ok(PermissionDecision::Allow);
        }
        // Protected paths were sent to the prompt above.
        if self.state.mode == PermissionMode::AcceptEdits
            && call.class == Class::EditsPath
            && inside
        {
            return Ok(PermissionDecision::Allow);
        }
        let where_ = match &call.subject {
            Subject::Path(_) if !inside => " (outside the project directory)",
            _ => "",
        };
        Err(format!("{}{where_} requires approval", call.describe))
    }

    /// Whether a write to `path` is a protected one ([`is_protected`] with this
    /// context's working directories and config directories): what the path configures.
    pub(crate) fn protected(&self, path: &ResolvedPath) -> Option<&'static str> {
        let roots: Vec<&Path> = std::iter::once(self.env.project_root.as_path())
            .chain(self.additional.iter().map(PathBuf::as_path))
            .collect();
        is_protected(path, &roots, &self.env.protected_dirs)
    }

    /// Whether writing the file at `path` (relative paths against `cwd`, a leading `~/`
    /// in the home directory) needs approval whatever the allow rules say: for tools
    /// that write files other than through a path subject (a Bash redirection target),
    /// so they ask as Write and Edit do. `Some(the reason)` when protected. A target
    /// whose value is only known at run time (`> "$F"`) cannot be judged here; the
    /// caller must treat it as unknown.
    pub fn protected_write(&self, path: &Path, cwd: &Path) -> Option<String> {
        self.protected_target(path, cwd).map(|(path, what)| {
            format!(
                "writing {} requires approval: it is a protected path ({what})",
                path.display()
            )
        })
    }

    /// [`protected_write`](Self::protected_write)'s judgement: the path (absolute,
    /// normalised) and what it configures.
    fn protected_target(&self, path: &Path, cwd: &Path) -> Option<(PathBuf, &'static str)> {
        let expanded = match (path.strip_prefix("~"), &self.env.home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => path.to_path_buf(),
        };
        let resolved = ResolvedPath::new(&expanded, cwd);
        self.protected(&resolved)
            .map(|what| (resolved.lexical, what))
    }

    /// Whether the command `line` (run in `cwd`) writes a protected path: it asks
    /// whatever rule there is, so no suggested rule would spare the next prompt.
    pub(crate) fn bash_writes_protected(&self, line: &str, cwd: &Path) -> bool {
        self.bash_writes(&CommandLine::new(line), cwd)
            .protected
            .is_some()
    }

    /// What the command `line` writes (relative paths against `cwd`) that is protected
    /// or only known when it runs.
    fn bash_writes(&self, line: &CommandLine, cwd: &Path) -> BashWrites {
        let found = writes(&line.analysis);
        let protected = found.targets.iter().find_map(|t| {
            self.protected_target(Path::new(&t.path), cwd)
                .map(|(path, what)| {
                    format!(
                        "it writes {} (through {}), a protected path ({what})",
                        path.display(),
                        t.by
                    )
                })
        });
        BashWrites {
            protected,
            unknown: found.unknown.into_iter().next(),
        }
    }

    /// Whether every file a read-only command line may read is known and readable
    /// without a prompt: inside the working or readable directories, and named by no
    /// Read deny or ask rule (`cat .env` must not pass a `Read(.env)` rule by).
    fn command_reads_allowed(&self, line: &CommandLine, cwd: &Path) -> bool {
        let Some(paths) = super::command_reads::paths_read(line, cwd, self.env.home.as_deref())
        else {
            return false;
        };
        paths.iter().all(|path| {
            let path = ResolvedPath::new(path, cwd);
            let readable = self.inside_working_dirs(&path) || self.in_readable_dirs(&path);
            let describe = format!("Read on {}", path.lexical.display());
            let as_read = Call {
                tool: "Read",
                needs_permission: true,
                cwd,
                read_only: true,
                asks_the_user: false,
                class: Class::ReadsPath,
                subject: Subject::Path(path),
                describe,
                protected: None,
                bash: BashWrites::default(),
            };
            readable
                && self.first_match(RuleBehavior::Deny, &as_read).is_none()
                && self.first_match(RuleBehavior::Ask, &as_read).is_none()
        })
    }

    /// Whether `path` is in a directory read-only tools may read outside the working
    /// directories (a skill's folder).
    fn in_readable_dirs(&self, path: &ResolvedPath) -> bool {
        self.env.readable_dirs.iter().any(|d| is_inside(path, d))
    }

    fn inside_working_dirs(&self, path: &ResolvedPath) -> bool {
        is_inside(path, &self.env.project_root)
            || self.additional.iter().any(|d| is_inside(path, d))
    }

    /// Whether a rule names this call's tool, directly or through the file aliases.
    fn names(&self, rule: &PermissionRule, call: &Call<'_>) -> bool {
        rule.names_tool(call.tool)
            || (rule.tool_name == "Edit" && call.class == Class::EditsPath)
            || (rule.tool_name == "Read" && call.class == Class::ReadsPath)
    }

    /// The first rule of `behavior` that matches the call (any part of a command, any
    /// form of a path).
    fn first_match(
        &self,
        behavior: RuleBehavior,
        call: &Call<'_>,
    ) -> Option<(RuleSource, &PermissionRule)> {
        self.state.rules(behavior).iter().find(|(_, rule)| {
            if !self.names(rule, call) {
                return false;
            }
            let Some(pattern) = &rule.content else {
                return true;
            };
            match &call.subject {
                Subject::Command(line) => line.any_part_matches(pattern),
                Subject::Path(p) => {
                    self.path_matches(pattern, p, |forms| forms.iter().any(|b| *b), true)
                }
                Subject::Domain(host) => super::matching::domain_matches(pattern, host),
                Subject::None => false,
            }
        })
    }

    /// For a command with a part whose program cannot be known statically: the first
    /// rule of `behavior` that names a Bash command (any of which that part may be).
    fn unknown_program<'c>(
        &self,
        behavior: RuleBehavior,
        call: &'c Call<'_>,
    ) -> Option<(RuleSource, &PermissionRule, &'c Unknown)> {
        let Subject::Command(line) = &call.subject else {
            return None;
        };
        let unknown = line.unknown()?;
        let (source, rule) = self
            .state
            .rules(behavior)
            .iter()
            .find(|(_, rule)| rule.content.is_some() && self.names(rule, call))?;
        Some((source, rule, unknown))
    }

    /// Allow rules: a whole-tool rule, or for commands every part allowed (or an exact
    /// rule for the whole line), or for paths every form matching.
    fn allowed_by_rules(&self, call: &Call<'_>) -> bool {
        let rules: Vec<&PermissionRule> = self
            .state
            .always_allow_rules
            .iter()
            .map(|(_, r)| r)
            .filter(|r| self.names(r, call))
            .collect();
        if rules.iter().any(|r| r.content.is_none()) {
            return true;
        }
        match &call.subject {
            Subject::Command(line) => {
                let exact_whole = rules
                    .iter()
                    .filter_map(|r| r.content.as_deref())
                    .any(|p| !p.contains('*') && super::matching::command_matches(p, &line.whole));
                // A wildcard rule allows a command, not a write through a redirection:
                // `Bash(echo:*)` must not allow `echo x >> ~/.bashrc`. Only a rule that
                // names the whole part exactly allows a part that writes a file.
                // A pattern allows a program it can see: a line with a command whose
                // program is only known when it runs is never allowed by one, and every
                // command a part runs (through a wrapper, `xargs`, `bash -c`) must be
                // allowed too (`Bash(find:*)` does not allow `find -exec rm {} ;`).
                let allows = |text: &str, writes_file: bool| {
                    rules
                        .iter()
                        .filter_map(|r| r.content.as_deref())
                        .filter(|p| !writes_file || !p.contains('*'))
                        .any(|p| super::matching::command_matches(p, text))
                };
                exact_whole
                    || (!line.parts.is_empty()
                        && line.unknown().is_none()
                        && line.parts.iter().all(|part| {
                            allows(&part.text, part.writes_file)
                                || self.is_cd_into_working_dir(part, call.cwd)
                        })
                        && line
                            .nested_runs()
                            .all(|run| allows(&run.text, run.writes_file)))
            }
            Subject::Path(p) => rules
                .iter()
                .filter_map(|r| r.content.as_deref())
                .any(|pattern| {
                    self.path_matches(pattern, p, |forms| forms.iter().all(|b| *b), false)
                }),
            Subject::Domain(host) => rules
                .iter()
                .filter_map(|r| r.content.as_deref())
                .any(|pattern| super::matching::domain_matches(pattern, host)),
            Subject::None => false,
        }
    }

    /// `cd <dir>` to a directory inside the project or an additional directory.
    fn is_cd_into_working_dir(
        &self,
        part: &crate::tools::bash::shell::SimpleCommand,
        cwd: &Path,
    ) -> bool {
        let argv = part.argv();
        if part.writes_file
            || part.assignments > 0
            || argv.first().map(String::as_str) != Some("cd")
        {
            return false;
        }
        match argv.get(1..) {
            Some([dir]) if !dir.contains(['$', '`', '*', '?', '~']) => {
                let target = ResolvedPath::new(&PathBuf::from(dir), cwd);
                self.inside_working_dirs(&target)
            }
            _ => false,
        }
    }

    /// Matches a path pattern against both forms of `path`, combining the per-form
    /// results with `combine` (any for deny/ask, all for allow). A pattern that does
    /// not compile cannot be honoured as written, so it fails safe: it matches
    /// everything for deny and ask (the reason names the rule, so the user can fix it)
    /// and nothing for allow.
    fn path_matches(
        &self,
        pattern: &str,
        path: &ResolvedPath,
        combine: impl Fn(&[bool]) -> bool,
        on_error: bool,
    ) -> bool {
        match compile_path_pattern(pattern, &self.env.project_root, self.env.home.as_deref()) {
            Ok(set) => combine(&path.forms().map(|f| set.is_match(f))),
            Err(err) => {
                tracing::warn!(pattern, %err, "permission rule pattern does not compile");
                on_error
            }
        }
    }

    /// The decision while a settings file's rules are unknown (`None` when every file's
    /// rules are known): deny where no one can be asked (dontAsk, no prompt channel),
    /// else ask. The reason names the file, line and column.
    fn unknown_rules_decision(&self, describe: &str) -> Option<Result<PermissionDecision, String>> {
        let unknown = self.state.unknown_settings_rules.front()?;
        let reason = format!(
            "{describe} requires approval: the permission rules of the settings file {} \
             cannot be read ({unknown}), so strata cannot know whether they deny it; fix the \
             file, then strata reads it again",
            unknown.file
        );
        if self.state.should_avoid_permission_prompts || self.state.mode == PermissionMode::DontAsk
        {
            return Some(Ok(PermissionDecision::Deny {
                reason: format!(
                    "{reason}. No permission prompt can be shown here, so it was denied."
                ),
            }));
        }
        Some(Err(reason))
    }
}
