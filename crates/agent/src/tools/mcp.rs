//! MCP tools as strata tools: each tool of a connected server becomes a [`McpTool`]
//! named `mcp__<server>__<tool>` (the reference agent's names and character rules, so
//! `mcp__server` and `mcp__server__tool` permission rules mean the same in both), and
//! the resource tools [`ListMcpResources`] and [`ReadMcpResource`].
//!
//! A call goes through the session's [`McpManager`]: it waits for a server still
//! connecting, is bounded by the per-call timeout, and on cancellation the SDK sends the
//! server `notifications/cancelled`. Results are converted by `strata_mcp::content`:
//! text joined, resource links written out, images as image blocks of the tool result; long text goes to `tool-results/` like every tool's.
//!
//! Server annotations (`readOnlyHint`) come from the server, which strata does not
//! trust: an MCP call is never treated as read-only, so it always goes through the
//! permission rules (fail closed).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::{Value, json};
use strata_mcp::{CallError, McpManager, content::CallOutput};

use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// Interns a dynamic name or description as `&'static str` (the [`Tool`] trait's
/// return type). Bounded by the distinct names and descriptions servers report in one
/// process, which a reconnect does not grow: the same text is stored once.
fn intern(text: &str) -> &'static str {
    static TABLE: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut table = TABLE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = table.get(text) {
        return found;
    }
    let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
    table.insert(leaked);
    leaked
}

/// One tool of an MCP server.
#[derive(Debug)]
pub struct McpTool {
    manager: McpManager,
    server: String,
    tool: String,
    name: &'static str,
    description: &'static str,
    schema: Value,
}

impl McpTool {
    /// The adapter for `tool` as the app state lists it.
    pub fn new(manager: McpManager, tool: &strata_state::McpTool) -> Self {
        Self {
            manager,
            server: tool.server.to_string(),
            tool: tool.name.to_string(),
            name: intern(&tool.qualified_name),
            description: intern(&tool.description),
            schema: (*tool.input_schema).clone(),
        }
    }
}

/// The model-facing result of a converted MCP output.
fn to_output(out: CallOutput, call: &ToolCall, ctx: &ToolContext) -> ToolOutput {
    let mut text = out.text;
    if text.is_empty() {
        text = if out.images.is_empty() {
            "(the tool returned no content)".into()
        } else {
            format!("({} image(s))", out.images.len())
        };
    }
    let images: Vec<_> = out
        .images
        .iter()
        .map(|image| {
            strata_protocol::message::ContentBlock::Image(strata_protocol::message::ImageBlock {
                source: json!({"type": "base64", "media_type": image.mime_type, "data": image.data}),
                extra: serde_json::Map::new(),
            })
        })
        .collect();
    let output = ToolOutput {
        content: text,
        is_error: out.is_error,
        detail: Some(out.raw),
        attachments: (!images.is_empty()).then(|| Box::new(images)),
        ..ToolOutput::default()
    };
    output.capped(&call.id, ctx.hooks.as_ref())
}

fn error_output(e: &CallError) -> ToolOutput {
    ToolOutput::error(e.to_string())
}

impl Tool for McpTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match self
                .manager
                .call_tool(&self.server, &self.tool, call.input.clone(), &ctx.cancel)
                .await
            {
                Ok(out) => to_output(out, &call, ctx),
                Err(e) => error_output(&e),
            }
        })
    }
}

/// Lists the resources of the connected servers (`ListMcpResources`).
#[derive(Debug)]
pub struct ListMcpResources {
    manager: McpManager,
}

impl ListMcpResources {
    /// The tool over `manager`.
    pub fn new(manager: McpManager) -> Self {
        Self { manager }
    }
}

impl Tool for ListMcpResources {
    fn name(&self) -> &'static str {
        "ListMcpResources"
    }

    fn description(&self) -> &'static str {
        "Lists the resources the connected MCP servers offer (uri, name, MIME type, \
         description). Give `server` to list one server's only."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"server": {"type": "string", "description": "Only this server's resources"}}})
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn call<'a>(&'a self, call: ToolCall, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let only = call.input.get("server").and_then(Value::as_str);
            if let Some(server) = only
                && !self.manager.names().iter().any(|n| n == server)
            {
                return ToolOutput::error(format!("no MCP server named {server:?} is configured"));
            }
            let list: Vec<Value> = self
                .manager
                .views()
                .iter()
                .filter(|v| only.is_none_or(|s| v.client.name == s))
                .flat_map(|v| v.resources.iter())
                .map(|r| {
                    json!({"server": r.server.as_str(), "uri": &*r.uri, "name": &*r.name,
                           "mimeType": r.mime_type.as_deref(), "description": r.description.as_deref()})
                })
                .collect();
            let text = serde_json::to_string_pretty(&list).unwrap_or_default();
            ToolOutput::ok(text).with_detail(Value::Array(list))
        })
    }
}

/// Reads one resource of a server (`ReadMcpResource`).
#[derive(Debug)]
pub struct ReadMcpResource {
    manager: McpManager,
}

impl ReadMcpResource {
    /// The tool over `manager`.
    pub fn new(manager: McpManager) -> Self {
        Self { manager }
    }
}

