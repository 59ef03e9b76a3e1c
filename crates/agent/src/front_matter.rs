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
        let docs = YamlLoader::load_from_str(block).map_err(|e| FrontMatterError::Yaml {
            path: path.to_path_buf(),
            // The block starts on the file's second line.
            line: e.marker().line() + 1,
            column: e.marker().col(),
            message: e.info().to_owned(),
        })?;
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
        let err = parse("---\nname: a\ndescription: [unclosed\n---\nbody").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("agents/x.md:"), "{text}");
        match err {
            FrontMatterError::Yaml { line, .. } => assert!((3..=5).contains(&line), "{line}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unclosed_block_is_an_error() {
        assert!(matches!(
            parse("---\nname: a\n"),
            Err(FrontMatterError::Unclosed { .. })
        ));
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
