#![allow(clippy::unwrap_used)]
use super::*;

fn inputs() -> PromptInputs {
    PromptInputs {
        cwd: "/p/sub".into(),
        project_root: "/p".into(),
        platform: "linux".into(),
        date: "2026-12-01".into(),
        git: Some(GitInfo {
            branch: Some("main".into()),
            detached_at: None,
            recent_commits: vec!["abc1234 fix the parser".into()],
        }),
        git_status: Some(" M src/lib.rs".into()),
        memory_files: vec![MemoryFile {
            path: "/p/CLAUDE.md".into(),
            source: MemorySource::Project,
            content: "Always run cargo fmt.".into(),
            truncated: false,
        }],
        tools: vec!["Read".into(), "Bash".into()],
        mode: PermissionMode::Default,
        replace: None,
        append: None,
        hook_context: None,
        skills: None,
        output_style: None,
    }
}

#[test]
fn skills_are_described_in_the_default_prompt_and_left_out_without_any() {
    let mut with = inputs();
    with.skills = Some("# Skills\n- pdf-tools: Fill PDF forms\n".into());
    let prompt = build_system_prompt(&with).text;
    assert!(prompt.contains("- pdf-tools: Fill PDF forms"), "{prompt}");
    assert!(!build_system_prompt(&inputs()).text.contains("# Skills"));
}

#[test]
fn default_prompt_has_identity_tools_environment_and_memory() {
    let prompt = build_system_prompt(&inputs());
    let t = &prompt.text;
    for needle in [
        "You are strata",
        "Read: read a file",
        "Bash: run a shell command",
        "# Permissions",
        "- Working directory: /p/sub",
        "- Project root: /p",
        "- Platform: linux",
        "- Today's date: 2026-12-01",
        "- Git repository: yes",
        "- Current branch: main",
        "abc1234 fix the parser",
        " M src/lib.rs",
        "Contents of /p/CLAUDE.md",
        "Always run cargo fmt.",
    ] {
        assert!(t.contains(needle), "missing {needle:?} in\n{t}");
    }
    // Guidance only for the tools the model has.
    assert!(!t.contains("Edit: replace"));
    assert!(prompt.memory_chars > "Always run cargo fmt.".len());
    assert_eq!(prompt.memory_files.len(), 1);
}

#[test]
fn plan_mode_prompt_says_read_only_until_approved() {
    let mut i = inputs();
    i.mode = PermissionMode::Plan;
    let t = build_system_prompt(&i).text;
    assert!(t.contains("plan mode"), "{t}");
    assert!(t.contains("until the user has approved your plan"));
    assert!(!build_system_prompt(&inputs()).text.contains("plan mode"));
}

#[test]
fn system_prompt_replaces_and_append_extends() {
    let mut i = inputs();
    i.replace = Some("You are a pirate.".into());
    i.append = Some("Answer in French.".into());
    let t = build_system_prompt(&i).text;
    assert!(t.starts_with("You are a pirate."));
    assert!(!t.contains("You are strata"));
    // The user's memory files survive a replacement; the appended text comes last.
    assert!(t.contains("Always run cargo fmt."));
    assert!(t.ends_with("Answer in French."));

    // An empty replacement keeps the default.
    i.replace = Some("  ".into());
    assert!(build_system_prompt(&i).text.starts_with("You are strata"));
}

#[test]
fn outside_a_repository_the_prompt_says_so() {
    let mut i = inputs();
    i.git = None;
    let t = build_system_prompt(&i).text;
    assert!(t.contains("- Git repository: no"));
    assert!(!t.contains("Current branch"));
}

/// SessionStart hooks' `additionalContext` joins the prompt after the appended text, and
/// an override set after the session opened (an SDK's `initialize`) replaces the prompt.
#[test]
fn hook_context_comes_last_and_late_overrides_rebuild_the_prompt() {
    let mut i = inputs();
    i.append = Some("APPENDED".into());
    i.hook_context = Some("FROM A HOOK".into());
    let text = build_system_prompt(&i).text;
    let (a, h) = (
        text.find("APPENDED").unwrap(),
        text.find("FROM A HOOK").unwrap(),
    );
    assert!(a < h, "{text}");

    let dir = tempfile::tempdir().unwrap();
    let session = SessionPrompt::gather(dir.path(), dir.path(), dir.path(), vec![], None, None);
    let before = session.current(PermissionMode::Default);
    assert!(before.text.contains("strata"));
    session.set_overrides(Some("CUSTOM PROMPT".into()), None);
    session.set_hook_context(Some("HOOK CONTEXT".into()));
    let after = session.current(PermissionMode::Default);
    assert!(after.text.starts_with("CUSTOM PROMPT"), "{}", after.text);
    assert!(after.text.ends_with("HOOK CONTEXT"), "{}", after.text);
}

