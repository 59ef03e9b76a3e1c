//! Issue 25, item 4, in the UI: a skill is a command. `/greet Bob` typed at the prompt
//! runs the skill `greet` as a turn (its body, with the arguments put in, is what the
//! model reads), and `/help` lists the skills with the custom commands. On a real engine
//! over a replay provider (`ui_kit`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ui_kit;

use strata_protocol::message::{ContentBlock, MessageContent};
use ui_kit::*;

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The texts of every message of the conversation, in order.
fn conversation_texts(ui: &Ui) -> Vec<String> {
    ui.engine.store().with(|s| {
        s.messages
            .iter()
            .map(|m| match &m.content {
                MessageContent::Text(t) => t.clone(),
                MessageContent::Blocks(blocks) => blocks
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<Vec<_>>()
                    .join("\n"),
            })
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i25_4_a_skill_runs_from_the_prompt_and_help_lists_it() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("proj/.claude/skills/greet/SKILL.md"),
        "---\ndescription: Greet someone warmly\nargument-hint: \"[name]\"\n---\n\
         Say hello to $0, warmly.\n",
    );
    write(
        &dir.path().join("cfg/skills/house-style/SKILL.md"),
        "---\ndescription: The house style\nuser-invocable: false\n---\nBe terse.\n",
    );
    let replies = [text_reply(1, "Hello, Bob!")];
    let mut ui = Launch::new(&replies).dir(dir).open().await;

    ui.send("/help");
    let help = ui.scrollback();
    assert!(help.contains("/greet [name]"), "{help}");
    assert!(
        help.contains("Greet someone warmly (skill, project)"),
        "{help}"
    );
    assert!(
        !help.contains("house-style"),
        "a skill the user may not invoke is not a command:\n{help}"
    );

    ui.send("/greet Bob");
    ui.turn_done().await;
    assert!(ui.said.contains("Hello, Bob!"), "{}", ui.said);
    let texts = conversation_texts(&ui);
    assert!(
        texts
            .iter()
            .any(|t| t.contains("<command-name>/greet</command-name>")),
        "{texts:#?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Say hello to Bob, warmly.")),
        "the skill's body, with its argument, is the turn's prompt: {texts:#?}"
    );
}
