//! The pure parts of running a custom command: recognising `/name args`, putting the
//! arguments in, finding the `` !`command` `` snippets and `@file` mentions, and the
//! command tag the transcript records (the reference agent's `<command-name>` lines).
//!
//! Running the snippets and reading the files need the session (permissions, the Bash
//! tool, the working directory): the engine does that (`engine/commands.rs`).

use std::ops::Range;

/// `/name args` → (`name`, `args`), for a prompt that starts with a slash.
pub fn parse_invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    (!name.is_empty()).then_some((name, args.trim()))
}

/// The positional arguments: split at whitespace, `"double"` or `'single'` quotes
/// keeping spaces together.
pub fn split_arguments(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                any = false;
            }
            None => current.push(c),
        }
    }
    if any || !current.is_empty() {
        out.push(current);
    }
    out
}

/// `body` with `$ARGUMENTS` replaced by `args` and `$1`, `$2`, … by the positional
/// arguments (a missing one is empty). A body that uses neither and is given arguments
/// gets them appended (`ARGUMENTS: …`), as the reference agent does, so they are never
/// lost.
pub fn substitute(body: &str, args: &str) -> String {
    let positional = split_arguments(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
            continue;
        }
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            let n: usize = after[..digits].parse().unwrap_or(0);
            if n > 0 {
                if let Some(value) = positional.get(n - 1) {
                    out.push_str(value);
                }
                used = true;
                rest = &after[digits..];
                continue;
            }
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("\nARGUMENTS: ");
        out.push_str(args);
    }
    out
}

/// What a skill's body is given when it runs: the arguments typed after `/name` (or the
/// `Skill` tool's `args`), the names its `arguments` front matter gives them, its folder
/// and the session.
#[derive(Debug, Clone, Copy)]
pub struct SkillInput<'a> {
    /// Everything after the skill's name, as typed.
    pub args: &'a str,
    /// The front matter's `arguments`: a name for each position, in order.
    pub names: &'a [String],
    /// The folder holding `SKILL.md` (`${CLAUDE_SKILL_DIR}`).
    pub skill_dir: &'a str,
    /// The session's id (`${CLAUDE_SESSION_ID}`); `None` leaves the variable as written
    /// (a caller that does not know the session).
    pub session_id: Option<&'a str>,
}

/// A skill's `body` with its arguments put in, the way the reference agent documents
/// skills: `$ARGUMENTS` is the whole text; `$ARGUMENTS[N]` and `$N` the argument at
/// 0-based position `N` (quotes keep spaces together; a missing one is empty); `$name`
/// the argument its `arguments` front matter names; `${CLAUDE_SKILL_DIR}` and
/// `${CLAUDE_SESSION_ID}` the skill's folder and the session. Arguments a body does not
/// use are appended (`ARGUMENTS: …`), as for a command.
///
/// Positions differ from a command's on purpose: a command file's `$1` is its first
/// argument (the commands' format), a skill's `$0` is (the skills' format).
pub fn substitute_skill(body: &str, input: SkillInput<'_>) -> String {
    let positional = split_arguments(input.args);
    let at = |n: usize| positional.get(n).map(String::as_str).unwrap_or("");
    let mut out = String::with_capacity(body.len() + input.args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(found) = rest.find('$') {
        out.push_str(&rest[..found]);
        let after = &rest[found + 1..];
        if let Some(tail) = after.strip_prefix("{CLAUDE_SKILL_DIR}") {
            out.push_str(input.skill_dir);
            rest = tail;
            continue;
        }
        if let (Some(tail), Some(id)) =
            (after.strip_prefix("{CLAUDE_SESSION_ID}"), input.session_id)
        {
            out.push_str(id);
            rest = tail;
            continue;
        }
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            // `$ARGUMENTS[N]`: one argument; a bracket without a number is text.
            if let Some(index) = tail.strip_prefix('[') {
                let digits = index.chars().take_while(char::is_ascii_digit).count();
                if digits > 0 && index[digits..].starts_with(']') {
                    let n: usize = index[..digits].parse().unwrap_or(usize::MAX);
                    out.push_str(at(n));
                    used = true;
                    rest = &index[digits + 1..];
                    continue;
                }
            }
            out.push_str(input.args);
            used = true;
            rest = tail;
            continue;
        }
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            let n: usize = after[..digits].parse().unwrap_or(usize::MAX);
            out.push_str(at(n));
            used = true;
            rest = &after[digits..];
            continue;
        }
        // `$name`: the longest run of name characters, when it is a declared name.
        let word = after
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
            .map_or(after.len(), |(i, _)| i);
        if let Some(n) = input.names.iter().position(|name| *name == after[..word]) {
            out.push_str(at(n));
            used = true;
            rest = &after[word..];
            continue;
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    if !used && !input.args.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("\nARGUMENTS: ");
        out.push_str(input.args);
    }
    out
}

