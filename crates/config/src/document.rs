//! Reading a settings or config document from bytes, with positions in every error, and
//! writing one back.
//!
//! Reading happens in two passes over the same bytes: first as plain JSON (syntax errors,
//! "not an object"), then into the typed schema ([`Settings`] or [`GlobalConfig`]) with
//! the key path tracked, so a bad value is reported as
//! `permissions.defaultMode: unknown permission mode "yolo"; …` at its own line and column.
//! Edits are made on the plain JSON map (which keeps every key and its order); the typed
//! pass is what validates them.
//!
//! [`Settings`]: strata_protocol::settings::Settings
//! [`GlobalConfig`]: strata_protocol::global_config::GlobalConfig

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::ParseError;

/// A JSON object as read from a file: every key, in file order.
pub type JsonObject = Map<String, Value>;

/// Parses `bytes` as a JSON object and validates it as `T`. Empty (or all-whitespace)
/// content reads as an empty object, so a freshly `touch`ed file is not an error.
pub(crate) fn parse<T: DeserializeOwned>(
    bytes: &[u8],
    file: &str,
) -> Result<(JsonObject, T), ParseError> {
    let (object, empty) = parse_object(bytes, file)?;
    let typed = if empty {
        typed_from_object::<T>(&object).map_err(|problem| ParseError {
            file: file.to_owned(),
            line: 1,
            column: 1,
            problem,
        })?
    } else {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        serde_path_to_error::deserialize::<_, T>(&mut de)
            .map_err(|e| from_path_error(e, bytes, file))?
    };
    Ok((object, typed))
}

/// The first value of `bytes` (already known to be a JSON object) that does not match
/// `T`: the top-level key it is under, and the error at its line and column. `None` when
/// the whole document matches.
pub(crate) fn schema_error<T: DeserializeOwned>(
    bytes: &[u8],
    file: &str,
) -> Option<(String, ParseError)> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let e = serde_path_to_error::deserialize::<_, T>(&mut de).err()?;
    let key = top_level_key(&e.path().to_string());
    Some((key, from_path_error(e, bytes, file)))
}

/// The first value of an in-memory object that does not match `T`: its top-level key and
/// the problem (with the key path). Positions are found by the caller.
pub(crate) fn object_schema_error<T: DeserializeOwned>(
    object: &JsonObject,
) -> Option<(String, String)> {
    let e = serde_path_to_error::deserialize::<_, T>(Value::Object(object.clone())).err()?;
    let path = e.path().to_string();
    Some((
        top_level_key(&path),
        with_path(&path, &e.into_inner().to_string()),
    ))
}

/// `permissions` of `permissions.deny[1]`, `env` of `env.PORT`.
fn top_level_key(path: &str) -> String {
    path.split(['.', '[']).next().unwrap_or_default().to_owned()
}

/// The line and column of top-level key `key` in `bytes` (a JSON object that parsed), or
/// of the document's start when it is not found.
pub(crate) fn key_position(bytes: &[u8], key: &str) -> (usize, usize) {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let text = bytes.get(start..=i).unwrap_or_default();
                let is_key = bytes
                    .get(i + 1..)
                    .and_then(|rest| rest.iter().find(|b| !b.is_ascii_whitespace()))
                    == Some(&b':');
                if depth == 1
                    && is_key
                    && serde_json::from_slice::<String>(text).is_ok_and(|k| k == key)
                {
                    return line_column(bytes, start);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (1, 1)
}

/// Parses `bytes` as a JSON object (no schema). Returns whether the content was empty.
pub(crate) fn parse_object(bytes: &[u8], file: &str) -> Result<(JsonObject, bool), ParseError> {
    let Some(first) = bytes.iter().position(|b| !b.is_ascii_whitespace()) else {
        return Ok((Map::new(), true));
    };
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok((map, false)),
        Ok(other) => {
            let (line, column) = line_column(bytes, first);
            Err(ParseError {
                file: file.to_owned(),
                line,
                column,
                problem: format!(
                    "expected a JSON object at the top level, found {}",
                    kind(&other)
                ),
            })
        }
        Err(e) => Err(from_json_error(&e, bytes, file, None)),
    }
}

