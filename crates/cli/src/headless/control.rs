//! Answers to the client's control requests (`--input-format stream-json`).
//!
//! | subtype               | what strata does                                          | response |
//! |-----------------------|-----------------------------------------------------------|----------|
//! | `initialize`          | records the handshake (once per session); starts its `mcpServers` | the session's capabilities, below |
//! | `interrupt`           | cancels the running turn (nothing to do between turns)    | success |
//! | `set_permission_mode` | changes the mode through the engine's one gate; the engine emits `system/status` | success, or an error naming why (unknown mode, bypass not available) |
//! | `set_model`           | changes the model (`null` or `"default"`: the default)    | success |
//! | `rewind_files`        | restores files to their state at a user message           | the engine's report (JSON) or error |
//! | `get_context_usage`   | reports how the context window is used                    | `totalTokens`, `maxTokens`, `percentage`, `categories`, `memoryFiles` |
//! | `set_max_thinking_tokens` | sets the thinking budget (`0`: off, `null`: settings)  | success, or an error for a value that is not a token count |
//! | `mcp_status`          | reads the MCP servers' state from the store               | `{"mcpServers":[{name,status,…}]}` |
//! | `mcp_reconnect`       | restarts the connection of `serverName`                   | success, or an error (unknown, disabled, not approved) |
//! | `mcp_toggle`          | enables or disables `serverName` for the session (`enabled`) | success, or an error |
//! | anything else         | nothing                                                   | an error naming the subtype |
//!
//! `initialize` answers with what the session offers, in the reference SDK's shape:
//! `commands` (`[{"name","description","argumentHint"}]`, the slash commands of the
//! `init` line), `output_style` and `available_output_styles`, `models`
//! (`[{"value","displayName","description"}]`: the session's model and the provider's
//! default), and strata's own `permission_prompts`: `"stdio"` when permission prompts are
//! sent to the client as `can_use_tool` requests (`--permission-prompt-tool stdio`, what
//! the reference SDKs pass when their user gives a permission callback), `"none"` when
//! calls that need approval are denied and listed in the result's `permission_denials`.
//! It says `hook_on_failure_supported: true` (hook matchers' `onFailure: "block"` is
//! honoured, so a host that relies on it may go on), `hooks_applied` when the request
//! carried hooks, and `mcp_servers_applied` when it carried MCP servers (they were taken;
//! each one's connection is reported by `mcp_status`). It also reads what the SDKs put in it: `systemPrompt` and `appendSystemPrompt` (they
//! replace the flags' values), `hooks` (callbacks registered by id, called back with
//! `hook_callback` requests: [`super::callbacks`]), `agents` (agent types for the Agent
//! tool) and `mcpServers` (servers started at once).
//!
//! The requests the protocol crate does not type have their own arms in
//! [`Controller::other`]: `stop_task` (a background shell or agent), the `mcp_*` ones;
//! any other subtype is answered with an error naming it, never a silent success.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use strata_agent::engine::Engine;
use strata_agent::hooks::HookCallbacks;
use strata_protocol::sdk::{ControlRequest, ControlRequestBody, ControlResponse};
use tokio_util::sync::CancellationToken;

/// Answers control requests for one session.
pub(crate) struct Controller {
    engine: Arc<Engine>,
    /// Whether permission prompts go to the client.
    prompts_to_client: bool,
    /// The provider's default model, offered in `initialize`'s model list.
    default_model: Option<String>,
    initialized: bool,
    /// Where hook callbacks registered at `initialize` are called.
    callbacks: Option<Arc<dyn HookCallbacks>>,
}

impl Controller {
    pub(crate) fn new(
        engine: Arc<Engine>,
        prompts_to_client: bool,
        default_model: Option<String>,
    ) -> Self {
        Self {
            engine,
            prompts_to_client,
            default_model,
            initialized: false,
            callbacks: None,
        }
    }

    /// Calls hook callbacks registered at `initialize` through `callbacks`.
    pub(crate) fn with_callbacks(mut self, callbacks: Arc<dyn HookCallbacks>) -> Self {
        self.callbacks = Some(callbacks);
        self
    }

