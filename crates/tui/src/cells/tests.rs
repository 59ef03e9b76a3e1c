#![allow(clippy::unwrap_used, clippy::expect_used)]

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::Line;
use serde_json::json;
use strata_protocol::message::{ContentBlock, Message, Role};

use super::*;

const COLOR: RenderOptions = RenderOptions {
    verbose: false,
    expanded: false,
    color: true,
};
const PLAIN: RenderOptions = RenderOptions {
    verbose: false,
    expanded: false,
    color: false,
};

fn text(lines: &[Line<'static>]) -> Vec<String> {
    lines.iter().map(ToString::to_string).collect()
}

/// Draws `lines` on a ratatui buffer and dumps the screen and its styled runs.
fn screen(lines: &[Line<'static>], width: u16) -> String {
    let area = Rect::new(0, 0, width, lines.len().max(1) as u16);
    let mut buf = Buffer::empty(area);
    for (y, line) in lines.iter().enumerate() {
        buf.set_line(0, y as u16, line, width);
    }
    let mut out = String::new();
    for y in 0..area.height {
        let row: String = (0..width)
            .map(|x| buf[(x, y)].symbol().to_owned())
            .collect();
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out.push_str("--- styles\n");
    for y in 0..area.height {
        let mut x = 0;
        while x < width {
            let s = buf[(x, y)].style();
            let start = x;
            while x < width && buf[(x, y)].style() == s {
                x += 1;
            }
            if s.fg.is_some() || !s.add_modifier.is_empty() {
                out.push_str(&format!(
                    "{y}:{start}-{x} fg={:?} mod={:?}\n",
                    s.fg, s.add_modifier
                ));
            }
        }
    }
    out
}

fn conversation() -> Vec<Message> {
    vec![
        Message::user_text("fix the tests"),
        Message::blocks(
            Role::Assistant,
            vec![
                ContentBlock::Thinking(strata_protocol::message::ThinkingBlock {
                    thinking: "secret plan".into(),
                    ..Default::default()
                }),
                ContentBlock::text("Running them."),
                ContentBlock::tool_use("t1", "Bash", json!({"command": "cargo test\n--all"})),
                ContentBlock::tool_use(
                    "t2",
                    "Edit",
                    json!({"file_path": "src/main.rs", "old_string": "a\nb\n", "new_string": "a\nc\n"}),
                ),
            ],
        ),
        Message::blocks(
            Role::User,
            vec![
                ContentBlock::tool_result("t2", "The file src/main.rs has been updated.", false),
                ContentBlock::tool_result("t1", "line1\nline2\nline3", true),
            ],
        ),
    ]
}

#[test]
fn tool_results_pair_with_their_calls_by_id_in_any_order() {
    let cells = cells_from_messages(&conversation());
    let tools: Vec<_> = cells
        .iter()
        .filter_map(|c| match c {
            HistoryCell::Tool(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].name, "Bash");
    assert!(tools[0].result.as_ref().unwrap().is_error);
    assert_eq!(tools[1].name, "Edit");
    assert!(tools[1].result.as_ref().unwrap().text.contains("updated"));
}

#[test]
fn an_orphan_result_is_still_shown() {
    let msgs = [Message::blocks(
        Role::User,
        vec![ContentBlock::tool_result("x", "out", false)],
    )];
    let cells = cells_from_messages(&msgs);
    assert!(matches!(&cells[0], HistoryCell::Tool(t) if t.name == "?"));
}

#[test]
fn thinking_is_hidden_unless_verbose() {
    let cell = HistoryCell::Thinking {
        text: "secret plan".into(),
    };
    assert!(render_cell(&cell, 40, &COLOR).is_empty());
    let verbose = RenderOptions {
        verbose: true,
        ..COLOR
    };
    assert!(
        text(&render_cell(&cell, 40, &verbose))
            .concat()
            .contains("secret plan")
    );
}

#[test]
fn a_tool_call_is_a_one_line_header_with_a_collapsed_result() {
    let cells = cells_from_messages(&conversation());
    let bash = cells
        .iter()
        .find(|c| matches!(c, HistoryCell::Tool(t) if t.name == "Bash"))
        .unwrap();
    let lines = text(&render_cell(bash, 60, &PLAIN));
    assert_eq!(lines, ["● Bash(cargo test)", "  ⎿  line1"]);
    let expanded = RenderOptions {
        expanded: true,
        ..PLAIN
    };
    assert_eq!(text(&render_cell(bash, 60, &expanded)).len(), 4);
}

#[test]
fn snapshot_conversation_in_colour() {
    let cells = cells_from_messages(&conversation());
    let mut lines = Vec::new();
    for c in &cells {
        lines.extend(render_cell(c, 40, &COLOR));
    }
    insta::assert_snapshot!(screen(&lines, 40));
}

#[test]
fn errors_are_red_and_plain_mode_has_no_styles() {
    let cell = HistoryCell::Error {
        text: "boom".into(),
    };
    let l = render_cell(&cell, 20, &COLOR);
    assert!(l[0].spans.iter().any(|s| s.style.fg == Some(Color::Red)));
    let cells = cells_from_messages(&conversation());
    for c in &cells {
        for line in render_cell(c, 40, &PLAIN) {
            assert!(
                line.spans.iter().all(|s| s.style == Default::default()),
                "{line:?}"
            );
        }
    }
}

#[test]
fn snapshot_markdown_elements() {
    let md = "# Title\n\nSome *em* and **strong** with `code` and a [link](https://x.io).\n\n\
              - one\n  - nested item that wraps around\n- two\n\n1. first\n2. second\n\n\
              > quoted text\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n";
    insta::assert_snapshot!(screen(&render_markdown(md, 30, &COLOR), 30));
}

#[test]
fn nested_list_items_indent_under_their_parent() {
    let l = text(&render_markdown("- a\n  - b\n    - c\n- d", 40, &PLAIN));
    assert_eq!(l, ["- a", "  - b", "    - c", "- d"]);
}

#[test]
fn a_code_fence_never_closed_runs_to_the_end() {
    let l = text(&render_markdown(
        "intro\n\n```python\nx = 1\ny = 2",
        40,
        &PLAIN,
    ));
    assert_eq!(l, ["intro", "", "```python", "x = 1", "y = 2", "```"]);
}

#[test]
fn markdown_wraps_long_words_cjk_and_emoji_within_width() {
    let md = format!(
        "{} 日本語のテキストです 😀😀😀😀 `{}`",
        "w".repeat(50),
        "c".repeat(30)
    );
    for width in [0u16, 1, 5, 12, 40] {
        let l = render_markdown(&md, width, &PLAIN);
        let joined = text(&l).concat().replace(' ', "");
        assert!(
            joined.contains("日本語のテキストです") || width < 2,
            "{width}: {joined}"
        );
        assert_eq!(joined.matches('w').count(), 50, "width {width}");
        if width >= 2 {
            assert!(
                l.iter().all(|x| x.width() <= width as usize),
                "{width}: {:?}",
                text(&l)
            );
        }
    }
}

#[test]
fn plain_markdown_keeps_structure_marks() {
    let l = text(&render_markdown("## Head\n\nuse `x`", 40, &PLAIN));
    assert_eq!(l, ["## Head", "", "use `x`"]);
}

#[test]
fn write_shows_added_lines_collapsed_to_ten() {
    let content: String = (0..30).map(|i| format!("l{i}\n")).collect();
    let cell = HistoryCell::Tool(ToolCall {
        id: "w".into(),
        name: "Write".into(),
        input: json!({"file_path": "a.txt", "content": content}),
        result: None,
    });
    let l = text(&render_cell(&cell, 40, &PLAIN));
    assert_eq!(l[0], "● Write(a.txt)");
    assert_eq!(l[1], "     + l0");
    assert!(l.last().unwrap().contains("+20 lines"));
}

/// Rendering cost of a 1 MB answer (debug build; release is several times faster).
#[test]
fn a_one_megabyte_answer_renders_once_in_bounded_time() {
    let para = "Some **bold** words and `code` in a paragraph that wraps. ".repeat(20);
    let mut md = String::new();
    while md.len() < 1_000_000 {
        md.push_str(&para);
        md.push_str("\n\n- item\n- item\n\n```rust\nlet x = 1;\n```\n\n");
    }
    let t = std::time::Instant::now();
    let lines = render_markdown(&md, 100, &COLOR);
    let ms = t.elapsed().as_millis();
    assert!(lines.len() > 10_000);
    assert!(ms < 10_000, "1 MB took {ms} ms");
}

#[test]
fn a_task_notification_for_the_model_is_not_shown_again_in_the_history() {
    let msgs = [
        Message::user_text(
            "<task-notification>\n<task-id>b1</task-id>\n<status>killed</status>\n</task-notification>",
        ),
        Message::user_text("and now the tests"),
    ];
    let cells = cells_from_messages(msgs.iter());
    assert_eq!(cells.len(), 1, "{cells:?}");
}
