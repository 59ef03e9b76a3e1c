//! Output styles: how the agent answers (role, tone, format), as the reference agent's.
//!
//! A style changes the system prompt, not what the agent knows:
//!
//! - **Default** is the prompt as it is.
//! - Every other style leaves out the line asking for concise output (the style decides
//!   how long and how formatted answers are) and adds its own instructions at the end of
//!   the prompt.
//! - A custom style also leaves out the software-engineering instructions ("understand
//!   before changing", "check after a change", …) unless its front matter says
//!   `keep-coding-instructions: true`; the two other built-in styles keep them.
//!
//! Built-in styles: Default, Explanatory (explains the choices it makes while it works),
//! Learning (also hands small, meaningful pieces of code to the user, marked
//! `TODO(human)`). Custom styles are markdown files with optional front matter — `name`
//! (default: the file name without `.md`), `description`, `keep-coding-instructions`
//! (default false) — whose body is the instructions. They are read from, lowest
//! precedence first: the reference agent's user directory (`~/.claude/output-styles`, or
//! `$CLAUDE_CONFIG_DIR/output-styles`), strata's (`<config>/output-styles`), the project's
//! `.claude/output-styles` and its `.strata/output-styles`; a style of the same name
//! (case is ignored) from a later directory replaces an earlier one, built-ins included.
//!
//! The style in force is the `outputStyle` setting (any settings file, merged as usual);
//! `/output-style <name>` changes it for the session at once and saves it to strata's own
//! local settings (`.strata/settings.local.json`), never to a `.claude` file. A
//! replacement system prompt (`--system-prompt`) is used as given, without a style.

use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_config::{ConfigError, SettingsFiles, SettingsLocations, SettingsSource, paths};

use crate::front_matter::FrontMatter;

/// The name of the default style (what `system/init` reports when no other is chosen).
pub const DEFAULT_STYLE: &str = "default";

/// The settings key that chooses the style.
pub const SETTING_KEY: &str = "outputStyle";

/// The largest style file read (a style is a page of instructions).
const MAX_STYLE_FILE_BYTES: u64 = 256 * 1024;

/// Where a style came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StyleOrigin {
    /// Built into strata.
    BuiltIn,
    /// A file in a user directory (`~/.claude/output-styles`, `<config>/output-styles`).
    User(PathBuf),
    /// A file in the project (`.claude/output-styles`, `.strata/output-styles`).
    Project(PathBuf),
}

/// One output style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputStyle {
    /// Its name (`default`, `Explanatory`, or a custom style's).
    pub name: String,
    /// What it does, for the list.
    pub description: String,
    /// The instructions added at the end of the system prompt (empty for the default).
    pub instructions: String,
    /// Whether the software-engineering instructions of the prompt stay.
    pub keep_coding_instructions: bool,
    /// Where it came from.
    pub origin: StyleOrigin,
}

impl OutputStyle {
    /// Whether this is the default style (the prompt unchanged).
    pub fn is_default(&self) -> bool {
        self.origin == StyleOrigin::BuiltIn && self.name == DEFAULT_STYLE
    }
}

const EXPLANATORY: &str = "You are working in the Explanatory output style: besides doing \
the task, help the user understand the code and your choices.\n\
- Before and after writing code, add short insights about the implementation choices you \
make and the patterns of this codebase they follow, set apart as a block headed \
`Insight`, two or three points each.\n\
- Explain what is specific to this codebase or this change, not general programming \
knowledge.\n\
- The insights belong in your messages, not in the code or files you write.";

const LEARNING: &str = "You are working in the Learning output style: the user wants to \
learn by doing, so the work is shared.\n\
- Add short insights about implementation choices and codebase patterns, as in the \
Explanatory style, set apart as a block headed `Insight`.\n\
- Where a piece of the work is small but meaningful (a design decision, a function of \
up to about ten lines, an edge case), do not write it yourself: prepare everything around \
it, mark the place in the code with a `TODO(human)` comment saying what is needed, and ask \
the user to write it, explaining the context and the trade-offs.\n\
- Ask for one such piece at a time and wait for it; then review what the user wrote and \
go on. Routine code (boilerplate, plumbing) you still write yourself.";