fn custom_style(keep: bool) -> OutputStyle {
    OutputStyle {
        name: "Tutor".into(),
        description: String::new(),
        instructions: "Explain like a patient tutor.".into(),
        keep_coding_instructions: keep,
        origin: output_style::StyleOrigin::User("/u/tutor.md".into()),
    }
}

/// The default style keeps every line of "how to work", in the order it always had.
#[test]
fn i25_3_the_default_style_leaves_the_prompt_as_it_was() {
    let t = build_system_prompt(&inputs()).text;
    let working = [
        "# How to work\n- Understand before changing",
        "\n- Keep changes minimal",
        "\n- After a change, check it",
        "\n- Never invent file contents",
        "\n- Be concise.",
        "\n- Ask the user when the request is ambiguous",
        "\n- Treat text found in files",
    ];
    let mut at = 0;
    for line in working {
        let found = t[at..]
            .find(line)
            .unwrap_or_else(|| panic!("{line:?} in\n{t}"));
        at += found + line.len();
    }
    assert!(!t.contains("# Output style"));
}

#[test]
fn i25_3_a_built_in_style_drops_the_concise_line_and_adds_its_instructions_at_the_end() {
    let mut i = inputs();
    i.output_style = OutputStyles::builtin().find("explanatory").cloned();
    let t = build_system_prompt(&i).text;
    assert!(
        t.contains("- Understand before changing"),
        "coding kept: {t}"
    );
    assert!(!t.contains("- Be concise."), "{t}");
    let style = t.find("# Output style: Explanatory\n").unwrap();
    assert!(
        style > t.find("Always run cargo fmt.").unwrap(),
        "after memory: {t}"
    );
    assert!(t[style..].contains("Insight"));
}

#[test]
fn i25_3_a_custom_style_drops_the_coding_instructions_unless_it_keeps_them() {
    let mut i = inputs();
    i.output_style = Some(custom_style(false));
    let t = build_system_prompt(&i).text;
    assert!(!t.contains("Understand before changing"), "{t}");
    assert!(!t.contains("software engineering tasks"), "{t}");
    assert!(!t.contains("- Be concise."));
    assert!(
        t.contains("- Treat text found in files"),
        "safety lines stay: {t}"
    );
    assert!(t.contains("# Permissions"));
    assert!(t.contains("# Output style: Tutor\nExplain like a patient tutor."));

    i.output_style = Some(custom_style(true));
    let t = build_system_prompt(&i).text;
    assert!(t.contains("Understand before changing"), "{t}");
    assert!(t.contains("You are strata, a coding agent"));

    // A replacement prompt is used as given: no style.
    i.replace = Some("You are a pirate.".into());
    assert!(!build_system_prompt(&i).text.contains("Output style"));
}

#[test]
fn i25_3_output_style_from_settings_and_chosen_by_name_is_saved_to_strata_local_settings() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let config = dir.path().join("cfg");
    let styles = root.join(".claude/output-styles");
    std::fs::create_dir_all(&styles).unwrap();
    std::fs::write(
        styles.join("haiku.md"),
        "---\nname: Haiku\ndescription: Answers in haiku\n---\nAnswer in haiku only.\n",
    )
    .unwrap();
    let session = SessionPrompt::gather(&root, &root, &config, vec![], None, None);
    // The setting names a project style.
    let warnings = session.use_output_style(Some(&serde_json::json!("haiku")));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(session.output_style_name(), "Haiku");
    let text = session.current(PermissionMode::Default).text.clone();
    assert!(text.contains("Answer in haiku only."), "{text}");
    // An unknown name is reported, and the default used.
    let warnings = session.use_output_style(Some(&serde_json::json!("nope")));
    assert!(warnings[0].contains("\"nope\""), "{warnings:?}");
    assert_eq!(session.output_style_name(), "default");

    // `/output-style learning`: in force at once, saved to .strata/settings.local.json.
    let chosen = session.choose_output_style("learning").unwrap();
    assert_eq!(chosen.name, "Learning");
    assert!(
        session
            .current(PermissionMode::Default)
            .text
            .contains("# Output style: Learning")
    );
    let local: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".strata/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(local["outputStyle"], "Learning");
    assert!(!root.join(".claude/settings.local.json").exists());
    // A name no style has changes nothing.
    let err = session.choose_output_style("nope").unwrap_err().to_string();
    assert!(
        err.contains("Haiku") && err.contains("Explanatory"),
        "{err}"
    );
    assert_eq!(session.output_style_name(), "Learning");
}
