//! Custom slash commands and skills through the real binary in headless mode (issue 18,
//! items 5 and 6): command files of the project and the user, listed in
//! `system/init`'s `slash_commands`, run as `/name args` prompts with their arguments,
//! `` !`command` `` context (only what the rules allow: fail closed), `@file` contents,
//! `allowed-tools` for their turn only and their `model`; a malformed front matter is a
//! warning naming file:line. Skills are described in the system prompt, loaded by the
//! Skill tool, and the files beside them are readable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod headless_support;

use serde_json::{Value, json};
use strata_testkit::{MockServer, Reply};

use headless_support::{Driver, Env};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The text of the last user message of request `n`.
fn last_user_text(server: &MockServer, n: usize) -> String {
    let body = server.requests()[n].json();
    let messages = body["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// The tool result the model was sent for `id`.
fn tool_result(server: &MockServer, id: &str) -> Value {
    for request in server.requests() {
        for message in request.json()["messages"].as_array().unwrap() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" && block["tool_use_id"] == id {
                    return block.clone();
                }
            }
        }
    }
    panic!("no tool result for {id}");
}

fn text_of(result: &Value) -> String {
    match &result["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn a_custom_command_runs_with_its_arguments_context_and_files_and_its_rules_end_with_its_turn()
 {
    let env = Env::new();
    write(
        &env.proj.join(".strata/commands/review.md"),
        "---\n\
         description: Review one file\n\
         argument-hint: \"[file] [focus]\"\n\
         allowed-tools: Bash(touch:*)\n\
         ---\n\
         Review $1 with a focus on $2.\n\
         Made: !`touch made.txt`\n\
         Not allowed: !`mkdir ran-anyway`\n\
         Notes: @notes.txt\n",
    );
    write(&env.proj.join("notes.txt"), "the notes body\n");
    write(
        &env.cfg.join("commands/git/standup.md"),
        "Summarise my day\n",
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Reviewed."));
    // The next, ordinary prompt: the command's allow rule is gone.
    server.push(Reply::new().tool_use("toolu_echo", "Bash", json!({"command": "touch later.txt"})));
    server.push(Reply::new().text("Done."));
    let mut s = Driver::start(&env, &server, &[]);
    let init = s.next().await;
    let commands = init["slash_commands"].as_array().unwrap();
    assert!(commands.contains(&json!("review")), "{init}");
    assert!(commands.contains(&json!("git:standup")), "{init}");

    s.prompt("/review src/lib.rs errors").await;
    let result = s.result().await;
    assert_eq!(result["result"], "Reviewed.", "{result}");
    let sent = last_user_text(&server, 0);
    assert!(
        sent.contains("<command-name>/review</command-name>"),
        "{sent}"
    );
    assert!(
        sent.contains("Review src/lib.rs with a focus on errors."),
        "{sent}"
    );
    assert!(!sent.contains("`touch made.txt` was not run"), "{sent}");
    assert!(env.proj.join("made.txt").exists());
    assert!(sent.contains("`mkdir ran-anyway` was not run"), "{sent}");
    assert!(
        !env.proj.join("ran-anyway").exists(),
        "a context command the rules do not allow never runs"
    );
    assert!(sent.contains("the notes body"), "{sent}");

    s.prompt("touch another").await;
    s.result().await;
    let told = tool_result(&server, "toolu_echo");
    assert_eq!(
        told["is_error"], true,
        "allowed-tools held for the command's turn only: {told}"
    );
    assert!(!env.proj.join("later.txt").exists());
    let done = s.finish().await;
    assert_eq!(done.code, Some(0), "{}", done.stderr);

    // The transcript records the invocation as the reference does, in two lines: the
    // command tag as the prompt (a plain string), then the expanded text as its `isMeta`
    // child.
    let (_, lines) = env.transcripts().pop().unwrap();
    let tag = lines
        .iter()
        .find(|l| l["type"] == "user" && l.to_string().contains("<command-name>/review"))
        .expect("the command tag is recorded");
    assert_eq!(
        tag["message"]["content"],
        "<command-message>review</command-message>\n<command-name>/review</command-name>\n\
         <command-args>src/lib.rs errors</command-args>"
    );
    assert_ne!(tag["isMeta"], true, "the tag is what the user typed");
    let expanded = lines
        .iter()
        .find(|l| l["parentUuid"] == tag["uuid"])
        .expect("the expanded text follows the tag");
    assert_eq!(expanded["type"], "user");
    assert_eq!(expanded["isMeta"], true);
    let text = expanded["message"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Review src/lib.rs with a focus on errors."),
        "{text}"
    );
}

#[tokio::test]
async fn a_commands_model_is_used_for_its_turn_only() {
    let env = Env::new();
    write(
        &env.proj.join(".claude/commands/quick.md"),
        "---\nmodel: claude-haiku-4-5\n---\nAnswer briefly: $ARGUMENTS\n",
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Short."));
    server.push(Reply::new().text("Long."));
    let mut s = Driver::start(&env, &server, &["--model", "claude-sonnet-4-5"]);
    s.next().await;
    s.prompt("/quick what is rust").await;
    s.result().await;
    s.prompt("and now at length").await;
    s.result().await;
    let requests = server.requests();
    assert_eq!(requests[0].json()["model"], "claude-haiku-4-5");
    assert!(last_user_text(&server, 0).contains("Answer briefly: what is rust"));
    assert_eq!(requests[1].json()["model"], "claude-sonnet-4-5");
    s.finish().await;
}

#[tokio::test]
async fn a_malformed_front_matter_is_a_warning_naming_file_and_line() {
    let env = Env::new();
    let bad = env.proj.join(".strata/commands/broken.md");
    write(
        &bad,
        "---\ndescription: fine\nthis line is wrong\n---\nbody\n",
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("ok"));
    let run = env
        .run(Some(&server), &["-p", "hi", "--output-format", "json"])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let expected = format!("{}:3:", bad.display());
    assert!(run.stderr.contains(&expected), "{}", run.stderr);
}

#[tokio::test]
async fn a_skill_is_described_in_the_system_prompt_loaded_by_the_skill_tool_and_its_files_are_readable()
 {
    let env = Env::new();
    write(
        &env.cfg.join("skills/pdf/SKILL.md"),
        "---\n\
         name: pdf-tools\n\
         description: Fill in and merge PDF forms\n\
         allowed-tools: [Read]\n\
         ---\n\
         Read forms.md in this folder first. Task: $ARGUMENTS\n",
    );
    let forms = env.cfg.join("skills/pdf/forms.md");
    write(&forms, "How to fill forms.\n");
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_skill",
        "Skill",
        json!({"skill": "pdf-tools", "args": "the tax form"}),
    ));
    server.push(Reply::new().tool_use("toolu_read", "Read", json!({"file_path": forms})));
    server.push(Reply::new().tool_use("toolu_unknown", "Skill", json!({"skill": "nope"})));
    server.push(Reply::new().text("Filled."));
    let run = env
        .run(
            Some(&server),
            &["-p", "fill the form", "--output-format", "json"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let system = server.requests()[0].json()["system"].to_string();
    assert!(
        system.contains("pdf-tools: Fill in and merge PDF forms"),
        "{system}"
    );
    let loaded = tool_result(&server, "toolu_skill");
    assert_ne!(loaded["is_error"], true, "{loaded}");
    let text = text_of(&loaded);
    assert!(text.starts_with("Launching skill: pdf-tools"), "{text}");
    assert!(text.contains("Task: the tax form"), "{text}");
    assert!(
        text.contains(&env.cfg.join("skills/pdf").display().to_string()),
        "{text}"
    );
    let read = tool_result(&server, "toolu_read");
    assert_ne!(
        read["is_error"], true,
        "a skill's files are readable: {read}"
    );
    assert!(text_of(&read).contains("How to fill forms."));
    let unknown = tool_result(&server, "toolu_unknown");
    assert_eq!(unknown["is_error"], true);
    assert!(
        text_of(&unknown).contains("Available skills: pdf-tools"),
        "{unknown}"
    );
    // The transcript's toolUseResult has the reference's keys.
    let (_, lines) = env.transcripts().pop().unwrap();
    let recorded = lines
        .iter()
        .find(|l| l["toolUseResult"]["commandName"] == "pdf-tools")
        .expect("the Skill call's toolUseResult");
    assert_eq!(recorded["toolUseResult"]["success"], true);
    assert_eq!(recorded["toolUseResult"]["allowedTools"], json!(["Read"]));
}

#[tokio::test]
async fn a_deny_rule_naming_a_skill_stops_it() {
    let env = Env::new();
    write(
        &env.proj.join(".strata/skills/deploy/SKILL.md"),
        "---\ndescription: Deploy the app\n---\nRun the deploy.\n",
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("toolu_skill", "Skill", json!({"skill": "deploy"})));
    server.push(Reply::new().text("Not deployed."));
    let run = env
        .run(
            Some(&server),
            &[
                "-p",
                "deploy",
                "--output-format",
                "json",
                "--disallowedTools",
                "Skill(deploy)",
            ],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let told = tool_result(&server, "toolu_skill");
    assert_eq!(told["is_error"], true, "{told}");
    assert!(text_of(&told).contains("Skill(deploy)"), "{told}");
}

/// Issue 25, item 4: `/greet Bob` runs the skill `greet` as the reference does (the
/// skill's body, its arguments put in, is the turn's prompt; its `allowed-tools` and
/// `model` hold for the turn), and every listing shows the skills the user can run.
#[tokio::test]
async fn i25_4_a_skill_runs_as_a_slash_command_with_its_arguments_rules_and_model() {
    let env = Env::new();
    let greet = env.proj.join(".claude/skills/greet");
    write(
        &greet.join("SKILL.md"),
        "---\n\
         description: Greet someone warmly\n\
         argument-hint: \"[name] [mood]\"\n\
         allowed-tools: Bash(touch:*)\n\
         model: claude-haiku-4-5\n\
         ---\n\
         Say hello to $0 in a $1 way; the whole request was: $ARGUMENTS.\n\
         Templates are in ${CLAUDE_SKILL_DIR}/templates.\n",
    );
    // Only the user runs `ship`; only the model loads `house-style`.
    write(
        &env.cfg.join("skills/ship/SKILL.md"),
        "---\ndescription: Ship a release\ndisable-model-invocation: true\n---\nShip it.\n",
    );
    write(
        &env.proj.join(".strata/skills/house-style/SKILL.md"),
        "---\ndescription: The house style\nuser-invocable: false\n---\nBe terse.\n",
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use(
        "toolu_touch",
        "Bash",
        json!({"command": "touch greeted.txt"}),
    ));
    server.push(Reply::new().text("Hello, Bob!"));
    // A skill the user may not invoke is not a command: the text goes to the model.
    server.push(Reply::new().text("Noted."));
    let mut s = Driver::start(&env, &server, &["--model", "claude-sonnet-4-5"]);
    let init = s
        .until(|l| l["type"] == "system" && l["subtype"] == "init")
        .await;
    let commands = init["slash_commands"].as_array().unwrap();
    assert!(commands.contains(&json!("greet")), "{init}");
    assert!(commands.contains(&json!("ship")), "{init}");
    assert!(!commands.contains(&json!("house-style")), "{init}");
    let skills = init["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 3, "{init}");
    // The SDKs' command list has each skill's description and argument hint.
    s.control("c1", json!({"subtype": "initialize"})).await;
    let reply = s.response("c1").await;
    let listed = reply["response"]["response"]["commands"]
        .as_array()
        .unwrap();
    let row = listed.iter().find(|c| c["name"] == "greet").unwrap();
    assert_eq!(row["description"], "Greet someone warmly", "{reply}");
    assert_eq!(row["argumentHint"], "[name] [mood]", "{reply}");

    s.prompt("/greet Bob cheerful").await;
    let result = s.result().await;
    assert_eq!(result["result"], "Hello, Bob!", "{result}");
    let first = server.requests()[0].json();
    assert_eq!(first["model"], "claude-haiku-4-5", "the skill's model");
    let system = first["system"].to_string();
    assert!(!system.contains("Ship a release"), "user-only: {system}");
    assert!(system.contains("The house style"), "{system}");
    let sent = last_user_text(&server, 0);
    assert!(
        sent.contains("<command-name>/greet</command-name>"),
        "{sent}"
    );
    assert!(
        sent.contains("Say hello to Bob in a cheerful way; the whole request was: Bob cheerful."),
        "{sent}"
    );
    assert!(
        sent.contains(&format!(
            "Base directory for this skill: {}",
            greet.display()
        )),
        "{sent}"
    );
    assert!(
        sent.contains(&format!("{}/templates", greet.display())),
        "{sent}"
    );
    let touched = tool_result(&server, "toolu_touch");
    assert_ne!(touched["is_error"], true, "allowed-tools: {touched}");
    assert!(env.proj.join("greeted.txt").exists());

    s.prompt("/house-style now").await;
    s.result().await;
    let requests = server.requests();
    let third = requests.last().unwrap().json();
    assert_eq!(
        third["model"], "claude-sonnet-4-5",
        "the skill's turn ended"
    );
    let plain = last_user_text(&server, requests.len() - 1);
    assert_eq!(plain, "/house-style now");
    let done = s.finish().await;
    assert_eq!(done.code, Some(0), "{}", done.stderr);
}

/// Issue 25, item 4, in `-p`: the prompt `/greet Bob` runs the skill.
#[tokio::test]
async fn i25_4_a_skill_runs_from_a_print_mode_prompt() {
    let env = Env::new();
    write(
        &env.cfg.join("skills/greet/SKILL.md"),
        "---\ndescription: Greet someone\n---\nGreet the person named below.\n",
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().text("Hi Bob."));
    let run = env
        .run(
            Some(&server),
            &["-p", "/greet Bob", "--output-format", "json"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let sent = last_user_text(&server, 0);
    assert!(
        sent.contains("Greet the person named below.\n\nARGUMENTS: Bob"),
        "{sent}"
    );
    assert!(sent.contains("<command-args>Bob</command-args>"), "{sent}");
}

/// The Skill tool puts the session's id in for `${CLAUDE_SESSION_ID}` as `/name` does
/// (it left the variable as written: the tool did not know the session).
#[tokio::test]
async fn i25_4_the_skill_tool_puts_in_the_session_id() {
    let env = Env::new();
    write(
        &env.cfg.join("skills/notes/SKILL.md"),
        "---\ndescription: Keep notes for this session\n---\nWrite notes to notes-${CLAUDE_SESSION_ID}.md.\n",
    );
    let server = MockServer::start().await.unwrap();
    server.push(Reply::new().tool_use("t_skill", "Skill", json!({"skill": "notes"})));
    server.push(Reply::new().text("Noted."));
    let run = env
        .run(
            Some(&server),
            &["-p", "take notes", "--output-format", "json"],
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let session = run.result()["session_id"].as_str().unwrap().to_owned();
    let loaded = text_of(&tool_result(&server, "t_skill"));
    assert!(loaded.contains(&format!("notes-{session}.md")), "{loaded}");
}
