//! Markdown files with a front-matter block: agent definitions (`.strata/agents/*.md`),
//! custom slash commands and skills all start with
//!
//! ```text
//! ---
//! name: reviewer
//! description: Reviews a change for bugs
//! tools: Read, Grep, Glob
//! ---
//! The body: the prompt, the command text or the skill's instructions.
//! ```
//!
//! The block is YAML (parsed by `yaml-rust2`); a file the user wrote that does not parse is
//! an error naming the file, line and column, never a silently empty definition. Field
//! accessors accept the spellings people write by hand: a list is a YAML sequence or one
//! comma-separated string (`tools: Read, Grep`).
//!
//! The reference agent's own documentation writes some values unquoted that strict YAML
//! rejects (`argument-hint: [pr-number] [priority]`, `description: Use when: …`). When
//! the block does not parse, it is parsed once more with every top-level `key: value`
//! line whose value is not valid YAML on its own read as plain text (except a `[` or `{`
//! that is never closed, a mistake); only when that fails too is the file an error,
//! reported with the first parse's line and column.
//! This is the one parser of the program: agent definitions, custom slash commands and
//! skills all read their files here.

use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

/// A parsed file: its front-matter fields and the text after the block.
#[derive(Debug, Clone)]
pub struct FrontMatter {
    path: PathBuf,
    /// The block's source lines (for the line of a key in an error).
    block: String,
    fields: yaml_rust2::yaml::Hash,
    /// The text after the closing `---` (the whole file when there is no block).
    pub body: String,
}

/// Why a file's front matter cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    /// The block is not valid YAML.
    #[error(
        "{}:{line}:{column}: the front matter is not valid YAML: {message} (quote a value that \
         contains `: ` or starts with a special character)",
        path.display()
    )]
    Yaml {
        /// The file.
        path: PathBuf,
        /// 1-based line in the file.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The block opened with `---` never closes.
    #[error("{}:1: the front matter opened with `---` is never closed by a `---` line", path.display())]
    Unclosed {
        /// The file.
        path: PathBuf,
    },
    /// The block is YAML but not a mapping of keys to values.
    #[error("{}:2: the front matter must be `key: value` lines", path.display())]
    NotAMapping {
        /// The file.
        path: PathBuf,
    },
    /// A field has the wrong type.
    #[error("{}:{line}: `{key}` must be {expected}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key (1 when it cannot be found).
        line: usize,
        /// The key.
        key: String,
        /// What it must be.
        expected: &'static str,
    },
}

