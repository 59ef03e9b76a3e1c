//! The front matter of a command or skill file: a `---` fenced block of `key: value`
//! lines at the top of a markdown file.
//!
//! The files are the reference agent's, so they use the YAML subset its documentation
//! shows: scalars (plain, `"double"` or `'single'` quoted), flow lists (`[a, b]`) and
//! block lists (`- item` lines under a key), and `#` comments. A full YAML parser would
//! be a large dependency for five keys; anything outside this subset is an error naming
//! the file and line, so a typo is reported rather than silently dropped.

use std::path::Path;

use indexmap::IndexMap;

/// A value of the front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontValue {
    /// A scalar, unquoted.
    Text(String),
    /// A list of scalars.
    List(Vec<String>),
}

impl FrontValue {
    /// The value as one text (a list's items joined by `", "`).
    pub fn text(&self) -> String {
        match self {
            Self::Text(t) => t.clone(),
            Self::List(items) => items.join(", "),
        }
    }

    /// The value as a list of entries: a list's items, or a scalar split at commas and
    /// spaces outside parentheses (`Bash(git add:*), Read` is two entries).
    pub fn entries(&self) -> Vec<String> {
        match self {
            Self::List(items) => items.clone(),
            Self::Text(t) => split_entries(t),
        }
    }
}

/// A parsed file: its front matter (in order) and the body after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    /// The keys of the front matter, in file order.
    pub fields: IndexMap<String, FrontValue>,
    /// The markdown after the front matter.
    pub body: String,
}

impl Document {
    /// The scalar text of `key`, if present and not empty.
    pub fn text(&self, key: &str) -> Option<String> {
        self.fields
            .get(key)
            .map(FrontValue::text)
            .filter(|t| !t.trim().is_empty())
    }
}

/// A front matter that does not parse: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct FrontMatterError {
    /// The file, as given.
    pub file: String,
    /// The 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Splits `text` (a markdown file's contents) into front matter and body.
pub fn parse(file: &Path, text: &str) -> Result<Document, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Ok(Document {
            fields: IndexMap::new(),
            body: text.to_owned(),
        });
    }
    let error = |line: usize, message: String| FrontMatterError {
        file: file.display().to_string(),
        line,
        message,
    };
    let mut fields: IndexMap<String, FrontValue> = IndexMap::new();
    // The key whose block list the following `- item` lines extend.
    let mut open_list: Option<String> = None;
    let mut consumed = first.len();
    for (i, raw) in lines.enumerate() {
        let number = i + 2;
        consumed += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.trim_end() == "---" {
            return Ok(Document {
                fields,
                body: text[consumed..].to_owned(),
            });
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ").or_else(|| {
            // A bare `-` is an empty item.
            (trimmed == "-").then_some("")
        }) {
            let Some(key) = &open_list else {
                return Err(error(
                    number,
                    "a list item (`- …`) must follow a `key:` line".into(),
                ));
            };
            let value = scalar(item).map_err(|m| error(number, m))?;
            match fields.get_mut(key) {
                Some(FrontValue::List(items)) => items.push(value),
                _ => {
                    fields.insert(key.clone(), FrontValue::List(vec![value]));
                }
            }
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(error(
                number,
                "unexpected indentation (only `key: value` lines and `- item` lists are \
                 understood)"
                    .into(),
            ));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(error(
                number,
                format!("expected `key: value`, found `{trimmed}`"),
            ));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_alphanumeric() || "-_".contains(c)) {
            return Err(error(number, format!("`{key}` is not a key name")));
        }
        if fields.contains_key(key) {
            return Err(error(number, format!("`{key}` is given twice")));
        }
        let value = value.trim();
        if value.is_empty() {
            // A block list may follow; until then the key is empty text.
            open_list = Some(key.to_owned());
            fields.insert(key.to_owned(), FrontValue::Text(String::new()));
            continue;
        }
        open_list = None;
        let parsed = if let Some(inner) = value.strip_prefix('[') {
            let Some(inner) = inner.strip_suffix(']') else {
                return Err(error(
                    number,
                    format!("`{key}`: a `[` list must end with `]`"),
                ));
            };
            let items: Result<Vec<String>, String> =
                split_flow(inner).iter().map(|item| scalar(item)).collect();
            FrontValue::List(items.map_err(|m| error(number, format!("`{key}`: {m}")))?)
        } else {
            FrontValue::Text(scalar(value).map_err(|m| error(number, format!("`{key}`: {m}")))?)
        };
        fields.insert(key.to_owned(), parsed);
    }
    Err(error(
        1,
        "the front matter opened with `---` is never closed by a `---` line".into(),
    ))
}

