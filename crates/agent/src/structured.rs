//! Structured output (`--json-schema`, the SDKs' `outputFormat: {type: "json_schema"}`):
//! the turn's final answer is a JSON value that matches the caller's schema, and the
//! `result` line carries it as `structured_output`.
//!
//! As in the reference agent, the answer is given through a tool, `StructuredOutput`,
//! whose input schema is the caller's schema: the model calls it once its work is done,
//! and a call whose input validates ends the turn. Why a tool and not the final text: a
//! tool's input is JSON by construction, the model gets the schema in the form it is
//! trained to fill in, and a mismatch can be answered precisely (each validation error
//! with the path it is at) as an error result the model corrects.
//!
//! When the answer does not validate the model is told why and tries again; a model that
//! answers in text instead gets its text checked (a bare JSON value that validates is
//! taken) or is reminded to call the tool. After [`MAX_ATTEMPTS`] answers that did not
//! validate the turn ends with the subtype the SDK types declare for it,
//! `error_max_structured_output_retries`, and no `structured_output`.
//!
//! The validator is the `jsonschema` crate, without remote `$ref` resolution: a schema
//! may not make strata fetch anything.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::sync::lock;
use crate::tools::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The tool's name (the reference agent's).
pub const TOOL_NAME: &str = "StructuredOutput";

/// How many answers that do not validate a turn takes before it ends with
/// `error_max_structured_output_retries` (the first answer and four corrections).
pub const MAX_ATTEMPTS: u32 = 5;

/// At most this many validation errors are listed for the model (a wrong answer to a
/// large schema can fail in hundreds of places; the first few are enough to correct it).
const LISTED_ERRORS: usize = 10;

/// A schema that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// Not JSON.
    #[error("the schema is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// The root is not an object schema: a tool's input is an object, so the answer must
    /// be one.
    #[error(
        "the schema must describe an object (\"type\": \"object\" at the top): structured \
         output is returned as one JSON object"
    )]
    NotAnObject,
    /// Not a valid JSON schema.
    #[error("the schema is not a valid JSON schema: {0}")]
    Invalid(String),
}

/// The session's structured-output requirement: the schema, its validator, and what the
/// turn in progress has answered so far. Shared by the tool and the query loop.
pub struct StructuredOutput {
    schema: Value,
    validator: jsonschema::Validator,
    turn: Mutex<TurnAnswers>,
}

impl std::fmt::Debug for StructuredOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredOutput")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// What the running turn answered.
#[derive(Debug, Default)]
struct TurnAnswers {
    /// The answer that validated.
    accepted: Option<Value>,
    /// Answers that did not.
    failed: u32,
}

/// What the loop does when the model ended its turn in text.
#[derive(Debug, Clone, PartialEq)]
pub enum TextAnswer {
    /// The text was a JSON value that validates: the turn is done.
    Accepted,
    /// Send this reminder and let the model answer again.
    Remind(String),
    /// Too many answers did not validate: the turn ends in error.
    Exhausted,
}

impl StructuredOutput {
    /// Reads `--json-schema`'s text.
    pub fn parse(text: &str) -> Result<Self, SchemaError> {
        Self::new(serde_json::from_str(text)?)
    }

    /// The requirement for `schema` (an object schema).
    pub fn new(schema: Value) -> Result<Self, SchemaError> {
        let object_type = match schema.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
            // `{"properties": …}` with no type is an object schema in practice.
            None => schema.get("properties").is_some(),
            Some(_) => false,
        };
        if !schema.is_object() || !object_type {
            return Err(SchemaError::NotAnObject);
        }
        let validator =
            jsonschema::validator_for(&schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Self {
            schema,
            validator,
            turn: Mutex::default(),
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The tool the model answers with.
    pub fn tool(self: &Arc<Self>) -> Arc<dyn Tool> {
        Arc::new(StructuredOutputTool(Arc::clone(self)))
    }

    /// A new turn starts: nothing answered yet.
    pub fn begin_turn(&self) {
        *lock(&self.turn) = TurnAnswers::default();
    }

    /// Whether the running turn has its answer.
    pub fn answered(&self) -> bool {
        lock(&self.turn).accepted.is_some()
    }

    /// Whether the running turn has run out of attempts without an answer.
    pub fn exhausted(&self) -> bool {
        let turn = lock(&self.turn);
        turn.accepted.is_none() && turn.failed >= MAX_ATTEMPTS
    }

    /// The running turn's answer, taken (the `result` line's `structured_output`).
    pub fn take_answer(&self) -> Option<Value> {
        lock(&self.turn).accepted.take()
    }

    /// Checks an answer; `Err` lists what does not match, worded for the model. Either
    /// way the attempt is counted.
    pub fn offer(&self, answer: Value) -> Result<(), SchemaMismatch> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(&answer)
            .take(LISTED_ERRORS + 1)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        let mut turn = lock(&self.turn);
        if problems.is_empty() {
            turn.accepted = Some(answer);
            return Ok(());
        }
        turn.failed += 1;
        let more = problems.len() > LISTED_ERRORS;
        Err(SchemaMismatch {
            problems: problems.into_iter().take(LISTED_ERRORS).collect(),
            more,
            attempts_left: MAX_ATTEMPTS.saturating_sub(turn.failed),
        })
    }

    /// The model ended its turn with `text` and no call: a bare JSON object (optionally
    /// in a code fence) that validates is taken as the answer; otherwise the model is
    /// reminded to call the tool, until the attempts run out.
    pub fn text_answer(&self, text: &str) -> TextAnswer {
        let reason = match json_in(text) {
            Some(value) => match self.offer(value) {
                Ok(()) => return TextAnswer::Accepted,
                Err(mismatch) => mismatch.to_string(),
            },
            None => {
                lock(&self.turn).failed += 1;
                format!(
                    "Your answer must be given by calling the {TOOL_NAME} tool with output that \
                     matches its schema. Call it now."
                )
            }
        };
        if self.exhausted() {
            TextAnswer::Exhausted
        } else {
            TextAnswer::Remind(reason)
        }
    }
}

/// An answer that does not match the schema ([`StructuredOutput::offer`]); its text is
/// what the model is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "The output does not match the required schema:\n{}{}\nCall {TOOL_NAME} again with \
     output that matches the schema ({attempts_left} attempt(s) left).",
    problems.iter().map(|p| format!("- {p}")).collect::<Vec<_>>().join("\n"),
    if *more { "\n- (more errors not listed)" } else { "" }
)]
pub struct SchemaMismatch {
    /// What does not match, each with where in the answer ("at /population: …"), at
    /// most a few.
    pub problems: Vec<String>,
    /// More problems were found than are listed.
    pub more: bool,
    /// How many more tries the model has this turn.
    pub attempts_left: u32,
}

