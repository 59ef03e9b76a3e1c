//! Agent types: what a sub-agent is told, which tools it gets and which model it runs on.
//!
//! Three are built in — `general-purpose` (every tool of its parent), `Explore` (a fast
//! read-only searcher) and `Plan` (a read-only architect) — and users add their own as
//! markdown files with a front-matter block (`name`, `description`, `tools`,
//! `disallowedTools`, `model`, `maxTurns`; the body is the system prompt), in the user
//! scope (`<config>/agents/*.md`) and the project scope (`.claude/agents/*.md`,
//! `.strata/agents/*.md`), or an SDK host sends them as JSON (`initialize`'s `agents`,
//! `--agents`). A later source replaces an earlier one of the same name: built-in, then
//! user, then project, then the host's.
//!
//! A file that cannot be read or parsed is left out with a warning naming the file, line
//! and column; it never becomes an agent with an empty prompt.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::front_matter::FrontMatter;

/// The agent type used when a call names none.
pub const DEFAULT_AGENT_TYPE: &str = "general-purpose";

/// Where a definition came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentSource {
    /// Built into strata.
    BuiltIn,
    /// `<config>/agents/`.
    User,
    /// The project's `.claude/agents/` or `.strata/agents/`.
    Project,
    /// The SDK host (`initialize` or `--agents`).
    Host,
}

/// One agent type.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentDefinition {
    /// Its name (`subagent_type` in a call).
    pub name: String,
    /// When to use it (shown to the model in the Agent tool's description).
    pub description: String,
    /// Its system prompt.
    pub prompt: String,
    /// The only tools it gets (`None`: every tool its parent has). Names are tool names;
    /// `mcp__server` admits a whole MCP server.
    pub tools: Option<Vec<String>>,
    /// Tools it never gets.
    pub disallowed_tools: Vec<String>,
    /// Its model: an alias (`sonnet`, `opus`, `haiku`), a model id, or `inherit` /
    /// `None` for the parent's.
    pub model: Option<String>,
    /// At most this many model calls per run.
    pub max_turns: Option<u32>,
    /// Only read-only calls run (its permission mode is `plan` whatever the session's).
    pub read_only: bool,
    /// Where it came from.
    pub source: AgentSource,
    /// The file it was read from.
    pub path: Option<PathBuf>,
}

/// The agent types of a session.
#[derive(Clone, Debug)]
pub struct AgentDefinitions {
    list: Vec<AgentDefinition>,
}

impl Default for AgentDefinitions {
    fn default() -> Self {
        Self { list: built_in() }
    }
}

impl AgentDefinitions {
    /// The built-in types, then the user's (`<config>/agents`), then the project's
    /// (`.claude/agents`, `.strata/agents` under `project_root`). Files that could not
    /// be used come back as warnings, one line each.
    pub fn load(config_dir: &Path, project_root: &Path) -> (Self, Vec<String>) {
        let mut defs = Self::default();
        let mut warnings = Vec::new();
        let dirs = [
            (config_dir.join("agents"), AgentSource::User),
            (
                project_root.join(".claude").join("agents"),
                AgentSource::Project,
            ),
            (
                project_root.join(".strata").join("agents"),
                AgentSource::Project,
            ),
        ];
        for (dir, source) in dirs {
            for path in markdown_files(&dir) {
                match read_file(&path, source) {
                    Ok(def) => defs.insert(def),
                    Err(warning) => warnings.push(warning),
                }
            }
        }
        (defs, warnings)
    }

    /// Adds the host's definitions (`{"name": {description, prompt, tools?,
    /// disallowedTools?, model?, maxTurns?}}`); entries that do not fit come back as
    /// warnings naming `origin`.
    pub fn add_json(&mut self, value: &Value, origin: &str) -> Vec<String> {
        let mut warnings = Vec::new();
        let Some(map) = value.as_object() else {
            warnings.push(format!(
                "{origin}: agent definitions must be an object of name → definition"
            ));
            return warnings;
        };
        for (name, def) in map {
            match from_json(name, def) {
                Ok(def) => self.insert(def),
                Err(why) => warnings.push(format!("{origin}: agent {name:?}: {why}")),
            }
        }
        warnings
    }

