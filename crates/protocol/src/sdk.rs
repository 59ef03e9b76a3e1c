//! Headless mode's messages: the `stream-json` output lines and the control protocol.
//!
//! Scripts, CI jobs and SDKs drive the reference agent with `-p --output-format
//! stream-json` and parse what it prints; strata prints the same shapes so they work
//! unchanged. Every output line is one [`SdkMessage`]: `system` (`init`, `status`),
//! `assistant`, `user`, and a final `result`. With `--input-format stream-json` the client
//! writes user messages and [`ControlRequest`]s, and strata answers each request with a
//! [`ControlResponse`] (and sends its own `can_use_tool` requests when the client asked
//! for permission prompts).
//!
//! Field names follow the reference SDK exactly, including its mix of `snake_case` and
//! `camelCase` (`permissionMode`, `modelUsage`, `total_cost_usd`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{AssistantMessage, Message};

mod permission_update;
mod tasks;

pub use permission_update::{
    PermissionRuleValue, PermissionUpdate, RuleBehaviorName, UpdateDestination, parse_updates,
};
pub use tasks::{
    BackgroundTaskSummary, TaskEndStatus, TaskNotificationMessage, TaskProgressMessage,
    TaskStartedMessage, TaskUsage,
};

/// One line of `stream-json` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SdkMessage {
    /// `{"type":"system","subtype":"init"|"status",…}`.
    System(SystemMessage),
    /// A model response (or one content block of it).
    Assistant(AssistantEvent),
    /// A user turn: the prompt, or tool results.
    User(UserEvent),
    /// The final line of a run.
    Result(ResultMessage),
    /// A control request (either direction).
    ControlRequest(ControlRequest),
    /// The answer to a control request (either direction).
    ControlResponse(ControlResponse),
    /// One raw event of the model's response stream (`--include-partial-messages`).
    StreamEvent(StreamEventMessage),
}

/// `{"type":"stream_event","event":{…},…}`: a raw Messages API stream event
/// (`message_start`, `content_block_delta`, …) as it arrived.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamEventMessage {
    /// The event, in the Messages API's shape.
    pub event: Value,
    /// The tool use of the parent agent when this comes from a sub-agent.
    pub parent_tool_use_id: Option<String>,
    /// The session id.
    pub session_id: String,
    /// This line's id.
    pub uuid: String,
}

/// `system` messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum SystemMessage {
    /// The first line of a run: what the session is and can do (boxed: it is much
    /// larger than a status line).
    Init(Box<InitMessage>),
    /// The permission mode changed (FX-1's SDK status stream: the raw mode).
    Status(StatusMessage),
    /// A hook started (`--include-hook-events`).
    HookStarted(HookStartedMessage),
    /// A hook finished (`--include-hook-events`).
    HookResponse(HookResponseMessage),
    /// The session became idle, started running, or waits for the client
    /// (`CLAUDE_CODE_SDK_READS_SESSION_STATE=1`).
    SessionStateChanged(SessionStateMessage),
    /// The conversation was compacted: what came before is summarised (issue 13).
    CompactBoundary(CompactBoundaryMessage),
    /// A background task began (issue 11).
    TaskStarted(TaskStartedMessage),
    /// An agent task made progress.
    TaskProgress(TaskProgressMessage),
    /// A background task ended.
    TaskNotification(TaskNotificationMessage),
}

/// `{"type":"system","subtype":"hook_started",…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookStartedMessage {
    /// Identifies this run of the hook (shared with its `hook_response`).
    pub hook_id: String,
    /// The hook's name: `<event>:<matcher or tool>` (`PreToolUse:Bash`).
    pub hook_name: String,
    /// The event (`PreToolUse`, …).
    pub hook_event: String,
    /// The session id.
    pub session_id: String,
    /// This line's id.
    pub uuid: String,
}

