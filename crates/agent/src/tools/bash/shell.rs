//! Splitting a shell command line into the simple commands it would run.
//!
//! Permission rules (`Bash(npm test:*)`) and the plan-mode read-only check must judge
//! every command a line runs, not the line's first word: `npm test && rm -rf ~` starts
//! like an allowed command. This is a small, conservative lexer for the bash subset
//! models write: quotes (also `$'…'`, decoded by `ansi_c`, and `$"…"`),
//! escapes, `&&`, `||`, `;`, `|`, `&`, newlines, subshells,
//! `{ …; }` groups, command substitution (`$(…)`, backticks) and process substitution
//! (whose inner commands are reported as commands of their own), redirections (output
//! into a file is flagged, and where it goes is kept: [`Redirect`]), here-documents (their bodies are data, not commands), and
//! the reserved words that introduce commands (`if`, `then`, `do`, …).
//!
//! Each word says whether its value is only known when it runs (an expansion, a
//! substitution, an unquoted glob or brace expansion): a program spelled that way
//! cannot be matched against a rule (see [`analysis`](super::analysis)).
//!
//! It is not a full shell parser and does not need to be: anything it cannot classify
//! (`for` loops, functions, `case`) stays in the command text, where no prefix rule
//! matches it, so the result is a prompt rather than a wrong "allow".

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Its source text from the first word on, trimmed (what rules are matched against).
    pub text: String,
    /// Its words after quote removal (also of `$'…'`), without redirections. No
    /// expansion is done: a word with one keeps its source text (`$X`, `$(cmd)`).
    pub words: Vec<String>,
    /// For each word, whether its value is only known when it runs: it holds a
    /// parameter, command or arithmetic expansion, or an unquoted glob or brace
    /// expansion (`$X`, `` `cmd` ``, `r?`, `{rm,x}`).
    pub dynamic: Vec<bool>,
    /// How many leading words are variable assignments (`FOO=1 cmd`).
    pub assignments: usize,
    /// Whether it redirects output into a file (`>`, `>>`, `&>`; not `/dev/null` and not
    /// a descriptor such as `2>&1`).
    pub writes_file: bool,
    /// The files it redirects output into, in order (one for each redirection that
    /// sets [`writes_file`](Self::writes_file)).
    pub redirects: Vec<Redirect>,
}

/// A file that a redirection writes (`> f`, `>> f`, `>| f`, `&> f`, `>&f`, `<> f`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The target word after quote removal (a dynamic one keeps its source text).
    pub target: String,
    /// Whether the target is only known when it runs (`> "$F"`, `> $(cmd)`, `> *.txt`),
    /// or missing (`echo >`, a syntax error): it may be any file.
    pub dynamic: bool,
}

impl SimpleCommand {
    /// The text after leading variable assignments (`FOO=1 rm x` → `rm x`).
    pub fn command_text(&self) -> &str {
        let mut rest = self.text.as_str();
        for _ in 0..self.assignments {
            // Assignments are single words; skip up to the next unquoted whitespace run.
            rest = skip_word(rest).trim_start();
        }
        rest
    }

    /// The command's name: its first word after assignments.
    pub fn program(&self) -> Option<&str> {
        self.words.get(self.assignments).map(String::as_str)
    }

    /// The words from the program on.
    pub fn argv(&self) -> &[String] {
        self.words.get(self.assignments..).unwrap_or(&[])
    }
}

/// Splits `line` into the simple commands it runs, including those inside command and
/// process substitutions and subshells.
pub fn split_command(line: &str) -> Vec<SimpleCommand> {
    let mut lexer = Lexer {
        src: line,
        pos: 0,
        heredocs: Vec::new(),
        in_double: false,
    };
    let mut out = Vec::new();
    lexer.list(&mut out, None);
    out
}

/// Reserved words that may open or close a command without being its program.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "esac",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    None,
    /// The next word is where output goes.
    Output,
    /// The next word is a descriptor (`>&2`) or an input file.
    Ignore,
    /// After `>&`: a descriptor when it is digits or `-` (`>&2`), else a file (`>&out`
    /// writes `out`, like `&>`).
    DescriptorOrOutput,
    /// The next word is a here-document delimiter (`strip_tabs` for `<<-`).
    Heredoc {
        strip_tabs: bool,
    },
}

