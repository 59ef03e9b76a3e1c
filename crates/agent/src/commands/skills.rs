//! Skills: folders with a `SKILL.md` that the model loads when a task calls for them.
//!
//! Searched in `.strata/skills/` and `.claude/skills/` of the project (working directory,
//! then project root) and `<config>/skills/` of the user, one level deep:
//! `<skills>/<folder>/SKILL.md`. The front matter names the skill (`name`, else the
//! folder's name), says when to use it (`description`, required: a skill the model cannot
//! recognise is never used, so one without is left out with a warning) and may list
//! `allowed-tools`. The system prompt lists each skill's name and description within a
//! budget ([`SkillCatalog::prompt_section`]); the `Skill` tool loads one, and the files
//! beside its `SKILL.md` are read with the usual tools from the folder it names.
//!
//! A skill is also a slash command, as in the reference agent (issue 25, item 4):
//! `/name args` runs it with its body as the turn's prompt ([`super::slash`]). The
//! front matter says who may invoke it: `disable-model-invocation: true` keeps it from
//! the model (left out of the prompt's list, refused by the `Skill` tool: only the user
//! runs it), `user-invocable: false` keeps it from the user (no `/name`, not listed as
//! a command: only the model loads it). `argument-hint` is shown beside its name,
//! `arguments` names its positional arguments (`$name` in the body), and `model` is the
//! model of the turn it runs in, as a command's.

use std::path::{Path, PathBuf};

use super::{Scope, project_bases, read_document};

/// The most characters the skills' section of the system prompt may take; skills past
/// it are counted, not described (the prompt stays small however many are installed).
pub const SKILLS_PROMPT_BUDGET: usize = 8_000;

/// The longest description shown per skill, in characters.
const MAX_DESCRIPTION_CHARS: usize = 600;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// What the model passes to the `Skill` tool.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The front matter's `allowed-tools`.
    pub allowed_tools: Vec<String>,
    /// The front matter's `argument-hint` (`[issue-number]`), shown beside `/name`.
    pub argument_hint: Option<String>,
    /// The front matter's `arguments`: names for the positional arguments, in order
    /// (`$issue` in the body is the first when the list starts with `issue`).
    pub arguments: Vec<String>,
    /// The front matter's `model`, for the turn `/name` runs in.
    pub model: Option<String>,
    /// `disable-model-invocation: true`: only the user runs it (`/name`); the model
    /// neither sees it listed nor loads it.
    pub disable_model_invocation: bool,
    /// `user-invocable` (default true): `false` hides it from the user's commands; only
    /// the model loads it.
    pub user_invocable: bool,
    /// The instructions (the body of `SKILL.md`).
    pub body: String,
    /// The folder holding `SKILL.md` (and the files it refers to).
    pub dir: PathBuf,
    /// Where it came from.
    pub scope: Scope,
}

impl Skill {
    /// The instructions with `args` put in ([`substitute_skill`] with this skill's
    /// argument names and folder; `session_id` for `${CLAUDE_SESSION_ID}`).
    ///
    /// [`substitute_skill`]: super::expand::substitute_skill
    pub fn expand(&self, args: &str, session_id: Option<&str>) -> String {
        super::expand::substitute_skill(
            &self.body,
            super::expand::SkillInput {
                args,
                names: &self.arguments,
                skill_dir: &self.dir.display().to_string(),
                session_id,
            },
        )
    }

    /// What the model reads of the skill once loaded, by `/name` or the Skill tool: the
    /// folder first, so the files its instructions name are found beside `SKILL.md`.
    pub fn loaded_text(&self, expanded: &str) -> String {
        format!(
            "Base directory for this skill: {}\n\n{}",
            self.dir.display(),
            expanded.trim_end()
        )
    }
}

/// The skills of a session.
#[derive(Debug, Clone, Default)]
pub struct SkillCatalog {
    skills: Vec<Skill>,
    warnings: Vec<String>,
}