/// `{"type":"system","subtype":"hook_response",…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookResponseMessage {
    /// The run's id (as in `hook_started`).
    pub hook_id: String,
    /// The hook's name.
    pub hook_name: String,
    /// The event.
    pub hook_event: String,
    /// What the hook printed on stdout (a callback: its JSON answer).
    pub output: String,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
    /// Its exit code (absent when it timed out or could not start).
    pub exit_code: Option<i32>,
    /// `success`, `blocked`, `error`, `timeout` or `cancelled`.
    pub outcome: String,
    /// The session id.
    pub session_id: String,
    /// This line's id.
    pub uuid: String,
}

/// `{"type":"system","subtype":"session_state_changed","state":…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionStateMessage {
    /// `running`, `idle` or `requires_action`.
    pub state: String,
    /// The session id.
    pub session_id: String,
    /// This line's id.
    pub uuid: String,
}

/// `{"type":"system","subtype":"compact_boundary","compact_metadata":{…},…}`: the SDK
/// stream's mark of a compaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactBoundaryMessage {
    /// What started it and how large the context was.
    pub compact_metadata: CompactMetadata,
    /// The session id.
    pub session_id: String,
    /// This line's id (the transcript's boundary line has the same).
    pub uuid: String,
}

/// The SDK's `compact_metadata`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactMetadata {
    /// `auto` (the threshold was crossed) or `manual` (`/compact`).
    pub trigger: String,
    /// The context size in tokens before the compaction.
    pub pre_tokens: u64,
}

/// `{"type":"system","subtype":"init",…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InitMessage {
    /// The working directory.
    pub cwd: String,
    /// The session id.
    pub session_id: String,
    /// The names of the tools the model may call.
    pub tools: Vec<String>,
    /// Connected MCP servers: `{"name","status"}` objects.
    pub mcp_servers: Vec<McpServerStatus>,
    /// The model.
    pub model: String,
    /// The permission mode.
    #[serde(rename = "permissionMode")]
    pub permission_mode: String,
    /// Available slash commands.
    pub slash_commands: Vec<String>,
    /// Where the API key came from (`ANTHROPIC_API_KEY`, `none`, …).
    #[serde(rename = "apiKeySource")]
    pub api_key_source: String,
    /// The program's version.
    pub claude_code_version: String,
    /// The output style.
    pub output_style: String,
    /// This line's id.
    pub uuid: String,
    /// Fields strata does not model, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An MCP server as listed in `init`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// The server's name.
    pub name: String,
    /// `connected`, `failed`, `pending`, …
    pub status: String,
}

/// `{"type":"system","subtype":"status",…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusMessage {
    /// The raw (internal) permission mode.
    #[serde(rename = "permissionMode")]
    pub permission_mode: String,
    /// What the session is busy with (`compacting`), if anything.
    pub status: Option<String>,
    /// strata's own (issue 17): where the connection to the remote (`--remote`) stands —
    /// `connecting`, `connected`, `reconnecting` or `disconnected` — on the line sent
    /// when it changes; absent otherwise. Clients that do not know it ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_connection: Option<String>,
    /// The session id.
    pub session_id: String,
    /// This line's id.
    pub uuid: String,
}

/// `{"type":"assistant","message":{…},"parent_tool_use_id":null,…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssistantEvent {
    /// The response (in headless output: one content block per line, as in transcripts).
    pub message: AssistantMessage,
    /// The tool use of the parent agent when this comes from a sub-agent.
    pub parent_tool_use_id: Option<String>,
    /// The session id.
    pub session_id: String,
    /// The transcript entry's uuid.
    pub uuid: String,
}