/// A scalar without its quotes and trailing comment.
fn scalar(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    for quote in ['"', '\''] {
        if let Some(rest) = raw.strip_prefix(quote) {
            let Some(end) = rest.rfind(quote) else {
                return Err(format!("the {quote}quoted{quote} value is not closed"));
            };
            let after = rest[end + 1..].trim();
            if !after.is_empty() && !after.starts_with('#') {
                return Err(format!("unexpected `{after}` after the quoted value"));
            }
            let inner = &rest[..end];
            return Ok(if quote == '"' {
                inner.replace("\\\"", "\"").replace("\\\\", "\\")
            } else {
                inner.replace("''", "'")
            });
        }
    }
    // ` #` starts a comment in a plain scalar.
    let plain = raw.split(" #").next().unwrap_or("").trim_end();
    Ok(plain.to_owned())
}

/// The items of a flow list's inside, split at commas outside quotes and parentheses.
fn split_flow(inner: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let (mut depth, mut quote) = (0usize, None::<char>);
    for c in inner.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                current.push(c);
            }
            (None, '(') => {
                depth += 1;
                current.push(c);
            }
            (None, ')') => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            (None, ',') if depth == 0 => items.push(std::mem::take(&mut current)),
            (None, c) => current.push(c),
        }
    }
    items.push(current);
    items
        .into_iter()
        .map(|i| i.trim().to_owned())
        .filter(|i| !i.is_empty())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Result<Document, FrontMatterError> {
        parse(Path::new("cmd.md"), text)
    }

    #[test]
    fn a_file_without_front_matter_is_all_body() {
        let d = doc("Hello $ARGUMENTS\n").unwrap();
        assert!(d.fields.is_empty());
        assert_eq!(d.body, "Hello $ARGUMENTS\n");
    }

    #[test]
    fn scalars_quotes_flow_and_block_lists_are_read() {
        let d = doc("---\n\
             description: Make a commit # the usual\n\
             argument-hint: \"[message]\"\n\
             model: 'claude-haiku-4-5'\n\
             allowed-tools: [Bash(git add:*), \"Read\"]\n\
             tools:\n\
             \x20 - Grep\n\
             \x20 - Glob\n\
             ---\n\
             Body line\n")
        .unwrap();
        assert_eq!(d.text("description").unwrap(), "Make a commit");
        assert_eq!(d.text("argument-hint").unwrap(), "[message]");
        assert_eq!(d.text("model").unwrap(), "claude-haiku-4-5");
        assert_eq!(
            d.fields["allowed-tools"].entries(),
            ["Bash(git add:*)", "Read"]
        );
        assert_eq!(d.fields["tools"].entries(), ["Grep", "Glob"]);
        assert_eq!(d.body, "Body line\n");
    }

    #[test]
    fn a_one_line_tool_list_splits_outside_parentheses() {
        let v = FrontValue::Text("Bash(git add:*), Bash(git status:*) Read".into());
        assert_eq!(
            v.entries(),
            ["Bash(git add:*)", "Bash(git status:*)", "Read"]
        );
    }

    #[test]
    fn malformed_front_matter_names_the_file_and_line() {
        let e = doc("---\ndescription: fine\nthis is not a key\n---\nbody").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(
            e.to_string(),
            "cmd.md:3: expected `key: value`, found `this is not a key`"
        );
        let e = doc("---\ndescription: \"open\n---\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = doc("---\ndescription: never closed\n").unwrap_err();
        assert!(e.message.contains("never closed"), "{e}");
        let e = doc("---\n- stray\n---\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = doc("---\na: 1\na: 2\n---\n").unwrap_err();
        assert!(e.message.contains("twice"), "{e}");
    }
}