impl SkillCatalog {
    /// Reads the skills of a session in `cwd` (project root `project_root`) with the user
    /// config directory `config_dir`.
    pub fn load(cwd: &Path, project_root: &Path, config_dir: &Path) -> Self {
        let mut dirs = Vec::new();
        for base in project_bases(cwd, project_root) {
            for agent in [".strata", ".claude"] {
                dirs.push((base.join(agent).join("skills"), Scope::Project));
            }
        }
        dirs.push((config_dir.join("skills"), Scope::User));
        let mut catalog = Self::default();
        for (dir, scope) in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut folders: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("SKILL.md").is_file())
                .collect();
            folders.sort();
            for folder in folders {
                match read_skill(&folder, scope) {
                    Ok(skill) if catalog.get(&skill.name).is_none() => catalog.skills.push(skill),
                    Ok(_) => {}
                    Err(e) => catalog.warnings.push(e),
                }
            }
        }
        catalog
    }

    /// A catalog of `skills` (tests, hosts).
    pub fn from_skills(skills: Vec<Skill>) -> Self {
        Self {
            skills,
            warnings: Vec::new(),
        }
    }

    /// Every skill, in the order found.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The skill called `name` if the model may load it (the `Skill` tool): not one
    /// marked `disable-model-invocation`.
    pub fn for_model(&self, name: &str) -> Option<&Skill> {
        self.get(name).filter(|s| !s.disable_model_invocation)
    }

    /// The skills the model may load, in the order found.
    pub fn model_invocable(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| !s.disable_model_invocation)
    }

    /// One line per skill that could not be loaded (`file:line: why`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The system prompt's section listing the skills, at most
    /// [`SKILLS_PROMPT_BUDGET`] characters; `None` without skills.
    pub fn prompt_section(&self) -> Option<String> {
        // A skill only the user may run is not the model's to choose: it is not listed.
        self.model_invocable().next()?;
        let mut out = String::from(
            "# Skills\n\
             Skills are instructions for particular tasks, installed by the user. When a \
             task matches a skill's description, load the skill with the Skill tool before \
             starting, then follow it. Files it mentions are in its folder.\n",
        );
        let mut left_out = 0usize;
        for skill in self.model_invocable() {
            let description: String = skill
                .description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(MAX_DESCRIPTION_CHARS)
                .collect();
            let line = format!("- {}: {description}\n", skill.name);
            if left_out > 0 || out.len() + line.len() > SKILLS_PROMPT_BUDGET {
                left_out += 1;
                continue;
            }
            out.push_str(&line);
        }
        if left_out > 0 {
            out.push_str(&format!(
                "- … and {left_out} more skill(s) not listed here; the Skill tool loads them \
                 by name.\n"
            ));
        }
        Some(out)
    }
}

fn read_skill(folder: &Path, scope: Scope) -> Result<Skill, String> {
    let file = folder.join("SKILL.md");
    let doc = read_document(&file)?;
    let field = |e: crate::front_matter::FrontMatterError| e.to_string();
    let name = doc.text("name").map_err(field)?.unwrap_or_else(|| {
        folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!(
            "{}:1: the skill name `{name}` must be one word",
            file.display()
        ));
    }
    let Some(description) = doc.text("description").map_err(field)? else {
        return Err(format!(
            "{}:1: the front matter has no `description` (the model uses it to know when \
             the skill applies)",
            file.display()
        ));
    };
    // `arguments`: a YAML list, or one string of names separated by spaces or commas.
    let arguments = match doc.list("arguments").map_err(field)? {
        Some(names) => names
            .iter()
            .flat_map(|n| n.split_whitespace())
            .map(str::to_owned)
            .collect(),
        None => Vec::new(),
    };
    Ok(Skill {
        name,
        description,
        allowed_tools: doc.entries("allowed-tools").map_err(field)?,
        argument_hint: doc.text("argument-hint").map_err(field)?,
        arguments,
        // `inherit` is the session's model: no change for the turn.
        model: doc
            .text("model")
            .map_err(field)?
            .filter(|m| m.trim() != "inherit"),
        disable_model_invocation: doc
            .boolean("disable-model-invocation")
            .map_err(field)?
            .unwrap_or(false),
        user_invocable: doc
            .boolean("user-invocable")
            .map_err(field)?
            .unwrap_or(true),
        body: doc.body,
        dir: folder.to_path_buf(),
        scope,
    })
}
