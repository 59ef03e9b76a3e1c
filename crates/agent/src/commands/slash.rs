//! The user's slash commands as one catalogue (issue 25, item 4): what `/name` runs, and
//! the list `/help`, the command menu, `system/init` and the SDKs' `initialize` show.
//!
//! Several sources give commands: custom command files ([`CommandCatalog`]), skills
//! ([`SkillCatalog`]) and the prompts of connected MCP servers; plugins will be one more.
//! Each joins here as a source of [`SlashCommandEntry`] rows and, when it runs through
//! this crate's expansion, as a [`SlashTarget`]; the rest of the program asks this
//! catalogue, never one source, so a new source shows up everywhere at once.
//!
//! Two sources may give the same name. A skill wins over a command file of that name
//! (the reference agent's documented rule: skills are the newer form of commands), and
//! a skill the user may not invoke (`user-invocable: false`) is neither listed nor run
//! by `/name`. The engine's own slash prompt (`/compact`) comes before all of them.

use super::{CommandCatalog, CustomCommand, Scope, Skill, SkillCatalog};

/// Where a slash command comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashSource {
    /// A custom command file (`.strata/commands`, `.claude/commands`, the user's).
    Command(Scope),
    /// A skill (`.strata/skills`, `.claude/skills`, the user's).
    Skill(Scope),
    /// A prompt of the named MCP server (`/mcp__server__prompt`).
    McpPrompt {
        /// The server's name.
        server: String,
    },
}

impl SlashSource {
    /// How a listing names the source: `project`, `user`, `skill, project`,
    /// `MCP server x`.
    pub fn label(&self) -> String {
        match self {
            Self::Command(scope) => scope.as_str().to_owned(),
            Self::Skill(scope) => format!("skill, {}", scope.as_str()),
            Self::McpPrompt { server } => format!("MCP server {server}"),
        }
    }
}

/// One slash command the user can run: a row of `/help`, of the command menu and of the
/// SDKs' command list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommandEntry {
    /// The name after the `/` (`commit`, `frontend:component`, `mcp__docs__search`).
    pub name: String,
    /// What it does (may be empty for an MCP prompt that says nothing).
    pub description: String,
    /// What to type after the name (`[message]`, `<query> <limit>`), when known.
    pub argument_hint: Option<String>,
    /// Where it comes from.
    pub source: SlashSource,
}

/// What `/name` runs, when this crate expands it (MCP prompts are fetched from their
/// server by the engine).
#[derive(Debug, Clone, Copy)]
pub enum SlashTarget<'a> {
    /// A custom command file.
    Command(&'a CustomCommand),
    /// A skill.
    Skill(&'a Skill),
}

/// The session's command files and skills, looked up together.
#[derive(Debug, Clone, Copy)]
pub struct SlashCatalog<'a> {
    commands: &'a CommandCatalog,
    skills: &'a SkillCatalog,
}

impl<'a> SlashCatalog<'a> {
    /// The catalogue of `commands` and `skills`.
    pub fn new(commands: &'a CommandCatalog, skills: &'a SkillCatalog) -> Self {
        Self { commands, skills }
    }

    /// What `/name` runs: the user-invocable skill of that name, else the command file.
    pub fn resolve(&self, name: &str) -> Option<SlashTarget<'a>> {
        if let Some(skill) = self.skills.get(name).filter(|s| s.user_invocable) {
            return Some(SlashTarget::Skill(skill));
        }
        self.commands.get(name).map(SlashTarget::Command)
    }

    /// Every command the user can run from these sources, commands first (in the order
    /// found), then skills; a command file a skill overrides is left out.
    pub fn entries(&self) -> Vec<SlashCommandEntry> {
        let shadowed = |name: &str| self.skills.get(name).is_some_and(|s| s.user_invocable);
        let commands = self
            .commands
            .commands()
            .iter()
            .filter(|c| !shadowed(&c.name))
            .map(|c| SlashCommandEntry {
                name: c.name.clone(),
                description: c.description.clone(),
                argument_hint: c.argument_hint.clone(),
                source: SlashSource::Command(c.scope),
            });
        let skills = self
            .skills
            .skills()
            .iter()
            .filter(|s| s.user_invocable)
            .map(|s| SlashCommandEntry {
                name: s.name.clone(),
                description: s.description.clone(),
                argument_hint: s.argument_hint.clone(),
                source: SlashSource::Skill(s.scope),
            });
        commands.chain(skills).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn command(name: &str) -> CustomCommand {
        CustomCommand {
            name: name.into(),
            description: format!("command {name}"),
            argument_hint: None,
            allowed_tools: Vec::new(),
            model: None,
            body: String::new(),
            path: PathBuf::from(format!("/c/{name}.md")),
            scope: Scope::Project,
        }
    }

    fn skill(name: &str, user_invocable: bool) -> Skill {
        Skill {
            name: name.into(),
            description: format!("skill {name}"),
            allowed_tools: Vec::new(),
            argument_hint: Some("[who]".into()),
            arguments: Vec::new(),
            model: None,
            disable_model_invocation: false,
            user_invocable,
            body: String::new(),
            dir: PathBuf::from(format!("/s/{name}")),
            scope: Scope::User,
        }
    }

    #[test]
    fn i25_4_a_skill_is_a_command_and_wins_over_a_command_file_of_its_name() {
        let commands = CommandCatalog::from_commands(vec![command("deploy"), command("commit")]);
        let skills = SkillCatalog::from_skills(vec![
            skill("deploy", true),
            skill("greet", true),
            skill("background", false),
        ]);
        let catalog = SlashCatalog::new(&commands, &skills);
        assert!(matches!(
            catalog.resolve("deploy"),
            Some(SlashTarget::Skill(s)) if s.name == "deploy"
        ));
        assert!(matches!(
            catalog.resolve("commit"),
            Some(SlashTarget::Command(_))
        ));
        assert!(matches!(
            catalog.resolve("greet"),
            Some(SlashTarget::Skill(_))
        ));
        assert!(
            catalog.resolve("background").is_none(),
            "user-invocable: false is the model's only"
        );
        let rows: Vec<(String, String)> = catalog
            .entries()
            .into_iter()
            .map(|e| (e.name, e.source.label()))
            .collect();
        assert_eq!(
            rows,
            [
                ("commit".to_owned(), "project".to_owned()),
                ("deploy".to_owned(), "skill, user".to_owned()),
                ("greet".to_owned(), "skill, user".to_owned()),
            ]
        );
    }
}