    /// The type called `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.list.iter().find(|d| d.name == name)
    }

    /// Every type, built-in first.
    pub fn iter(&self) -> impl Iterator<Item = &AgentDefinition> {
        self.list.iter()
    }

    /// The names, in order (`system/init`'s `agents`).
    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|d| d.name.clone()).collect()
    }

    fn insert(&mut self, def: AgentDefinition) {
        match self.list.iter_mut().find(|d| d.name == def.name) {
            Some(existing) => *existing = def,
            None => self.list.push(def),
        }
    }
}

/// The `.md` files of `dir`, sorted by name (none when it does not exist).
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    files.sort();
    files
}

/// Agent files are small; a larger one is refused rather than read whole.
const MAX_AGENT_FILE_BYTES: u64 = 256 * 1024;

fn read_file(path: &Path, source: AgentSource) -> Result<AgentDefinition, String> {
    let bytes = strata_config::read_bounded(path, MAX_AGENT_FILE_BYTES)
        .map_err(|e| format!("{}: the agent file cannot be read: {e}", path.display()))?
        .ok_or_else(|| {
            format!(
                "{}: the agent file disappeared while it was read",
                path.display()
            )
        })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{}: the agent file is not UTF-8 text", path.display()))?;
    let fm = FrontMatter::parse(path, &text).map_err(|e| e.to_string())?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = fm
        .string("name")
        .map_err(|e| e.to_string())?
        .unwrap_or(stem);
    let description = fm
        .string("description")
        .map_err(|e| e.to_string())?
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| {
            format!(
                "{}:1: the agent {name:?} has no `description` (say when to use it); it is \
                 left out",
                path.display()
            )
        })?;
    let prompt = fm.body.trim().to_owned();
    if prompt.is_empty() {
        return Err(format!(
            "{}: the agent {name:?} has no prompt (the text after the front matter); it is \
             left out",
            path.display()
        ));
    }
    Ok(AgentDefinition {
        name,
        description,
        prompt,
        tools: fm
            .list("tools")
            .map_err(|e| e.to_string())?
            .filter(|t| !t.iter().any(|t| t == "*")),
        disallowed_tools: fm
            .list("disallowedTools")
            .map_err(|e| e.to_string())?
            .unwrap_or_default(),
        model: fm.string("model").map_err(|e| e.to_string())?,
        max_turns: fm.count("maxTurns").map_err(|e| e.to_string())?,
        read_only: false,
        source,
        path: Some(path.to_path_buf()),
    })
}

fn from_json(name: &str, def: &Value) -> Result<AgentDefinition, String> {
    let text = |key: &str| def.get(key).and_then(Value::as_str).map(str::to_owned);
    let list = |key: &str| -> Result<Option<Vec<String>>, String> {
        match def.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("`{key}` must be a list of tool names"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(format!("`{key}` must be a list of tool names")),
        }
    };
    let description = text("description")
        .filter(|d| !d.trim().is_empty())
        .ok_or("it needs a `description`")?;
    let prompt = text("prompt")
        .filter(|p| !p.trim().is_empty())
        .ok_or("it needs a `prompt`")?;
    Ok(AgentDefinition {
        name: name.to_owned(),
        description,
        prompt,
        tools: list("tools")?.filter(|t| !t.iter().any(|t| t == "*")),
        disallowed_tools: list("disallowedTools")?.unwrap_or_default(),
        model: text("model"),
        max_turns: def
            .get("maxTurns")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok()),
        read_only: false,
        source: AgentSource::Host,
        path: None,
    })
}