impl FrontMatter {
    /// Parses `text`, the content of `path`. A file without a leading `---` line has no
    /// fields and is all body.
    pub fn parse(path: &Path, text: &str) -> Result<FrontMatter, FrontMatterError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(rest) = strip_fence(text) else {
            return Ok(FrontMatter {
                path: path.to_path_buf(),
                block: String::new(),
                fields: Default::default(),
                body: text.to_owned(),
            });
        };
        let (block, body) = split_block(rest).ok_or_else(|| FrontMatterError::Unclosed {
            path: path.to_path_buf(),
        })?;
        let docs = match YamlLoader::load_from_str(block) {
            Ok(docs) => docs,
            Err(e) => YamlLoader::load_from_str(&lenient(block)).map_err(|_| {
                let (line, column) = error_position(block, e.marker().line(), e.marker().col());
                FrontMatterError::Yaml {
                    path: path.to_path_buf(),
                    // The block starts on the file's second line.
                    line: line + 1,
                    column,
                    message: e.info().to_owned(),
                }
            })?,
        };
        let fields = match docs.into_iter().next() {
            None | Some(Yaml::Null) => Default::default(),
            Some(Yaml::Hash(hash)) => hash,
            Some(_) => {
                return Err(FrontMatterError::NotAMapping {
                    path: path.to_path_buf(),
                });
            }
        };
        Ok(FrontMatter {
            path: path.to_path_buf(),
            block: block.to_owned(),
            fields,
            body: body.to_owned(),
        })
    }

    /// The file this came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when the block has `key`.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A text field (numbers and booleans are read as their text); `None` when absent or
    /// null.
    pub fn string(&self, key: &str) -> Result<Option<String>, FrontMatterError> {
        match self.get(key) {
            None | Some(Yaml::Null) => Ok(None),
            Some(Yaml::String(s)) | Some(Yaml::Real(s)) => Ok(Some(s.clone())),
            Some(Yaml::Integer(i)) => Ok(Some(i.to_string())),
            Some(Yaml::Boolean(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(self.field_error(key, "text")),
        }
    }

    /// A list of names: a YAML sequence of strings, or one string of comma-separated
    /// names. `None` when absent or null.
    pub fn list(&self, key: &str) -> Result<Option<Vec<String>>, FrontMatterError> {
        let expected = "a list of names (`[A, B]` or `A, B`)";
        match self.get(key) {
            None | Some(Yaml::Null) => Ok(None),
            Some(Yaml::String(s)) => Ok(Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
            )),
            Some(Yaml::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Yaml::String(s) => Ok(s.trim().to_owned()),
                    _ => Err(self.field_error(key, expected)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.field_error(key, expected)),
        }
    }

    /// A boolean field; `None` when absent.
    pub fn boolean(&self, key: &str) -> Result<Option<bool>, FrontMatterError> {
        match self.get(key) {
            None | Some(Yaml::Null) => Ok(None),
            Some(Yaml::Boolean(b)) => Ok(Some(*b)),
            Some(_) => Err(self.field_error(key, "true or false")),
        }
    }

    /// A non-negative whole number; `None` when absent.
    pub fn count(&self, key: &str) -> Result<Option<u32>, FrontMatterError> {
        match self.get(key) {
            None | Some(Yaml::Null) => Ok(None),
            Some(Yaml::Integer(i)) => u32::try_from(*i)
                .map(Some)
                .map_err(|_| self.field_error(key, "a whole number of at least 0")),
            Some(_) => Err(self.field_error(key, "a whole number")),
        }
    }

    /// A text field that is present and not blank (commands' and skills' `description`,
    /// `model`, `name`). A flow list written where text is meant (`argument-hint:
    /// [message]`) is read back as the user wrote it, `[message]`.
    pub fn text(&self, key: &str) -> Result<Option<String>, FrontMatterError> {
        let value = match self.get(key) {
            Some(Yaml::Array(items)) => {
                let parts: Option<Vec<String>> = items.iter().map(scalar_text).collect();
                match parts {
                    Some(parts) => Some(format!("[{}]", parts.join(", "))),
                    None => return Err(self.field_error(key, "text")),
                }
            }
            _ => self.string(key)?,
        };
        Ok(value.filter(|t| !t.trim().is_empty()))
    }

    /// Permission-rule entries (`allowed-tools`): a YAML sequence's items, or one string
    /// split at commas and spaces outside parentheses (`Bash(git add:*), Read` is two
    /// entries, `Bash(git commit -m:*)` one). Empty when absent.
    pub fn entries(&self, key: &str) -> Result<Vec<String>, FrontMatterError> {
        let expected = "a list of tools (`[Read, Bash(git:*)]` or `Read, Bash(git:*)`)";
        match self.get(key) {
            None | Some(Yaml::Null) => Ok(Vec::new()),
            Some(Yaml::String(s)) => Ok(split_entries(s)),
            Some(Yaml::Array(items)) => items
                .iter()
                .map(|item| {
                    scalar_text(item)
                        .map(|s| s.trim().to_owned())
                        .ok_or_else(|| self.field_error(key, expected))
                })
                .filter(|item| item.as_ref().map_or(true, |s| !s.is_empty()))
                .collect(),
            Some(_) => Err(self.field_error(key, expected)),
        }
    }

    fn get(&self, key: &str) -> Option<&Yaml> {
        self.fields.get(&Yaml::String(key.to_owned()))
    }

    fn field_error(&self, key: &str, expected: &'static str) -> FrontMatterError {
        let line = self
            .block
            .lines()
            .position(|l| {
                l.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with(':'))
            })
            .map_or(1, |i| i + 2);
        FrontMatterError::Field {
            path: self.path.clone(),
            line,
            key: key.to_owned(),
            expected,
        }
    }
}

/// The 1-based line and column of a parse error in `block` from the parser's marker
/// (line 1-based, column 0-based). An error the parser only notices at the end of the
/// block (a line that is not `key: value` is read as a key waiting for its `:`) is put
/// on the block's last line with text, where the mistake is.
fn error_position(block: &str, line: usize, col: usize) -> (usize, usize) {
    let lines: Vec<&str> = block.lines().collect();
    if line <= lines.len() {
        return (line.max(1), col + 1);
    }
    let last = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(1, |i| i + 1);
    (last, 1)
}

