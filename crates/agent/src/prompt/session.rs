//! [`SessionPrompt`]: one session's system prompt, built once and kept byte-stable.
//!
//! Memory files and the git branch and commits are read when the session opens; `git
//! status` runs on its own thread meanwhile ([`GitStatus`]). The prompt is built at the
//! first request and reused for every later one (the prompt cache reads the same
//! prefix), rebuilt only when the permission mode or the output style changes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use strata_protocol::permission::PermissionMode;

use super::environment::{GitStatus, git_info};
use super::memory::load_memory_files;
use super::output_style::{self, ChooseStyleError, OutputStyle, OutputStyles};
use super::{PromptInputs, SystemPrompt, build_system_prompt};
use crate::sync::lock;

/// The system prompt of one session.
pub struct SessionPrompt {
    state: Mutex<State>,
    /// Warnings found while loading (memory files cut, left out or unreadable).
    warnings: Vec<String>,
    /// The config directory and project root: where output styles are found and where a
    /// chosen one is saved (`None` for a sub-agent's prompt, which has no styles).
    places: Option<(PathBuf, PathBuf)>,
}

struct State {
    inputs: PromptInputs,
    status: GitStatus,
    built: Option<(PermissionMode, Arc<SystemPrompt>)>,
}

impl SessionPrompt {
    /// Gathers what the prompt needs for a session in `cwd` (project root `root`): the
    /// memory files, the repository's branch and recent commits, and starts `git status`.
    pub fn gather(
        cwd: &Path,
        root: &Path,
        config_dir: &Path,
        tools: Vec<String>,
        replace: Option<String>,
        append: Option<String>,
    ) -> SessionPrompt {
        let (memory_files, warnings) = load_memory_files(config_dir, cwd);
        let git = git_info(root);
        let status = if git.is_some() {
            GitStatus::start(root)
        } else {
            GitStatus::known(None)
        };
        let inputs = PromptInputs {
            cwd: cwd.to_path_buf(),
            project_root: root.to_path_buf(),
            platform: std::env::consts::OS.to_owned(),
            date: chrono::Local::now().format("%Y-%m-%d").to_string(),
            git,
            git_status: None,
            memory_files,
            tools,
            mode: PermissionMode::Default,
            replace,
            append,
            hook_context: None,
            skills: None,
            output_style: None,
        };
        SessionPrompt {
            state: Mutex::new(State {
                inputs,
                status,
                built: None,
            }),
            warnings,
            places: Some((config_dir.to_path_buf(), root.to_path_buf())),
        }
    }

    /// A prompt built from `inputs` as they are (a sub-agent's: its parent's inputs with
    /// its own instructions; the git status is the one the parent read).
    pub fn from_inputs(inputs: PromptInputs) -> SessionPrompt {
        let status = GitStatus::known(inputs.git_status.clone());
        SessionPrompt {
            state: Mutex::new(State {
                inputs,
                status,
                built: None,
            }),
            warnings: Vec::new(),
            places: None,
        }
    }

    /// The prompt for a request in `mode` (the same value while the mode stays).
    pub fn current(&self, mode: PermissionMode) -> Arc<SystemPrompt> {
        let mut state = lock(&self.state);
        if let Some((built_mode, prompt)) = &state.built
            && *built_mode == mode
        {
            return Arc::clone(prompt);
        }
        let status = state.status.get();
        state.inputs.git_status = status;
        state.inputs.mode = mode;
        let prompt = Arc::new(build_system_prompt(&state.inputs));
        state.built = Some((mode, Arc::clone(&prompt)));
        prompt
    }

    /// Replaces the prompt's overrides (an SDK's `initialize` carries them after the
    /// session opened); `None` keeps what the flags set. The next request rebuilds it.
    pub fn set_overrides(&self, replace: Option<String>, append: Option<String>) {
        let mut state = lock(&self.state);
        if replace.is_some() {
            state.inputs.replace = replace;
        }
        if append.is_some() {
            state.inputs.append = append;
        }
        state.built = None;
    }

    /// What SessionStart hooks added for the model (`additionalContext`), appended last;
    /// the next request rebuilds the prompt.
    pub fn set_hook_context(&self, context: Option<String>) {
        let mut state = lock(&self.state);
        state.inputs.hook_context = context;
        state.built = None;
    }

    /// The skills' section (their names and descriptions, within a budget); the next
    /// request rebuilds the prompt.
    pub fn set_skills(&self, section: Option<String>) {
        let mut state = lock(&self.state);
        state.inputs.skills = section;
        state.built = None;
    }

    /// Applies the `outputStyle` setting (the merged settings' value) and returns the
    /// problems to report: a name no style has, a style file that could not be read.
    /// The styles are looked for only when a style other than the default is set.
    pub fn use_output_style(&self, setting: Option<&Value>) -> Vec<String> {
        let wanted = match setting {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::String(name))
                if name
                    .trim()
                    .eq_ignore_ascii_case(output_style::DEFAULT_STYLE) =>
            {
                return Vec::new();
            }
            Some(v) => v,
        };
        let (styles, mut warnings) = self.output_styles();
        let (style, problem) = styles.resolve(Some(wanted));
        warnings.extend(problem);
        let mut state = lock(&self.state);
        state.inputs.output_style = style;
        state.built = None;
        warnings
    }

    /// The style in force (`None`: the default).
    pub fn output_style(&self) -> Option<OutputStyle> {
        lock(&self.state).inputs.output_style.clone()
    }

    /// The name of the style in force, as `system/init` reports it (`default`, …).
    pub fn output_style_name(&self) -> String {
        self.output_style()
            .map_or_else(|| output_style::DEFAULT_STYLE.to_owned(), |s| s.name)
    }

    /// Every style the session can choose, read now (a file added since the session
    /// began is listed), with the files that could not be read.
    pub fn output_styles(&self) -> (OutputStyles, Vec<String>) {
        match &self.places {
            Some((config_dir, root)) => OutputStyles::load(config_dir, root),
            None => (OutputStyles::builtin(), Vec::new()),
        }
    }

    /// `/output-style <name>`: saves the choice to strata's local settings, then uses
    /// the style from the next request on. Nothing changes when no style has that name
    /// or the settings cannot be written.
    pub fn choose_output_style(&self, name: &str) -> Result<OutputStyle, ChooseStyleError> {
        let (styles, _) = self.output_styles();
        let style = styles
            .find(name)
            .cloned()
            .ok_or_else(|| ChooseStyleError::Unknown {
                name: name.trim().to_owned(),
                available: styles.names().into_iter().map(str::to_owned).collect(),
            })?;
        if let Some((config_dir, root)) = &self.places {
            output_style::save_choice(config_dir, root, &style.name)?;
        }
        let mut state = lock(&self.state);
        state.inputs.output_style = (!style.is_default()).then(|| style.clone());
        state.built = None;
        Ok(style)
    }

    /// The inputs the prompt is built from (a sub-agent starts from its parent's).
    pub fn inputs(&self) -> PromptInputs {
        lock(&self.state).inputs.clone()
    }

    /// Problems with memory files, one line each, naming the file.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}
