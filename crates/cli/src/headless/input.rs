//! `--input-format stream-json`: stdin read line by line, each line classified.
//!
//! A plain thread reads stdin (a blocking read cannot be cancelled, and a thread that
//! is simply abandoned at exit cannot hold up the runtime's shutdown the way a blocking
//! task would) and hands each line to the session loop, which runs concurrently with
//! the current turn. Lines are numbered from 1 so every complaint about one names it.
//!
//! Accepted lines: `user` messages (prompts), `control_request`s, `control_response`s
//! (answers to our `can_use_tool` requests), `control_cancel_request`s and `keep_alive`s
//! (ignored). Anything else is reported on stderr with its line number and skipped.

use std::io::BufRead as _;

use serde_json::Value;
use strata_protocol::message::{Message, MessageContent, Role};
use strata_protocol::sdk::{ControlRequest, ControlRequestBody, ControlResponse, SdkMessage};
use tokio::sync::mpsc;

/// One meaningful input line.
#[derive(Debug)]
pub(crate) enum Input {
    /// A prompt to run after the ones before it, with the uuid the client gave it.
    Prompt(Message, Option<String>),
    /// A request to answer now.
    Control(ControlRequest),
    /// A control request whose body did not parse: answer it with an error.
    BadControl {
        /// The request's id.
        request_id: String,
        /// What is wrong.
        error: String,
    },
    /// The client's answer to one of our requests.
    Response(ControlResponse),
    /// A line that could not be used (already reported on stderr).
    Rejected,
}

/// Reads stdin on its own thread; the receiver gets every meaningful line and closes at
/// the end of input (or when stdin cannot be read, which is reported).
pub(crate) fn spawn_reader() -> anyhow::Result<mpsc::UnboundedReceiver<Input>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("strata-stdin".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut stdin = stdin.lock();
            let mut buf = Vec::new();
            let mut number = 0usize;
            loop {
                buf.clear();
                match stdin.read_until(b'\n', &mut buf) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(err) => {
                        super::warn(format_args!("cannot read stdin: {err}; no more input"));
                        return;
                    }
                }
                number += 1;
                match parse_line(&buf) {
                    Ok(Some(input)) => {
                        if tx.send(input).is_err() {
                            return; // the session is over
                        }
                    }
                    Ok(None) => {}
                    Err(err) => {
                        super::warn(format_args!("stdin line {number}: {err}; line skipped"));
                        if tx.send(Input::Rejected).is_err() {
                            return;
                        }
                    }
                }
            }
        })?;
    Ok(rx)
}

/// Classifies one input line; `Ok(None)` for lines that need nothing (blank lines,
/// keep-alives, cancellations of requests we never make).
pub(crate) fn parse_line(bytes: &[u8]) -> Result<Option<Input>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text ({e})"))?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Err(
            "expected a JSON object with a \"type\" (user, control_request, control_response)"
                .into(),
        );
    };
    match kind {
        "user" => {
            let Ok(SdkMessage::User(user)) = serde_json::from_value::<SdkMessage>(value.clone())
            else {
                return Err(describe_error::<UserLine>(value, "user message"));
            };
            if user.message.role != Role::User {
                return Err("a user line's message must have role \"user\"".into());
            }
            // The API refuses an empty message, and once in the conversation it would
            // fail every later request of the session too.
            let empty = match &user.message.content {
                MessageContent::Text(t) => t.trim().is_empty(),
                MessageContent::Blocks(b) => b
                    .iter()
                    .all(|b| b.as_text().is_some_and(|t| t.trim().is_empty())),
            };
            if empty {
                return Err("a user message needs some content (it was empty)".into());
            }
            Ok(Some(Input::Prompt(user.message, user.uuid)))
        }
        "control_request" => {
            let Some(request_id) = value.get("request_id").and_then(Value::as_str) else {
                return Err("a control_request needs a string \"request_id\"".into());
            };
            let request_id = request_id.to_owned();
            let subtype = value.pointer("/request/subtype").and_then(Value::as_str);
            let malformed = |error: String| {
                Ok(Some(Input::BadControl {
                    request_id: request_id.clone(),
                    error,
                }))
            };
            match serde_json::from_value::<ControlRequest>(value.clone()) {
                // A known subtype whose fields are wrong lands in the catch-all variant:
                // say what the request needs instead of calling the subtype unknown.
                Ok(ControlRequest {
                    request: ControlRequestBody::Other(_),
                    ..
                }) if let Some(expected) = subtype.and_then(expected_fields) => malformed(format!(
                    "invalid {} request: expected {expected}",
                    subtype.unwrap_or_default()
                )),
                Ok(request) => Ok(Some(Input::Control(request))),
                Err(err) => malformed(format!(
                    "invalid {} request: {err}",
                    subtype.unwrap_or("control")
                )),
            }
        }
        "control_response" => match serde_json::from_value::<ControlResponse>(value) {
            Ok(response) => Ok(Some(Input::Response(response))),
            Err(err) => Err(format!("invalid control_response: {err}")),
        },
        "keep_alive" | "control_cancel_request" => Ok(None),
        other => Err(format!(
            "unexpected message type {other:?}; expected user, control_request or \
             control_response"
        )),
    }
}