#[derive(Default)]
struct Word {
    start: usize,
    text: String,
    /// See [`SimpleCommand::dynamic`].
    dynamic: bool,
    /// An unquoted `{` was seen, and then an unquoted `,` or `..` after it (brace
    /// expansion needs both before the `}`).
    brace_open: bool,
    brace_list: bool,
    /// An unquoted `[` was seen (a bracket glob when a `]` follows).
    bracket_open: bool,
}

impl Word {
    fn at(start: usize) -> Self {
        Self {
            start,
            ..Self::default()
        }
    }

    /// An unquoted ordinary character: tracks the glob and brace expansions it may open.
    fn push_unquoted(&mut self, c: char) {
        match c {
            '*' | '?' => self.dynamic = true,
            '[' => self.bracket_open = true,
            ']' if self.bracket_open => self.dynamic = true,
            '{' => self.brace_open = true,
            ',' if self.brace_open => self.brace_list = true,
            '.' if self.brace_open && self.text.ends_with('.') => self.brace_list = true,
            '}' if self.brace_open && self.brace_list => self.dynamic = true,
            _ => {}
        }
        self.text.push(c);
    }
}

struct Cmd {
    /// Words with the byte offset where each starts and whether it is dynamic.
    words: Vec<(usize, String, bool)>,
    /// Where the command's source starts (first byte of anything in it).
    start: Option<usize>,
    writes_file: bool,
    redirects: Vec<Redirect>,
    target: Target,
    /// Where a comment started: the command's text ends there.
    comment_at: Option<usize>,
}

