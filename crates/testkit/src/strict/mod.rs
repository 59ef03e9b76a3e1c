//! The strict mock servers: the requests the real model APIs refuse, refused here too.
//!
//! A mock that accepts anything hides requests the real service answers with 400: strata
//! once sent compaction's summary request with the conversation's `tool_use` and
//! `tool_result` blocks and no `tools`, which the Messages API refuses, and no test could
//! see it. [`check`] holds the rules each API documents (or answers with a documented
//! error) and the exact wording of its error message; [`crate::MockServer`] applies it to
//! every request before a scripted response is used, answers a violation with the API's
//! 400 error body and leaves the script untouched. A test that needs a server accepting
//! anything asks for one explicitly ([`crate::MockServer::start_lenient`]) and says why.
//!
//! The rules are listed in [`anthropic`] (the Messages API) and [`openai`] (chat
//! completions). Only what the APIs document is enforced: the Messages API combines
//! consecutive messages of one role, so roles need not alternate, and it does not require
//! the first message to be a user's.

pub mod anthropic;
pub mod openai;

use serde_json::Value;

/// A request the real API would refuse, with its error as the API words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The error message, worded like the real API's.
    pub message: String,
    /// The OpenAI error's `param` (the field at fault), when it names one.
    pub param: Option<String>,
    /// The OpenAI error's `code`, when it has one.
    pub code: Option<String>,
}

impl Violation {
    /// A violation with only a message (the Messages API's errors carry no more).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            param: None,
            code: None,
        }
    }

    /// Sets the OpenAI `param`.
    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// Sets the OpenAI `code`.
    pub fn code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Which API a request is for, by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST …/v1/messages`: a Messages API request.
    Messages,
    /// `POST …/v1/messages/count_tokens`: the same body without `max_tokens`.
    CountTokens,
    /// `POST …/chat/completions`: an OpenAI chat completion.
    ChatCompletions,
}

impl Api {
    /// The API of a request to `path` (its query ignored), or `None` for a path the
    /// strict rules do not cover.
    pub fn of_path(path: &str) -> Option<Self> {
        let path = path.split('?').next().unwrap_or_default();
        if path.ends_with("/chat/completions") {
            Some(Self::ChatCompletions)
        } else if path.ends_with("/messages/count_tokens") {
            Some(Self::CountTokens)
        } else if path.ends_with("/messages") {
            Some(Self::Messages)
        } else {
            None
        }
    }
}

/// The first rule a request body breaks, or `None` when the real API would accept it.
///
/// Bodies that are not JSON objects are left alone: the rules are about well-formed
/// requests strata builds, and protocol tests send odd bodies on purpose.
pub fn check(api: Api, body: &[u8]) -> Option<Violation> {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    match api {
        Api::Messages => anthropic::check(&body, true),
        Api::CountTokens => anthropic::check(&body, false),
        Api::ChatCompletions => openai::check(&body),
    }
}

/// The tool-name rule both APIs document: 1 to 64 of `[a-zA-Z0-9_-]`.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
