//! Plan mode for real (issue 18, item 3): EnterPlanMode switches to plan mode through the
//! one mode gate, plan mode denies changes, ExitPlanMode asks the user (the prompter: the
//! UI dialog or the SDK client's `can_use_tool`), saves the plan under the session's plan
//! slug and leaves plan mode through the same gate. Against the mock model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use strata_agent::engine::{
    Engine, EngineHandles, EngineOptions, EventSink, PermissionPrompt, PermissionPrompter,
    PromptFuture,
};
use strata_agent::provider::{ProviderChoice, select_provider};
use strata_protocol::message::Message;
use strata_protocol::permission::PermissionMode;
use strata_protocol::sdk::{PermissionResult, SdkMessage};
use strata_testkit::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Collect(Mutex<Vec<SdkMessage>>);

impl EventSink for Collect {
    fn emit(&self, message: SdkMessage) {
        self.0.lock().unwrap().push(message);
    }
}

/// Approves everything it is asked, and remembers what.
#[derive(Default)]
struct Approve(Mutex<Vec<PermissionPrompt>>);

impl PermissionPrompter for Approve {
    fn ask(&self, prompt: PermissionPrompt) -> PromptFuture<'_> {
        self.0.lock().unwrap().push(prompt);
        Box::pin(async {
            PermissionResult::Allow {
                updated_input: None,
                updated_permissions: None,
            }
        })
    }
}

struct Env {
    _dir: tempfile::TempDir,
    config: PathBuf,
    project: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    Env {
        config,
        project: std::fs::canonicalize(&project).unwrap(),
        _dir: dir,
    }
}

fn options(
    env: &Env,
    server: &MockServer,
    events: Arc<dyn EventSink>,
    prompter: Option<Arc<dyn PermissionPrompter>>,
) -> EngineOptions {
    let url = server.url();
    let lookup = move |k: &str| match k {
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        "ANTHROPIC_API_KEY" => Some("test-key".to_owned()),
        _ => None,
    };
    EngineOptions {
        model: Some("claude-sonnet-4-5".into()),
        verbose: true,
        prompter,
        ..EngineOptions::new(
            env.project.clone(),
            env.config.clone(),
            EngineHandles::private(),
            select_provider(Some(ProviderChoice::Anthropic), &lookup, None).unwrap(),
            events,
        )
    }
}

/// The tool result the model was sent for `id`, from any request.
fn tool_result(server: &MockServer, id: &str) -> Value {
    for request in server.requests() {
        let body = request.json();
        for message in body["messages"].as_array().unwrap() {
            if let Some(blocks) = message["content"].as_array() {
                for block in blocks {
                    if block["type"] == "tool_result" && block["tool_use_id"] == id {
                        return block.clone();
                    }
                }
            }
        }
    }
    panic!("no tool result for {id}");
}

