//! Custom slash commands and skills: the user's own markdown files (issue 18, items 5
//! and 6).
//!
//! A **command** is a markdown file in `.strata/commands/` or `.claude/commands/` of the
//! project (the working directory and the project root), or `<config>/commands/` of the
//! user; `/name args` in a prompt runs it (a file in a sub-folder is `/folder:name`). Its
//! front matter may give a `description`, an `argument-hint`, `allowed-tools` (allow
//! rules for the command's turn) and a `model` (for that turn). The body is the prompt:
//! `$ARGUMENTS` and `$1`, `$2`, … are replaced by the arguments, `` !`command` `` runs a
//! shell command for context (checked like a Bash call, fail closed) and `@file`
//! attaches a file's contents ([`expand`]).
//!
//! A **skill** is a folder with a `SKILL.md` (front matter `name`, `description`,
//! `allowed-tools`) in `.strata/skills/`, `.claude/skills/` or `<config>/skills/`; its
//! description goes into the system prompt and the `Skill` tool loads it
//! ([`skills`]). It is a command too: `/name args` runs it ([`slash`], the one
//! catalogue every listing and lookup of the user's slash commands goes through).
//!
//! Both are the reference agent's formats, so a project's existing files work. They are
//! read once when a session opens; a file that cannot be read or whose front matter does
//! not parse is left out with a warning naming `file:line`, and the others still load.
//! When two files give the same name, the first found wins, in this order: project
//! `.strata/`, project `.claude/`, user config (the project's own file is what its
//! contributors meant). Their front matter is read by the program's one parser,
//! [`crate::front_matter`], as agent definitions' is.

pub mod expand;
pub mod skills;
pub mod slash;

use std::path::{Path, PathBuf};

pub use self::skills::{Skill, SkillCatalog};
pub use self::slash::{SlashCatalog, SlashCommandEntry, SlashSource, SlashTarget};
use crate::front_matter::FrontMatter;

/// The largest command or skill file read (bytes); a larger one is skipped with a
/// warning.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// How deep sub-folders of a commands folder are searched.
const MAX_DEPTH: usize = 4;

/// Where a command or skill came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The project's `.strata/` or `.claude/` folder.
    Project,
    /// The user's config directory.
    User,
}

impl Scope {
    /// `project` or `user`, as listings show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
        }
    }
}

/// One custom slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// The name after the `/` (`commit`, `frontend:component`).
    pub name: String,
    /// The front matter's `description`, else the body's first line.
    pub description: String,
    /// The front matter's `argument-hint` (`[message]`).
    pub argument_hint: Option<String>,
    /// The front matter's `allowed-tools`: permission rules allowed for the command's
    /// turn.
    pub allowed_tools: Vec<String>,
    /// The front matter's `model`, for the command's turn.
    pub model: Option<String>,
    /// The prompt text (after the front matter).
    pub body: String,
    /// The file.
    pub path: PathBuf,
    /// Where it came from.
    pub scope: Scope,
}

/// The custom commands of a session, and the files that could not be loaded.
#[derive(Debug, Clone, Default)]
pub struct CommandCatalog {
    commands: Vec<CustomCommand>,
    warnings: Vec<String>,
}

impl CommandCatalog {
    /// Reads the commands of a session in `cwd` (project root `project_root`) with the
    /// user config directory `config_dir`.
    pub fn load(cwd: &Path, project_root: &Path, config_dir: &Path) -> Self {
        let mut catalog = Self::default();
        for (dir, scope) in command_dirs(cwd, project_root, config_dir) {
            let mut files = Vec::new();
            markdown_files(&dir, 0, &mut files);
            files.sort();
            for file in files {
                let Some(name) = command_name(&dir, &file) else {
                    continue;
                };
                if catalog.get(&name).is_some() {
                    continue;
                }
                match read_document(&file).and_then(|doc| command(name, file, scope, doc)) {
                    Ok(command) => catalog.commands.push(command),
                    Err(e) => catalog.warnings.push(e),
                }
            }
        }
        catalog
    }

    /// A catalog of `commands` (tests, hosts that define their own).
    pub fn from_commands(commands: Vec<CustomCommand>) -> Self {
        Self {
            commands,
            warnings: Vec::new(),
        }
    }

    /// Every command, in the order found.
    pub fn commands(&self) -> &[CustomCommand] {
        &self.commands
    }

    /// The command called `name` (without the `/`).
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// One line per file that could not be loaded (`file:line: why`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// The folders searched, in precedence order.
fn command_dirs(cwd: &Path, project_root: &Path, config_dir: &Path) -> Vec<(PathBuf, Scope)> {
    let mut dirs = Vec::new();
    for base in project_bases(cwd, project_root) {
        for agent in [".strata", ".claude"] {
            dirs.push((base.join(agent).join("commands"), Scope::Project));
        }
    }
    dirs.push((config_dir.join("commands"), Scope::User));
    dirs
}

/// The working directory, then the project root when it differs.
pub(crate) fn project_bases(cwd: &Path, project_root: &Path) -> Vec<PathBuf> {
    let mut bases = vec![cwd.to_path_buf()];
    if project_root != cwd {
        bases.push(project_root.to_path_buf());
    }
    bases
}

/// The `.md` files under `dir` (sub-folders too, to [`MAX_DEPTH`]); hidden entries are
/// skipped.
fn markdown_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        // `metadata` follows links: a linked folder of shared commands counts.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if depth < MAX_DEPTH {
                markdown_files(&path, depth + 1, out);
            }
        } else if meta.is_file() && path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// `frontend/component.md` under `dir` → `frontend:component`.
fn command_name(dir: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(dir).ok()?.with_extension("");
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let name = parts.join(":");
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
}

/// Reads and parses one command or skill file; the error is the warning line.
pub(crate) fn read_document(file: &Path) -> Result<FrontMatter, String> {
    let bytes = match strata_config::read_bounded(file, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(format!("{}: the file disappeared", file.display())),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let text = String::from_utf8_lossy(&bytes);
    FrontMatter::parse(file, &text).map_err(|e| e.to_string())
}

/// The command a parsed file defines; a field of the wrong type is the warning line.
fn command(
    name: String,
    path: PathBuf,
    scope: Scope,
    doc: FrontMatter,
) -> Result<CustomCommand, String> {
    let field = |e: crate::front_matter::FrontMatterError| e.to_string();
    let description = doc.text("description").map_err(field)?.unwrap_or_else(|| {
        doc.body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.trim_start_matches('#').trim().to_owned())
            .unwrap_or_default()
    });
    Ok(CustomCommand {
        name,
        description,
        argument_hint: doc.text("argument-hint").map_err(field)?,
        allowed_tools: doc.entries("allowed-tools").map_err(field)?,
        model: doc.text("model").map_err(field)?,
        body: doc.body,
        path,
        scope,
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