/// The fields a known control request subtype needs (for error messages).
fn expected_fields(subtype: &str) -> Option<&'static str> {
    Some(match subtype {
        "set_permission_mode" => "\"mode\" (a permission mode name)",
        "set_model" => "\"model\" (a model name, or null for the default)",
        "rewind_files" => "\"user_message_id\" (a string) and optionally \"dry_run\" (a boolean)",
        "can_use_tool" => "\"tool_name\" and \"input\"",
        _ => return None,
    })
}

/// The shape of a `user` input line, only to word errors precisely.
#[derive(serde::Deserialize)]
#[allow(dead_code)] // read by serde only
struct UserLine {
    message: Message,
}

/// Re-parses `value` as `T` to get serde's precise complaint.
fn describe_error<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> String {
    match serde_json::from_value::<T>(value) {
        Ok(_) => format!("invalid {what}"),
        Err(err) => format!("invalid {what}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Option<Input>, String> {
        parse_line(line.as_bytes())
    }

    #[test]
    fn user_lines_become_prompts() {
        let Ok(Some(Input::Prompt(m, _))) = parse(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"parent_tool_use_id":null}"#,
        ) else {
            panic!()
        };
        assert_eq!(m.content.first_text(), Some("hi"));
    }

    /// Regression: an empty user message went to the model (which refuses it) and stayed
    /// in the conversation, failing every later prompt of the session.
    #[test]
    fn regression_empty_user_messages_are_refused() {
        for content in [r#""""#, r#""   ""#, "[]", r#"[{"type":"text","text":" "}]"#] {
            let line =
                format!(r#"{{"type":"user","message":{{"role":"user","content":{content}}}}}"#);
            let err = parse(&line).unwrap_err();
            assert!(err.contains("empty"), "{content}: {err}");
        }
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let err = parse("{not json").unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        let err = parse(r#"{"type":"user"}"#).unwrap_err();
        assert!(
            err.contains("invalid user message") && err.contains("message"),
            "{err}"
        );
        let err = parse(r#"{"type":"assistant","message":{}}"#).unwrap_err();
        assert!(err.contains("\"assistant\""), "{err}");
        let err = parse(r#"[1,2]"#).unwrap_err();
        assert!(err.contains("\"type\""), "{err}");
        let err =
            parse(r#"{"type":"user","message":{"role":"assistant","content":"x"}}"#).unwrap_err();
        assert!(err.contains("role"), "{err}");
    }

    #[test]
    fn a_control_request_with_a_bad_body_is_answered_not_dropped() {
        let Ok(Some(Input::BadControl { request_id, error })) = parse(
            r#"{"type":"control_request","request_id":"r9","request":{"subtype":"set_permission_mode"}}"#,
        ) else {
            panic!()
        };
        assert_eq!(request_id, "r9");
        assert!(
            error.contains("set_permission_mode") && error.contains("mode"),
            "{error}"
        );
        let Ok(Some(Input::Control(req))) = parse(
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"interrupt"}}"#,
        ) else {
            panic!()
        };
        assert_eq!(req.request, ControlRequestBody::Interrupt);
    }

    #[test]
    fn blank_lines_and_keep_alives_need_nothing() {
        assert!(parse("   \n").unwrap().is_none());
        assert!(parse(r#"{"type":"keep_alive"}"#).unwrap().is_none());
    }
}
