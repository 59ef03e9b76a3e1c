//! The system prompt: who strata is, how to use its tools, how to handle work that needs
//! permission, the environment, the memory files and the active permission mode.
//!
//! [`build_system_prompt`] is a pure function of [`PromptInputs`] (everything slow —
//! memory files, git — is gathered by [`memory`] and [`environment`] before), so the
//! main session and sub-agents build their prompts the same way.
//!
//! Prompt caching: the API caches the request prefix up to the system prompt's
//! breakpoint, so the prompt must be byte-identical from one request to the next. The
//! session therefore builds it once (the date, the git status and the memory files as
//! they were when the session started: what the reference agent does too) and rebuilds
//! it only when the permission mode changes, which is rare and changes the rules the
//! model must follow, or when the user picks another output style ([`output_style`]).

pub mod environment;
pub mod memory;
pub mod output_style;
pub mod session;
mod text;

use std::fmt::Write as _;
use std::path::PathBuf;

use strata_protocol::permission::PermissionMode;

pub use self::environment::{GitInfo, GitStatus};
pub use self::memory::{MemoryFile, MemorySource, load_memory_files};
pub use self::output_style::{OutputStyle, OutputStyles};
pub use self::session::SessionPrompt;

/// Everything the system prompt is built from.
#[derive(Clone, Debug, Default)]
pub struct PromptInputs {
    /// The working directory.
    pub cwd: PathBuf,
    /// The project root (the repository's top level, else the working directory).
    pub project_root: PathBuf,
    /// The platform name (`linux`, `macos`, …).
    pub platform: String,
    /// Today's date, `YYYY-MM-DD`.
    pub date: String,
    /// The repository, when the project is one.
    pub git: Option<GitInfo>,
    /// `git status --short` (capped), when known.
    pub git_status: Option<String>,
    /// The memory files, in prompt order.
    pub memory_files: Vec<MemoryFile>,
    /// The names of the tools the model may call (guidance is given for these only).
    pub tools: Vec<String>,
    /// The active permission mode.
    pub mode: PermissionMode,
    /// `--system-prompt` / `systemPrompt`: replaces the default prompt (empty: the
    /// default is kept).
    pub replace: Option<String>,
    /// `--append-system-prompt` / `appendSystemPrompt`: added at the end.
    pub append: Option<String>,
    /// What SessionStart hooks added (`additionalContext`), after the appended text.
    pub hook_context: Option<String>,
    /// The skills the Skill tool loads, as the prompt lists them (within
    /// [`SKILLS_PROMPT_BUDGET`](crate::commands::skills::SKILLS_PROMPT_BUDGET)).
    pub skills: Option<String>,
    /// The output style (`None`: the default, the prompt unchanged; see
    /// [`output_style`]).
    pub output_style: Option<OutputStyle>,
}

/// A built system prompt, with the size of each part (for context accounting).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SystemPrompt {
    /// The whole prompt as sent.
    pub text: String,
    /// Characters of the memory files' section (part of `text`).
    pub memory_chars: usize,
    /// The memory files it holds (paths for `/context` and `/memory`).
    pub memory_files: Vec<(PathBuf, MemorySource, usize)>,
}

/// Builds the system prompt from `inputs`.
///
/// A replacement prompt is used as given, followed by the memory files and the appended
/// text (the memory files are the user's own instructions: replacing the agent's voice
/// does not drop them); the output style applies to the default prompt only.
pub fn build_system_prompt(inputs: &PromptInputs) -> SystemPrompt {
    let mut out = String::with_capacity(8 * 1024);
    let replacement = inputs.replace.as_deref().filter(|r| !r.trim().is_empty());
    let style = inputs
        .output_style
        .as_ref()
        .filter(|s| replacement.is_none() && !s.is_default());
    match replacement {
        Some(replacement) => out.push_str(replacement.trim_end()),
        None => {
            let coding = style.is_none_or(|s| s.keep_coding_instructions);
            out.push_str(if coding {
                text::IDENTITY
            } else {
                text::IDENTITY_GENERAL
            });
            out.push_str("\n\n");
            working_section(&mut out, coding, style.is_none());
            out.push_str("\n\n");
            tool_guidance(&mut out, &inputs.tools);
            out.push_str(text::PERMISSIONS);
            out.push_str("\n\n");
            mode_section(&mut out, inputs.mode);
            if let Some(skills) = inputs.skills.as_deref().filter(|s| !s.trim().is_empty()) {
                out.push_str(skills.trim_end());
                out.push_str("\n\n");
            }
            environment_section(&mut out, inputs);
        }
    }
    let before_memory = out.len();
    memory_section(&mut out, &inputs.memory_files);
    let memory_chars = out[before_memory..].chars().count();
    // The style's instructions come at the end of the prompt, before what the caller
    // appends.
    if let Some(section) = style.and_then(output_style::section) {
        out.push_str("\n\n");
        out.push_str(&section);
    }
    if let Some(append) = inputs.append.as_deref().filter(|a| !a.trim().is_empty()) {
        out.push_str("\n\n");
        out.push_str(append.trim_end());
    }
    if let Some(context) = inputs
        .hook_context
        .as_deref()
        .filter(|c| !c.trim().is_empty())
    {
        out.push_str("\n\n");
        out.push_str(context.trim_end());
    }
    SystemPrompt {
        text: out,
        memory_chars,
        memory_files: inputs
            .memory_files
            .iter()
            .map(|f| (f.path.clone(), f.source, f.content.chars().count()))
            .collect(),
    }
}

