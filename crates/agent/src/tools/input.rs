//! Turning a model's input object into a typed struct, or an error the model can act on.
//!
//! Every tool deserialises its input into a struct; `serde_path_to_error` supplies the
//! path of the offending field (`todos[2].status`), so the message names exactly what to
//! fix. Unknown fields are ignored: models trained on other agents sometimes send extra
//! keys, and refusing them would fail calls that are otherwise clear.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ToolOutput;

/// Deserialises `input` for `tool`, or returns the error result naming the field.
pub(crate) fn parse<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, ToolOutput> {
    if !input.is_object() {
        return Err(ToolOutput::error(format!(
            "Invalid input for {tool}: expected a JSON object, got {}",
            kind(input)
        )));
    }
    serde_path_to_error::deserialize::<_, T>(input).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            // Missing fields are reported at the object itself; serde names the field.
            ToolOutput::error(format!("Invalid input for {tool}: {inner}"))
        } else {
            ToolOutput::error(format!("Invalid input for {tool}: `{path}`: {inner}"))
        }
    })
}

/// An error result for a field whose value has the right type but is not acceptable.
pub(crate) fn invalid(tool: &str, field: &str, why: impl std::fmt::Display) -> ToolOutput {
    ToolOutput::error(format!("Invalid input for {tool}: `{field}`: {why}"))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // fields exist to be deserialised
    struct Sample {
        name: String,
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        n: u32,
    }

    #[test]
    fn missing_field_is_named() {
        let err = parse::<Sample>("T", &json!({"items": []})).unwrap_err();
        assert!(err.is_error);
        assert!(
            err.content.contains("missing field `name`"),
            "{}",
            err.content
        );
    }

    #[test]
    fn nested_wrong_type_names_the_path() {
        let err = parse::<Sample>(
            "T",
            &json!({"name": "x", "items": [{"n": 1}, {"n": "two"}]}),
        )
        .unwrap_err();
        assert!(err.content.contains("`items[1].n`"), "{}", err.content);
    }

    #[test]
    fn non_object_input_is_refused() {
        let err = parse::<Sample>("T", &json!("hello")).unwrap_err();
        assert!(err.content.contains("expected a JSON object, got a string"));
    }
}
