#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

struct Dirs {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    config: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let config = tmp.path().join("config");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&config).unwrap();
    Dirs {
        _tmp: tmp,
        project,
        config,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn load(d: &Dirs) -> CommandCatalog {
    CommandCatalog::load(&d.project, &d.project, &d.config)
}

#[test]
fn commands_are_found_in_both_project_folders_and_the_user_config() {
    let d = dirs();
    write(
        &d.project.join(".strata/commands/review.md"),
        "---\ndescription: Review the diff\nargument-hint: \"[focus]\"\nallowed-tools: Bash(git diff:*), Read\nmodel: claude-haiku-4-5\n---\nReview $ARGUMENTS\n",
    );
    write(
        &d.project.join(".claude/commands/frontend/component.md"),
        "# Make a component\nCreate $1\n",
    );
    write(&d.config.join("commands/standup.md"), "Summarise my day\n");
    let catalog = load(&d);
    let names: Vec<&str> = catalog.commands().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["review", "frontend:component", "standup"]);
    let review = catalog.get("review").unwrap();
    assert_eq!(review.description, "Review the diff");
    assert_eq!(review.argument_hint.as_deref(), Some("[focus]"));
    assert_eq!(review.allowed_tools, ["Bash(git diff:*)", "Read"]);
    assert_eq!(review.model.as_deref(), Some("claude-haiku-4-5"));
    assert_eq!(review.body, "Review $ARGUMENTS\n");
    assert_eq!(review.scope, Scope::Project);
    // Without a description, the body's first line says what the command does.
    assert_eq!(
        catalog.get("frontend:component").unwrap().description,
        "Make a component"
    );
    assert_eq!(catalog.get("standup").unwrap().scope, Scope::User);
    assert!(catalog.warnings().is_empty());
}

#[test]
fn the_projects_own_command_wins_over_the_users_of_the_same_name() {
    let d = dirs();
    write(
        &d.project.join(".strata/commands/deploy.md"),
        "project deploy\n",
    );
    write(
        &d.project.join(".claude/commands/deploy.md"),
        "claude deploy\n",
    );
    write(&d.config.join("commands/deploy.md"), "user deploy\n");
    let catalog = load(&d);
    assert_eq!(catalog.commands().len(), 1);
    assert_eq!(catalog.get("deploy").unwrap().body, "project deploy\n");
}

#[test]
fn a_malformed_front_matter_is_a_warning_naming_file_and_line_and_the_rest_still_load() {
    let d = dirs();
    let bad = d.project.join(".strata/commands/bad.md");
    write(&bad, "---\ndescription: ok\nnot a key line\n---\nbody\n");
    write(&d.project.join(".strata/commands/good.md"), "good\n");
    let catalog = load(&d);
    assert!(catalog.get("bad").is_none());
    assert!(catalog.get("good").is_some());
    assert_eq!(catalog.warnings().len(), 1);
    let expected = format!("{}:3:", bad.display());
    assert!(
        catalog.warnings()[0].starts_with(&expected),
        "{:?}",
        catalog.warnings()
    );
}

#[test]
fn skills_are_folders_with_a_skill_md_and_a_description() {
    let d = dirs();
    write(
        &d.project.join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Fill and merge PDF forms\nallowed-tools: [Read, Bash(python3:*)]\n---\nUse forms.md beside this file.\n",
    );
    write(&d.project.join(".claude/skills/pdf/forms.md"), "forms\n");
    write(
        &d.config.join("skills/notes/SKILL.md"),
        "---\nname: notes\n---\nno description\n",
    );
    write(
        &d.config.join("skills/haiku/SKILL.md"),
        "---\ndescription: Write a haiku\n---\nFive, seven, five.\n",
    );
    let catalog = SkillCatalog::load(&d.project, &d.project, &d.config);
    let names: Vec<&str> = catalog.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["pdf-tools", "haiku"],
        "named by front matter, else folder"
    );
    let pdf = catalog.get("pdf-tools").unwrap();
    assert_eq!(pdf.allowed_tools, ["Read", "Bash(python3:*)"]);
    assert_eq!(pdf.dir, d.project.join(".claude/skills/pdf"));
    assert_eq!(
        catalog.warnings().len(),
        1,
        "the skill without a description"
    );
    assert!(catalog.warnings()[0].contains("description"));
}

#[test]
fn the_skills_prompt_section_stays_within_its_budget() {
    let skill = |i: usize| Skill {
        name: format!("skill-{i}"),
        description: "d".repeat(500),
        allowed_tools: Vec::new(),
        argument_hint: None,
        arguments: Vec::new(),
        model: None,
        disable_model_invocation: false,
        user_invocable: true,
        body: String::new(),
        dir: PathBuf::from("/s"),
        scope: Scope::User,
    };
    let catalog = SkillCatalog::from_skills((0..100).map(skill).collect());
    let section = catalog.prompt_section().unwrap();
    assert!(
        section.len() <= skills::SKILLS_PROMPT_BUDGET + 200,
        "{}",
        section.len()
    );
    assert!(section.contains("- skill-0: "));
    assert!(section.contains("more skill(s) not listed"), "{section}");
    assert!(SkillCatalog::default().prompt_section().is_none());
}

#[test]
fn i25_4_a_skills_invocation_front_matter_is_read_and_a_user_only_skill_is_not_the_models() {
    let d = dirs();
    write(
        &d.project.join(".claude/skills/deploy/SKILL.md"),
        "---\ndescription: Deploy the app\ndisable-model-invocation: true\nargument-hint: \"[env]\"\narguments: env region\nmodel: claude-haiku-4-5\n---\nDeploy to $env in $region.\n",
    );
    write(
        &d.project.join(".claude/skills/legacy/SKILL.md"),
        "---\ndescription: How the legacy system works\nuser-invocable: false\nmodel: inherit\n---\nBackground.\n",
    );
    let catalog = SkillCatalog::load(&d.project, &d.project, &d.config);
    assert!(catalog.warnings().is_empty(), "{:?}", catalog.warnings());
    let deploy = catalog.get("deploy").unwrap();
    assert!(deploy.disable_model_invocation && deploy.user_invocable);
    assert_eq!(deploy.argument_hint.as_deref(), Some("[env]"));
    assert_eq!(deploy.arguments, ["env", "region"]);
    assert_eq!(deploy.model.as_deref(), Some("claude-haiku-4-5"));
    let legacy = catalog.get("legacy").unwrap();
    assert!(!legacy.user_invocable && !legacy.disable_model_invocation);
    assert_eq!(legacy.model, None, "`inherit` keeps the session's model");
    // The model is told of `legacy` only, and cannot load `deploy`.
    let section = catalog.prompt_section().unwrap();
    assert!(section.contains("- legacy: "), "{section}");
    assert!(!section.contains("deploy"), "{section}");
    assert!(catalog.for_model("deploy").is_none());
    assert!(catalog.for_model("legacy").is_some());
}