    /// Carries out `request`; `turn` is the running turn's token, if one runs.
    pub(crate) fn handle(
        &mut self,
        request: ControlRequest,
        turn: Option<&CancellationToken>,
    ) -> ControlResponse {
        let id = request.request_id;
        let outcome = match request.request {
            ControlRequestBody::Initialize { hooks, extra } => self.initialize(hooks, &extra),
            ControlRequestBody::Interrupt => {
                if let Some(turn) = turn {
                    turn.cancel();
                }
                Ok(None)
            }
            // The engine's typed errors are sent as their message text: the protocol's
            // error response carries a string.
            ControlRequestBody::SetPermissionMode { mode } => self
                .engine
                .set_permission_mode(&mode)
                .map(|()| None)
                .map_err(|e| e.to_string()),
            ControlRequestBody::SetModel { model } => {
                self.engine.set_model(model.filter(|m| m != "default"));
                Ok(None)
            }
            ControlRequestBody::RewindFiles {
                user_message_id,
                dry_run,
            } => self
                .engine
                .rewind_files(&user_message_id, dry_run)
                .map(Some)
                .map_err(|e| e.to_string()),
            ControlRequestBody::CanUseTool { .. } => {
                Err("can_use_tool requests go from strata to the client, not the other way".into())
            }
            ControlRequestBody::Other(body) => match long_session_request(&self.engine, &body) {
                Some(outcome) => outcome,
                None => self.other(&body),
            },
        };
        match outcome {
            Ok(response) => ControlResponse::success(id, response),
            Err(error) => ControlResponse::error(id, error),
        }
    }

    /// The requests the protocol crate does not type, one arm each: the MCP ones
    /// (`mcp_status`, `mcp_reconnect`, `mcp_toggle`, with the server as `serverName`), and
    /// those of capabilities not built yet, answered with an error naming them.
    fn other(&self, body: &Map<String, Value>) -> Result<Option<Value>, String> {
        let server = || {
            body.get("serverName")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    "this request needs \"serverName\": the MCP server's name".to_owned()
                })
        };
        let subtype = body.get("subtype").and_then(Value::as_str);
        match subtype {
            // Acknowledged at once; the task's `task_notification` (status `stopped`)
            // follows when it has ended, as the SDKs expect.
            Some("stop_task") => {
                let id = body
                    .get("task_id")
                    .and_then(Value::as_str)
                    .ok_or("stop_task needs \"task_id\": the task's id")?;
                self.engine
                    .request_stop(id)
                    .map(|()| None)
                    .map_err(|e| e.to_string())
            }
            Some("mcp_status") => Ok(Some(self.engine.mcp_status())),
            Some("mcp_reconnect") => self
                .engine
                .mcp()
                .reconnect(server()?)
                .map(|()| None)
                .map_err(|e| e.to_string()),
            Some("mcp_toggle") => {
                let enabled = body
                    .get("enabled")
                    .and_then(Value::as_bool)
                    .ok_or("mcp_toggle needs \"enabled\": true or false")?;
                self.engine
                    .mcp()
                    .set_enabled(server()?, enabled)
                    .map(|()| None)
                    .map_err(|e| e.to_string())
            }
            _ => Err(unsupported(body)),
        }
    }

    fn initialize(
        &mut self,
        hooks: Option<Value>,
        extra: &Map<String, Value>,
    ) -> Result<Option<Value>, String> {
        if self.initialized {
            return Err("already initialized: initialize is sent once per session".into());
        }
        // A string, or (the TypeScript SDK) a list of strings: the prompt's parts.
        let text = |key: &str| match extra.get(key) {
            Some(Value::String(s)) => Ok(Some(s.clone())),
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(parts)) if parts.iter().all(Value::is_string) => Ok(Some(
                parts
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            )),
            Some(other) => Err(format!(
                "initialize: \"{key}\" must be a string or a list of strings, not {other}"
            )),
        };
        let system_prompt = text("systemPrompt")?;
        let append = text("appendSystemPrompt")?;
        self.initialized = true;
        // `mcp_servers_applied`: whether the servers were taken (not whether each one
        // connects; their status is in `mcp_status`). The SDKs read an absent field as
        // "not applied".
        let mcp_applied =
            extra
                .get("mcpServers")
                .filter(|v| !v.is_null())
                .map(|servers| match self.engine.add_sdk_mcp_servers(servers) {
                    Ok(problems) => {
                        for problem in problems {
                            super::warn(format_args!("{problem}"));
                        }
                        true
                    }
                    Err(problem) => {
                        super::warn(format_args!("MCP configuration: {problem}"));
                        false
                    }
                });
        let mut hooks_applied = None;
        if system_prompt.is_some() || append.is_some() {
            self.engine.set_system_prompt(system_prompt, append);
        }
        if let Some(hooks) = hooks.filter(|h| !h.is_null() && h != &json!({})) {
            match (self.engine.hooks(), &self.callbacks) {
                (Some(runtime), Some(callbacks)) => {
                    for problem in runtime.register_callbacks(&hooks, Arc::clone(callbacks)) {
                        super::warn(format_args!("{problem}"));
                    }
                    hooks_applied = Some(true);
                }
                _ => {
                    super::warn(format_args!(
                        "hook callbacks registered at initialize cannot be called in this session"
                    ));
                    hooks_applied = Some(false);
                }
            }
        }
        // The host's agent types join the session's (the SDKs send them here, not as
        // `--agents`).
        if let Some(agents) = extra.get("agents").filter(|v| !v.is_null()) {
            for problem in self
                .engine
                .agents()
                .add_definitions(agents, "initialize.agents")
            {
                super::warn(format_args!("{problem}"));
            }
        }
        let init = self.engine.init_message();
        // The SDKs' `SlashCommand` rows: command files, skills and MCP prompts, each with
        // what it does and what to type after it.
        let commands: Vec<Value> = self
            .engine
            .slash_command_entries()
            .into_iter()
            .map(|e| {
                json!({
                    "name": e.name,
                    "description": e.description,
                    "argumentHint": e.argument_hint.unwrap_or_default(),
                })
            })
            .collect();
        let mut models = vec![json!({
            "value": init.model,
            "displayName": init.model,
            "description": "the session's model",
        })];
        if let Some(default) = self.default_model.as_ref().filter(|d| **d != init.model) {
            models.push(json!({
                "value": default,
                "displayName": default,
                "description": "the provider's default model",
            }));
        }
        let mut reply = json!({
            "commands": commands,
            "output_style": init.output_style,
            "available_output_styles": [init.output_style],
            "models": models,
            "agents": self
                .engine
                .agents()
                .definitions()
                .iter()
                .map(|d| {
                    let mut info = json!({"name": d.name, "description": d.description});
                    if let Some(model) = &d.model {
                        info["model"] = json!(model);
                    }
                    info
                })
                .collect::<Vec<_>>(),
            "account": {"apiKeySource": init.api_key_source},
            "permission_prompts": if self.prompts_to_client { "stdio" } else { "none" },
            // Hook matchers' `onFailure: "block"` is honoured (`hooks::config::OnFailure`).
            "hook_on_failure_supported": true,
        });
        if let Some(applied) = hooks_applied {
            reply["hooks_applied"] = json!(applied);
        }
        if let Some(applied) = mcp_applied {
            reply["mcp_servers_applied"] = json!(applied);
        }
        Ok(Some(reply))
    }
}