/// `{"type":"user","message":{…},"parent_tool_use_id":null,…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserEvent {
    /// The user message (a prompt, or tool results).
    pub message: Message,
    /// The tool use of the parent agent when this comes from a sub-agent.
    pub parent_tool_use_id: Option<String>,
    /// The session id (absent on input lines written by some clients).
    #[serde(default)]
    pub session_id: String,
    /// The transcript entry's uuid (absent on input lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Structured tool result detail, on tool-result lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_result: Option<Value>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultSubtype {
    /// The model ended its turn.
    Success,
    /// `--max-turns` was reached.
    ErrorMaxTurns,
    /// The run failed (API error, interrupt, internal error).
    ErrorDuringExecution,
    /// `--max-budget-usd` was spent.
    ErrorMaxBudgetUsd,
    /// `--json-schema`: the final answer did not match the schema.
    ErrorMaxStructuredOutputRetries,
}

/// `{"type":"result",…}`: the last line of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultMessage {
    /// How it ended.
    pub subtype: ResultSubtype,
    /// True unless it succeeded.
    pub is_error: bool,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Time spent waiting for the API.
    pub duration_api_ms: u64,
    /// Model calls made.
    pub num_turns: u32,
    /// The final text (success only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The session id.
    pub session_id: String,
    /// Cost of the run in US dollars.
    pub total_cost_usd: f64,
    /// Total token usage (`input_tokens`, `output_tokens`, cache fields).
    pub usage: Value,
    /// Usage per model: `{model: {inputTokens, outputTokens, cacheReadInputTokens,
    /// cacheCreationInputTokens, webSearchRequests, costUSD}}`.
    #[serde(rename = "modelUsage")]
    pub model_usage: Map<String, Value>,
    /// Tool calls that were denied.
    pub permission_denials: Vec<PermissionDenial>,
    /// Error messages, for failed runs; always present (`[]` when none), as the SDKs'
    /// types declare it (the TypeScript SDK reads it as an array).
    #[serde(default)]
    pub errors: Vec<String>,
    /// Why the last model response stopped (`end_turn`, `tool_use`, `max_tokens`, …);
    /// `null` when no response completed.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// `--json-schema`: the final answer, parsed, when it matched the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Value>,
    /// Background tasks still running when the result was written (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background_tasks: Vec<BackgroundTaskSummary>,
    /// This line's id.
    pub uuid: String,
}

/// A denied tool call, as listed in `result.permission_denials`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermissionDenial {
    /// The tool's name.
    pub tool_name: String,
    /// The `tool_use` block's id.
    pub tool_use_id: String,
    /// The input the model gave.
    pub tool_input: Value,
}

/// `{"type":"control_request","request_id":…,"request":{"subtype":…,…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlRequest {
    /// Chosen by the sender; echoed in the response.
    pub request_id: String,
    /// What is asked.
    pub request: ControlRequestBody,
}

/// The body of a control request, by `subtype`. Unknown subtypes are kept so the
/// receiver can answer them with an error rather than fail to parse the line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlRequestBody {
    /// Client → strata, first: declares hooks and whether it answers permission prompts.
    Initialize {
        /// Hook callbacks the client registers (kept as given).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hooks: Option<Value>,
        /// Other fields, kept.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// Client → strata: stop the current turn.
    Interrupt,
    /// Client → strata: change the permission mode.
    SetPermissionMode {
        /// The mode's name.
        mode: String,
    },
    /// Client → strata: change the model (`null` for the default).
    SetModel {
        /// The model, or `None` for the default.
        #[serde(default)]
        model: Option<String>,
    },
    /// Client → strata: restore files to their state at a user message.
    RewindFiles {
        /// The user message's uuid.
        user_message_id: String,
        /// Report what would change without changing anything.
        #[serde(default)]
        dry_run: bool,
    },
    /// strata → client: may this tool call run?
    CanUseTool {
        /// The tool's name.
        tool_name: String,
        /// The input the model gave.
        input: Value,
        /// The `tool_use` block's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
        /// Updates the client could offer the user with the prompt ("always allow …").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permission_suggestions: Option<Vec<PermissionUpdate>>,
        /// Why strata asks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision_reason: Option<String>,
    },
    /// Any other subtype, kept as given.
    #[serde(untagged)]
    Other(Map<String, Value>),
}