/// A scalar's text (`None` for a list or a mapping).
fn scalar_text(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Entries of a one-line list: commas, or spaces, outside parentheses separate them.
fn split_entries(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' | ' ' | '\t' if depth == 0 => items.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    items.push(current);
    items
        .into_iter()
        .map(|i| i.trim().to_owned())
        .filter(|i| !i.is_empty())
        .collect()
}

/// `block` with each top-level `key: value` line whose value is not YAML by itself
/// turned into a single-quoted string (see the module docs).
fn lenient(block: &str) -> String {
    let mut out = String::with_capacity(block.len() + 16);
    for line in block.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let quoted = body
            .split_once(": ")
            .filter(|(key, value)| {
                !key.is_empty()
                    && key.chars().all(|c| c.is_alphanumeric() || "-_".contains(c))
                    && !value.trim().is_empty()
                    && !unclosed_flow(value.trim())
                    && YamlLoader::load_from_str(body).is_err()
            })
            .map(|(key, value)| format!("{key}: '{}'", value.trim().replace('\'', "''")));
        match quoted {
            Some(q) => {
                out.push_str(&q);
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Whether `value` opens a flow list or mapping (`[`, `{`) that it never closes: a
/// mistake to report, not text to read.
fn unclosed_flow(value: &str) -> bool {
    if !value.starts_with(['[', '{']) {
        return false;
    }
    let open = value.matches(['[', '{']).count();
    let close = value.matches([']', '}']).count();
    open != close
}

/// The text after an opening `---` line, if the file starts with one.
fn strip_fence(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---")?;
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))
}

/// Splits `rest` (after the opening fence) into the block and the body after the closing
/// `---` line.
fn split_block(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let body = &rest[offset + line.len()..];
            return Some((&rest[..offset], body));
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Result<FrontMatter, FrontMatterError> {
        FrontMatter::parse(Path::new("agents/x.md"), text)
    }

    #[test]
    fn fields_and_body_are_read() {
        let fm = parse(
            "---\nname: reviewer\ndescription: \"Reviews: code\"\ntools: Read, Grep\nmodel: haiku\n---\nYou review.\n",
        )
        .unwrap();
        assert_eq!(fm.string("name").unwrap().as_deref(), Some("reviewer"));
        assert_eq!(
            fm.string("description").unwrap().as_deref(),
            Some("Reviews: code")
        );
        assert_eq!(
            fm.list("tools").unwrap(),
            Some(vec!["Read".to_owned(), "Grep".to_owned()])
        );
        assert_eq!(fm.body, "You review.\n");
    }

    #[test]
    fn a_yaml_list_is_a_list() {
        let fm = parse("---\ntools:\n  - Read\n  - Bash\n---\n").unwrap();
        assert_eq!(
            fm.list("tools").unwrap(),
            Some(vec!["Read".to_owned(), "Bash".to_owned()])
        );
    }

    #[test]
    fn no_block_is_all_body() {
        let fm = parse("Just text\n---\nmore").unwrap();
        assert!(!fm.has("name"));
        assert_eq!(fm.body, "Just text\n---\nmore");
    }

    #[test]
    fn bad_yaml_names_the_file_line_and_column() {
        let err = parse("---\nname: a\n  tools: Read\n---\nbody").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("agents/x.md:3:"), "{text}");
        // A line that is not `key: value` is reported on that line, not at the end.
        let err = parse("---\ndescription: ok\nnot a key line\n\n---\nbody").unwrap_err();
        assert!(err.to_string().starts_with("agents/x.md:3:1:"), "{err}");
        // An unclosed flow list is a mistake, not text.
        let err = parse("---\nname: a\ndescription: [unclosed\n---\nbody").unwrap_err();
        assert!(err.to_string().starts_with("agents/x.md:"), "{err}");
    }

    #[test]
    fn an_unclosed_block_is_an_error() {
        assert!(matches!(
            parse("---\nname: a\n"),
            Err(FrontMatterError::Unclosed { .. })
        ));
    }

    #[test]
    fn values_the_reference_docs_write_unquoted_are_read_as_text() {
        let fm = parse(
            "---\nargument-hint: [pr-number] [priority]\ndescription: Use when: the diff is big\n---\n",
        )
        .unwrap();
        assert_eq!(
            fm.text("argument-hint").unwrap().as_deref(),
            Some("[pr-number] [priority]")
        );
        assert_eq!(
            fm.text("description").unwrap().as_deref(),
            Some("Use when: the diff is big")
        );
        let fm = parse("---\nargument-hint: [message]\nmodel: \"  \"\n---\n").unwrap();
        assert_eq!(
            fm.text("argument-hint").unwrap().as_deref(),
            Some("[message]")
        );
        assert_eq!(fm.text("model").unwrap(), None, "blank text is absent");
    }

    #[test]
    fn tool_entries_split_outside_parentheses() {
        let fm = parse(
            "---\nallowed-tools: Bash(git add:*), Bash(git status:*) Read\nother: [Read, \"Bash(ls -la:*)\"]\n---\n",
        )
        .unwrap();
        assert_eq!(
            fm.entries("allowed-tools").unwrap(),
            ["Bash(git add:*)", "Bash(git status:*)", "Read"]
        );
        assert_eq!(fm.entries("other").unwrap(), ["Read", "Bash(ls -la:*)"]);
        assert!(fm.entries("absent").unwrap().is_empty());
    }

    #[test]
    fn a_wrong_type_names_the_key_and_its_line() {
        let fm = parse("---\nname: a\ntools: {a: 1}\n---\n").unwrap();
        let err = fm.list("tools").unwrap_err();
        assert_eq!(
            err.to_string(),
            "agents/x.md:3: `tools` must be a list of names (`[A, B]` or `A, B`)"
        );
    }
}
