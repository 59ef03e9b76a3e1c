#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use strata_state::tasks::{
    AgentProgress, LocalAgent, LocalShell, TaskId, TaskKind, TaskMap, TaskState, TaskStatus,
};

use super::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

const T0: u64 = 1_700_000_000_000;

fn shell(
    id: &str,
    command: &str,
    status: TaskStatus,
    end: Option<u64>,
    out: Option<&Path>,
) -> TaskState {
    TaskState {
        status,
        end_time_ms: end,
        ..TaskState::new(
            TaskId::from_string(id),
            format!("run {command}"),
            T0,
            TaskKind::LocalShell(LocalShell {
                command: command.into(),
                pid: Some(42),
                exit_code: None,
                output_file: out.map(Arc::from),
            }),
        )
    }
}

fn agent(id: &str, status: TaskStatus) -> TaskState {
    TaskState {
        status,
        ..TaskState::new(
            TaskId::from_string(id),
            "review the parser",
            T0 + 5_000,
            TaskKind::LocalAgent(LocalAgent {
                agent_id: id.into(),
                agent_type: Some("Explore".into()),
                messages: Default::default(),
                retain: false,
                disk_loaded: false,
                evict_after_ms: None,
                progress: AgentProgress {
                    tool_uses: 3,
                    tokens: 12_345,
                    last_tool: Some("Grep".into()),
                },
            }),
        )
    }
}

fn map(tasks: Vec<TaskState>) -> TaskMap {
    tasks
        .into_iter()
        .fold(TaskMap::default(), |m, t| m.register(t).unwrap())
}

/// The panel of a running shell (with output), a running agent and a finished shell:
/// running first, each with kind, description, status, elapsed time and its last
/// output line or progress.
#[test]
fn snapshot_tasks_panel_lists_running_then_finished_with_elapsed_and_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b1.output");
    std::fs::write(&out, "compiling…\n\x1b[32mok\x1b[0m 12 tests passed\r\n\n").unwrap();
    let tasks = map(vec![
        shell("b1", "cargo test", TaskStatus::Running, None, Some(&out)),
        agent("a1", TaskStatus::Running),
        shell(
            "b0",
            "npm run build",
            TaskStatus::Completed,
            Some(T0 + 65_000),
            None,
        ),
    ]);
    let mut panel = TasksPanel::new(rows(&tasks));
    assert!(panel.refresh_tails(Instant::now()));
    let ids: Vec<&str> = panel.rows().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["b1", "a1", "b0"]);
    insta::assert_snapshot!(crate::vt_snapshot::screen(
        &panel.render(80, T0 + 90_000),
        80
    ));
}

#[test]
fn snapshot_tasks_panel_with_nothing_running() {
    let panel = TasksPanel::new(Vec::new());
    insta::assert_snapshot!(crate::vt_snapshot::screen(&panel.render(60, T0), 60));
}

#[test]
fn keys_stop_a_running_task_dismiss_a_finished_one_and_open_the_selected() {
    let tasks = map(vec![
        shell("b1", "sleep 100", TaskStatus::Running, None, None),
        shell("b0", "true", TaskStatus::Completed, Some(T0 + 1), None),
    ]);
    let mut panel = TasksPanel::new(rows(&tasks));
    assert_eq!(
        panel.on_key(key(KeyCode::Char('x'))),
        PanelAction::Stop("b1".into())
    );
    assert!(matches!(
        panel.on_key(key(KeyCode::Char('d'))),
        PanelAction::Explain(_)
    ));
    assert_eq!(panel.on_key(key(KeyCode::Down)), PanelAction::None);
    assert_eq!(
        panel.on_key(key(KeyCode::Char('d'))),
        PanelAction::Dismiss("b0".into())
    );
    assert!(matches!(
        panel.on_key(key(KeyCode::Char('x'))),
        PanelAction::Explain(_)
    ));
    assert_eq!(
        panel.on_key(key(KeyCode::Enter)),
        PanelAction::Open("b0".into())
    );
    assert_eq!(panel.on_key(key(KeyCode::Esc)), PanelAction::Close);
}

#[test]
fn the_selection_follows_its_task_when_the_rows_change() {
    let both = map(vec![
        shell("b1", "a", TaskStatus::Running, None, None),
        shell("b2", "b", TaskStatus::Running, None, None),
    ]);
    let mut panel = TasksPanel::new(rows(&both));
    panel.on_key(key(KeyCode::Down));
    assert_eq!(panel.selected_row().unwrap().id, "b2");
    // b1 ends: it moves below b2, and b2 stays selected.
    let ended = both.complete(&TaskId::from_string("b1"), T0 + 10).unwrap();
    panel.set_rows(rows(&ended));
    assert_eq!(panel.selected_row().unwrap().id, "b2");
    assert_eq!(panel.rows()[1].id, "b1");
    assert_eq!(running_count(&ended), 1);
}

#[test]
fn rows_fit_narrow_terminals() {
    let tasks = map(vec![
        shell("b1", &"x".repeat(200), TaskStatus::Running, None, None),
        agent("a1", TaskStatus::Failed),
    ]);
    let panel = TasksPanel::new(rows(&tasks));
    for width in [20u16, 40, 79] {
        for line in panel.render(width, T0 + 3_700_000) {
            assert!(
                crate::text::line_width(&line) <= usize::from(width),
                "{width}: {line}"
            );
        }
    }
    assert_eq!(human_duration(3_700_000), "1h 1m");
    assert_eq!(human_duration(65_000), "1m 5s");
}

#[test]
fn the_last_line_is_read_from_the_end_of_a_large_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.output");
    let mut text = "early line\n".repeat(100_000);
    text.push_str("the very last line\n");
    std::fs::write(&path, text).unwrap();
    assert_eq!(last_line(&path).as_deref(), Some("the very last line"));
    assert_eq!(last_line(&dir.path().join("missing")), None);
}