impl Tool for ReadMcpResource {
    fn name(&self) -> &'static str {
        "ReadMcpResource"
    }

    fn description(&self) -> &'static str {
        "Reads a resource of an MCP server by its URI (see ListMcpResources)."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["server", "uri"], "properties": {
            "server": {"type": "string", "description": "The server's name"},
            "uri": {"type": "string", "description": "The resource URI"}}})
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn permission_subject(&self, _input: &Value) -> Option<PermissionSubject> {
        None
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        for key in ["server", "uri"] {
            if input
                .get(key)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(ToolOutput::error(format!(
                    "ReadMcpResource needs a \"{key}\" string"
                )));
            }
        }
        Ok(())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            if let Err(e) = self.validate(&call.input) {
                return e;
            }
            let server = call.input["server"].as_str().unwrap_or_default();
            let uri = call.input["uri"].as_str().unwrap_or_default();
            match self.manager.read_resource(server, uri, &ctx.cancel).await {
                Ok(out) => to_output(out, &call, ctx),
                Err(e) => error_output(&e),
            }
        })
    }
}

/// The MCP tools to offer for the servers' current state: one per listed tool, and the
/// resource tools when some server has resources.
pub fn tools_of(manager: &McpManager) -> Vec<Arc<dyn Tool>> {
    let views = manager.views();
    let mut tools: Vec<Arc<dyn Tool>> = views
        .iter()
        .flat_map(|v| v.tools.iter())
        .map(|t| Arc::new(McpTool::new(manager.clone(), t)) as Arc<dyn Tool>)
        .collect();
    if views.iter().any(|v| !v.resources.is_empty()) {
        tools.push(Arc::new(ListMcpResources::new(manager.clone())));
        tools.push(Arc::new(ReadMcpResource::new(manager.clone())));
    }
    tools
}

/// The sub-agent filter (item 5): whether a sub-agent whose definition lists `allowed`
/// tools (`None`: every tool of the parent) gets the parent's MCP tool `name`. An entry
/// `mcp__server` admits the whole server, `mcp__server__tool` one tool, `*` all.
pub fn subagent_may_use(name: &str, allowed: Option<&[String]>) -> bool {
    let Some(allowed) = allowed else {
        return true;
    };
    allowed.iter().any(|a| {
        // An entry spelling a long name in full means the tool's shortened name.
        let a = strata_mcp::naming::canonical_rule_name(a);
        a == "*"
            || a == name
            || (strata_mcp::naming::is_mcp_tool_name(name)
                && !strata_mcp::naming::is_mcp_tool_name(&a)
                && name
                    .strip_prefix(a.as_ref())
                    .is_some_and(|rest| rest.starts_with("__")))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[derive(Default)]
    struct Stored(Mutex<Vec<(String, usize)>>);

    impl super::super::ToolHooks for Stored {
        fn before_edit(&self, _: &Path) -> Result<(), String> {
            Ok(())
        }
        fn store_large_output(&self, id: &str, content: &str) -> Result<PathBuf, String> {
            self.0.lock().unwrap().push((id.to_owned(), content.len()));
            Ok(PathBuf::from("tool-results").join(format!("{id}.txt")))
        }
        fn set_todos(&self, _: Value) {}
    }

    #[test]
    fn a_large_mcp_result_goes_to_tool_results_and_images_become_blocks() {
        let hooks = Arc::new(Stored::default());
        let ctx = ToolContext::new(std::env::temp_dir(), hooks.clone());
        let call = ToolCall {
            id: "toolu_big".into(),
            input: json!({}),
        };
        let big = "x".repeat(super::super::MAX_INLINE_OUTPUT_CHARS * 2);
        let out = to_output(
            CallOutput {
                text: big.clone(),
                raw: json!({}),
                ..CallOutput::default()
            },
            &call,
            &ctx,
        );
        assert!(out.content.len() < big.len());
        assert_eq!(
            hooks.0.lock().unwrap()[0],
            ("toolu_big".to_owned(), big.len())
        );
        let img = to_output(
            CallOutput {
                images: vec![strata_mcp::content::Image {
                    mime_type: "image/png".into(),
                    data: "iVBO".into(),
                }],
                ..CallOutput::default()
            },
            &call,
            &ctx,
        );
        let images = img.attachments.unwrap();
        let strata_protocol::message::ContentBlock::Image(image) = &images[0] else {
            panic!("{images:?}");
        };
        assert_eq!(image.source["media_type"], "image/png");
        assert_eq!(img.content, "(1 image(s))");
    }

    #[test]
    fn sa_subagents_get_mcp_tools_only_when_their_definition_allows_them() {
        let listed = vec!["Read".to_owned(), "mcp__github".to_owned()];
        assert!(subagent_may_use("mcp__github__create_issue", Some(&listed)));
        assert!(!subagent_may_use("mcp__githubx__a", Some(&listed)));
        assert!(!subagent_may_use("mcp__slack__post", Some(&listed)));
        assert!(subagent_may_use("mcp__slack__post", None));
        assert!(subagent_may_use(
            "mcp__slack__post",
            Some(&["*".to_owned()])
        ));
        assert!(subagent_may_use(
            "mcp__slack__post",
            Some(&["mcp__slack__post".to_owned()])
        ));
    }

    #[test]
    fn interned_names_are_stored_once() {
        let a = intern("mcp__s__t");
        let b = intern(&String::from("mcp__s__t"));
        assert!(std::ptr::eq(a, b));
    }
}