impl Cmd {
    fn new() -> Self {
        Self {
            words: Vec::new(),
            start: None,
            writes_file: false,
            redirects: Vec::new(),
            target: Target::None,
            comment_at: None,
        }
    }
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    /// Here-documents whose bodies start after the next newline: delimiter, `<<-`, and
    /// whether the delimiter was quoted (a literal body).
    heredocs: Vec<(String, bool, bool)>,
    /// Inside `"…"`, where a single quote is an ordinary character.
    in_double: bool,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Parses commands until the end of input or the unquoted `end` character.
    fn list(&mut self, out: &mut Vec<SimpleCommand>, end: Option<char>) {
        let mut cmd = Cmd::new();
        let mut word: Option<Word> = None;
        while let Some(c) = self.peek() {
            if Some(c) == end {
                let at = self.pos;
                self.bump();
                self.finish_word(&mut cmd, &mut word);
                self.finish_cmd(out, &mut cmd, at);
                return;
            }
            match c {
                ' ' | '\t' => {
                    self.bump();
                    self.finish_word(&mut cmd, &mut word);
                }
                '\n' | ';' => {
                    let at = self.pos;
                    self.bump();
                    if c == ';' && self.peek() == Some(';') {
                        self.bump(); // `;;` in case arms
                    }
                    self.finish_word(&mut cmd, &mut word);
                    self.finish_cmd(out, &mut cmd, at);
                    if c == '\n' {
                        self.skip_heredoc_bodies(out);
                    }
                }
                '|' => {
                    let at = self.pos;
                    self.bump();
                    if matches!(self.peek(), Some('|' | '&')) {
                        self.bump();
                    }
                    self.finish_word(&mut cmd, &mut word);
                    self.finish_cmd(out, &mut cmd, at);
                }
                '&' if self.peek_at(1) == Some('>') => {
                    // `&>file` / `&>>file`: stdout and stderr into a file.
                    self.finish_word(&mut cmd, &mut word);
                    cmd.start.get_or_insert(self.pos);
                    self.bump();
                    self.bump();
                    if self.peek() == Some('>') {
                        self.bump();
                    }
                    cmd.target = Target::Output;
                }
                '&' => {
                    let at = self.pos;
                    self.bump();
                    if self.peek() == Some('&') {
                        self.bump();
                    }
                    self.finish_word(&mut cmd, &mut word);
                    self.finish_cmd(out, &mut cmd, at);
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    // Process substitution: its commands run too.
                    let w = word.get_or_insert_with(|| Word::at(self.pos));
                    let from = self.pos;
                    self.bump();
                    self.bump();
                    self.list(out, Some(')'));
                    w.text.push_str(&self.src[from..self.pos]);
                    w.dynamic = true; // a `/dev/fd/N` path known only when it runs
                }
                '>' | '<' => self.redirect(&mut cmd, &mut word, c),
                '#' if word.is_none() => {
                    cmd.comment_at.get_or_insert(self.pos);
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                '(' if word.is_none() && cmd.words.is_empty() => {
                    // A subshell: its commands are commands of the line.
                    self.bump();
                    self.list(out, Some(')'));
                }
                ')' => {
                    // Unbalanced (or a `case` pattern): a separator, conservatively.
                    let at = self.pos;
                    self.bump();
                    self.finish_word(&mut cmd, &mut word);
                    self.finish_cmd(out, &mut cmd, at);
                }
                '\'' => {
                    let w = word.get_or_insert_with(|| Word::at(self.pos));
                    self.bump();
                    while let Some(c) = self.bump() {
                        if c == '\'' {
                            break;
                        }
                        w.text.push(c);
                    }
                }
                '"' => {
                    let start = self.pos;
                    let mut w = word.take().unwrap_or(Word::at(start));
                    self.bump();
                    self.double_quoted(out, &mut w);
                    word = Some(w);
                }
                '\\' => {
                    let start = self.pos;
                    self.bump();
                    match self.bump() {
                        Some('\n') | None => {} // line continuation
                        Some(c) => word.get_or_insert_with(|| Word::at(start)).text.push(c),
                    }
                }
                '`' | '$' => {
                    let start = self.pos;
                    let mut w = word.take().unwrap_or(Word::at(start));
                    self.dollar_or_backtick(out, &mut w);
                    word = Some(w);
                }
                _ => {
                    let start = self.pos;
                    self.bump();
                    word.get_or_insert_with(|| Word::at(start)).push_unquoted(c);
                }
            }
        }
        let at = self.pos;
        self.finish_word(&mut cmd, &mut word);
        self.finish_cmd(out, &mut cmd, at);
    }

    /// The inside of `"…"` (the opening quote consumed): escapes and substitutions.
    fn double_quoted(&mut self, out: &mut Vec<SimpleCommand>, w: &mut Word) {
        let outer = std::mem::replace(&mut self.in_double, true);
        self.double_quoted_body(out, w);
        self.in_double = outer;
    }

    fn double_quoted_body(&mut self, out: &mut Vec<SimpleCommand>, w: &mut Word) {
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.bump();
                    return;
                }
                '\\' => {
                    self.bump();
                    if let Some(c) = self.bump() {
                        if !matches!(c, '"' | '\\' | '$' | '`' | '\n') {
                            w.text.push('\\');
                        }
                        if c != '\n' {
                            w.text.push(c);
                        }
                    }
                }
                '`' | '$' => self.dollar_or_backtick(out, w),
                _ => {
                    self.bump();
                    w.text.push(c);
                }
            }
        }
    }

    /// `$(…)`, `$((…))`, `${…}`, `` `…` ``, `$name` or a plain `$`: substitutions'
    /// commands are reported; the word keeps the raw text and is marked dynamic. Outside
    /// double quotes, `$'…'` (ANSI-C quoting) is decoded and `$"…"` read as `"…"`.
    fn dollar_or_backtick(&mut self, out: &mut Vec<SimpleCommand>, w: &mut Word) {
        let from = self.pos;
        if !self.in_double && self.peek() == Some('$') {
            match self.peek_at(1) {
                Some('\'') => {
                    let (text, len) = super::ansi_c::decode(&self.src[self.pos + 2..]);
                    self.pos += 2 + len;
                    w.text.push_str(&text);
                    return;
                }
                Some('"') => {
                    self.pos += 2;
                    self.double_quoted(out, w);
                    return;
                }
                _ => {}
            }
        }
        let plain_dollar = self.peek() == Some('$')
            && !self
                .peek_at(1)
                .is_some_and(|c| c.is_ascii_alphanumeric() || "_{(@*#?-$!".contains(c));
        if !plain_dollar {
            w.dynamic = true;
        }
        if self.peek() == Some('`') {
            self.bump();
            self.list(out, Some('`'));
        } else if self.peek_at(1) == Some('(') && self.peek_at(2) == Some('(') {
            // Arithmetic: skipped to the balancing `))`, but substitutions inside it
            // (`$(( a[$(cmd)] ))`) run, so their commands are reported.
            self.bump();
            self.skip_expansion(out, '(', ')');
        } else if self.peek_at(1) == Some('(') {
            self.bump();
            self.bump();
            self.list(out, Some(')'));
        } else if self.peek_at(1) == Some('{') {
            // `${x:-…}`: the default may hold quotes (`${x:-"}"}`) and substitutions.
            self.bump();
            self.skip_expansion(out, '{', '}');
        } else {
            self.bump();
        }
        w.text.push_str(&self.src[from..self.pos]);
    }

    /// Skips from an `open` character to its balancing `close`, as bash reads a `${…}` or
    /// `$((…))`: quotes hide brackets (`${x:-"}"}`), and the commands of substitutions
    /// inside (`${x:-$(cmd)}`) are reported like any other.
    fn skip_expansion(&mut self, out: &mut Vec<SimpleCommand>, open: char, close: char) {
        let mut depth = 0usize;
        let mut scratch = Word::at(self.pos);
        while let Some(c) = self.peek() {
            match c {
                '\\' => {
                    self.bump();
                    self.bump();
                }
                '\'' if !self.in_double => {
                    self.bump();
                    while let Some(c) = self.bump() {
                        if c == '\'' {
                            break;
                        }
                    }
                }
                '"' => {
                    self.bump();
                    self.double_quoted(out, &mut scratch);
                }
                '`' => self.dollar_or_backtick(out, &mut scratch),
                '$' if depth > 0 => self.dollar_or_backtick(out, &mut scratch),
                _ => {
                    self.bump();
                    if c == open {
                        depth += 1;
                    } else if c == close {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return;
                        }
                    }
                }
            }
        }
    }

    fn redirect(&mut self, cmd: &mut Cmd, word: &mut Option<Word>, c: char) {
        // A word of digits right before the operator is a descriptor number (`2>`).
        let fd_prefix = word
            .as_ref()
            .is_some_and(|w| !w.text.is_empty() && w.text.chars().all(|c| c.is_ascii_digit()));
        if fd_prefix {
            if let Some(w) = word.take() {
                cmd.start.get_or_insert(w.start);
            }
        } else {
            self.finish_word(cmd, word);
        }
        cmd.start.get_or_insert(self.pos);
        self.bump();
        if c == '>' {
            if matches!(self.peek(), Some('>' | '|')) {
                self.bump();
            }
            if self.peek() == Some('&') {
                self.bump();
                cmd.target = Target::DescriptorOrOutput; // `>&2`, or `>&file`
            } else {
                cmd.target = Target::Output;
            }
        } else if self.peek() == Some('<') {
            self.bump();
            match self.peek() {
                Some('<') => {
                    self.bump(); // `<<<` here-string
                    cmd.target = Target::Ignore;
                }
                Some('-') => {
                    self.bump();
                    cmd.target = Target::Heredoc { strip_tabs: true };
                }
                _ => cmd.target = Target::Heredoc { strip_tabs: false },
            }
        } else if self.peek() == Some('>') {
            self.bump(); // `<>`: opened for reading and writing, created if missing
            cmd.target = Target::Output;
        } else {
            if self.peek() == Some('&') {
                self.bump(); // `<&0`
            }
            cmd.target = Target::Ignore;
        }
    }

    fn finish_word(&mut self, cmd: &mut Cmd, word: &mut Option<Word>) {
        let Some(w) = word.take() else { return };
        cmd.start.get_or_insert(w.start);
        match std::mem::replace(&mut cmd.target, Target::None) {
            Target::None => cmd.words.push((w.start, w.text, w.dynamic)),
            Target::Output => {
                if w.dynamic || w.text != "/dev/null" {
                    cmd.writes_file = true;
                    cmd.redirects.push(Redirect {
                        target: w.text,
                        dynamic: w.dynamic,
                    });
                }
            }
            Target::DescriptorOrOutput => {
                if w.dynamic || !(w.text == "-" || w.text.chars().all(|c| c.is_ascii_digit())) {
                    cmd.writes_file = true;
                    cmd.redirects.push(Redirect {
                        target: w.text,
                        dynamic: w.dynamic,
                    });
                }
            }
            Target::Ignore => {}
            Target::Heredoc { strip_tabs } => {
                // `<<'EOF'` or `<<"EOF"` or `<<\EOF`: the body is taken literally;
                // otherwise bash expands it, substitutions included.
                let quoted = self.src[w.start..self.pos].contains(['\'', '"', '\\']);
                self.heredocs.push((w.text, strip_tabs, quoted));
            }
        }
    }

    fn finish_cmd(&mut self, out: &mut Vec<SimpleCommand>, cmd: &mut Cmd, end: usize) {
        let cmd = std::mem::replace(cmd, Cmd::new());
        let end = cmd.comment_at.map_or(end, |c| c.min(end));
        if cmd.target == Target::Output {
            cmd_writes_anyway(out, &cmd, self.src, end);
            return;
        }
        let skip = cmd
            .words
            .iter()
            .take_while(|(_, w, dynamic)| !dynamic && RESERVED.contains(&w.as_str()))
            .count();
        let words: Vec<(usize, String, bool)> = cmd.words.into_iter().skip(skip).collect();
        let text_start = match words.first() {
            Some((start, _, _)) => *start,
            None if cmd.writes_file => cmd.start.unwrap_or(end),
            None => return,
        };
        let text = self.src[text_start.min(end)..end].trim().to_owned();
        let assignments = words
            .iter()
            .take_while(|(_, w, _)| is_assignment(w))
            .count();
        out.push(SimpleCommand {
            text,
            dynamic: words.iter().map(|(_, _, d)| *d).collect(),
            words: words.into_iter().map(|(_, w, _)| w).collect(),
            assignments,
            writes_file: cmd.writes_file,
            redirects: cmd.redirects,
        });
    }

    /// After a newline: the bodies of pending here-documents are data; skip them.
    /// Passes over the bodies of the pending here-documents; the commands of
    /// substitutions in a body that bash expands (`$(cmd)` in an unquoted `<<EOF`) are
    /// reported.
    fn skip_heredoc_bodies(&mut self, out: &mut Vec<SimpleCommand>) {
        for (delim, strip_tabs, quoted) in std::mem::take(&mut self.heredocs) {
            while self.pos < self.src.len() {
                let rest = &self.src[self.pos..];
                let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
                let line = rest[..line_end].trim_end_matches('\n');
                self.pos += line_end;
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == delim {
                    break;
                }
                if !quoted && line.contains(['$', '`']) {
                    body_substitutions(line, out);
                }
            }
        }
    }
}