fn built_in() -> Vec<AgentDefinition> {
    let def = |name: &str, description: &str, prompt: &str, read_only: bool| AgentDefinition {
        name: name.to_owned(),
        description: description.to_owned(),
        prompt: prompt.to_owned(),
        tools: None,
        disallowed_tools: Vec::new(),
        model: None,
        max_turns: None,
        read_only,
        source: AgentSource::BuiltIn,
        path: None,
    };
    vec![
        def(
            DEFAULT_AGENT_TYPE,
            "For research and multi-step work that needs many searches, reads or commands: \
             it works on its own and reports back once.",
            GENERAL_PROMPT,
            false,
        ),
        def(
            "Explore",
            "A fast read-only searcher: finds files, code and answers in the codebase. Say \
             how thorough to be (quick, medium, very thorough).",
            EXPLORE_PROMPT,
            true,
        ),
        def(
            "Plan",
            "A read-only software architect: studies the code and returns a step-by-step \
             implementation plan, the files involved and the risks.",
            PLAN_PROMPT,
            true,
        ),
    ]
}

const GENERAL_PROMPT: &str = "You are a sub-agent of strata, a coding agent. Another \
agent gave you the task below; do it completely with the tools you have, then reply once \
with what you found or did. Your reply is all the other agent sees: make it self-contained \
(file paths with line numbers, the commands you ran and their outcome, what is left \
undone). Do not ask questions: nobody can answer them. Prefer reading and searching before \
changing anything, and do not create files unless the task needs them.";

const EXPLORE_PROMPT: &str = "You are a read-only search agent of strata, a coding \
agent. Find what the task asks for in this codebase quickly: search with Glob and Grep, \
read the files that matter, run only commands that change nothing. You cannot edit, write \
or run anything that modifies the system. Reply once with the answer: the relevant file \
paths (absolute, with line numbers) and what each holds, as briefly as the task allows.";

const PLAN_PROMPT: &str = "You are a read-only planning agent of strata, a coding agent. \
Study the code the task concerns (search, read, run only commands that change nothing) and \
reply once with an implementation plan: the approach and why, the steps in order, the \
files to change or create (absolute paths), how to test it, and the risks. You cannot edit \
or write files.";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn built_ins_are_there() {
        let defs = AgentDefinitions::default();
        assert_eq!(defs.names(), ["general-purpose", "Explore", "Plan"]);
        assert!(defs.get("Explore").unwrap().read_only);
        assert!(!defs.get(DEFAULT_AGENT_TYPE).unwrap().read_only);
    }

    #[test]
    fn project_files_override_user_files_and_bad_ones_are_reported() {
        let config = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(config.path().join("agents")).unwrap();
        std::fs::write(
            config.path().join("agents/reviewer.md"),
            "---\ndescription: user reviewer\n---\nUser prompt.\n",
        )
        .unwrap();
        let dir = project.path().join(".claude/agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\nmodel: haiku\n---\nReview it.\n",
        )
        .unwrap();
        std::fs::write(dir.join("broken.md"), "---\ndescription: [x\n---\nP\n").unwrap();
        let (defs, warnings) = AgentDefinitions::load(config.path(), project.path());
        let reviewer = defs.get("reviewer").unwrap();
        assert_eq!(reviewer.description, "Reviews code");
        assert_eq!(reviewer.source, AgentSource::Project);
        assert_eq!(
            reviewer.tools.as_deref(),
            Some(&["Read".to_owned(), "Grep".to_owned()][..])
        );
        assert_eq!(reviewer.model.as_deref(), Some("haiku"));
        assert_eq!(reviewer.prompt, "Review it.");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("broken.md:"), "{warnings:?}");
        assert!(defs.get("broken").is_none());
    }

    #[test]
    fn host_definitions_need_a_description_and_a_prompt() {
        let mut defs = AgentDefinitions::default();
        let warnings = defs.add_json(
            &serde_json::json!({
                "tester": {"description": "Runs tests", "prompt": "Run them.", "tools": ["Bash"]},
                "empty": {"description": "x"}
            }),
            "initialize.agents",
        );
        assert_eq!(defs.get("tester").unwrap().source, AgentSource::Host);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("\"empty\""), "{warnings:?}");
    }
}
