//! Issue 12's commands that no other test drives, on a real engine over a replay
//! provider (`ui_kit`): `/cost`, `/status`, `/config`, `/exit`, `/export`, `/help`;
//! rewind of the code only and of the conversation only; the `/model` pick in the user
//! settings file (FX-2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ui_kit;

use ui_kit::*;
// 4. /cost, /status, /config, /exit, /export, /help.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_cost_shows_what_the_session_cost_so_far() {
    let replies = [response_with_usage(
        1,
        json!([{"type": "text", "text": "An expensive answer."}]),
        100_000,
        20_000,
    )];
    let mut ui = Launch::new(&replies).open().await;
    ui.send("/cost");
    let before = ui.scrollback();
    assert!(
        before.contains("Total cost of this session: $0.0000"),
        "{before}"
    );
    ui.send("answer expensively");
    ui.turn_done().await;
    let footer = ui.footer();
    let shown = footer
        .rsplit('$')
        .next()
        .map(|s| format!("${}", s.trim()))
        .unwrap();
    assert_ne!(shown, "$0.0000", "the footer counts the cost: {footer}");
    ui.send("/cost");
    let said = ui.scrollback();
    assert!(
        said.contains(&format!("Total cost of this session: {shown}")),
        "{said}\n(footer: {footer})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_status_shows_the_session_id_model_and_mode() {
    let mut ui = Launch::new(&[text_reply(1, "x")])
        .mode(PermissionMode::AcceptEdits)
        .open()
        .await;
    assert_eq!(ui.send("/status"), Request::None);
    let said = ui.scrollback();
    let id = ui.engine.session_id();
    let model = ui.engine.model();
    assert!(!model.is_empty());
    assert!(said.contains(id.as_str()), "the session id {id}:\n{said}");
    assert!(said.contains(&model), "the model {model}:\n{said}");
    assert!(said.contains("acceptEdits"), "the mode:\n{said}");
    // The mode it shows is the current one.
    ui.key(KeyCode::BackTab);
    ui.send("/status");
    let said = ui.scrollback();
    assert!(
        said.contains("plan") && !said.contains("acceptEdits"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_status_shows_the_working_directory() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    ui.send("/status");
    let said = ui.scrollback();
    let cwd = ui.cwd.to_string_lossy().into_owned();
    assert!(said.contains(&cwd), "{cwd}:\n{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_config_shows_the_settings_and_changes_one() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.send("/config"), Request::None);
    let screen = ui.screen();
    let model = ui.engine.model();
    for want in [
        "Settings",
        "Verbose output: off",
        &format!("Model: {model}"),
        "Permission mode: default",
        "Todo list shown: off",
        "Status line:",
    ] {
        assert!(screen.contains(want), "{want}:\n{screen}");
    }
    // Enter on the first entry toggles verbose output; the list shows the new value.
    ui.key(KeyCode::Enter);
    ui.app.on_store_change();
    let screen = ui.screen();
    assert!(screen.contains("Verbose output: on"), "{screen}");
    assert!(ui.engine.store().with(|s| s.verbose));
    ui.key(KeyCode::Esc);
    assert!(!ui.screen().contains("Verbose output"), "{}", ui.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_exit_exits() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.send("/exit"), Request::Exit);
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.send("/quit"), Request::Exit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_export_writes_the_conversation_as_markdown() {
    let replies = [text_reply(
        1,
        "The **cache layer** keeps parsed files.\n\nIt is cleared on save.",
    )];
    let mut ui = Launch::new(&replies).open().await;
    ui.send("explain the cache layer");
    ui.turn_done().await;
    let out = ui.cwd.join("conversation.md");
    ui.send(&format!("/export {}", out.display()));
    let said = ui.scrollback();
    assert!(said.contains("exported"), "{said}");
    let md = std::fs::read_to_string(&out).unwrap();
    let prompt = md.find("explain the cache layer").expect(&md);
    let answer = md
        .find("The **cache layer** keeps parsed files.")
        .expect(&md);
    assert!(prompt < answer, "{md}");
    assert!(md.contains("It is cleared on save."), "{md}");
    // Without a file name it says what is missing and writes nothing. (Enter on the
    // command menu's `/export` first completes it, since it needs an argument; a second
    // Enter runs it as typed.)
    ui.send("/export");
    ui.key(KeyCode::Enter);
    assert!(ui.scrollback().contains("needs a file name"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_slash_help_lists_the_commands_and_keys() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    assert_eq!(ui.send("/help"), Request::None);
    let said = ui.scrollback();
    for command in [
        "/help",
        "/clear",
        "/resume",
        "/rewind",
        "/model",
        "/permissions",
        "/add-dir",
        "/config",
        "/memory",
        "/cost",
        "/context",
        "/compact",
        "/mcp",
        "/tasks",
        "/agents",
        "/status",
        "/export",
        "/exit",
    ] {
        assert!(
            said.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} is not listed:\n{said}"
        );
    }
    for key in ["Esc", "Ctrl-R", "Ctrl-T", "Ctrl-O", "Shift+Tab"] {
        assert!(said.contains(key), "{key}:\n{said}");
    }
    // An unknown command points to /help.
    ui.send("/frobnicate");
    assert!(ui.scrollback().contains("Unknown command /frobnicate"));
}

// ---------------------------------------------------------------------------------------
// 6. Rewind: the code only, the conversation only.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_rewind_code_only_restores_the_file_and_keeps_the_conversation() {
    let (mut ui, file) = wrote_a_file().await;
    ui.send("write the notes");
    ui.turn_done().await;
    assert!(file.exists(), "the tool ran:\n{}", ui.said);
    let messages = ui.message_count();
    assert!(messages >= 4, "{messages}");
    ui.key(KeyCode::Esc);
    ui.key(KeyCode::Esc);
    assert!(ui.screen().contains("Rewind to before which prompt?"));
    ui.key(KeyCode::Enter);
    assert!(ui.screen().contains("Restore code"), "{}", ui.screen());
    // Both, conversation, code, never mind: the third.
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Enter);
    let said = ui.scrollback();
    assert!(said.contains("Restored 1 file(s)"), "{said}");
    assert!(!said.contains("Conversation rewound"), "{said}");
    assert!(!file.exists(), "the new file is gone again");
    assert_eq!(ui.message_count(), messages, "the conversation stays");
    let screen = ui.screen();
    assert!(
        !screen.contains("> write the notes"),
        "the prompt is not put back:\n{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_rewind_conversation_only_keeps_the_file_and_drops_the_later_messages() {
    let (mut ui, file) = wrote_a_file().await;
    ui.send("write the notes");
    ui.turn_done().await;
    assert!(file.exists(), "the tool ran:\n{}", ui.said);
    ui.key(KeyCode::Esc);
    ui.key(KeyCode::Esc);
    ui.key(KeyCode::Enter);
    ui.key(KeyCode::Down);
    ui.key(KeyCode::Enter);
    let said = ui.scrollback();
    assert!(said.contains("Conversation rewound"), "{said}");
    assert!(!said.contains("Restored"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "written by the agent\n",
        "the file stays as the agent left it"
    );
    assert_eq!(ui.message_count(), 0, "the later messages are gone");
    assert!(
        ui.screen().contains("> write the notes"),
        "the prompt is back in the editor:\n{}",
        ui.screen()
    );
}

/// A session in acceptEdits whose replay has the agent write a new file in the project
/// and answer; the file's path.
async fn wrote_a_file() -> (Ui, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proj/notes.txt");
    let replies = [
        tool_reply(
            1,
            "Write",
            json!({"file_path": file.to_string_lossy(), "content": "written by the agent\n"}),
        ),
        text_reply(2, "Wrote the notes."),
    ];
    let ui = Launch::new(&replies)
        .mode(PermissionMode::AcceptEdits)
        .dir(dir)
        .open()
        .await;
    (ui, file)
}

// ---------------------------------------------------------------------------------------
// 7. /model: FX-2 persists the pick.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_fx2_the_model_picked_in_slash_model_is_written_to_the_user_settings() {
    let mut ui = Launch::new(&[text_reply(1, "x")]).open().await;
    let settings = ui.cfg.join("settings.json");
    ui.send("/model");
    ui.type_text("haik");
    ui.key(KeyCode::Enter);
    let text = file_until(&settings, "the model is persisted", |t| {
        serde_json::from_str::<Value>(t).is_ok_and(|v| v["model"] == "haiku")
    })
    .await;
    assert!(text.contains("\"haiku\""), "{text}");
    // A typed name goes there too; `default` removes the key.
    ui.send("/model my-local-model");
    file_until(&settings, "the typed model is persisted", |t| {
        serde_json::from_str::<Value>(t).is_ok_and(|v| v["model"] == "my-local-model")
    })
    .await;
    ui.send("/model");
    ui.type_text("default");
    ui.key(KeyCode::Enter);
    file_until(&settings, "the model key is removed", |t| {
        serde_json::from_str::<Value>(t).is_ok_and(|v| v.get("model").is_none())
    })
    .await;
}

// ---------------------------------------------------------------------------------------