/// Where each `` !`command` `` snippet is in `text` (the whole snippet) and its command.
pub fn shell_snippets(text: &str) -> Vec<(Range<usize>, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("!`") {
        let start = from + at;
        let inner = start + 2;
        let Some(len) = text[inner..].find('`') else {
            break;
        };
        let command = &text[inner..inner + len];
        if !command.trim().is_empty() && !command.contains('\n') {
            found.push((start..inner + len + 1, command.trim().to_owned()));
        }
        from = inner + len + 1;
    }
    found
}

/// The `@path` mentions of `text`: an `@` at the start or after whitespace, up to the
/// next whitespace (trailing punctuation such as `,` or `.` is not part of the path).
/// Each is given once, in order. `@server:uri` (an MCP resource) is not a file.
pub fn file_mentions(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut previous_is_space = true;
    for (i, c) in text.char_indices() {
        if c == '@' && previous_is_space {
            let rest = &text[i + 1..];
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let path = rest[..end].trim_end_matches([',', '.', ';', ':', ')', '!', '?']);
            let looks_like_resource = path
                .split_once(':')
                .is_some_and(|(server, _)| !server.contains('/'));
            if !path.is_empty() && !looks_like_resource && !found.iter().any(|f| f == path) {
                found.push(path.to_owned());
            }
        }
        previous_is_space = c.is_whitespace();
    }
    found
}

/// The transcript's record of a command invocation, in the reference agent's tags.
pub fn command_tag(name: &str, args: &str) -> String {
    format!(
        "<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n\
         <command-args>{args}</command-args>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_prompt_is_a_name_and_its_arguments() {
        assert_eq!(
            parse_invocation("  /fix-issue 123 high\n"),
            Some(("fix-issue", "123 high"))
        );
        assert_eq!(parse_invocation("/commit"), Some(("commit", "")));
        assert_eq!(parse_invocation("no slash"), None);
        assert_eq!(parse_invocation("/ alone"), None);
    }

    #[test]
    fn arguments_and_positions_are_put_in() {
        assert_eq!(
            substitute("Fix #$1 with priority $2: $ARGUMENTS", "123 high"),
            "Fix #123 with priority high: 123 high"
        );
        assert_eq!(substitute("Quoted: $1|$2", "\"a b\" c"), "Quoted: a b|c");
        assert_eq!(substitute("Missing [$3]", "x"), "Missing []");
        assert_eq!(substitute("Costs $ and $0", ""), "Costs $ and $0");
    }

    #[test]
    fn arguments_a_body_does_not_use_are_appended() {
        assert_eq!(
            substitute("Review the code.\n", "src/lib.rs"),
            "Review the code.\n\nARGUMENTS: src/lib.rs"
        );
        assert_eq!(substitute("Review the code.\n", ""), "Review the code.\n");
    }

    fn skill(body: &str, args: &str, names: &[&str]) -> String {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        substitute_skill(
            body,
            SkillInput {
                args,
                names: &names,
                skill_dir: "/skills/greet",
                session_id: Some("s-1"),
            },
        )
    }

    #[test]
    fn i25_4_a_skills_arguments_count_from_zero_and_may_be_named() {
        assert_eq!(
            skill(
                "Migrate $0 from $1 to $2 ($ARGUMENTS)",
                "\"My Button\" React Vue",
                &[]
            ),
            "Migrate My Button from React to Vue (\"My Button\" React Vue)"
        );
        assert_eq!(
            skill("[$ARGUMENTS[1]] [$ARGUMENTS[7]] $ARGUMENTS[x]", "a b", &[]),
            "[b] [] a b[x]"
        );
        assert_eq!(
            skill(
                "Fix $issue on $branch-x, $other",
                "42 main",
                &["issue", "branch"]
            ),
            "Fix 42 on $branch-x, $other",
            "a name is the whole run of name characters; unknown names stay text"
        );
        assert_eq!(
            skill(
                "Read ${CLAUDE_SKILL_DIR}/forms.md (${CLAUDE_SESSION_ID})",
                "",
                &[]
            ),
            "Read /skills/greet/forms.md (s-1)"
        );
        assert_eq!(
            skill("Say hello.\n", "Bob", &[]),
            "Say hello.\n\nARGUMENTS: Bob",
            "arguments the body does not use are appended"
        );
    }

    #[test]
    fn shell_snippets_and_file_mentions_are_found() {
        let text = "Status: !`git status --short`\nDiff: !`git diff HEAD`\nNot `this`.";
        let found = shell_snippets(text);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].1, "git status --short");
        assert_eq!(&text[found[1].0.clone()], "!`git diff HEAD`");
        assert_eq!(
            file_mentions("Compare @src/a.rs with @b.txt, and mail@example.com @srv:res://x"),
            ["src/a.rs", "b.txt"]
        );
    }
}
