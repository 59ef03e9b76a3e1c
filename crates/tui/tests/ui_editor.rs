//! Issue 25 item 6, the prompt editor, on a real engine over a replay provider
//! (`ui_kit`): the command menu a `/` opens (built-in commands, the project's command
//! files and skills, with their descriptions; filtered as the name is typed; ↑/↓, Tab,
//! Enter, Esc), the readline keys as the app routes them, and the footer's context
//! figure on a new view of a session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ui_kit;

use ui_kit::*;

/// The prompt's first line as shown (`> ` and the text).
fn prompt_line(ui: &mut Ui) -> String {
    ui.screen()
        .lines()
        .find(|l| l.starts_with("> "))
        .unwrap_or_default()
        .to_owned()
}

/// A project with a command file and a skill.
fn project_with_commands() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let commands = dir.path().join("proj/.claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("review-pr.md"),
        "---\ndescription: Review a pull request carefully\nargument-hint: <number>\n---\nReview PR $ARGUMENTS.\n",
    )
    .unwrap();
    let skill = dir.path().join("proj/.claude/skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets someone by name\n---\nSay hello to $ARGUMENTS.\n",
    )
    .unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i25_6_a_slash_opens_the_command_menu_with_every_kind_of_command() {
    let mut ui = Launch::new(&[text_reply(1, "unused")])
        .dir(project_with_commands())
        .width(100)
        .open()
        .await;
    ui.type_text("/");
    let screen = ui.screen();
    assert!(screen.contains("❯ /help"), "{screen}");
    assert!(screen.contains("this list"), "{screen}");
    // Typing filters: the project's command file and skill, with their descriptions.
    ui.type_text("rev");
    let screen = ui.screen();
    assert!(screen.contains("❯ /review-pr <number>"), "{screen}");
    assert!(
        screen.contains("Review a pull request carefully (project)"),
        "{screen}"
    );
    for _ in 0..3 {
        ui.key(KeyCode::Backspace);
    }
    ui.type_text("gree");
    let screen = ui.screen();
    assert!(screen.contains("❯ /greet"), "{screen}");
    assert!(screen.contains("Greets someone by name (skill"), "{screen}");
    // Esc closes it (and does nothing else); a blank after the name closes it too.
    ui.key(KeyCode::Esc);
    assert!(!ui.screen().contains("Greets someone"), "{}", ui.screen());
    assert_eq!(prompt_line(&mut ui), "> /gree");
    ui.ctrl('u');
    ui.type_text("/model opus");
    assert!(!ui.screen().contains("❯ "), "{}", ui.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i25_6_tab_completes_enter_runs_and_a_command_needing_an_argument_waits_for_it() {
    let mut ui = Launch::new(&[text_reply(1, "unused")])
        .dir(project_with_commands())
        .open()
        .await;
    // ↓ chooses, Tab completes with a blank for the arguments: the menu is gone.
    ui.type_text("/re");
    ui.key(KeyCode::Down);
    let chosen = ui
        .screen()
        .lines()
        .find(|l| l.starts_with("❯ /"))
        .map(|l| l[4..].split_whitespace().next().unwrap().to_owned())
        .unwrap();
    ui.key(KeyCode::Tab);
    assert_eq!(prompt_line(&mut ui), format!("> {chosen} "));
    assert!(!ui.screen().contains("❯ "), "{}", ui.screen());
    ui.ctrl('u');
    // Enter runs the chosen command at once.
    ui.type_text("/hel");
    assert_eq!(ui.key(KeyCode::Enter), Request::None);
    let said = ui.scrollback();
    assert!(said.contains("/help"), "{said}");
    assert!(said.contains("Ctrl-U/K kill to line start/end"), "{said}");
    assert!(said.contains("/review-pr <number>"), "{said}");
    assert_eq!(
        prompt_line(&mut ui),
        "> Try \"explain this project\" · /help for commands"
    );
    // `/add-dir` cannot run bare: Enter completes it and waits for the path.
    ui.type_text("/add");
    ui.key(KeyCode::Enter);
    assert_eq!(prompt_line(&mut ui), "> /add-dir ");
    assert!(!ui.scrollback().contains("needs"), "nothing ran");
    // `/exit` typed whole runs on Enter.
    ui.ctrl('u');
    ui.type_text("/exit");
    assert_eq!(ui.key(KeyCode::Enter), Request::Exit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i25_6_up_walks_the_history_through_a_recalled_slash_command() {
    let mut ui = Launch::new(&[text_reply(1, "unused")]).open().await;
    ui.send("/cost");
    ui.send("/status");
    ui.scrollback();
    // A recalled command does not open the menu, so ↑ keeps walking the history.
    ui.key(KeyCode::Up);
    assert_eq!(prompt_line(&mut ui), "> /status");
    assert!(!ui.screen().contains("❯ "), "{}", ui.screen());
    ui.key(KeyCode::Up);
    assert_eq!(prompt_line(&mut ui), "> /cost");
    // Typing opens it again.
    ui.key(KeyCode::Backspace);
    assert!(ui.screen().contains("❯ /cost"), "{}", ui.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i25_6_the_readline_keys_edit_the_prompt_and_alt_letters_type_nothing() {
    let mut ui = Launch::new(&[text_reply(1, "unused")]).open().await;
    let alt = |c| (KeyCode::Char(c), KeyModifiers::ALT);
    ui.type_text("alpha beta gamma");
    ui.key_with(alt('b').0, alt('b').1);
    assert_eq!(
        prompt_line(&mut ui),
        "> alpha beta gamma",
        "Alt-B moved, typed nothing"
    );
    ui.ctrl('k');
    assert_eq!(prompt_line(&mut ui), "> alpha beta ");
    ui.key_with(KeyCode::Left, KeyModifiers::CONTROL);
    ui.ctrl('y');
    ui.type_text(" ");
    assert_eq!(prompt_line(&mut ui), "> alpha gamma beta ");
    ui.key_with(KeyCode::Right, KeyModifiers::CONTROL);
    ui.key_with(KeyCode::Backspace, KeyModifiers::ALT);
    assert_eq!(prompt_line(&mut ui), "> alpha gamma  ");
    ui.key(KeyCode::Home);
    ui.key_with(alt('d').0, alt('d').1);
    assert_eq!(prompt_line(&mut ui), ">  gamma  ");
    ui.key_with(alt('f').0, alt('f').1);
    ui.ctrl('u');
    assert_eq!(prompt_line(&mut ui), ">   ");
    ui.ctrl('w');
    assert_eq!(prompt_line(&mut ui), ">   ", "nothing before the cursor");
    ui.ctrl('k');
    assert_eq!(
        prompt_line(&mut ui),
        "> Try \"explain this project\" · /help for commands"
    );
    // The session keys around them still work: Ctrl-D on an empty prompt exits.
    assert_eq!(ui.ctrl('d'), Request::Exit);
}

/// Regression (issue 25 item 6): the footer's context figure was filled in only when a
/// turn ended, so a new view of a session — `/resume`, `strata -c`, which build the app
/// again over the resumed engine — showed none until the next response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_the_context_figure_shows_before_the_next_response() {
    let replies = [response_with_usage(
        1,
        json!([{"type": "text", "text": "Counted."}]),
        30_000,
        200,
    )];
    let mut ui = Launch::new(&replies).width(100).open().await;
    assert!(!ui.footer().contains("ctx"), "{}", ui.footer());
    ui.send("count the context");
    ui.turn_done().await;
    assert!(ui.footer().contains("ctx 30.2k"), "{}", ui.footer());
    // A new view over the same session, as after a switch: the figure is there at once.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut again = App::new(ui.engine.clone(), tx, Vec::new(), None, String::new(), 100);
    let footer = again
        .frame(Instant::now())
        .lines
        .last()
        .map(ToString::to_string)
        .unwrap();
    assert!(footer.contains("ctx 30.2k"), "{footer}");
}

/// Regression (review of issue 25): a command file named like a built-in is what
/// `/name` runs, but the menu showed the built-in and its description.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_the_menu_shows_the_command_file_that_a_builtins_name_runs() {
    let dir = project_with_commands();
    std::fs::write(
        dir.path().join("proj/.claude/commands/status.md"),
        "---\ndescription: Our team's status digest\n---\nSummarise the status.\n",
    )
    .unwrap();
    let mut ui = Launch::new(&[text_reply(1, "unused")])
        .dir(dir)
        .width(100)
        .open()
        .await;
    ui.type_text("/status");
    let screen = ui.screen();
    assert!(screen.contains("Our team's status digest"), "{screen}");
    assert!(!screen.contains("session id, model"), "{screen}");
}