/// "How to work": the software-engineering lines unless a style leaves them out, the
/// concise-output line only in the default style.
fn working_section(out: &mut String, coding: bool, concise: bool) {
    out.push_str(text::WORKING_HEADING);
    let mut lines: Vec<&str> = Vec::new();
    if coding {
        lines.extend(text::WORKING_CODING);
    }
    lines.push(text::WORKING_FACTS);
    if concise {
        lines.push(text::WORKING_CONCISE);
    }
    lines.extend(text::WORKING_ALWAYS);
    for line in lines {
        out.push('\n');
        out.push_str(line);
    }
}

fn tool_guidance(out: &mut String, tools: &[String]) {
    let guides: Vec<&str> = tools.iter().filter_map(|t| text::tool_guide(t)).collect();
    if guides.is_empty() {
        return;
    }
    out.push_str("# Using the tools\n");
    out.push_str(text::TOOLS_GENERAL);
    out.push('\n');
    for guide in guides {
        out.push_str("- ");
        out.push_str(guide);
        out.push('\n');
    }
    out.push('\n');
}

fn mode_section(out: &mut String, mode: PermissionMode) {
    out.push_str("# Permission mode\n");
    out.push_str(match mode {
        PermissionMode::Plan => text::MODE_PLAN,
        PermissionMode::AcceptEdits => text::MODE_ACCEPT_EDITS,
        PermissionMode::BypassPermissions => text::MODE_BYPASS,
        PermissionMode::DontAsk => text::MODE_DONT_ASK,
        _ => text::MODE_DEFAULT,
    });
    out.push_str("\n\n");
}

/// The environment section alone (working directory, platform, date, repository): what
/// a sub-agent's own prompt is followed by.
pub fn environment_text(inputs: &PromptInputs) -> String {
    let mut out = String::new();
    environment_section(&mut out, inputs);
    out
}

fn environment_section(out: &mut String, inputs: &PromptInputs) {
    out.push_str("# Environment\n");
    let _ = writeln!(out, "- Working directory: {}", inputs.cwd.display());
    let _ = writeln!(out, "- Project root: {}", inputs.project_root.display());
    let _ = writeln!(out, "- Platform: {}", inputs.platform);
    let _ = writeln!(out, "- Today's date: {}", inputs.date);
    match &inputs.git {
        None => out.push_str("- Git repository: no\n"),
        Some(git) => {
            out.push_str("- Git repository: yes\n");
            match (&git.branch, &git.detached_at) {
                (Some(branch), _) => {
                    let _ = writeln!(out, "- Current branch: {branch}");
                }
                (None, Some(commit)) => {
                    let _ = writeln!(out, "- HEAD is detached at {commit}");
                }
                (None, None) => {}
            }
            if !git.recent_commits.is_empty() {
                out.push_str("- Recent commits:\n");
                for commit in &git.recent_commits {
                    let _ = writeln!(out, "  - {commit}");
                }
            }
            if let Some(status) = &inputs.git_status {
                out.push_str(
                    "- Status when the session started (a snapshot; run git for the current state):\n",
                );
                for line in status.lines() {
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
    }
}

fn memory_section(out: &mut String, files: &[MemoryFile]) {
    if files.is_empty() {
        return;
    }
    out.push_str("\n\n# Memory files\n");
    out.push_str(text::MEMORY_INTRO);
    for file in files {
        let kind = match file.source {
            MemorySource::User => "the user's instructions for every project",
            MemorySource::Project => "project instructions, checked into the repository",
            MemorySource::Local => "the user's private project instructions",
            MemorySource::Import => "imported by another memory file",
        };
        let _ = write!(
            out,
            "\n\nContents of {} ({kind}):\n\n{}",
            file.path.display(),
            file.content.trim_end()
        );
        if file.truncated {
            out.push_str("\n[… cut: the file is longer than strata reads]");
        }
    }
}

#[cfg(test)]
mod tests;
