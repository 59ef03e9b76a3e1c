//! The Skill tool: loads one of the user's skills (issue 18, item 5).
//!
//! The system prompt lists the skills by name and description
//! ([`SkillCatalog::prompt_section`](crate::commands::SkillCatalog::prompt_section)); the
//! model calls `Skill` with a name when a task matches one, and reads its instructions in
//! the result, after the folder they live in, so the files beside `SKILL.md` can be
//! read with Read (the folder is readable without a prompt: the engine lists the skill
//! folders among the readable directories). The result starts as the reference agent's
//! does (`Launching skill: <name>`), and its `toolUseResult` has the same keys
//! (`success`, `commandName`, `allowedTools`), so a resumed transcript reads naturally.
//!
//! Loading a skill needs no permission (it is the user's own text); a deny rule naming it
//! like a command, `Skill(pdf-tools)`, or the whole tool, stops it.

use serde::Deserialize;
use serde_json::{Value, json};

use super::input::{invalid, parse};
use super::{PermissionSubject, Tool, ToolCall, ToolContext, ToolFuture, ToolOutput};

/// The Skill tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Skill;

const NAME: &str = "Skill";

const DESCRIPTION: &str = "Loads one of the user's skills: instructions for a particular \
kind of task, with any files they need in the skill's folder.\n\
\n\
- The skills available are listed in the system prompt under \"Skills\", each with when \
to use it. When the task matches a skill's description, load it before starting and \
follow its instructions.\n\
- Pass its name in `skill`, and in `args` anything the skill should know about this task.\n\
- Do not load a skill that is already loaded in this conversation; do not guess names \
that are not listed.";

#[derive(Debug, Deserialize)]
struct SkillInput {
    skill: String,
    #[serde(default)]
    args: Option<String>,
}

fn check(input: &Value) -> Result<SkillInput, ToolOutput> {
    let parsed: SkillInput = parse(NAME, input)?;
    if parsed.skill.trim().is_empty() {
        return Err(invalid(NAME, "skill", "must name a skill"));
    }
    Ok(parsed)
}

impl Tool for Skill {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "skill": {
                    "type": "string",
                    "description": "The skill's name, as listed in the system prompt"
                },
                "args": {
                    "type": "string",
                    "description": "What the skill should know about this task (optional)"
                }
            },
            "required": ["skill"]
        })
    }

    // Loading instructions changes nothing.
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    // A skill is text the user installed; loading one reads it and changes nothing, so
    // no allow rule or prompt is needed. A deny rule (`Skill(name)`, or `Skill`) still
    // refuses it.
    fn needs_permission(&self, _input: &Value) -> bool {
        false
    }

    fn permission_subject(&self, input: &Value) -> Option<PermissionSubject> {
        input
            .get("skill")
            .and_then(Value::as_str)
            .map(|s| PermissionSubject::Command(s.trim().trim_start_matches('/').to_owned()))
    }

    fn validate(&self, input: &Value) -> Result<(), ToolOutput> {
        check(input).map(|_| ())
    }

    fn call<'a>(&'a self, call: ToolCall, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = match check(&call.input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let name = input.skill.trim().trim_start_matches('/');
            let catalog = ctx.hooks.skills().unwrap_or_default();
            // A skill marked `disable-model-invocation` is the user's to run (`/name`).
            let Some(skill) = catalog.for_model(name) else {
                if catalog.get(name).is_some() {
                    return ToolOutput::error(format!(
                        "Skill {name} can only be run by the user (/{name}): its \
                         disable-model-invocation is set."
                    ));
                }
                let known: Vec<&str> = catalog.model_invocable().map(|s| s.name.as_str()).collect();
                return ToolOutput::error(if known.is_empty() {
                    format!("Unknown skill: {name}. No skills are installed in this session.")
                } else {
                    format!(
                        "Unknown skill: {name}. Available skills: {}",
                        known.join(", ")
                    )
                });
            };
            let args = input.args.unwrap_or_default();
            let session_id = ctx.hooks.session_id();
            let body = skill.expand(args.trim(), session_id.as_deref());
            let content = format!(
                "Launching skill: {}\n\n{}",
                skill.name,
                skill.loaded_text(&body)
            );
            let mut detail = json!({"success": true, "commandName": skill.name});
            if !skill.allowed_tools.is_empty() {
                detail["allowedTools"] = json!(skill.allowed_tools);
            }
            ToolOutput::ok(content).with_detail(detail)
        })
    }
}
