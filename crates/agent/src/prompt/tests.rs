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