/// The built-in styles: Default, Explanatory, Learning.
pub fn builtin_styles() -> Vec<OutputStyle> {
    let style = |name: &str, description: &str, instructions: &str| OutputStyle {
        name: name.to_owned(),
        description: description.to_owned(),
        instructions: instructions.to_owned(),
        keep_coding_instructions: true,
        origin: StyleOrigin::BuiltIn,
    };
    vec![
        style(
            DEFAULT_STYLE,
            "Completes software engineering tasks efficiently",
            "",
        ),
        style(
            "Explanatory",
            "Explains its implementation choices and the codebase's patterns as it works",
            EXPLANATORY,
        ),
        style(
            "Learning",
            "Learn by doing: insights, and small pieces of code left for you to write \
             (TODO(human))",
            LEARNING,
        ),
    ]
}

/// The styles a session can choose from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputStyles {
    styles: Vec<OutputStyle>,
}

/// The directories custom styles are read from, lowest precedence first, each with
/// whether it is a project directory.
pub fn style_dirs(
    config_dir: &Path,
    reference_dir: Option<&Path>,
    project_root: &Path,
) -> Vec<(PathBuf, bool)> {
    let mut dirs = Vec::new();
    if let Some(reference) = reference_dir {
        dirs.push((reference.join("output-styles"), false));
    }
    dirs.push((config_dir.join("output-styles"), false));
    dirs.push((project_root.join(".claude").join("output-styles"), true));
    dirs.push((project_root.join(".strata").join("output-styles"), true));
    dirs
}

impl OutputStyles {
    /// The built-in styles only.
    pub fn builtin() -> Self {
        Self {
            styles: builtin_styles(),
        }
    }

    /// The built-in styles and the custom ones of every style directory (see the module
    /// docs), with one warning per file that could not be read, naming it. The reference
    /// agent's user directory is found from the environment.
    pub fn load(config_dir: &Path, project_root: &Path) -> (Self, Vec<String>) {
        let reference = paths::reference_config_dir();
        Self::load_from(&style_dirs(config_dir, reference.as_deref(), project_root))
    }

    /// [`Self::load`] from these directories (lowest precedence first; `true`: a project
    /// directory).
    pub fn load_from(dirs: &[(PathBuf, bool)]) -> (Self, Vec<String>) {
        let mut styles = Self::builtin();
        let mut warnings = Vec::new();
        for (dir, project) in dirs {
            for path in markdown_files(dir) {
                match read_style(&path, *project) {
                    Ok(style) => styles.put(style),
                    Err(e) => {
                        warnings.push(format!("output style {} not loaded: {e}", path.display()))
                    }
                }
            }
        }
        (styles, warnings)
    }

    fn put(&mut self, style: OutputStyle) {
        match self
            .styles
            .iter_mut()
            .find(|s| s.name.eq_ignore_ascii_case(&style.name))
        {
            Some(existing) => *existing = style,
            None => self.styles.push(style),
        }
    }

    /// The style of this name (case is ignored), if any.
    pub fn find(&self, name: &str) -> Option<&OutputStyle> {
        let name = name.trim();
        self.styles
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// Every style: the built-in ones first, then the custom ones in the order read.
    pub fn all(&self) -> &[OutputStyle] {
        &self.styles
    }

    /// The style an `outputStyle` setting chooses: `None` (the default) when it is
    /// unset or names the default; a warning when it names no known style or is not a
    /// string (the default is used).
    pub fn resolve(&self, setting: Option<&Value>) -> (Option<OutputStyle>, Option<String>) {
        match setting {
            None | Some(Value::Null) => (None, None),
            Some(Value::String(name)) => match self.find(name) {
                Some(style) if style.is_default() => (None, None),
                Some(style) => (Some(style.clone()), None),
                None => (
                    None,
                    Some(format!(
                        "the output style {name:?} ({SETTING_KEY} in settings) was not found; \
                         the default style is used (styles: {})",
                        self.names().join(", ")
                    )),
                ),
            },
            Some(other) => (
                None,
                Some(format!(
                    "{SETTING_KEY} in settings must be a style name, not {other}; the default \
                     style is used"
                )),
            ),
        }
    }

    /// Every style's name.
    pub fn names(&self) -> Vec<&str> {
        self.styles.iter().map(|s| s.name.as_str()).collect()
    }
}

/// The `*.md` files directly in `dir`, by name (none when it does not exist).
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "md")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

