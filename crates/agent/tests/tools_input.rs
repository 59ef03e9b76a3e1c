//! Input handling common to every tool: a malformed call is an error result naming the
//! problem (never a panic), `validate` agrees with `call`, schemas list the fields the
//! tools require; and the registry and TodoWrite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use serde_json::{Value, json};
use strata_agent::tools::{TodoWrite, ToolCall, ToolRegistry, default_tools};
use tools_support::Project;

#[tokio::test]
async fn every_tool_names_its_missing_required_field() {
    let p = Project::new();
    for tool in default_tools() {
        // The plan-mode tools have no required field (ExitPlanMode's `plan` may come from
        // the plan file); their bad inputs are tested in tools_plan_mode.rs.
        if ["EnterPlanMode", "ExitPlanMode"].contains(&tool.name()) {
            continue;
        }
        let schema = tool.input_schema();
        assert_eq!(schema["type"], "object", "{}", tool.name());
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(!required.is_empty(), "{}", tool.name());
        for field in &required {
            assert!(
                schema["properties"].get(field).is_some(),
                "{}: required {field} has no property",
                tool.name()
            );
        }
        let out = p.call(tool.as_ref(), json!({})).await;
        assert!(out.is_error, "{}", tool.name());
        let expected = format!(
            "Invalid input for {}: missing field `{}`",
            tool.name(),
            required[0]
        );
        assert_eq!(out.content, expected);
        assert_eq!(tool.validate(&json!({})).unwrap_err(), out);
    }
}

#[tokio::test]
async fn every_tool_refuses_non_object_input_and_wrong_types() {
    let p = Project::new();
    for tool in default_tools() {
        for bad in [json!(null), json!("text"), json!([1, 2])] {
            let out = p.call(tool.as_ref(), bad.clone()).await;
            assert!(out.is_error, "{} {bad}", tool.name());
            assert!(
                out.content.contains("expected a JSON object"),
                "{}",
                out.content
            );
        }
        // The first required field with a value of the wrong type (the plan-mode tools
        // have none).
        let Some(field) = tool.input_schema()["required"][0]
            .as_str()
            .map(str::to_owned)
        else {
            continue;
        };
        let mut input = serde_json::Map::new();
        input.insert(field.clone(), json!({"nested": true}));
        let out = p.call(tool.as_ref(), Value::Object(input)).await;
        assert!(out.is_error);
        assert!(
            out.content.contains(&format!("`{field}`")),
            "{}: {}",
            tool.name(),
            out.content
        );
    }
}

#[tokio::test]
async fn todo_write_validates_every_item_and_keeps_the_old_list_on_error() {
    let p = Project::new();
    let good = json!({"todos": [
        {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
        {"content": "Fix the bug", "status": "pending", "activeForm": "Fixing the bug"},
    ]});
    let out = p.call(&TodoWrite, good.clone()).await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.content
            .contains("2 items (1 pending, 1 in progress, 0 completed)")
    );
    assert_eq!(*p.hooks.todos.lock().unwrap(), Some(good["todos"].clone()));
    assert_eq!(out.detail.as_ref().unwrap()["oldTodos"], json!([]));

    for (bad, says) in [
        (
            json!({"todos": [{"content": "x", "status": "done", "activeForm": "x"}]}),
            "`todos[0].status`: unknown variant `done`",
        ),
        (
            json!({"todos": [
                {"content": "x", "status": "pending", "activeForm": "x"},
                {"content": "y", "status": "pending"}
            ]}),
            "`todos[1]`: missing field `activeForm`",
        ),
        (
            json!({"todos": [{"content": " ", "status": "pending", "activeForm": "x"}]}),
            "`todos[0].content`: must not be empty",
        ),
        (json!({"todos": "none"}), "`todos`"),
    ] {
        let out = p.call(&TodoWrite, bad.clone()).await;
        assert!(out.is_error, "{bad}");
        assert!(out.content.contains(says), "{bad}: {}", out.content);
        assert_eq!(
            *p.hooks.todos.lock().unwrap(),
            Some(good["todos"].clone()),
            "unchanged"
        );
    }

    let next = json!({"todos": []});
    let out = p.call(&TodoWrite, next).await;
    assert_eq!(out.detail.unwrap()["oldTodos"], good["todos"]);
}

#[tokio::test]
async fn registry_lists_tools_and_rejects_unknown_names() {
    let p = Project::new();
    let registry = ToolRegistry::default();
    assert_eq!(
        registry.names(),
        [
            "Bash",
            "Glob",
            "Grep",
            "Read",
            "Edit",
            "Write",
            "NotebookEdit",
            "TodoWrite",
            "TaskOutput",
            "TaskStop",
            "EnterPlanMode",
            "ExitPlanMode",
            "AskUserQuestion",
            "Skill",
            "WebFetch",
            "WebSearch"
        ]
    );
    assert_eq!(registry.definitions().len(), 16);
    let call = ToolCall {
        id: "t1".into(),
        input: json!({}),
    };
    let out = registry.call("Teleport", call, &p.ctx).await;
    assert!(out.is_error);
    assert!(out.content.contains("No such tool: Teleport"));
    let without_bash = registry.filtered(|t| t.name() != "Bash");
    assert!(without_bash.get("Bash").is_none());
    assert!(without_bash.get("Read").is_some());
}

#[test]
fn read_only_and_concurrency_flags_match_what_the_tools_do() {
    let registry = ToolRegistry::default();
    let ro = |name: &str| registry.get(name).unwrap().is_read_only(&json!({}));
    assert!(ro("Read") && ro("Glob") && ro("Grep") && ro("TodoWrite"));
    assert!(!ro("Edit") && !ro("Write"));
    let todo = registry.get("TodoWrite").unwrap();
    assert!(
        !todo.is_concurrency_safe(&json!({})),
        "two lists at once would race"
    );
}
