//! The AskUserQuestion tool: the model asks the user one to four multiple-choice
//! questions (issue 18, item 4).
//!
//! The question is the permission prompt. The tool is a question to the user
//! ([`Tool::asks_the_user`]), so the permission check always asks after the deny rules,
//! whatever allow rule or mode, and a run with nobody to ask denies the call with a clear
//! reason. Whoever answers the prompt (the UI, or the SDK client's `can_use_tool` in
//! headless mode) approves it with an updated input carrying the answers, the way the
//! reference agent's clients do: `{"questions": […], "answers": {"<question>": "<label>"}}`.
//! A multi-select answer is the chosen labels joined by `", "` (a list of labels is
//! accepted too), and an answer need not be one of the labels (the user's own words).
//!
//! The result reads like the reference agent's, so a resumed transcript continues
//! naturally: `User has answered your questions: "Q"="A". You can now continue …`, with
//! `{questions, answers}` as the transcript's `toolUseResult`.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::input::{invalid, parse};
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The AskUserQuestion tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskUserQuestion;

const NAME: &str = "AskUserQuestion";

/// How many questions one call may ask.
const QUESTIONS: std::ops::RangeInclusive<usize> = 1..=4;
/// How many options one question may offer.
const OPTIONS: std::ops::RangeInclusive<usize> = 2..=4;
/// The longest header (a chip shown beside the question), in characters.
const MAX_HEADER_CHARS: usize = 12;

const DESCRIPTION: &str = "Asks the user one to four multiple-choice questions and waits \
for their answers.\n\
\n\
- Use it when you need the user's decision or preference to continue: an ambiguous \
requirement, a choice between approaches, which of several options they want. Do not use \
it for things you can find out yourself by reading the code or running a command.\n\
- Each question has a short `header` (at most 12 characters, e.g. \"Auth method\"), the \
full `question` text ending with a question mark, 2 to 4 `options` (each a short `label` \
and a `description` of what choosing it means), and `multiSelect` (true when several \
options may be chosen together).\n\
- The user can always answer in their own words instead of choosing an option, so do not \
add an \"Other\" option. If you recommend an option, put it first and add \"(Recommended)\" \
to its label.\n\
- In plan mode, use it to clarify requirements before presenting the plan, not to ask \
whether the plan is approved (ExitPlanMode does that).";

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// What the user picks (short).
    pub label: String,
    /// What picking it means.
    pub description: String,
}

/// One question, as the model sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// The full question.
    pub question: String,
    /// A short label shown beside it.
    pub header: String,
    /// The choices.
    pub options: Vec<QuestionOption>,
    /// True when several options may be chosen.
    #[serde(rename = "multiSelect", default)]
    pub multi_select: bool,
}

#[derive(Debug, Deserialize)]
struct AskInput {
    questions: Vec<Question>,
}

/// The answers an approval carries, by question text.
#[derive(Debug, Deserialize)]
struct Answered {
    #[serde(default)]
    questions: Option<Vec<Question>>,
    #[serde(default)]
    answers: Option<IndexMap<String, Answer>>,
}

/// One answer: a label (or the user's own text), or the labels of a multi-select.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Answer {
    One(String),
    Many(Vec<String>),
}

impl Answer {
    fn text(&self) -> String {
        match self {
            Self::One(s) => s.clone(),
            Self::Many(labels) => labels.join(", "),
        }
    }
}