/// The JSON object `text` consists of, if it is one (surrounding space and a Markdown
/// code fence allowed).
fn json_in(text: &str) -> Option<Value> {
    let mut body = text.trim();
    if let Some(rest) = body.strip_prefix("```") {
        let rest = rest.strip_prefix("json").unwrap_or(rest);
        body = rest.strip_suffix("```")?.trim();
    }
    serde_json::from_str::<Value>(body)
        .ok()
        .filter(Value::is_object)
}

/// `StructuredOutput`: the model's final answer, checked against the schema.
struct StructuredOutputTool(Arc<StructuredOutput>);

impl std::fmt::Debug for StructuredOutputTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StructuredOutputTool")
    }
}

impl Tool for StructuredOutputTool {
    fn name(&self) -> &'static str {
        TOOL_NAME
    }

    fn description(&self) -> &'static str {
        "Return the final answer of this task as structured data. Call this tool exactly once, \
         when the work is done, with the answer as input: the input must match the tool's \
         schema. If the answer does not match, the result says what is wrong; call the tool \
         again with corrected input. Do not write the answer as text."
    }

    fn input_schema(&self) -> Value {
        self.0.schema.clone()
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    /// The answer touches nothing: no rule, prompt or mode applies (a deny rule naming
    /// the tool still denies it).
    fn needs_permission(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn call<'a>(&'a self, call: ToolCall, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match self.0.offer(call.input) {
                Ok(()) => ToolOutput::ok("Structured output provided successfully"),
                Err(mismatch) => ToolOutput::error(mismatch.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> StructuredOutput {
        StructuredOutput::new(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
            "required": ["city", "population"],
        }))
        .unwrap()
    }

    #[test]
    fn an_answer_that_validates_is_kept_and_taken_once() {
        let s = schema();
        s.begin_turn();
        assert!(s.offer(json!({"city": "Paris", "population": 2})).is_ok());
        assert!(s.answered());
        assert_eq!(
            s.take_answer(),
            Some(json!({"city": "Paris", "population": 2}))
        );
        assert_eq!(s.take_answer(), None);
    }

    #[test]
    fn a_mismatch_names_the_path_and_counts_an_attempt() {
        let s = schema();
        s.begin_turn();
        let mismatch = s
            .offer(json!({"city": "Paris", "population": "many"}))
            .unwrap_err();
        assert_eq!(mismatch.attempts_left, 4);
        assert!(
            mismatch.problems[0].starts_with("at /population"),
            "{mismatch:?}"
        );
        let err = mismatch.to_string();
        assert!(err.contains("/population"), "{err}");
        assert!(err.contains("4 attempt(s) left"), "{err}");
        assert!(!s.answered());
    }

    #[test]
    fn attempts_run_out_after_max_attempts() {
        let s = schema();
        s.begin_turn();
        for _ in 0..MAX_ATTEMPTS - 1 {
            assert!(matches!(s.text_answer("Paris"), TextAnswer::Remind(_)));
        }
        assert_eq!(s.text_answer("Paris"), TextAnswer::Exhausted);
        s.begin_turn();
        assert!(!s.exhausted());
    }

    #[test]
    fn a_fenced_json_text_answer_is_accepted() {
        let s = schema();
        s.begin_turn();
        let text = "```json\n{\"city\": \"Oslo\", \"population\": 1}\n```";
        assert_eq!(s.text_answer(text), TextAnswer::Accepted);
        assert_eq!(
            s.take_answer(),
            Some(json!({"city": "Oslo", "population": 1}))
        );
    }

    #[test]
    fn schemas_that_are_not_object_schemas_are_refused() {
        assert!(matches!(
            StructuredOutput::new(json!({"type": "string"})),
            Err(SchemaError::NotAnObject)
        ));
        assert!(matches!(
            StructuredOutput::parse("{not json"),
            Err(SchemaError::NotJson(_))
        ));
        assert!(matches!(
            StructuredOutput::new(json!({"type": "object", "properties": {"a": {"type": 7}}})),
            Err(SchemaError::Invalid(_))
        ));
    }
}