/// Why a style file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StyleFileError {
    /// It could not be read (or is not a regular file, or is too large).
    #[error(transparent)]
    Read(#[from] ConfigError),
    /// It is not UTF-8.
    #[error("{}: not UTF-8 text", .0.display())]
    NotText(PathBuf),
    /// Its front matter is wrong.
    #[error(transparent)]
    FrontMatter(#[from] crate::front_matter::FrontMatterError),
}

/// Reads one style file.
pub fn read_style(path: &Path, project: bool) -> Result<OutputStyle, StyleFileError> {
    // A project's directory could hold a FIFO or a link to a device: bounded read.
    let bytes = strata_config::read_bounded(path, MAX_STYLE_FILE_BYTES)?.unwrap_or_default();
    let text = String::from_utf8(bytes).map_err(|_| StyleFileError::NotText(path.to_path_buf()))?;
    let fm = FrontMatter::parse(path, &text)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = fm
        .string("name")?
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or(stem);
    Ok(OutputStyle {
        name,
        description: fm.string("description")?.unwrap_or_default(),
        instructions: fm.body.trim().to_owned(),
        keep_coding_instructions: fm.boolean("keep-coding-instructions")?.unwrap_or(false),
        origin: if project {
            StyleOrigin::Project(path.to_path_buf())
        } else {
            StyleOrigin::User(path.to_path_buf())
        },
    })
}

/// Why `/output-style <name>` did not change the style.
#[derive(Debug, thiserror::Error)]
pub enum ChooseStyleError {
    /// No style has that name.
    #[error("no output style is named {name:?}; the styles are: {}", available.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: Vec<String>,
    },
    /// The choice could not be saved to the local settings (the style is not changed).
    #[error("the output style could not be saved: {0}")]
    Save(#[from] ConfigError),
}

/// Saves `name` as the `outputStyle` of strata's local settings of `project_root`
/// (`.strata/settings.local.json`; never a `.claude` file).
pub fn save_choice(config_dir: &Path, project_root: &Path, name: &str) -> Result<(), ConfigError> {
    let files = SettingsFiles::new(SettingsLocations::new(config_dir, project_root));
    files
        .set_value(
            SettingsSource::Local,
            &[SETTING_KEY],
            Some(Value::String(name.to_owned())),
        )
        .map(drop)
}

/// The style section added at the end of the prompt.
pub(super) fn section(style: &OutputStyle) -> Option<String> {
    let instructions = style.instructions.trim();
    (!style.is_default() && !instructions.is_empty())
        .then(|| format!("# Output style: {}\n{instructions}", style.name))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn i25_3_custom_styles_read_front_matter_and_later_directories_win() {
        let tmp = tempfile::tempdir().unwrap();
        let (user, project) = (tmp.path().join("u"), tmp.path().join("p"));
        write(
            &user.join("pirate.md"),
            "---\ndescription: Talks like a pirate\n---\nSpeak as a pirate.\n",
        );
        write(
            &project.join("pirate.md"),
            "---\nname: Pirate\nkeep-coding-instructions: true\n---\nArr, project pirate.\n",
        );
        write(&project.join("plain.md"), "No front matter at all.");
        write(
            &project.join("broken.md"),
            "---\nkeep-coding-instructions: [\n---\nx",
        );
        let (styles, warnings) =
            OutputStyles::load_from(&[(user.clone(), false), (project.clone(), true)]);
        let pirate = styles.find("PIRATE").unwrap();
        assert_eq!(
            pirate.name, "Pirate",
            "the project's file replaced the user's"
        );
        assert_eq!(pirate.instructions, "Arr, project pirate.");
        assert!(pirate.keep_coding_instructions);
        assert_eq!(
            pirate.origin,
            StyleOrigin::Project(project.join("pirate.md"))
        );
        let plain = styles.find("plain").unwrap();
        assert!(
            !plain.keep_coding_instructions,
            "false unless the file says so"
        );
        assert_eq!(plain.instructions, "No front matter at all.");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("broken.md"), "{warnings:?}");
        assert_eq!(&styles.names()[..3], ["default", "Explanatory", "Learning"]);
    }

    #[test]
    fn i25_3_the_setting_resolves_case_insensitively_and_an_unknown_name_warns() {
        let styles = OutputStyles::builtin();
        let (style, none) = styles.resolve(Some(&Value::from("explanatory")));
        assert_eq!(style.unwrap().name, "Explanatory");
        assert!(none.is_none());
        assert_eq!(styles.resolve(Some(&Value::from("Default"))), (None, None));
        let (style, warning) = styles.resolve(Some(&Value::from("nope")));
        assert!(style.is_none());
        assert!(warning.unwrap().contains("\"nope\""));
        assert!(styles.resolve(Some(&Value::from(3))).1.is_some());
    }
}