/// Validates an in-memory object as `T`; the error names the key path (no position: the
/// object has not been written anywhere yet).
pub(crate) fn typed_from_object<T: DeserializeOwned>(object: &JsonObject) -> Result<T, String> {
    // Cloning is the price of validating through serde; objects here are small files.
    serde_path_to_error::deserialize::<_, T>(Value::Object(object.clone())).map_err(|e| {
        let path = e.path().to_string();
        with_path(&path, &e.into_inner().to_string())
    })
}

/// The bytes a document is written as: two-space indented JSON and a final newline, as
/// the reference agent writes its files.
pub(crate) fn to_bytes<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut out = match serde_json::to_vec_pretty(value) {
        Ok(bytes) => bytes,
        // Serializing a JSON map or one of our schema types cannot fail: every key is a
        // string and there are no non-finite floats that serde_json would reject (f64 NaN
        // is written as `null`).
        Err(_) => b"{}".to_vec(),
    };
    out.push(b'\n');
    out
}

/// The name of a JSON value's kind, for messages ("an array", "a string").
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn from_path_error(
    e: serde_path_to_error::Error<serde_json::Error>,
    bytes: &[u8],
    file: &str,
) -> ParseError {
    let path = e.path().to_string();
    from_json_error(e.inner(), bytes, file, Some(&path))
}

fn from_json_error(
    e: &serde_json::Error,
    bytes: &[u8],
    file: &str,
    path: Option<&str>,
) -> ParseError {
    // serde_json appends " at line L column C" to its message; the position is reported in
    // our own format instead.
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    let (line, column) = visible_position(bytes, e.line(), e.column());
    ParseError {
        file: file.to_owned(),
        line,
        column,
        problem: path.map_or_else(|| message.to_owned(), |p| with_path(p, message)),
    }
}

fn with_path(path: &str, message: &str) -> String {
    if path.is_empty() || path == "." {
        message.to_owned()
    } else {
        format!("{path}: {message}")
    }
}

/// serde_json reports column 0 when the offending character is the newline that ends the
/// previous line (e.g. a truncated `tru` at the end of a line). Editors count that newline
/// as the column after the last character of that line, so report it that way.
fn visible_position(bytes: &[u8], line: usize, column: usize) -> (usize, usize) {
    if column > 0 || line <= 1 {
        return (line.max(1), column.max(1));
    }
    let prev = bytes
        .split(|&b| b == b'\n')
        .nth(line - 2)
        .unwrap_or_default();
    (line - 1, String::from_utf8_lossy(prev).chars().count() + 1)
}

fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = offset
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use strata_protocol::settings::Settings;

    use super::*;

    fn err(text: &str) -> ParseError {
        parse::<Settings>(text.as_bytes(), "f.json").unwrap_err()
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let e = err("{\n  \"model\": \"opus\"\n  \"fastMode\": true\n}");
        assert_eq!((e.line, e.column), (3, 3));
        assert_eq!(e.problem, "expected `,` or `}`");
        assert_eq!(
            e.to_string(),
            "f.json: line 3, column 3: expected `,` or `}`"
        );
    }

    #[test]
    fn schema_errors_name_the_key_path_and_position() {
        let e = err("{\n  \"permissions\": {\n    \"defaultMode\": \"yolo\"\n  }\n}");
        assert_eq!(e.line, 3);
        assert!(
            e.problem
                .starts_with("permissions.defaultMode: unknown permission mode \"yolo\"")
        );
    }

    #[test]
    fn an_error_at_a_line_end_is_reported_on_that_line() {
        let e = err("{\n  \"fastMode\": tru\n}");
        assert_eq!((e.line, e.column), (2, 18));
    }

    #[test]
    fn top_level_must_be_an_object() {
        let e = err("\n  [1, 2]");
        assert_eq!((e.line, e.column), (2, 3));
        assert_eq!(
            e.problem,
            "expected a JSON object at the top level, found an array"
        );
    }

    #[test]
    fn empty_file_is_an_empty_object() {
        let (map, s) = parse::<Settings>(b" \n", "f").unwrap();
        assert!(map.is_empty());
        assert_eq!(s, Settings::default());
    }

    #[test]
    fn in_memory_validation_names_the_path() {
        let mut o = JsonObject::new();
        o.insert("permissions".into(), serde_json::json!({"allow": ["a", 3]}));
        let e = typed_from_object::<Settings>(&o).unwrap_err();
        assert!(
            e.starts_with("permissions.allow[1]: invalid type: integer `3`"),
            "{e}"
        );
    }
}