// ---- long sessions (issue 13): context usage and the thinking budget ----------------

/// `get_context_usage` (the report of `Engine::context_usage`) and
/// `set_max_thinking_tokens` (`{"max_thinking_tokens": n | null}`; `0` turns thinking
/// off, `null` returns to the settings). `None`: not one of these.
fn long_session_request(
    engine: &Engine,
    body: &Map<String, Value>,
) -> Option<Result<Option<Value>, String>> {
    match body.get("subtype").and_then(Value::as_str)? {
        "get_context_usage" => Some(Ok(Some(engine.context_usage()))),
        "set_max_thinking_tokens" => Some(match body.get("max_thinking_tokens") {
            None | Some(Value::Null) => {
                engine.set_max_thinking_tokens(None);
                Ok(None)
            }
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => {
                    engine.set_max_thinking_tokens(Some(n));
                    Ok(None)
                }
                None => Err(format!(
                    "set_max_thinking_tokens: max_thinking_tokens must be a whole number of \
                     tokens or null, not {v}"
                )),
            },
        }),
        _ => None,
    }
}

fn unsupported(body: &Map<String, Value>) -> String {
    match body.get("subtype").and_then(Value::as_str) {
        Some(subtype) => format!(
            "unsupported control request subtype {subtype:?}; strata answers initialize, \
             interrupt, set_permission_mode, set_model, rewind_files, get_context_usage, \
             set_max_thinking_tokens, mcp_status, mcp_reconnect and mcp_toggle"
        ),
        None => "a control request needs a \"subtype\"".into(),
    }
}