/// The commands of the substitutions in one line of an expanded here-document body:
/// read as the inside of double quotes, where a `"` is an ordinary character.
fn body_substitutions(line: &str, out: &mut Vec<SimpleCommand>) {
    let mut sub = Lexer {
        src: line,
        pos: 0,
        heredocs: Vec::new(),
        in_double: true,
    };
    let mut scratch = Word::default();
    while sub.pos < line.len() {
        sub.double_quoted_body(out, &mut scratch);
        sub.bump(); // the `"` it stopped at, or nothing at the end
    }
}

/// A command that ended right after an output operator (`echo >`): a syntax error in
/// bash, but report it as writing so no rule treats it as harmless.
fn cmd_writes_anyway(out: &mut Vec<SimpleCommand>, cmd: &Cmd, src: &str, end: usize) {
    let start = cmd.start.unwrap_or(end).min(end);
    let mut redirects = cmd.redirects.clone();
    // Where it would write is unknown: any file, as far as a check can tell.
    redirects.push(Redirect {
        target: String::new(),
        dynamic: true,
    });
    out.push(SimpleCommand {
        text: src[start..end].trim().to_owned(),
        words: cmd.words.iter().map(|(_, w, _)| w.clone()).collect(),
        dynamic: cmd.words.iter().map(|(_, _, d)| *d).collect(),
        assignments: 0,
        writes_file: true,
        redirects,
    });
}

/// `NAME=value` with a valid shell name.
pub(crate) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Skips one shell word (respecting quotes and escapes) at the start of `s`.
fn skip_word(s: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') if quote != Some('\'') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => return &s[i..],
            _ => {}
        }
    }
    ""
}

#[cfg(test)]
mod tests;