/// `{"type":"control_response","response":{"subtype":"success"|"error",…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlResponse {
    /// The outcome.
    pub response: ControlResponseBody,
}

/// The body of a control response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlResponseBody {
    /// The request was carried out.
    Success {
        /// The request's id.
        request_id: String,
        /// What it returned, if anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response: Option<Value>,
    },
    /// The request failed.
    Error {
        /// The request's id.
        request_id: String,
        /// Why.
        error: String,
    },
}

impl ControlResponse {
    /// A success answer to `request_id`.
    pub fn success(request_id: impl Into<String>, response: Option<Value>) -> Self {
        Self {
            response: ControlResponseBody::Success {
                request_id: request_id.into(),
                response,
            },
        }
    }

    /// An error answer to `request_id`.
    pub fn error(request_id: impl Into<String>, error: impl Into<String>) -> Self {
        Self {
            response: ControlResponseBody::Error {
                request_id: request_id.into(),
                error: error.into(),
            },
        }
    }

    /// The id of the request this answers.
    pub fn request_id(&self) -> &str {
        match &self.response {
            ControlResponseBody::Success { request_id, .. }
            | ControlResponseBody::Error { request_id, .. } => request_id,
        }
    }
}

/// The client's answer to a `can_use_tool` request (the `response` of a success).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum PermissionResult {
    /// Run the call, possibly with a changed input.
    Allow {
        /// The input to run with (the original when absent).
        #[serde(
            rename = "updatedInput",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        updated_input: Option<Value>,
        /// Changes to the permission rules, mode or directories the user chose with the
        /// answer ("and don't ask again"), as sent; [`parse_updates`] reads them.
        #[serde(
            rename = "updatedPermissions",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        updated_permissions: Option<Vec<Value>>,
    },
    /// Do not run it; `message` is shown to the model.
    Deny {
        /// Why, for the model.
        #[serde(default)]
        message: String,
        /// Also stop the turn.
        #[serde(default)]
        interrupt: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(line: Value) -> SdkMessage {
        let parsed: SdkMessage = serde_json::from_value(line.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(&parsed).unwrap(),
            line,
            "re-serialised differently"
        );
        parsed
    }

    #[test]
    fn control_requests_parse_by_subtype_and_keep_unknown_ones() {
        let SdkMessage::ControlRequest(req) = round_trip(json!({
            "type": "control_request", "request_id": "r1",
            "request": {"subtype": "set_permission_mode", "mode": "plan"}
        })) else {
            panic!()
        };
        assert_eq!(
            req.request,
            ControlRequestBody::SetPermissionMode {
                mode: "plan".into()
            }
        );
        let SdkMessage::ControlRequest(req) = round_trip(json!({
            "type": "control_request", "request_id": "r2",
            "request": {"subtype": "mcp_status", "x": 1}
        })) else {
            panic!()
        };
        assert!(matches!(req.request, ControlRequestBody::Other(_)));
        round_trip(
            json!({"type":"control_request","request_id":"r3","request":{"subtype":"interrupt"}}),
        );
    }

    #[test]
    fn control_responses_round_trip() {
        round_trip(
            json!({"type":"control_response","response":{"subtype":"success","request_id":"r1"}}),
        );
        round_trip(
            json!({"type":"control_response","response":{"subtype":"error","request_id":"r1","error":"no"}}),
        );
        let allow: PermissionResult =
            serde_json::from_value(json!({"behavior":"allow","updatedInput":{"a":1}})).unwrap();
        assert_eq!(
            allow,
            PermissionResult::Allow {
                updated_input: Some(json!({"a":1})),
                updated_permissions: None,
            }
        );
    }

    #[test]
    fn a_user_input_line_without_session_id_parses() {
        let line = json!({"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null});
        let SdkMessage::User(user) = serde_json::from_value(line).unwrap() else {
            panic!()
        };
        assert_eq!(user.message.content.first_text(), Some("hi"));
    }
}