/// Checks the questions the model asks: counts, non-empty texts, unique questions and
/// labels (an answer names a question by its text and an option by its label).
fn check(input: &Value) -> Result<Vec<Question>, ToolOutput> {
    let parsed: AskInput = parse(NAME, input)?;
    let questions = parsed.questions;
    if !QUESTIONS.contains(&questions.len()) {
        return Err(invalid(
            NAME,
            "questions",
            format!(
                "ask between {} and {} questions, not {}",
                QUESTIONS.start(),
                QUESTIONS.end(),
                questions.len()
            ),
        ));
    }
    for (i, q) in questions.iter().enumerate() {
        if q.question.trim().is_empty() {
            return Err(invalid(
                NAME,
                &format!("questions[{i}].question"),
                "must not be empty",
            ));
        }
        if questions[..i].iter().any(|p| p.question == q.question) {
            return Err(invalid(
                NAME,
                &format!("questions[{i}].question"),
                "each question must be different (answers are keyed by the question text)",
            ));
        }
        if q.header.trim().is_empty() {
            return Err(invalid(
                NAME,
                &format!("questions[{i}].header"),
                "must not be empty",
            ));
        }
        if q.header.chars().count() > MAX_HEADER_CHARS {
            return Err(invalid(
                NAME,
                &format!("questions[{i}].header"),
                format!("at most {MAX_HEADER_CHARS} characters"),
            ));
        }
        if !OPTIONS.contains(&q.options.len()) {
            return Err(invalid(
                NAME,
                &format!("questions[{i}].options"),
                format!(
                    "offer between {} and {} options, not {}",
                    OPTIONS.start(),
                    OPTIONS.end(),
                    q.options.len()
                ),
            ));
        }
        for (j, o) in q.options.iter().enumerate() {
            if o.label.trim().is_empty() {
                return Err(invalid(
                    NAME,
                    &format!("questions[{i}].options[{j}].label"),
                    "must not be empty",
                ));
            }
            if q.options[..j].iter().any(|p| p.label == o.label) {
                return Err(invalid(
                    NAME,
                    &format!("questions[{i}].options[{j}].label"),
                    "each option of a question needs its own label",
                ));
            }
        }
    }
    Ok(questions)
}

/// The text the model reads for `answers`, in the order the questions were asked
/// (answers to questions that were not asked follow, in the order given).
fn answered_text(questions: &[Question], answers: &IndexMap<String, Answer>) -> String {
    let mut parts: Vec<String> = questions
        .iter()
        .filter_map(|q| {
            answers
                .get(&q.question)
                .map(|a| format!("\"{}\"=\"{}\"", q.question, a.text()))
        })
        .collect();
    for (question, answer) in answers {
        if !questions.iter().any(|q| &q.question == question) {
            parts.push(format!("\"{question}\"=\"{}\"", answer.text()));
        }
    }
    format!(
        "User has answered your questions: {}. You can now continue with the user's answers \
         in mind.",
        parts.join(", ")
    )
}

impl Tool for AskUserQuestion {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": QUESTIONS.start(),
                    "maxItems": QUESTIONS.end(),
                    "description": "The questions to ask (1 to 4)",
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {
                                "type": "string",
                                "description": "The full question, ending with a question mark"
                            },
                            "header": {
                                "type": "string",
                                "description": "A very short label shown beside the question (at most 12 characters)"
                            },
                            "options": {
                                "type": "array",
                                "minItems": OPTIONS.start(),
                                "maxItems": OPTIONS.end(),
                                "description": "The choices (2 to 4); the user may also answer in their own words",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {
                                            "type": "string",
                                            "description": "What the user picks (1 to 5 words)"
                                        },
                                        "description": {
                                            "type": "string",
                                            "description": "What choosing this option means"
                                        }
                                    },
                                    "required": ["label", "description"],
                                    "additionalProperties": false
                                }
                            },
                            "multiSelect": {
                                "type": "boolean",
                                "description": "True when several options may be chosen together"
                            }
                        },
                        "required": ["question", "header", "options", "multiSelect"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["questions"]
        })
    }

    // A question changes nothing: it runs in plan mode too.
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    // One question at a time: two dialogs at once would confuse the user.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    fn asks_the_user(&self) -> bool {
        true
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            // The approval replaced the input with one that carries the answers; the
            // questions may be left out of it (they were validated before the prompt).
            // Without answers, the input is what the model sent: its faults come first.
            if call.input.get("answers").is_none()
                && let Err(e) = check(&call.input)
            {
                return e;
            }
            let answered: Answered = match parse(NAME, &call.input) {
                Ok(a) => a,
                Err(e) => return e,
            };
            let questions = match answered.questions {
                Some(_) => match check(&call.input) {
                    Ok(q) => q,
                    Err(e) => return e,
                },
                None => Vec::new(),
            };
            let answers = answered.answers.unwrap_or_default();
            if answers.is_empty() {
                return ToolOutput::error(
                    "The user's answers did not come back: the question was approved without \
                     any. Ask again, or continue without them and say what you assumed.",
                );
            }
            let detail_answers: serde_json::Map<String, Value> = answers
                .iter()
                .map(|(q, a)| (q.clone(), Value::String(a.text())))
                .collect();
            ToolOutput::ok(answered_text(&questions, &answers))
                .with_detail(json!({"questions": questions, "answers": detail_answers}))
        })
    }
}

#[cfg(test)]
#[path = "ask_tests.rs"]
mod tests;