fn text_of(result: &Value) -> String {
    match &result["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn plan_files(config: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(config.join("plans"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn plan_mode_denies_changes_and_an_approved_exit_plan_mode_saves_the_plan_and_leaves_it() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "EnterPlanMode", json!({})));
    server.push(Reply::new().tool_use(
        "toolu_2",
        "Write",
        json!({"file_path": env.project.join("a.txt"), "content": "x"}),
    ));
    server.push(Reply::new().tool_use(
        "toolu_3",
        "ExitPlanMode",
        json!({"plan": "# Plan\n\n1. Write a.txt"}),
    ));
    server.push(Reply::new().text("Done planning."));
    let events = Arc::new(Collect::default());
    let prompter = Arc::new(Approve::default());
    let engine = Engine::open(options(
        &env,
        &server,
        events.clone(),
        Some(prompter.clone() as Arc<dyn PermissionPrompter>),
    ))
    .await
    .unwrap();
    let result = engine
        .run_prompt(Message::user_text("plan it"), CancellationToken::new())
        .await;
    assert_eq!(result.num_turns, 4, "{result:?}");

    let entered = tool_result(&server, "toolu_1");
    assert_ne!(entered["is_error"], true, "{entered}");
    let write = tool_result(&server, "toolu_2");
    assert_eq!(
        write["is_error"], true,
        "plan mode denies the write: {write}"
    );
    assert!(text_of(&write).contains("plan mode"), "{write}");
    assert!(!env.project.join("a.txt").exists());

    // Only the plan approval was asked (EnterPlanMode needs none; the Write was denied).
    let asked: Vec<String> = prompter
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.tool_name.clone())
        .collect();
    assert_eq!(asked, ["ExitPlanMode"]);

    let exited = tool_result(&server, "toolu_3");
    assert_ne!(exited["is_error"], true, "{exited}");
    let files = plan_files(&env.config);
    assert_eq!(
        files.len(),
        1,
        "one plan file under <config>/plans: {files:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&files[0]).unwrap(),
        "# Plan\n\n1. Write a.txt"
    );
    let slug = files[0].file_stem().unwrap().to_str().unwrap().to_owned();
    assert_eq!(slug.split('-').count(), 3, "a three-word plan slug: {slug}");
    assert!(text_of(&exited).contains(&slug), "{exited}");
    assert_eq!(
        engine.store().get().tool_permission_context.mode,
        PermissionMode::Default,
        "approval leaves plan mode"
    );
    // FX-1: both switches went through the mode gate, which reports to the SDK stream.
    let statuses: Vec<Value> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .filter(|m| m["subtype"] == "status")
        .collect();
    let modes: Vec<&str> = statuses
        .iter()
        .filter_map(|m| m["permissionMode"].as_str())
        .collect();
    assert!(
        modes.contains(&"plan") && modes.contains(&"default"),
        "status lines for both switches: {statuses:?}"
    );
    engine.close().await.unwrap();
}

#[tokio::test]
async fn exit_plan_mode_without_anyone_to_ask_is_denied_with_a_clear_reason_and_stays_in_plan_mode()
{
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "EnterPlanMode", json!({})));
    server.push(Reply::new().tool_use("toolu_2", "ExitPlanMode", json!({"plan": "# P"})));
    server.push(Reply::new().text("ok"));
    let mut opts = options(&env, &server, Arc::new(Collect::default()), None);
    // An allow rule does not answer a question meant for the user.
    opts.permission.allowed_tools = vec!["ExitPlanMode".into()];
    let engine = Engine::open(opts).await.unwrap();
    let result = engine
        .run_prompt(Message::user_text("plan"), CancellationToken::new())
        .await;
    assert_eq!(result.permission_denials.len(), 1, "{result:?}");
    let exited = tool_result(&server, "toolu_2");
    assert_eq!(exited["is_error"], true, "{exited}");
    assert!(text_of(&exited).contains("nobody can answer"), "{exited}");
    assert!(plan_files(&env.config).is_empty());
    assert_eq!(
        engine.store().get().tool_permission_context.mode,
        PermissionMode::Plan
    );
    engine.close().await.unwrap();
}

#[tokio::test]
async fn exit_plan_mode_without_a_plan_is_an_input_error_naming_the_plan_field() {
    let env = env();
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_1", "EnterPlanMode", json!({})));
    server.push(Reply::new().tool_use("toolu_2", "ExitPlanMode", json!({"plan": 5})));
    server.push(Reply::new().tool_use("toolu_3", "ExitPlanMode", json!({})));
    server.push(Reply::new().text("ok"));
    let prompter = Arc::new(Approve::default());
    let engine = Engine::open(options(
        &env,
        &server,
        Arc::new(Collect::default()),
        Some(prompter as Arc<dyn PermissionPrompter>),
    ))
    .await
    .unwrap();
    engine
        .run_prompt(Message::user_text("plan"), CancellationToken::new())
        .await;
    let wrong_type = tool_result(&server, "toolu_2");
    assert_eq!(wrong_type["is_error"], true);
    assert!(text_of(&wrong_type).contains("`plan`"), "{wrong_type}");
    let missing = tool_result(&server, "toolu_3");
    assert_eq!(missing["is_error"], true);
    assert!(
        text_of(&missing).contains("no plan to present"),
        "{missing}"
    );
    assert_eq!(
        engine.store().get().tool_permission_context.mode,
        PermissionMode::Plan,
        "still planning"
    );
    engine.close().await.unwrap();
}
